#!/usr/bin/env python3
"""spmbpe against the live references, on random text, for as long as asked.

    python tools/differential.py [--seconds N] [--seed S] [--corpus DIR]
                                 [--folders-texts N] [--venv DIR] [--no-folders]

The tests pin every rule with goldens and short hypothesis runs; this runs
the same comparisons on many more texts, drawn at random: slices of the
large corpus's files (``../shared/tools/make_large_corpus.py``; the small
corpus of tests/data when it is missing), runs of code points from a dozen
scripts and from the control, private-use and emoji ranges, whitespace runs
(spaces, tabs, newlines, U+2581, no-break and ideographic spaces) and every
special-token spelling of the vocabularies.

* ``mistral-v1.model`` and ``mistral-v3.model`` against sentencepiece:
  ``encode_ordinary(text) == sp.encode(text)``, and ``decode`` of those ids
  and of random ids equal to ``sp.decode``;
* ``mistral-v1.tokenizer.json`` against tokenizers:
  ``encode(text, special="all") == Tokenizer.encode(text,
  add_special_tokens=False).ids`` and ``decode`` of those ids equal;
* ``encode_batch`` (lists and NumPy, one and two threads) and the command
  line's line blocks against ``encode`` of each text;
* then, unless ``--no-folders``, every folder of tests/data/transformers5
  (made whole) against transformers 5's ``AutoTokenizer``, run in its own
  virtual environment (``--venv``, made as tools/make_transformers5_goldens.py
  makes it): ``encode(text, special="all")`` with and without
  ``add_special_tokens``, and ``decode`` with and without ``skip_special``,
  on ``--folders-texts`` texts.

Each mismatch is printed with its text; the last line is a summary, and the
exit status 1 when anything differed.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

_RANGES = [(0x20, 0x7E), (0x00, 0x1F), (0xA0, 0x2FF), (0x300, 0x36F), (0x370, 0x52F), (0x590, 0x6FF),
           (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2580, 0x259F),
           (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xFE00, 0xFE0F),
           (0xFF00, 0xFFEF), (0x1F300, 0x1F6FF), (0x10000, 0x1FFFF), (0xE0000, 0xE007F)]
_WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u2581", "\u2581\u2581", "\u00a0", "\u3000", "\u200b",
               "\ufeff"]


class Texts:
    """Random texts of the kinds above."""

    def __init__(self, rng: random.Random, corpus: List[str], specials: List[str]) -> None:
        self.rng, self.corpus, self.specials = rng, corpus, specials

    def __call__(self, longest: int = 200) -> str:
        rng, parts = self.rng, []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.4:
                src = rng.choice(self.corpus)
                at = rng.randrange(len(src))
                parts.append(src[at : at + rng.choice([2, 8, 30, longest])])
            elif r < 0.65:
                lo, hi = rng.choice(_RANGES)
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 10))))
            elif r < 0.85:
                parts.append(rng.choice(self.specials))
            else:
                parts.append("".join(rng.choice(_WHITESPACE) for _ in range(rng.randint(1, 3))))
        return "".join(c for c in "".join(parts) if not 0xD800 <= ord(c) <= 0xDFFF)


def _corpus(folder: pathlib.Path) -> List[str]:
    files = sorted(folder.glob("*.txt")) or sorted((DATA / "corpus").glob("*.txt"))
    return [f.read_text(encoding="utf-8")[:3_000_000] for f in files]


class Report:
    def __init__(self) -> None:
        self.counts: Dict[str, List[int]] = {}

    def check(self, what: str, text: Any, mine: Any, theirs: Any) -> None:
        row = self.counts.setdefault(what, [0, 0])
        row[0] += 1
        if mine != theirs:
            row[1] += 1
            if row[1] <= 3:
                print(f"MISMATCH {what}: {text!r:.300}\n  spmbpe    {str(mine)[:300]}\n  reference {str(theirs)[:300]}",
                      flush=True)

    def failed(self) -> int:
        return sum(bad for _, bad in self.counts.values())

    def summary(self) -> str:
        """The totals, and each comparison that differed."""
        checks = sum(n for n, _ in self.counts.values())
        differed = "; ".join(f"{what}: {bad} of {n}" for what, (n, bad) in self.counts.items() if bad)
        return f"{self.failed():,} mismatches in {checks:,} comparisons of {len(self.counts)} kinds" + (
            f" ({differed})" if differed else "")


def run_libraries(texts: Texts, seconds: float, report: Report) -> None:
    """The .model files, the tokenizer.json and spmbpe's own batch paths."""
    import numpy as np
    import sentencepiece
    import tokenizers

    import spmbpe

    models = {name: (spmbpe.load(DATA / name), sentencepiece.SentencePieceProcessor(model_file=str(DATA / name)))
              for name in ("mistral-v1.model", "mistral-v3.model")}
    json_tok = spmbpe.load(DATA / "mistral-v1.tokenizer.json")
    json_ref = tokenizers.Tokenizer.from_file(str(DATA / "mistral-v1.tokenizer.json"))
    rng, end, n = texts.rng, time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
        text = texts(longest=rng.choice([200, 200, 200, 150_000]))
        for name, (tok, sp) in models.items():
            ids = sp.encode(text)
            report.check(f"{name} encode", text, tok.encode_ordinary(text), ids)
            report.check(f"{name} decode", ids, tok.decode(ids), sp.decode(ids))
            noise = [rng.randrange(tok.vocab_size) for _ in range(rng.randint(1, 24))]
            report.check(f"{name} decode of random ids", noise, tok.decode(noise), sp.decode(noise))
        ids = json_ref.encode(text, add_special_tokens=False).ids
        report.check("tokenizer.json encode", text, json_tok.encode(text, special="all"), ids)
        report.check("tokenizer.json decode", ids, json_tok.decode(ids), json_ref.decode(ids, skip_special_tokens=False))
        if n % 20 == 0:
            tok = rng.choice([json_tok, *(t for t, _ in models.values())])
            batch = [texts() for _ in range(rng.randint(1, 40))]
            each = [tok.encode(t, special="none") for t in batch]
            threads = rng.choice([1, 2])
            report.check("encode_batch", batch, tok.encode_batch(batch, special="none", num_threads=threads), each)
            flat, starts = tok.encode_batch(batch, special="none", num_threads=threads, return_numpy=True)
            report.check("encode_batch NumPy", batch, [flat[a:b].tolist() for a, b in zip(starts, starts[1:])], each)
            lines = [t.replace("\r", " ").replace("\n", " ") for t in batch]
            got = tok._encode_line_block("".join(t + "\n" for t in lines).encode("utf-8"), special="none",
                                         num_threads=threads)
            if got is not None:
                ids_, offsets = np.frombuffer(got[0], np.uint32), np.frombuffer(got[1], np.int64)
                report.check("line blocks", lines, [ids_[a:b].tolist() for a, b in zip(offsets, offsets[1:])],
                             [tok.encode(t, special="none") for t in lines])
    print(f"{n} texts through the .model files and the tokenizer.json", flush=True)


def _folder_specials() -> List[str]:
    from transformers5_folders import GOLDEN

    found = {"<s>", "</s>", "<unk>"}
    for config in GOLDEN.glob("*/tokenizer_config.json"):
        for entry in json.loads(config.read_text(encoding="utf-8")).get("added_tokens_decoder", {}).values():
            found.add(entry["content"])
    return sorted(found)


def run_folders(texts: Texts, n: int, venv: pathlib.Path, report: Report) -> None:
    """The transformers 5 folders: their ids and decodes from transformers 5
    in its environment, compared here."""
    from make_transformers5_goldens import ensure_environment
    from transformers5_folders import golden_names, read_golden, materialize

    import spmbpe

    with tempfile.TemporaryDirectory() as tmp:
        folders = {name: str(materialize(name, read_golden(name)[0]["files"], pathlib.Path(tmp, name)))
                   for name in golden_names()}
        batch = [texts() for _ in range(n)]
        request, answer = pathlib.Path(tmp, "request.json"), pathlib.Path(tmp, "answer.json")
        request.write_text(json.dumps({"folders": folders, "texts": batch}), encoding="utf-8")
        code = ensure_environment(venv, __file__, ["--reference-worker", str(request), str(answer)])
        if code is None:  # (this Python has transformers 5 itself)
            code = reference_worker(str(request), str(answer))
        if code:
            raise SystemExit(f"the transformers 5 run failed (exit status {code})")
        theirs = json.loads(answer.read_text(encoding="utf-8"))
        print(f"transformers {theirs['version']}: {len(folders)} folders, {n} texts", flush=True)
        for name, path in folders.items():
            tok = spmbpe.load(path)
            for text, (ids, ids_special, decoded, decoded_skip) in zip(batch, theirs["rows"][name]):
                report.check(f"{name} encode", text, tok.encode(text, special="all"), ids)
                report.check(f"{name} encode, special tokens", text,
                             tok.encode(text, special="all", add_special_tokens=True), ids_special)
                report.check(f"{name} decode", ids_special, tok.decode(ids_special), decoded)
                report.check(f"{name} decode, skip_special", ids_special, tok.decode(ids_special, skip_special=True),
                             decoded_skip)


def reference_worker(request: str, answer: str) -> int:
    """Inside the transformers 5 environment: each folder's rows."""
    import transformers

    given = json.loads(pathlib.Path(request).read_text(encoding="utf-8"))
    rows: Dict[str, List[Any]] = {}
    for name, folder in given["folders"].items():
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        rows[name] = []
        for text in given["texts"]:
            ids_special = tok.encode(text, add_special_tokens=True)
            rows[name].append([tok.encode(text, add_special_tokens=False), ids_special,
                               tok.decode(ids_special, skip_special_tokens=False),
                               tok.decode(ids_special, skip_special_tokens=True)])
    pathlib.Path(answer).write_text(json.dumps({"version": transformers.__version__, "rows": rows}), encoding="utf-8")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="time for the .model and tokenizer.json runs")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--corpus", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("SPMBPE_LARGE_CORPUS", ROOT.parent / "large_corpus")))
    ap.add_argument("--folders-texts", type=int, default=5000)
    ap.add_argument("--venv", type=pathlib.Path, default=pathlib.Path("/work/venvs/tf5"))
    ap.add_argument("--no-folders", action="store_true")
    ap.add_argument("--reference-worker", nargs=2, metavar=("REQUEST", "ANSWER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.reference_worker:
        return reference_worker(*args.reference_worker)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"seed {seed}", flush=True)
    texts = Texts(random.Random(seed), _corpus(args.corpus), _folder_specials())
    report = Report()
    run_libraries(texts, args.seconds, report)
    if not args.no_folders:
        run_folders(texts, args.folders_texts, args.venv, report)
    print(report.summary())
    return 1 if report.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
