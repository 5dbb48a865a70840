"""What a per-line call costs before any tokenizing: the floor under a per-line
speed-up.

    python benchmarks/line_floor.py [--file F] [--mb N] [--repeat N]

On the non-blank lines of the file's first N MB, one thread, mistral-v1's
``.model``, each round times in turn (results dropped line by line, as a streaming
loop does; the best of --repeat rounds):

- ``list``: a Python loop calling ``list(ids)`` on each line's ids, held as a
  tuple: a call from Python that returns a new list of that many ints, which
  is what any tokenizer returning lists (sentencepiece, tiktoken, spmbpe) pays
  per line before it tokenizes anything;
- ``spmbpe line``: ``encode_ordinary`` per line, after a first pass has filled
  the chunk cache;
- ``spmbpe batch``: one ``encode_batch(lines, num_threads=1,
  return_numpy=True)``, per line: the same merging without a call and a list
  per line;
- ``gigatoken line``: its ``encode`` per line (when it is importable; its
  ``Tokenizer.from_sentencepiece`` of the same model), the fastest peer that
  agrees with sentencepiece per line in scale.py's runs.

The cyclic GC is off during each run, as in compare.py.  Then the budget a
per-line target leaves: gigatoken's time per line over 5,
against the ``list`` floor and spmbpe's own time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    CORPUS, MODEL, corpus_lines, machine_line, optional_import, timed, utf8_len, versions_line,
)

TARGET = 5.0  # issue 21: per line, 5x the fastest agreeing peer (English, code)


def _per_line(call: Callable, items: List) -> Callable[[], object]:
    def run() -> None:
        for x in items:
            call(x)
    return run


def runs(lines: List[str]) -> Dict[str, Callable[[], object]]:
    """The timed runs, by name (see the module's text)."""
    import spmbpe

    tok = spmbpe.load(MODEL)
    ids = [tuple(tok.encode_ordinary(x)) for x in lines]  # (also fills the cache)
    out: Dict[str, Callable[[], object]] = {
        "list": _per_line(list, ids),
        "spmbpe line": _per_line(tok.encode_ordinary, lines),
        "spmbpe batch": lambda: tok.encode_batch(lines, num_threads=1, return_numpy=True),
    }
    gigatoken = optional_import("gigatoken")
    if gigatoken is not None:
        peer = gigatoken.Tokenizer.from_sentencepiece(str(MODEL))
        for x in lines:
            peer.encode(x)
        out["gigatoken line"] = _per_line(peer.encode, lines)
    return out


def measure(lines: List[str], repeat: int) -> Dict[str, float]:
    """Best seconds per line of each run (the cyclic GC off during each, as
    in the other scripts here)."""
    todo = runs(lines)
    best: Dict[str, float] = {name: float("inf") for name in todo}
    for _ in range(repeat):
        for name, run in todo.items():
            best[name] = min(best[name], timed(run)[0])
    return {name: seconds / len(lines) for name, seconds in best.items()}


def report(per_line: Dict[str, float], nbytes: int, n: int) -> List[str]:
    rows = [f"{'run':<16} {'ns/line':>8} {'MB/s':>8}"]
    for name, seconds in per_line.items():
        rows.append(f"{name:<16} {seconds * 1e9:>8.0f} {nbytes / n / seconds / 1e6:>8.1f}")
    peer: Optional[float] = per_line.get("gigatoken line")
    if peer is not None:
        budget = peer / TARGET
        rows.append("")
        rows.append(f"{TARGET:g}x gigatoken per line leaves {budget * 1e9:.0f} ns a line; "
                    f"the list floor alone is {per_line['list'] * 1e9:.0f} ns "
                    f"({per_line['list'] / budget:.2f} of it); spmbpe per line takes "
                    f"{per_line['spmbpe line'] * 1e9:.0f} ns ({peer / per_line['spmbpe line']:.2f}x gigatoken), "
                    f"in batch {per_line['spmbpe batch'] * 1e9:.0f} ns")
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=CORPUS / "en_botchan.txt")
    ap.add_argument("--mb", type=float, default=0.0, help="the file's first N MB (0: all of it)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    with open(args.file, "rb") as f:
        data = f.read(int(args.mb * 1e6) if args.mb > 0 else -1).decode("utf-8", "ignore")
    lines = corpus_lines(data)
    if not lines:
        ap.error(f"{args.file}: no non-blank lines")
    nbytes = utf8_len(lines)
    print(f"# {machine_line()}")
    print(f"# {versions_line(['spmbpe', 'gigatoken'])}")
    print(f"# {args.file.name}: {len(lines):,} lines, {nbytes / len(lines):.1f} bytes a line; "
          f"best of {args.repeat}, one thread")
    for row in report(measure(lines, args.repeat), nbytes, len(lines)):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
