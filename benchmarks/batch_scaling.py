"""spmbpe's encode_batch on N threads over its own one-thread time, by batch
size: each corpus file's lines as one batch (compare.py's batch mode), and
every file's lines together as one batch of several MB.

    python benchmarks/batch_scaling.py [--repeat N] [--threads N] [--settle S]

mistral-v1's `.model`, a fresh tokenizer for every timed call (the chunk
cache starts empty, as in compare.py).  Each round times the one-thread and
the N-thread call in turn (the order swapped every other round), each after
`--settle` seconds of sleep (compare.py waits only after a run of
tokenizers or splintr-rs, for Rayon's threads to go idle).  Prints, per
batch, the best times, their ratio, and the median and range of the ratios
within the rounds ("paired"), for lists of ids and for return_numpy=True
(when NumPy is installed).  The fixed costs of a call (waking the helper
thread, slow from an idle core, and building the Python lists, which only
the calling thread can do) weigh on a batch of a few milliseconds and fade
on a large one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPUS, MODEL, corpus_lines, machine_line, optional_import, timed, utf8_len, versions_line  # noqa: E402


def rounds(spmbpe: Any, texts: List[str], threads: int, repeat: int, settle: float,
           numpy_out: bool) -> Tuple[List[float], List[float]]:
    """The one-thread and the `threads`-thread seconds of each round."""
    one: List[float] = []
    many: List[float] = []

    def run(n: int) -> float:
        tok = spmbpe.load(MODEL)
        if settle:
            time.sleep(settle)
        return timed(lambda: tok.encode_batch(texts, num_threads=n, return_numpy=numpy_out))[0]

    for r in range(repeat):
        if r % 2:
            many.append(run(threads))
            one.append(run(1))
        else:
            one.append(run(1))
            many.append(run(threads))
    return one, many


def main(argv: List[str] | None = None) -> int:
    import spmbpe

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="rounds (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the parallel call (default: %(default)s)")
    parser.add_argument("--settle", type=float, default=0.05,
                        help="seconds of sleep before each timed call (default: %(default)s)")
    args = parser.parse_args(argv)
    outputs = ["lists"] + (["numpy"] if optional_import("numpy") is not None else [])
    print(f"# Machine: {machine_line()}")
    print(f"# Libraries: {versions_line(['spmbpe'])}")
    print(f"# encode_batch, {args.threads} threads / 1 thread; fresh tokenizer per call; {args.repeat} rounds, "
          f"settle {args.settle} s")
    batches: Dict[str, List[str]] = {}
    for path in sorted(CORPUS.glob("*.txt")):
        batches[path.name] = corpus_lines(path.read_text(encoding="utf-8"))
    batches["all files together"] = [line for lines in batches.values() for line in lines]
    print(f"{'batch':<20} {'MB':>5} {'texts':>7} {'output':<6} {'1t ms':>8} {f'{args.threads}t ms':>8} "
          f"{'best':>6} {'paired':>7} {'range':>11}")
    for name, texts in batches.items():
        for output in outputs:
            one, many = rounds(spmbpe, texts, args.threads, args.repeat, args.settle, output == "numpy")
            ratios = [a / b for a, b in zip(one, many)]
            print(f"{name:<20} {utf8_len(texts) / 1e6:>5.2f} {len(texts):>7} {output:<6} {min(one) * 1e3:>8.2f} "
                  f"{min(many) * 1e3:>8.2f} {min(one) / min(many):>5.2f}x {statistics.median(ratios):>6.2f}x "
                  f"{min(ratios):>5.2f}-{max(ratios):.2f}x")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
