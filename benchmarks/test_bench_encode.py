"""pytest-benchmark timings of spmbpe beside sentencepiece, tokenizers and splintr-rs.

    python -m pytest benchmarks                     # everything
    python -m pytest benchmarks -k "en_botchan"     # one corpus file
    python -m pytest benchmarks --benchmark-group-by=group --benchmark-columns=min,median,rounds

Not part of the test suite (pyproject's testpaths is tests/).  Groups:

  load                     loading each tokenizer from its file
  lines <file>             every non-blank line of a corpus file, one encode call each
  document <file>          the whole file as one text

so that each group compares spmbpe with the references in the same run.  Every
round starts from a fresh tokenizer (pedantic with a setup that loads it, not
timed), so no cache survives between rounds.  Plain text everywhere: spmbpe's
encode_ordinary, sentencepiece's encode, tokenizers with
add_special_tokens=False and encode_special_tokens=True, splintr-rs'
encode_ordinary.  extra_info holds the input's bytes and the best round's MB/s.
Rounds per case: SPMBPE_BENCH_ROUNDS (default 3).
"""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPUS, GGUF, JSON, MODEL, corpus_lines  # noqa: E402

import spmbpe  # noqa: E402

ROUNDS = int(os.environ.get("SPMBPE_BENCH_ROUNDS", "3"))
FILES = sorted(CORPUS.glob("*.txt")) if CORPUS.is_dir() else []


def _sentencepiece():
    spm = pytest.importorskip("sentencepiece")
    return lambda: spm.SentencePieceProcessor(model_file=str(MODEL))


def _tokenizers():
    tokenizers = pytest.importorskip("tokenizers")

    def make():
        tok = tokenizers.Tokenizer.from_file(str(JSON))
        tok.encode_special_tokens = True  # <s>, </s> in the text are text, as in encode_ordinary
        return tok

    return make


def _splintr():
    splintr = pytest.importorskip("splintr")
    return lambda: splintr.Tokenizer.from_pretrained("mistral_v1")


# name -> (maker factory, encode one text)
TOKENIZERS = {
    "spmbpe-model": (lambda: (lambda: spmbpe.load(MODEL)), lambda t, s: t.encode_ordinary(s)),
    "sentencepiece": (_sentencepiece, lambda t, s: t.encode(s)),
    "splintr-rs": (_splintr, lambda t, s: t.encode_ordinary(s)),
    "spmbpe-json": (lambda: (lambda: spmbpe.load(JSON)), lambda t, s: t.encode_ordinary(s)),
    "tokenizers": (_tokenizers, lambda t, s: t.encode(s, add_special_tokens=False).ids),
    "spmbpe-gguf": (lambda: (lambda: spmbpe.load(GGUF)), lambda t, s: t.encode_ordinary(s)),
}
NAMES = list(TOKENIZERS)


def _mb_per_s(benchmark, nbytes):
    benchmark.extra_info["bytes"] = nbytes
    stats = getattr(benchmark, "stats", None)
    if stats is not None and getattr(stats, "stats", None) is not None and stats.stats.min:
        benchmark.extra_info["MB/s"] = round(nbytes / 1e6 / stats.stats.min, 3)


@pytest.mark.parametrize("name", NAMES)
def test_load(benchmark, name):
    make = TOKENIZERS[name][0]()
    benchmark.group = "load"
    tok = benchmark.pedantic(make, rounds=max(ROUNDS, 10), iterations=1, warmup_rounds=1)
    assert tok is not None


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_encode_lines(benchmark, path, name):
    factory, encode = TOKENIZERS[name]
    make = factory()
    lines = corpus_lines(path.read_text(encoding="utf-8"))
    benchmark.group = f"lines {path.name}"

    def run(tok):
        return [encode(tok, x) for x in lines]

    out = benchmark.pedantic(run, setup=lambda: ((make(),), {}), rounds=ROUNDS, iterations=1)
    _mb_per_s(benchmark, sum(len(x.encode("utf-8")) for x in lines))
    assert len(out) == len(lines)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_encode_document(benchmark, path, name):
    factory, encode = TOKENIZERS[name]
    make = factory()
    doc = path.read_text(encoding="utf-8")
    benchmark.group = f"document {path.name}"
    out = benchmark.pedantic(lambda tok: encode(tok, doc), setup=lambda: ((make(),), {}),
                             rounds=ROUNDS, iterations=1)
    _mb_per_s(benchmark, len(doc.encode("utf-8")))
    assert out
