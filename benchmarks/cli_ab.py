"""Two builds' command lines run in turns on one file: a before/after of a change
to what ``spmbpe encode`` does around the merge (start-up, imports, writing, the
close), end to end, as a user runs it.

    python benchmarks/cli_ab.py BEFORE AFTER [--file F] [--runs N] [--format bin|npy|ds|txt|jsonl]
                                [--model M] [--threads N]

BEFORE and AFTER are directories holding a built ``spmbpe`` package (a checkout or a
``git worktree`` of another commit after ``python setup.py build_ext --inplace``;
compile their bytecode first, ``python -m compileall -q spmbpe``, or the build without
it pays for compiling at every start).  Each run is ``python -m spmbpe encode --model M
--threads N --no-progress -o DIR/out.FMT FILE`` in a fresh process with that directory
first on ``PYTHONPATH``, into a fresh folder, timed from the parent (``--runs`` runs
of each build, the order swapped every round).  The table gives each build's best and
median wall time and AFTER over BEFORE as the median of the rounds' ratios of
BEFORE's time to AFTER's (above 1: AFTER is faster).  The two builds' output files
must be the same bytes: a change that alters them is reported, not timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CORPUS, MODEL  # noqa: E402

FORMATS = ("bin", "npy", "ds", "txt", "jsonl")


def run_once(tree: str, args: argparse.Namespace, folder: str) -> float:
    """One command's wall time; its output stays in `folder`."""
    env = dict(os.environ, PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "spmbpe", "encode", "--model", str(args.model), "--threads", str(args.threads),
           "--no-progress", "-o", os.path.join(folder, f"out.{args.format}"), str(args.file)]
    start = time.perf_counter()
    # (In the tree: `python -m` puts the working directory first on the path.)
    proc = subprocess.run(cmd, env=env, capture_output=True, cwd=tree)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return seconds


def outputs(folder: str) -> Dict[str, bytes]:
    """The files a run wrote, but for the metadata (it names the build's version)."""
    return {name: Path(folder, name).read_bytes() for name in sorted(os.listdir(folder))
            if not name.endswith(".meta.json")}


def parse(argv: List[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--file", type=Path, default=CORPUS / "en_botchan.txt")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--format", choices=FORMATS, default="bin")
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    args.file, args.model = args.file.resolve(), args.model.resolve()
    for path in (args.file, args.model):
        if not path.exists():
            ap.error(f"{path}: no such file")
    return args


def main(argv: List[str]) -> int:
    args = parse(argv)
    trees = [os.path.abspath(args.before), os.path.abspath(args.after)]
    times: Dict[str, List[float]] = {t: [] for t in trees}
    scratch = tempfile.mkdtemp(prefix="spmbpe-cli-ab-")
    try:
        for r in range(args.runs):
            written = []
            for tree in trees if r % 2 == 0 else trees[::-1]:
                folder = tempfile.mkdtemp(dir=scratch)
                times[tree].append(run_once(tree, args, folder))
                written.append(outputs(folder))
                shutil.rmtree(folder)
            if written[0] != written[1]:
                print(f"{args.file.name}: the two builds wrote different outputs; not timed")
                return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    size = args.file.stat().st_size / 1e6
    print(f"{args.file.name} ({size:.1f} MB) -> .{args.format}, {args.threads} thread(s), {args.runs} runs of each")
    print(f"{'build':40s} {'best s':>8s} {'median s':>9s}")
    for name, tree in (("before", trees[0]), ("after", trees[1])):
        print(f"{name + ' ' + tree:40.40s} {min(times[tree]):8.3f} {statistics.median(times[tree]):9.3f}")
    ratio = statistics.median(b / a for b, a in zip(times[trees[0]], times[trees[1]]))
    print(f"before/after, median of the rounds: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
