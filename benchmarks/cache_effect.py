"""Per-line throughput with spmbpe's chunk cache empty and filled, against
sentencepiece: how much of the per-line time is the merging of chunks seen
for the first time.

    python benchmarks/cache_effect.py [--repeat N] [--files a.txt,b.txt]

Every non-blank line is its own call, one thread, mistral-v1's `.model`.
Each round times, in turn: sentencepiece (fresh processor); spmbpe with a
fresh tokenizer (empty cache, as compare.py times it); the same spmbpe
tokenizer again over the same lines (every chunk cached).  Best of --repeat
rounds, with the ratio to sentencepiece.  Also prints how many chunks
spmbpe cuts the lines into, and how many distinct ones of two or more
characters (each merged once from an empty cache; a single character is
looked up).

Then what a first merge costs: one document of those distinct chunks back
to back, encoded (best of --repeat, ns per chunk of that document) with
every chunk cached; with the cache kept from storing anything (merging
only, the pair memo warm); after clearing the cache (merging and
inserting, memo warm); and by a fresh tokenizer (all of it cold, as
compare.py's per-line runs meet their new chunks).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Set

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPUS, MODEL, corpus_lines, machine_line, timed, utf8_len, versions_line  # noqa: E402

MARKER = "\u2581"


def chunks_of(tok: Any, line: str) -> List[str]:
    """The chunks spmbpe merges `line` in (the dummy prefix and spaces as
    "▁"): the text between every cut point of its core (split_points with
    a share per byte returns them all)."""
    cuts = tok._core.split_points(line, True, 3 * len(line.encode("utf-8")) + 4)
    bounds = [0, *cuts, len(line)]
    parts = [line[a:b] for a, b in zip(bounds, bounds[1:])]
    parts[0] = " " + parts[0]
    return [part.replace(" ", MARKER) for part in parts]


def main(argv: List[str] | None = None) -> int:
    import sentencepiece

    import spmbpe
    from spmbpe import _testing

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="rounds; the best counts (default: %(default)s)")
    parser.add_argument("--files", default="en_botchan.txt,code_py.txt", help="corpus files (default: %(default)s)")
    args = parser.parse_args(argv)
    print(f"# Machine: {machine_line()}")
    print(f"# Libraries: {versions_line(['spmbpe', 'sentencepiece'])}")
    print(f"# MB/s per line, best of {args.repeat}; ratio to sentencepiece in the same run")
    for name in args.files.split(","):
        lines = corpus_lines((CORPUS / name).read_text(encoding="utf-8"))
        size = utf8_len(lines)
        best: Dict[str, float] = {"sentencepiece": float("inf"), "empty cache": float("inf"),
                                  "filled cache": float("inf")}
        for _ in range(args.repeat):
            sp = sentencepiece.SentencePieceProcessor(model_file=str(MODEL))
            seconds, ref = timed(lambda: [sp.encode(x) for x in lines])
            best["sentencepiece"] = min(best["sentencepiece"], seconds)
            tok = spmbpe.load(MODEL)
            seconds, cold = timed(lambda: [tok.encode_ordinary(x) for x in lines])
            best["empty cache"] = min(best["empty cache"], seconds)
            seconds, warm = timed(lambda: [tok.encode_ordinary(x) for x in lines])
            best["filled cache"] = min(best["filled cache"], seconds)
            if cold != ref or warm != ref:
                print(f"{name}: spmbpe's ids differ from sentencepiece's", file=sys.stderr)
                return 1
        base = size / 1e6 / best["sentencepiece"]
        cells = ", ".join(f"{k} {size / 1e6 / v:.1f} MB/s ({size / 1e6 / v / base:.1f}x)" for k, v in best.items())
        chunks = [c for line in lines for c in chunks_of(tok, line)]
        merged = {c for c in chunks if len(c) > 1}
        print(f"{name}: {cells}; {len(chunks):,} chunks, {len(merged):,} distinct ones of 2 or more "
              f"characters ({sum(map(len, merged)):,} characters) to merge")
        print(f"{name}: first merge, ns per chunk: {first_merge_costs(spmbpe, merged, args.repeat)}")
    return 0


def first_merge_costs(spmbpe: Any, merged: Set[str], repeat: int) -> str:
    """What a first merge costs (the module docstring's last paragraph),
    as one line of text."""
    doc = "".join(chunk.replace(MARKER, " ") for chunk in sorted(merged))

    def best(prepare: Any) -> float:
        seconds = float("inf")
        for _ in range(repeat):
            tok = prepare()
            seconds = min(seconds, timed(lambda: tok.encode_ordinary(doc))[0])
        return seconds * 1e9 / n_chunks

    cached = spmbpe.load(MODEL)
    cached.encode_ordinary(doc)
    n_chunks = len(chunks_of(cached, doc))
    # (The smallest cache the core allows: its entries fill at once, so
    # every later chunk is merged and nothing is stored.)
    uncached = spmbpe.load(MODEL)
    _testing.limit_cache(uncached._core, 1024, 64)
    uncached.encode_ordinary(doc)
    cleared = spmbpe.load(MODEL)
    cleared.encode_ordinary(doc)

    def clear() -> Any:
        _testing.clear_cache(cleared._core)
        return cleared

    costs = {
        "all cached": best(lambda: cached),
        "merge only": best(lambda: uncached),
        "merge and insert": best(clear),
        "fresh tokenizer": best(lambda: spmbpe.load(MODEL)),
    }
    return f"{n_chunks:,} chunks; " + ", ".join(f"{k} {v:.0f}" for k, v in costs.items())


if __name__ == "__main__":
    sys.exit(main())
