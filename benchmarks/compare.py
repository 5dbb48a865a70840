"""Throughput of spmbpe against the reference tokenizers, as a table.

    python benchmarks/compare.py [--corpus DIR] [--repeat N] [--files a.txt,b.txt]

Each row is one corpus file and mode (per line, whole document, batch); each
column a tokenizer on a vocabulary, in MB/s of UTF-8 input (best of --repeat
runs, one thread except spmbpe's batch, which uses every core).  Tokenizers
are compared on the same vocabulary and file format:

  sp        sentencepiece on mistral-v1.model      vs spmbpe on the same file
  hf        tokenizers on mistral-v1.tokenizer.json vs spmbpe on the same file
  llama.cpp llama-cpp-python on the Llama 2 GGUF   vs spmbpe on the same file

Ids are compared before timing; a disagreement is printed instead of a time.
spmbpe is timed with a fresh tokenizer per run, so nothing survives between
runs.  A reference that is not installed is left out.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"
MODEL = DATA / "mistral-v1.model"
JSON = DATA / "mistral-v1.tokenizer.json"
GGUF = DATA / "ggml-vocab-llama-spm.gguf"


class Runner:
    """One tokenizer: how to make it and how to encode lines / a document."""

    def __init__(self, name: str, make: Callable[[], object], line: Callable, doc: Callable, batch: Callable,
                 fresh: bool) -> None:
        self.name, self.make, self.fresh = name, make, fresh
        self.modes = {"line": line, "doc": doc, "batch": batch}
        self._kept = None if fresh else make()

    def instance(self):
        return self.make() if self.fresh else self._kept


def runners() -> List[Runner]:
    import spmbpe

    out = []

    def spmbpe_runner(name, path):
        return Runner(
            name, lambda: spmbpe.load(path),
            lambda t, lines: [t.encode_ordinary(x) for x in lines],
            lambda t, doc: t.encode_ordinary(doc),
            lambda t, lines: t.encode_batch(lines, special="none"),
            fresh=True,
        )

    try:
        import sentencepiece as spm

        out.append(spmbpe_runner("spmbpe/sp", MODEL))
        out.append(Runner(
            "sentencepiece", lambda: spm.SentencePieceProcessor(model_file=str(MODEL)),
            lambda t, lines: [t.encode(x) for x in lines], lambda t, doc: t.encode(doc),
            lambda t, lines: t.encode(lines), fresh=False,
        ))
    except ImportError:
        pass
    try:
        from tokenizers import Tokenizer

        out.append(spmbpe_runner("spmbpe/hf", JSON))
        out.append(Runner(
            "tokenizers", lambda: Tokenizer.from_file(str(JSON)),
            lambda t, lines: [t.encode(x, add_special_tokens=False).ids for x in lines],
            lambda t, doc: t.encode(doc, add_special_tokens=False).ids,
            lambda t, lines: [e.ids for e in t.encode_batch(lines, add_special_tokens=False)], fresh=False,
        ))
    except ImportError:
        pass
    try:
        import llama_cpp

        def enc(m, text):
            return m.tokenize(text.encode("utf-8"), add_bos=False, special=False)

        out.append(spmbpe_runner("spmbpe/gguf", GGUF))
        out.append(Runner(
            "llama.cpp", lambda: llama_cpp.Llama(str(GGUF), vocab_only=True, verbose=False),
            lambda m, lines: [enc(m, x) for x in lines], lambda m, doc: enc(m, doc),
            lambda m, lines: [enc(m, x) for x in lines], fresh=False,
        ))
    except ImportError:
        pass
    return out


def best_of(repeat: int, runner: Runner, mode: str, data) -> float:
    best = float("inf")
    run = runner.modes[mode]
    for _ in range(repeat):
        tok = runner.instance()
        start = time.perf_counter()
        run(tok, data)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DATA / "corpus")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", default=None, help="comma-separated file names (default: all)")
    args = parser.parse_args(argv)
    files = sorted(args.corpus.glob("*.txt"))
    if args.files:
        wanted = set(args.files.split(","))
        files = [f for f in files if f.name in wanted]
    if not files:
        print(f"no .txt files in {args.corpus}", file=sys.stderr)
        return 2

    import spmbpe

    table = runners()
    versions = []
    for module in ("sentencepiece", "tokenizers", "llama_cpp"):
        try:
            versions.append(f"{module} {__import__(module).__version__}")
        except (ImportError, AttributeError):
            pass
    print(f"# {platform.machine()}, {os.cpu_count()} cores, {platform.system()}, Python "
          f"{platform.python_version()}, spmbpe {spmbpe.__version__}, {', '.join(versions)}")
    header = f"{'file':<16} {'mode':<5} " + " ".join(f"{r.name:>13}" for r in table)
    print(header)
    print("-" * len(header))
    for path in files:
        doc = path.read_text(encoding="utf-8")
        lines = [x for x in doc.splitlines() if x.strip()]
        for mode, data in (("line", lines), ("doc", doc), ("batch", lines)):
            size = len(doc.encode("utf-8")) if mode == "doc" else sum(len(x.encode("utf-8")) for x in lines)
            cells = []
            for i, runner in enumerate(table):
                if i % 2 == 1:
                    # Ids must agree with spmbpe on the same file (the column before).
                    mine = table[i - 1].modes[mode](table[i - 1].instance(), data)
                    theirs = runner.modes[mode](runner.instance(), data)
                    if mine != theirs:
                        cells[-1] = f"{'differs':>13}"
                        cells.append(f"{'differs':>13}")
                        continue
                seconds = best_of(args.repeat, runner, mode, data)
                cells.append(f"{size / 1e6 / seconds:>13.2f}")
            print(f"{path.name:<16} {mode:<5} " + " ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
