"""Peak memory and throughput of ``spmbpe encode`` on a large corpus.

    python benchmarks/cli_memory.py [--size-mb 1000] [--format npy] [--threads N]
                                    [--shard-size 100M] [--batch-size 2M] [--long-doc-mb 0]
                                    [--dir DIR] [--keep]

Builds a text corpus of --size-mb MB (the files of tests/data/corpus repeated,
one document per line; --long-doc-mb adds one single-line document of that
size in the middle), runs ``python -m spmbpe encode`` on it as a child process
and reports:

- peak RSS: the highest VmRSS sampled from /proc every 0.2 s (and in each
  tenth of the run: flat when memory is bounded), and the child's ru_maxrss
  (which also counts this process's own peak, inherited across exec); beside
  it the peak of a process that only imports spmbpe and NumPy and loads the
  model;
- wall time, MB/s of input and tokens/s;
- a check: the document count equals the line count, and the first and
  last 2,000 documents equal the API's ids (``encode(special="none")``).

The corpus and the output go to --dir (default: a temporary folder, removed
afterwards unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"


def build_corpus(path: Path, size: int, long_doc: int) -> int:
    """Writes about `size` bytes of corpus lines to `path`; returns the line count."""
    parts = [p.read_bytes() for p in sorted(CORPUS.glob("*.txt"))]
    parts = [p if p.endswith(b"\n") else p + b"\n" for p in parts]
    block = b"".join(parts)
    lines = 0
    written = 0
    with open(path, "wb") as f:
        while written < size:
            f.write(block)
            written += len(block)
            lines += block.count(b"\n")
            if long_doc and written >= size // 2:
                words = (b"lorem ipsum dolor sit amet consectetur adipiscing elit " * (long_doc // 56 + 1))[:long_doc]
                f.write(words + b"\n")
                written += long_doc + 1
                lines += 1
                long_doc = 0
    return lines


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def baseline_rss_mb(model: str) -> float:
    # VmHWM, not ru_maxrss: ru_maxrss keeps the parent's peak across exec.
    code = (
        "import numpy, spmbpe; spmbpe.load(%r); "
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])" % model
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True)
    return int(out.stdout.split()[-1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1000)
    parser.add_argument("--format", choices=("npy", "bin", "txt"), default="npy")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--shard-size", default="100M")
    parser.add_argument("--long-doc-mb", type=float, default=0)
    parser.add_argument("--batch-size", default=None, help="passed on to spmbpe encode")
    parser.add_argument("--model", default="mistral-v1")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    folder = Path(args.dir or tempfile.mkdtemp(prefix="spmbpe-cli-memory-"))
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.txt"
    try:
        t0 = time.monotonic()
        n_lines = build_corpus(corpus, int(args.size_mb * 1e6), int(args.long_doc_mb * 1e6))
        size = corpus.stat().st_size
        print(f"corpus: {size / 1e6:,.0f} MB, {n_lines:,} lines ({time.monotonic() - t0:.0f} s to write)")

        out = folder / f"out.{args.format}"
        cmd = [sys.executable, "-m", "spmbpe", "encode", "--model", args.model, "--format", args.format,
               "--output", str(out), str(corpus)]
        if args.format != "txt" and args.shard_size:
            cmd += ["--shard-size", args.shard_size]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        if args.batch_size:
            cmd += ["--batch-size", args.batch_size]
        print("command:", " ".join(cmd))
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
        samples = []
        while proc.poll() is None:
            samples.append((time.monotonic() - start, rss_kb(proc.pid)))
            time.sleep(0.2)
        wall = time.monotonic() - start
        sampled = max((r for _, r in samples), default=0)
        # The highest RSS in each tenth of the run: flat when memory is bounded.
        tenths = [max((r for t, r in samples if k * wall / 10 <= t < (k + 1) * wall / 10), default=0) for k in range(10)]
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            print(err, file=sys.stderr)
            return 1
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB on Linux

        tokens = None
        if args.format != "txt":
            meta = json.loads((folder / f"out.{args.format}.meta.json").read_text())
            tokens = meta["tokens"]
        base = baseline_rss_mb(args.model)
        print(f"peak RSS: {sampled / 1024:,.0f} MB (highest VmRSS sample), {peak / 1024:,.0f} MB (ru_maxrss); "
              f"import + model alone: {base:,.0f} MB")
        print(f"wall: {wall:,.1f} s, {size / 1e6 / wall:,.1f} MB/s"
              + (f", {tokens:,} tokens, {tokens / wall:,.0f} tokens/s" if tokens else ""))
        print("peak RSS per tenth of the run (MB):", " ".join(f"{r / 1024:.0f}" for r in tenths))
        if err.strip():
            print("stderr:", err.strip())
        if args.format != "txt":
            assert meta["documents"] == n_lines, (meta["documents"], n_lines)
            check(folder, meta, corpus, args.model, n_lines)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def check(folder: Path, meta: dict, corpus: Path, model: str, n_lines: int) -> None:
    """The first and last 2,000 documents equal the API's ids."""
    import spmbpe

    tok = spmbpe.load(model)
    fmt = meta["format"]
    shards = meta["shards"]

    def docs_of(shard: dict):
        if fmt == "npy":
            ids = np.load(folder / shard["ids"], mmap_mode="r")
            starts = np.load(folder / shard["index"], mmap_mode="r")
        else:
            from spmbpe._arrays import read_megatron_index

            index = read_megatron_index(str(folder / shard["index"]))
            ids = np.memmap(folder / shard["ids"], dtype=np.dtype(index["dtype"]), mode="r")
            starts = np.concatenate(([0], np.cumsum(index["lengths"], dtype=np.int64)))
        return ids, starts

    with open(corpus, "rb") as f:
        head = [next(f).decode().rstrip("\n").removesuffix("\r") for _ in range(2000)]
    ids, starts = docs_of(shards[0])
    got = [ids[starts[i] : starts[i + 1]].tolist() for i in range(min(2000, len(starts) - 1))]
    expected = [tok.encode(t, special="none") for t in head[: len(got)]]
    bad = [i for i in range(len(got)) if got[i] != expected[i]]
    assert not bad, f"first documents differ: {len(bad)}, the first at line {bad[0] + 1}: {head[bad[0]]!r}"
    with open(corpus, "rb") as f:
        f.seek(-4_000_000, os.SEEK_END)
        tail = [t.removesuffix(b"\r") for t in f.read().split(b"\n")[1:-1][-2000:]]
    ids, starts = docs_of(shards[-1])
    n = min(len(tail), len(starts) - 1)
    got = [ids[starts[i] : starts[i + 1]].tolist() for i in range(len(starts) - 1 - n, len(starts) - 1)]
    expected = [tok.encode(t.decode(), special="none") for t in tail[-n:]]
    bad = [i for i in range(n) if got[i] != expected[i]]
    assert not bad, f"last documents differ: {len(bad)}, the first: {tail[-n:][bad[0]]!r}"
    print(f"check: {n_lines:,} documents; first and last 2,000 equal the API's ids")


if __name__ == "__main__":
    sys.exit(main())
