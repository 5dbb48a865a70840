"""What the normalizer stage costs, and that identity models skip it.

    python benchmarks/normalizer_cost.py [--repeat N]

Times mistral-v1's `.model` (identity normalizer: spmbpe skips the stage)
against the same tokenizer forced through the normalizer stage with
identity rules (the same ids, checked), and a model trained with nmt_nfkc
against live sentencepiece on it — per line and whole document, MB/s.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import time
from pathlib import Path

import spmbpe
from spmbpe.loading import read_spec
from spmbpe.tokenizer import tokenizer_from_spec
from spmbpe._normalizer import Normalizer

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def best(repeat, make, fn):
    """Best time of fn(make()) with the object made outside the timing."""
    out = float("inf")
    for _ in range(repeat):
        obj = make()
        start = time.perf_counter()
        fn(obj)
        out = min(out, time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    doc = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")
    lines = [x for x in doc.splitlines() if x.strip()]
    line_mb = sum(len(x.encode("utf-8")) for x in lines) / 1e6
    doc_mb = len(doc.encode("utf-8")) / 1e6

    def rates(name, make):
        per_line = line_mb / best(args.repeat, make, lambda t: [t.encode(x) for x in lines])
        whole = doc_mb / best(args.repeat, make, lambda t: t.encode(doc))
        print(f"{name:<44} per line {per_line:7.2f} MB/s   document {whole:7.2f} MB/s")

    def forced():
        spec = read_spec(DATA / "mistral-v1.model")
        normalizers = {p: Normalizer(b"", add_dummy_prefix=p, remove_extra_whitespaces=False) for p in (True, False)}
        return tokenizer_from_spec(dataclasses.replace(spec, normalizers=normalizers))

    plain = spmbpe.load(DATA / "mistral-v1.model")
    assert plain._spec.normalizers is None
    assert all(plain.encode(x) == forced().encode(x) for x in lines[:200])
    print("en_botchan.txt, fresh tokenizer per run, best of", args.repeat)
    rates("mistral-v1 (identity: stage skipped)", lambda: spmbpe.load(DATA / "mistral-v1.model"))
    rates("mistral-v1 forced through the stage", forced)

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf, model_type="bpe",
                                   vocab_size=2000, normalization_rule_name="nmt_nfkc", minloglevel=2)
    path = Path("/tmp/spmbpe-bench-nfkc.model")
    path.write_bytes(buf.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    assert spmbpe.load(path).encode_batch(lines) == sp.encode(lines)
    rates("trained nmt_nfkc model (spmbpe)", lambda: spmbpe.load(path))
    per_line = line_mb / best(args.repeat, lambda: sp, lambda t: [t.encode(x) for x in lines])
    whole = doc_mb / best(args.repeat, lambda: sp, lambda t: t.encode(doc))
    print(f"{'trained nmt_nfkc model (sentencepiece)':<44} per line {per_line:7.2f} MB/s   document {whole:7.2f} MB/s")


if __name__ == "__main__":
    main()
