"""Per-line throughput with spmbpe's chunk cache empty and filled, against
sentencepiece: how much of the per-line time is the merging of chunks seen
for the first time.

    python benchmarks/cache_effect.py [--repeat N] [--files a.txt,b.txt]

Every non-blank line is its own call, one thread, mistral-v1's `.model`.
Each round times, in turn: sentencepiece (fresh processor); spmbpe with a
fresh tokenizer (empty cache, as compare.py times it); the same spmbpe
tokenizer again over the same lines (every chunk cached).  Best of --repeat
rounds, with the ratio to sentencepiece.  Also prints the number of
distinct chunks among all, cutting before each "▁" that follows other text
(the chunking of mistral-v1 on text without CJK characters).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPUS, MODEL, corpus_lines, machine_line, timed, utf8_len, versions_line  # noqa: E402

MARKER = "\u2581"


def chunks_of(line: str) -> List[str]:
    """The line escaped as spmbpe escapes it (dummy prefix, spaces as "▁"),
    cut before each "▁" that follows other text."""
    text = MARKER + line.replace(" ", MARKER)
    out: List[str] = []
    start = 0
    for i in range(1, len(text)):
        if text[i] == MARKER and text[i - 1] != MARKER:
            out.append(text[start:i])
            start = i
    out.append(text[start:])
    return out


def main(argv: List[str] | None = None) -> int:
    import sentencepiece

    import spmbpe

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
        chunks = [c for line in lines for c in chunks_of(line)]
        print(f"{name}: {cells}; {len(set(chunks)):,} distinct chunks among {len(chunks):,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
