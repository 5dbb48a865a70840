"""Two builds of spmbpe timed in turns on the same slices of a file: a before/after
of a change that a shared machine's drifting speed would hide.

    python benchmarks/ab_builds.py BEFORE AFTER [--file F] [--mb N] [--slices N]
                                   [--passes N] [--mode line|batch1|batch2|doc] [--cache N]
                                   [--special all|none|raise]

BEFORE and AFTER are directories holding a built ``spmbpe`` package (a checkout or a
``git worktree`` of another commit after ``python setup.py build_ext --inplace``).
Each gets a worker process with that directory first on its path; both load the
model and the file's non-blank lines, cut into --slices slices.  The workers then
take turns, a slice at a time (the order swapped every slice), each timing one
slice: every line by its own ``encode_ordinary`` call (``line``), or the slice in
one ``encode_batch(..., return_numpy=True, special="none")`` on one or two threads
(``batch1``, ``batch2``), or the slice's lines joined by newlines as one document
in one ``encode_ordinary`` call (``doc``; ``--slices 1`` makes the file one
document, and each pass one call on the same tokenizer).  The whole file is read
--passes times: the first pass on a fresh tokenizer, later ones on its filled
cache.  With ``line``, ``batch1`` and ``doc`` both workers are pinned to one core
(Linux), which also keeps each off the other's cache.
``--special P`` times ``encode(line, special=P)`` per line instead (and passes
``special=P`` to the batch call).  ``--cache N`` sets both tokenizers'
``cache_capacity`` (the header gives what each then holds: it is rounded up);
``--cache 0`` merges every chunk at every sighting, which times the merge itself,
what a corpus's new words cost.

The last column gives the same ratios in CPU time of each worker's process
(both threads' for batch2): on a machine shared with other work, wall time
counts the waits for a core, CPU time does not.

Alternating fresh processes seconds apart do not steady a change of a few percent
on a shared VM, whose speed drifts between runs of the same code; turns a few
milliseconds apart see the same speed.  Per pass, the table gives each
build's MB/s and AFTER over BEFORE: the median over the slices of the ratio of
their times, and the ratio of the totals.  The ids of every slice are compared
(a CRC of them): a change that alters an id is reported, not timed as a speed-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CORPUS, MODEL  # noqa: E402

MODES = ("line", "batch1", "batch2", "doc")

WORKER = r'''
import sys, time, zlib
from array import array
path, mb, slices, mode, model, cache = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
special = sys.argv[7] or None
import spmbpe
data = open(path, "rb").read(int(mb * 1e6) if mb > 0 else -1).decode("utf-8", "ignore")
lines = [line for line in data.split("\n") if line.strip()]
tok = spmbpe.load(model)
if cache >= 0:
    tok.cache_capacity = cache
import numpy  # (imported before any timing)
size = max(1, len(lines) // slices)
parts = [lines[i * size:(i + 1) * size] for i in range(slices)]
if mode == "doc":
    parts = ["\n".join(p) for p in parts]
    nbytes = [len(p.encode("utf-8")) for p in parts]
else:
    nbytes = [sum(len(x.encode("utf-8")) for x in p) for p in parts]
del data, lines
print("ready", spmbpe.__file__, tok.cache_capacity, flush=True)
for command in sys.stdin:
    j = int(command) % slices
    part, enc = parts[j], tok.encode_ordinary if special is None else tok.encode
    t, c = time.perf_counter(), time.process_time()
    if mode == "doc":
        out = [enc(part) if special is None else enc(part, special=special)]
    elif mode == "line" and special is None:
        out = [enc(x) for x in part]
    elif mode == "line":
        out = [enc(x, special=special) for x in part]
    else:
        out = tok.encode_batch(part, num_threads=int(mode[-1]), return_numpy=True, special=special or "none")
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    if mode in ("line", "doc"):
        crc = zlib.crc32(array("i", [i for ids in out for i in ids]).tobytes())
    else:
        crc = zlib.crc32(out[0].astype("int32").tobytes())
    print(repr(seconds), nbytes[j], crc, repr(cpu), flush=True)
'''


def start(tree: str, args: argparse.Namespace) -> subprocess.Popen:
    pin = ["taskset", "-c", "0"] if args.mode in ("line", "batch1", "doc") and sys.platform.startswith("linux") else []
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OPENBLAS_NUM_THREADS="1")
    cmd = pin + [sys.executable, "-c", WORKER, str(args.file), str(args.mb), str(args.slices), args.mode, str(args.model),
                  str(-1 if args.cache is None else args.cache), args.special or ""]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/")
    assert proc.stdout is not None
    head = proc.stdout.readline().split()
    problem = None
    if not head or head[0] != "ready":
        problem = f"{tree}: the worker did not start (is spmbpe built there?)"
    elif not str(Path(head[1]).resolve()).startswith(str(Path(tree).resolve())):
        problem = f"{tree}: the worker imported spmbpe from {Path(head[1]).parent}, not from this build"
    if problem:
        proc.kill()
        proc.wait()
        raise SystemExit(problem)
    proc.cache_capacity = head[2]  # type: ignore[attr-defined]
    return proc


def turn(proc: subprocess.Popen, j: int) -> Tuple[float, int, int, float]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{j}\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"a worker stopped at slice {j} (its error is above)")
    seconds, nbytes, crc, cpu = line.split()
    return float(seconds), int(nbytes), int(crc), float(cpu)


def parse(argv: List[str]) -> argparse.Namespace:
    """The command line, checked, with the files' paths made absolute."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--file", type=Path, default=CORPUS / "en_botchan.txt")
    ap.add_argument("--mb", type=float, default=0.0, help="the file's first N MB (0: all of it)")
    ap.add_argument("--slices", type=int, default=20)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--mode", choices=MODES, default="line")
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--special", choices=("all", "none", "raise"), default=None,
                    help="per line encode(x, special=...) instead of encode_ordinary; in batch the same special=")
    ap.add_argument("--cache", type=int, default=None,
                    help="the chunk cache's capacity (0: none, every chunk merged; default: the tokenizer's)")
    args = ap.parse_args(argv)
    if args.slices < 1 or args.passes < 1:
        ap.error("--slices and --passes must be at least 1")
    if args.cache is not None and args.cache < 0:
        ap.error("--cache must be 0 or more")
    # (The workers run from the root directory: no checkout there shadows a build.)
    args.file, args.model = args.file.resolve(), args.model.resolve()
    for path in (args.file, args.model):
        if not path.is_file():
            ap.error(f"no such file: {path}")
    return args


def measure(args: argparse.Namespace) -> Dict[str, Any]:
    """The two builds in turns: per pass, each build's MB/s and AFTER over
    BEFORE (the median over the slices of the ratio of their times, and the
    ratio of the totals); the slices whose ids differ; each worker's cache."""
    procs = [start(args.before, args), start(args.after, args)]
    times: List[List[float]] = [[], []]
    cpus: List[List[float]] = [[], []]
    sizes: List[int] = []
    differ: List[int] = []
    try:
        for j in range(args.slices * args.passes):
            got: List[Tuple] = [(), ()]
            for k in ((0, 1) if j % 2 == 0 else (1, 0)):
                got[k] = turn(procs[k], j)
            for k in (0, 1):
                times[k].append(got[k][0])
                cpus[k].append(got[k][3] if len(got[k]) > 3 else got[k][0])
            sizes.append(got[0][1])
            if got[0][2] != got[1][2]:
                differ.append(j % args.slices)
    finally:
        for proc in procs:
            if proc.stdin:
                proc.stdin.close()
            proc.wait()
    passes = []
    for p in range(args.passes):
        lo, hi = p * args.slices, (p + 1) * args.slices
        nbytes = sum(sizes[lo:hi])
        before, after = times[0][lo:hi], times[1][lo:hi]
        cpu_before, cpu_after = cpus[0][lo:hi], cpus[1][lo:hi]
        passes.append({"before_mbs": nbytes / sum(before) / 1e6, "after_mbs": nbytes / sum(after) / 1e6,
                       "median": statistics.median(b / a for a, b in zip(after, before)),
                       "total": sum(before) / sum(after),
                       # The same in CPU time of each worker's process: steadier where
                       # other processes take turns on the cores (wall time counts
                       # the waits); for batch2, both threads' time.
                       "cpu_before_mbs": nbytes / max(sum(cpu_before), 1e-9) / 1e6,
                       "cpu_after_mbs": nbytes / max(sum(cpu_after), 1e-9) / 1e6,
                       "cpu_median": statistics.median(b / max(a, 1e-9) for a, b in zip(cpu_after, cpu_before)),
                       "cpu_total": sum(cpu_before) / max(sum(cpu_after), 1e-9)})
    # (The cache: what each tokenizer holds, as set_cache_capacity rounds up.)
    return {"passes": passes, "differ": sorted(set(differ)),
            "cache": [getattr(proc, "cache_capacity", "?") for proc in procs]}


def main(argv: List[str]) -> int:
    args = parse(argv)
    result = measure(args)
    settings = "" if args.cache is None else f", cache {result['cache'][0]}/{result['cache'][1]}"
    settings += "" if args.special is None else f", special={args.special}"
    print(f"{args.file.name}, {args.mode}{settings}, {args.slices} slices, {args.passes} pass(es); "
          f"after / before: median over the slices (total)")
    print(f"{'pass':>4}  {'before MB/s':>11}  {'after MB/s':>10}  {'after/before':>14}  {'in CPU time':>14}")
    for p, r in enumerate(result["passes"]):
        print(f"{p:>4}  {r['before_mbs']:>11.1f}  {r['after_mbs']:>10.1f}  "
              f"{r['median']:>6.3f} ({r['total']:.3f})  {r['cpu_median']:>6.3f} ({r['cpu_total']:.3f})")
    if result["differ"]:
        print(f"ids differ between the builds on slice(s) {result['differ']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
