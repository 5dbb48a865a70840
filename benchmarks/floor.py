"""spmbpe's warm one-thread NumPy batch against a C floor doing the same job from
a precomputed table of every chunk's ids.

    python benchmarks/floor.py [FILE ...] [--corpus DIR] [--cold FILE] [--mb N]
                               [--repeat N] [--cache N] [--cc CC] [--json OUT]

FILEs (default: en_man.txt and code_stdlib.txt of the large corpus, --corpus
DIR or $SPMBPE_LARGE_CORPUS, and --cold FILE, e.g. the cold.txt of
benchmarks/make_cold_corpus.py): each file's non-blank lines (its first --mb
MB, cut at a line end, when given), on mistral-v1's ``.model``.

The floor (benchmarks/floor.c, compiled here with ``CC -O2`` in a temporary
folder): a portable C program that scans each line for word-level chunk starts
(the line's start and each space that follows a non-space), hashes each chunk
(a wyhash-class hash), looks it up in an open-addressing table, copies its ids
into fresh output pages and writes each line's start -- the job of
``encode_batch(lines, num_threads=1, return_numpy=True)`` with nothing left to
merge.  Its table, built here untimed, holds the ids spmbpe gives each distinct
chunk (a line's first chunk "word" as "▁word", a later " word" as "▁word" too:
sentencepiece's dummy prefix and escaped spaces), loaded untimed.

Timed in turns, --repeat rounds: the floor (a fresh process timing three runs
and keeping its best) and spmbpe's batch on one tokenizer whose cache a first,
untimed batch has filled (``--cache N`` sets its ``cache_capacity`` first; a
corpus with more distinct chunks than the cache holds is not all warm, which
the figure then includes).  Both in CPU time of the process, the best of the
rounds; MB/s of the lines' UTF-8.  The ratio spmbpe / floor is given of the
best runs and as the median of the rounds' ratios (paired), against issue
49's target (TARGET).

The floor's ids are checked against spmbpe's batch, line by line: a word-level
split can give other ids than merging the whole line where the vocabulary has
a piece that spans a chunk start (e.g. a space after a non-space); the number
of differing lines and an example are printed, not hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import MODEL, corpus_lines, load_line, machine_line, utf8_len, versions_line, word_chunks  # noqa: E402

TARGET = 0.75  # issue 49: the warm one-thread NumPy batch over the floor
SOURCE = HERE / "floor.c"


def compile_floor(tmp: Path, cc: str) -> Path:
    exe = tmp / "floor"
    subprocess.run([cc, "-O2", "-o", str(exe), str(SOURCE)], check=True)
    return exe


def chunk_table(lines: List[str]) -> Dict[Tuple[bool, str], None]:
    """Every distinct (starts its line, chunk text) of the lines, in order."""
    keys: Dict[Tuple[bool, str], None] = {}
    for line in lines:
        for key in word_chunks(line):
            keys[key] = None
    return keys


def write_table(path: Path, tok, keys: List[Tuple[bool, str]]) -> None:
    """The floor's table: each chunk's ids as spmbpe gives them."""
    # A chunk's text with sentencepiece's dummy prefix applied by encode: a
    # line's first chunk as it is, a later one without the space that stands
    # for its "▁" (" word" -> "word" -> "▁word"); a lone trailing space is
    # the "▁" piece itself, which no text of its own gives.
    space = [tok.piece_to_id("\u2581")]
    texts = [c if first else c[1:] for first, c in keys]
    ids, starts = tok.encode_batch(texts, num_threads=1, return_numpy=True, special="none")
    with open(path, "wb") as f:
        f.write(b"SPMFLR01" + struct.pack("<I", len(keys)))
        for i, (first, c) in enumerate(keys):
            raw = c.encode("utf-8")
            own = [int(x) for x in ids[starts[i]:starts[i + 1]]] if texts[i] else space
            f.write(struct.pack("<II", len(raw) | (first << 31), len(own)))
            f.write(raw)
            f.write(struct.pack(f"<{len(own)}I", *own))


def differing_lines(a_ids, a_starts, b_ids, b_starts) -> List[int]:
    """Indices of the lines whose ids differ between two flat outputs."""
    import numpy as np

    a_starts, b_starts = np.asarray(a_starts, np.int64), np.asarray(b_starts, np.int64)
    if len(a_starts) != len(b_starts):
        return list(range(max(len(a_starts), len(b_starts)) - 1))
    la, lb = np.diff(a_starts), np.diff(b_starts)
    bad = la != lb
    same = ~bad & (la > 0)

    def sums(ids, starts, lengths):
        # Per line, two sums of its ids weighted by their places in it: equal
        # lines give equal sums; a difference changes them but for a
        # collision of both at once.
        ids = np.asarray(ids, np.uint64)
        pos = np.arange(len(ids), dtype=np.uint64) - np.repeat(starts[:-1], lengths).astype(np.uint64) + 1
        s1 = np.add.reduceat(ids * pos, starts[:-1][lengths > 0]) if len(ids) else np.zeros(0, np.uint64)
        s2 = np.add.reduceat((ids + np.uint64(0x9E3779B1)) * (ids ^ (pos * np.uint64(0x85EBCA77))),
                             starts[:-1][lengths > 0]) if len(ids) else np.zeros(0, np.uint64)
        out1 = np.zeros(len(lengths), np.uint64)
        out2 = np.zeros(len(lengths), np.uint64)
        out1[lengths > 0], out2[lengths > 0] = s1, s2
        return out1, out2

    a1, a2 = sums(a_ids, a_starts, la)
    b1, b2 = sums(b_ids, b_starts, lb)
    bad |= same & ((a1 != b1) | (a2 != b2))
    return [int(i) for i in np.flatnonzero(bad)]


def _cpu() -> float:
    return time.process_time()


def measure(path: Path, tok_factory, *, mb: float = 0.0, repeat: int = 3, cache: Optional[int] = None,
            cc: str = "gcc", log=print) -> Dict[str, Any]:
    """The floor against spmbpe's warm one-thread NumPy batch on one file."""
    import numpy as np

    from scale import read_slice

    text = read_slice(str(path), int(mb * 1e6))
    lines = corpus_lines(text)
    del text
    nbytes = utf8_len(lines)
    tmp = Path(tempfile.mkdtemp(prefix="spmbpe-floor-"))
    try:
        exe = compile_floor(tmp, cc)
        t0 = time.perf_counter()
        keys = list(chunk_table(lines))
        write_table(tmp / "table.bin", tok_factory(), keys)
        with open(tmp / "input.txt", "w", encoding="utf-8", newline="\n") as f:
            for x in lines:
                f.write(x)
                f.write("\n")
        setup = time.perf_counter() - t0
        tok = tok_factory()
        if cache is not None:
            tok.cache_capacity = cache
        run = lambda: tok.encode_batch(lines, num_threads=1, return_numpy=True, special="none")  # noqa: E731
        mine = run()  # fills the cache (untimed); its ids are checked against the floor's
        floor_cpu: List[float] = []
        spmbpe_cpu: List[float] = []
        floor_info: Dict[str, Any] = {}
        outs = [str(tmp / "ids.bin"), str(tmp / "starts.bin")]
        for r in range(repeat):
            for who in (("floor", "spmbpe") if r % 2 == 0 else ("spmbpe", "floor")):
                if who == "floor":
                    proc = subprocess.run([str(exe), str(tmp / "table.bin"), str(tmp / "input.txt"), *outs, "3"],
                                          capture_output=True, text=True, check=True)
                    floor_info = json.loads(proc.stdout)
                    floor_cpu.append(floor_info["cpu_s"])
                else:
                    import gc

                    gc.collect()
                    gc.disable()
                    c0 = _cpu()
                    out = run()
                    spmbpe_cpu.append(_cpu() - c0)
                    gc.enable()
                    del out
        if floor_info["bytes"] != nbytes or floor_info["lines"] != len(lines):
            raise RuntimeError(f"{path.name}: the floor read {floor_info['bytes']} bytes in {floor_info['lines']} "
                               f"lines, spmbpe {nbytes} in {len(lines)}")
        f_ids = np.fromfile(outs[0], dtype="<u4")
        f_starts = np.fromfile(outs[1], dtype="<u8").astype(np.int64)
        bad = differing_lines(f_ids, f_starts, mine[0], mine[1])
        example = ""
        if bad:
            i = bad[0]
            example = (f"line {i + 1} {lines[i][:70]!r}: floor {f_ids[f_starts[i]:f_starts[i + 1]][:12].tolist()} "
                       f"spmbpe {mine[0][mine[1][i]:mine[1][i + 1]][:12].tolist()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    paired = statistics.median(f / s for f, s in zip(floor_cpu, spmbpe_cpu))
    result = {"file": path.name, "bytes": nbytes, "lines": len(lines), "chunks": floor_info["chunks"],
              "distinct_chunks": len(keys), "misses": floor_info["misses"], "setup_s": setup,
              "cache_capacity": tok.cache_capacity,
              "floor_mbs": nbytes / 1e6 / min(floor_cpu), "spmbpe_mbs": nbytes / 1e6 / min(spmbpe_cpu),
              "ratio": min(floor_cpu) / min(spmbpe_cpu), "paired": paired, "rounds": repeat,
              "differing_lines": len(bad), "example": example}
    return result


def row(r: Dict[str, Any]) -> List[str]:
    return [r["file"], f"{r['bytes'] / 1e6:.1f}", f"{r['distinct_chunks']:,}", f"{r['floor_mbs']:.0f}",
            f"{r['spmbpe_mbs']:.0f}", f"{r['ratio']:.2f}x", f"{r['paired']:.2f}x",
            "met" if r["ratio"] >= TARGET else "NOT MET", f"{r['differing_lines']:,} of {r['lines']:,}"]


HEAD = ["file", "MB", "distinct chunks", "floor MB/s", "spmbpe MB/s", "spmbpe/floor", "paired",
        f">= {TARGET}x", "lines differing"]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--corpus", type=Path, default=None, help="the large corpus (default: $SPMBPE_LARGE_CORPUS)")
    ap.add_argument("--cold", type=Path, default=None, help="a cold-heavy file (make_cold_corpus.py's cold.txt)")
    ap.add_argument("--mb", type=float, default=0.0, help="each file's first N MB (0: all)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (each: the floor's best of 3, spmbpe's one run)")
    ap.add_argument("--cache", type=int, default=None, help="spmbpe's cache_capacity (default: the tokenizer's)")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"), help="the C compiler (default: $CC, else gcc)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    from scale import checkout_first, default_corpus, _table

    files = list(args.files)
    if not files:
        corpus = args.corpus or default_corpus()
        files = [corpus / "en_man.txt", corpus / "code_stdlib.txt"]
    if args.cold:
        files.append(args.cold)
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        ap.error(f"no such file: {', '.join(missing)}")
    checkout_first()
    import spmbpe

    p = "" if args.markdown else "# "
    print(f"{p}Machine: {machine_line()}")
    print(f"{p}{versions_line(['spmbpe', 'numpy'])}; spmbpe from {Path(spmbpe.__file__).parent}; {load_line()}")
    print(f"{p}CPU time, best of {args.repeat} rounds (the floor: best of 3 runs a round); cc: {args.cc} -O2")
    results = []
    for path in files:
        r = measure(path, lambda: spmbpe.load(MODEL), mb=args.mb, repeat=args.repeat, cache=args.cache, cc=args.cc)
        results.append(r)
        if r["misses"]:
            print(f"{p}{path.name}: {r['misses']} chunks not in the floor's table: its chunking and floor.c's differ",
                  file=sys.stderr)
    _table(args.markdown, HEAD, [row(r) for r in results])
    for r in results:
        if r["example"]:
            print(f"{r['file']}: first differing {r['example']}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_line(), "results": results}, indent=1), encoding="utf-8")
    return 1 if any(r["misses"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
