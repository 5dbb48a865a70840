"""Throughput of spmbpe against the reference tokenizers, as a table.

    python benchmarks/compare.py [--corpus DIR] [--repeat N]

Each row is one corpus file and mode (per line, whole document, batch);
each column a tokenizer, in MB/s of UTF-8 input (best of --repeat runs).
Every tokenizer runs on the same vocabulary (the Llama 2 GGUF in
tests/data); ids are compared before timing, and a disagreement is reported
instead of a time.  spmbpe is timed with a fresh tokenizer per run.
References are used when installed: llama-cpp-python (the same GGUF).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GGUF = ROOT / "tests" / "data" / "ggml-vocab-llama-spm.gguf"
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"


def best_of(repeat: int, setup: Callable[[], object], run: Callable[[object], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        state = setup()
        start = time.perf_counter()
        run(state)
        best = min(best, time.perf_counter() - start)
    return best


def spmbpe_runner():
    import spmbpe

    def fresh():
        return spmbpe.load(GGUF)

    return "spmbpe", fresh, {
        "line": lambda tok, lines: [tok.encode_ordinary(x) for x in lines],
        "doc": lambda tok, doc: tok.encode_ordinary(doc),
        "batch": lambda tok, lines: tok.encode_batch(lines, special="none"),
    }


def llama_cpp_runner():
    try:
        import llama_cpp
    except ImportError:
        return None
    model = llama_cpp.Llama(str(GGUF), vocab_only=True, verbose=False)

    def enc(text: str) -> List[int]:
        return model.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    return "llama.cpp", lambda: model, {
        "line": lambda m, lines: [enc(x) for x in lines],
        "doc": lambda m, doc: enc(doc),
        "batch": lambda m, lines: [enc(x) for x in lines],
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    files = sorted(args.corpus.glob("*.txt"))
    if not files:
        print(f"no .txt files in {args.corpus}", file=sys.stderr)
        return 2

    runners = [r for r in (spmbpe_runner(), llama_cpp_runner()) if r is not None]
    import spmbpe

    print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, spmbpe {spmbpe.__version__}")
    header = f"{'file':<18} {'mode':<6} " + " ".join(f"{name:>12}" for name, _, _ in runners)
    print(header)
    print("-" * len(header))
    reference = spmbpe.load(GGUF)
    for path in files:
        doc = path.read_text(encoding="utf-8")
        lines = [x for x in doc.splitlines() if x.strip()]
        inputs = {"line": lines, "doc": doc, "batch": lines}
        for mode, data in inputs.items():
            size = len(doc.encode("utf-8")) if mode == "doc" else sum(len(x.encode("utf-8")) for x in lines)
            want = reference.encode_ordinary(doc) if mode == "doc" else reference.encode_batch(lines, special="none")
            cells = []
            for name, setup, modes in runners:
                run = modes[mode]
                got = run(setup(), data)
                if got != want:
                    cells.append(f"{'differs':>12}")
                    continue
                seconds = best_of(args.repeat, setup, lambda state: run(state, data))
                cells.append(f"{size / 1e6 / seconds:>12.2f}")
            print(f"{path.name:<18} {mode:<6} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
