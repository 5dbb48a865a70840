"""pytest-benchmark timings of spmbpe (run: python -m pytest benchmarks).

Not part of the test suite (pyproject's testpaths is tests/).  Each round
loads a fresh tokenizer, so no state survives from one round to the next.
"""

from pathlib import Path

import pytest

import spmbpe

ROOT = Path(__file__).resolve().parent.parent
GGUF = ROOT / "tests" / "data" / "ggml-vocab-llama-spm.gguf"
CORPUS = ROOT / "tests" / "data" / "corpus"
FILES = sorted(CORPUS.glob("*.txt")) if CORPUS.is_dir() else []


def _lines(path):
    return [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_load_gguf(benchmark):
    tok = benchmark(spmbpe.load, GGUF)
    assert tok.vocab_size == 32000


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_encode_lines(benchmark, path):
    lines = _lines(path)
    benchmark.extra_info["bytes"] = sum(len(x.encode("utf-8")) for x in lines)

    def run(tok):
        return [tok.encode_ordinary(x) for x in lines]

    out = benchmark.pedantic(run, setup=lambda: ((spmbpe.load(GGUF),), {}), rounds=3)
    assert len(out) == len(lines)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_encode_document(benchmark, path):
    doc = path.read_text(encoding="utf-8")
    benchmark.extra_info["bytes"] = len(doc.encode("utf-8"))
    out = benchmark.pedantic(
        lambda tok: tok.encode_ordinary(doc), setup=lambda: ((spmbpe.load(GGUF),), {}), rounds=3
    )
    assert out
