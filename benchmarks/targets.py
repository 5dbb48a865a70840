"""Every target of issue 49 section 4, measured in one command, each marked MET or NOT MET.

    python benchmarks/targets.py --corpus LARGE_DIR --cold COLD.txt [--base BASE_CHECKOUT]
                                 [--python PATH ...] [--files a.txt,b.txt] [--repeat N]
                                 [--threads N] [--limit-mb N] [--sections merge,floor,scale,job]
                                 [--markdown] [--json OUT.json]

LARGE_DIR is the corpus of ``make_large_corpus.py``, COLD.txt the cold.txt of
``benchmarks/make_cold_corpus.py``; spmbpe is the build beside this script (its
extension built in place; else the installed one), on mistral-v1.  Each section
reuses the script that measures it, and prints that script's own tables as it
goes; the summary at the end gives every figure with its target:

  merge  the merge alone: ``cache_capacity = 0``, one-thread NumPy batch, this
         build over BASE's (a checkout of the commit to compare with, built in
         place, e.g. ``git worktree add ../wt-base 68c0db6`` and ``python
         setup.py build_ext --inplace`` there), by benchmarks/ab_builds.py (the
         two builds in turns on the same slices, ids compared; the ratio of
         their CPU times, the wall times' beside it): T_MERGE on en_man and
         code_stdlib; the cold text is given too.  Left out without --base.
  floor  the warm one-thread NumPy batch over benchmarks/floor.py's C floor
         (CPU time, same run): T_FLOOR on en_man, code_stdlib and the cold text.
         The tokenizer keeps its own cache_capacity (--floor-cache N sets it):
         a text with more distinct chunks than it holds is not all warm.
  scale  benchmarks/scale.py on every .txt of LARGE_DIR and the cold text (fresh
         processes, ids checked first, modes line, batch, batch1, numpy, files):
         per line, one thread, spmbpe .model over the fastest agreeing peer
         (T_LINE: English, code and the cold text, then the other
         languages); the two-thread NumPy batch over the fastest peer batch,
         lists, flat or gigatoken's encode_files (T_BATCH); every format
         (GGUF, tokenizer.json, HF folder; encode_ordinary and encode(special=
         "all")) per line and in the NumPy batch T_FORMAT of the .model's; memory,
         loaded and after a batch, <= sentencepiece's, for every format; two
         threads T_SCALING of one (encode_batch, lists).
  job    the main job, on every LARGE_DIR file concatenated (>= 100 MB) and on
         the cold text: ``spmbpe encode --format bin`` (end to end, its own
         process) T_JOB_PEER of gigatoken's encode_files on the same file and
         threads, and T_JOB_INPROC of the same job in-process (read, encode_batch(return_numpy=
         True), write).

--python PATH (repeatable) adds another environment's peers to the scale and
job sections (e.g. a second tokenizers version, or the peers' own environment);
--limit-mb N takes each file's first N MB (a quick check that everything runs,
not figures to quote).  Figures are same-run ratios: on a shared machine the
absolute MB/s drift, a ratio of turns seconds apart much less; the paired
column is the median of the rounds' ratios where there are rounds.  The header
records the machine, the load, the libraries' versions and both commits; the
summary is printed as a Markdown table with --markdown, and every figure goes
to --json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _peers  # noqa: E402
import ab_builds  # noqa: E402
import floor  # noqa: E402
import scale  # noqa: E402
from _common import MODEL, load_line, machine_line, usable_cores  # noqa: E402

SECTIONS = ("merge", "floor", "scale", "job")
# Issue 49's targets (same-run ratios on this machine).
T_MERGE = 2.5
T_FLOOR = floor.TARGET
T_LINE = (5.0, 3.0)    # English, code, the cold text / other languages
T_BATCH = (8.0, 5.0)
T_JOB_PEER = 4.0
T_JOB_INPROC = 0.9
T_FORMAT = 0.9
T_MEMORY = 1.0
T_SCALING = 1.8
MAIN_FILES = ("en_man.txt", "code_stdlib.txt")
JOB_FILE = "large_all.txt"


def commit_of(tree: Path) -> str:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "spmbpe", "csrc", "setup.py")
    return head + (" (modified)" if dirty else "")


def cc_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
        return out.splitlines()[0] if out else cc
    except OSError:
        return f"{cc} (not found)"


class Summary:
    """The figures against their targets, in order."""

    def __init__(self) -> None:
        self.rows: List[Dict[str, Any]] = []

    def add(self, target: str, file: str, figure: str, ratio: Optional[float], goal: Optional[float],
            paired: Optional[float] = None, at_least: bool = True, note: str = "") -> None:
        """A figure; `goal` None: given for the record, with no target."""
        met = None if ratio is None or goal is None else (ratio >= goal if at_least else ratio <= goal)
        self.rows.append({"target": target, "file": file, "figure": figure, "ratio": ratio, "paired": paired,
                          "goal": "-" if goal is None else f"{'>=' if at_least else '<='} {goal:g}x",
                          "met": met, "note": note})

    def table(self, markdown: bool) -> None:
        head = ["target", "file", "figure", "ratio", "paired", "goal", ""]
        rows = []
        for r in self.rows:
            if r["met"] is None:
                met = "not measured" if r["ratio"] is None else "-"
            else:
                met = "MET" if r["met"] else "NOT MET"
            rows.append([r["target"], r["file"], r["figure"] + (f" ({r['note']})" if r["note"] else ""),
                         "-" if r["ratio"] is None else f"{r['ratio']:.2f}x",
                         "-" if r["paired"] is None else f"{r['paired']:.2f}x", r["goal"], met])
        scale._table(markdown, head, rows)


# --------------------------------------------------------------------------
# Sections


def merge_section(args, files: Dict[str, Path], summary: Summary, report: Dict[str, Any]) -> None:
    if not args.base:
        summary.add("merge alone", "-", "cache_capacity=0, numpy 1t: this build / base", None, T_MERGE,
                    note="no --base given")
        return
    out = report.setdefault("merge", {})
    for name in (*MAIN_FILES, args.cold.name if args.cold else None):
        if name is None or name not in files:
            continue
        ns = ab_builds.parse([str(args.base), str(ROOT), "--file", str(files[name]), "--mb", str(args.limit_mb),
                              "--slices", str(args.merge_slices), "--passes", "1", "--mode", "batch1",
                              "--cache", "0"])
        r = ab_builds.measure(ns)
        out[name] = r
        p = r["passes"][0]
        print(f"# merge alone, {name}, CPU time: base {p['cpu_before_mbs']:.1f} MB/s, this build "
              f"{p['cpu_after_mbs']:.1f} MB/s, this/base {p['cpu_total']:.2f}x (median of {args.merge_slices} "
              f"slices {p['cpu_median']:.2f}x); wall time: {p['before_mbs']:.1f} and {p['after_mbs']:.1f} MB/s, "
              f"{p['total']:.2f}x" + (f"; ids differ on slices {r['differ']}" if r["differ"] else ""), flush=True)
        note = (f"CPU time: base {p['cpu_before_mbs']:.1f} MB/s, this {p['cpu_after_mbs']:.1f}; "
                f"wall {p['total']:.2f}x")
        if r["differ"]:
            note += "; ids DIFFER"
        summary.add("merge alone (cache 0, numpy 1t)", name, "this build / base", p["cpu_total"],
                    T_MERGE if name in MAIN_FILES else None, paired=p["cpu_median"], note=note)


def floor_section(args, files: Dict[str, Path], summary: Summary, report: Dict[str, Any]) -> None:
    import spmbpe

    out = report.setdefault("floor", {})
    names = [n for n in (*MAIN_FILES, args.cold.name if args.cold else None) if n and n in files]
    rows = []
    for name in names:
        r = floor.measure(files[name], lambda: spmbpe.load(MODEL), mb=args.limit_mb, repeat=args.repeat + 2,
                          cache=args.floor_cache, cc=args.cc)
        out[name] = r
        rows.append(floor.row(r))
        note = (f"floor {r['floor_mbs']:.0f} MB/s, spmbpe {r['spmbpe_mbs']:.0f} MB/s; {r['distinct_chunks']:,} "
                f"distinct chunks, spmbpe's cache {r['cache_capacity']:,}")
        if r["differing_lines"]:
            note += f"; {r['differing_lines']:,} of {r['lines']:,} lines' ids differ"
        if r["misses"]:
            note += f"; {r['misses']:,} chunks missing from the table"
        summary.add("warm numpy 1t / C floor (CPU time)", name, "spmbpe / floor", r["ratio"], T_FLOOR,
                    paired=r["paired"], note=note)
    print()
    print("C floor against spmbpe's warm one-thread NumPy batch")
    scale._table(args.markdown, floor.HEAD, rows)


def _kind(name: str) -> int:
    return 1 if _peers.file_kind(name) == "other" else 0


def run_scale(args, corpus: Path, names: List[str], modes: str, columns: Optional[str], out: Path) -> Dict[str, Any]:
    argv = ["--corpus", str(corpus), "--files", ",".join(names), "--modes", modes, "--repeat", str(args.repeat),
            "--threads", str(args.threads), "--json", str(out)]
    if args.limit_mb:
        argv += ["--limit-mb", str(args.limit_mb)]
    if columns:
        argv += ["--columns", columns]
    if args.markdown:
        argv.append("--markdown")
    for p in args.python:
        argv += ["--python", p]
    status = scale.main(argv)
    rep = json.loads(out.read_text(encoding="utf-8"))
    rep["status"] = status
    return rep


def scale_section(args, corpus: Path, names: List[str], summary: Summary, report: Dict[str, Any],
                  tmp: Path) -> None:
    rep = run_scale(args, corpus, names, "line,batch,batch1,numpy,files", args.columns, tmp / "scale.json")
    report["scale"] = rep
    cols = rep["columns"]
    peers = [k for k, c in cols.items() if not c["spmbpe"] and c["family"] == "spm"]
    mine = [k for k, c in cols.items() if c["spmbpe"]]
    for name, fr in rep["files"].items():
        k = _kind(name)
        triple = scale._ratio(fr, ("spmbpe model", "line"), [(p, "line") for p in peers])
        summary.add("per line 1t / fastest agreeing peer", name, f"spmbpe .model / {triple[2] or '-'}",
                    triple[0], T_LINE[k], paired=triple[1])
    for name, fr in rep["files"].items():
        k = _kind(name)
        batches = [(p, m) for p in peers for m in ("batch", "numpy", "files")]
        triple = scale._ratio(fr, ("spmbpe model", "numpy"), batches)
        timed_batches = [(scale.rate(fr, *b), b) for b in batches if scale.rate(fr, *b)]
        which = " ".join(max(timed_batches)[1]) if timed_batches else "-"
        summary.add(f"numpy {args.threads}t / fastest peer batch", name, f"spmbpe .model / {which}",
                    triple[0], T_BATCH[k], paired=triple[1])
    for name, fr in rep["files"].items():
        worst: Tuple[Optional[float], Optional[float], str] = (None, None, "")
        for key in mine:
            if key == "spmbpe model":
                continue
            for mode in ("line", "numpy"):
                ratio, paired, _ = scale._ratio(fr, (key, mode), [("spmbpe model", mode)])
                if ratio is not None and (worst[0] is None or ratio < worst[0]):
                    worst = (ratio, paired, f"{key} {mode}")
        summary.add("every format / the .model (per line, numpy)", name, f"slowest: {worst[2] or '-'}",
                    worst[0], T_FORMAT, paired=worst[1])
    for name, fr in rep["files"].items():
        triple = scale._ratio(fr, ("spmbpe model", "batch"), [("spmbpe model", "batch1")])
        summary.add(f"batch {args.threads}t / 1t", name, "spmbpe .model encode_batch (lists)", triple[0],
                    T_SCALING, paired=triple[1])
    sp = next((k for k in peers if k.startswith("sentencepiece ")), None)
    for name, fr in rep["files"].items():
        mem = fr.get("memory", {})
        if not sp or sp not in mem:
            summary.add("memory / sentencepiece's", name, "sentencepiece not measured", None, T_MEMORY,
                        at_least=False)
            continue
        for what, field in (("loaded", "loaded"), ("after a batch", "after_batch")):
            worst_key, worst = "", None
            theirs = mem[sp].get(field)
            for key in mine:
                if key.endswith(" all"):
                    continue  # the same tokenizer as its ordinary twin
                m = mem.get(key, {}).get(field)
                if m is not None and theirs:
                    if worst is None or m / theirs > worst:
                        worst, worst_key = m / theirs, key
            summary.add(f"memory {what} / sentencepiece's", name,
                        f"largest: {worst_key or '-'}" + (f" ({theirs / 1e6:.1f} MB for sentencepiece)"
                                                          if theirs else ""),
                        worst, T_MEMORY, at_least=False)


def job_section(args, large: Path, summary: Summary, report: Dict[str, Any], tmp: Path) -> None:
    corpus = tmp / "job"
    corpus.mkdir()
    big = corpus / JOB_FILE
    with open(big, "wb") as out:
        for p in sorted(large.glob("*.txt")):
            data = p.read_bytes()
            out.write(data)
            if data and not data.endswith(b"\n"):
                out.write(b"\n")
    size = big.stat().st_size
    names = [JOB_FILE]
    if args.cold:
        (corpus / args.cold.name).symlink_to(args.cold.resolve())
        names.append(args.cold.name)
    print(f"# the main job: {JOB_FILE} = every .txt of {large} concatenated, {size / 1e6:.1f} MB"
          + ("" if size >= 100e6 or args.limit_mb else " (less than the 100 MB the target asks for)"), flush=True)
    rep = run_scale(args, corpus, names, "files,cli,inproc", "gigatoken", tmp / "job.json")
    report["job"] = dict(rep, concatenated_bytes=size)
    gigatoken = [k for k in rep["columns"] if k.startswith("gigatoken ")]
    for name, fr in rep["files"].items():
        triple = scale._ratio(fr, ("spmbpe model", "cli"), [(g, "files") for g in gigatoken])
        summary.add(f"main job: CLI --format bin {args.threads}t / gigatoken encode_files", name,
                    f"spmbpe encode / {triple[2] or 'gigatoken (not run)'}", triple[0], T_JOB_PEER,
                    paired=triple[1])
        triple = scale._ratio(fr, ("spmbpe model", "cli"), [("spmbpe model", "inproc")])
        summary.add("main job: CLI / in-process read+numpy+write", name, "spmbpe encode / in-process", triple[0],
                    T_JOB_INPROC, paired=triple[1])


# --------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=None,
                    help="the large corpus (default: $SPMBPE_LARGE_CORPUS, else ../large_corpus)")
    ap.add_argument("--cold", type=Path, default=None, help="the cold-heavy text (make_cold_corpus.py's cold.txt)")
    ap.add_argument("--base", type=Path, default=None, help="a checkout of the commit to compare the merge with")
    ap.add_argument("--python", action="append", default=[], metavar="PATH",
                    help="another interpreter whose peers are added (repeatable)")
    ap.add_argument("--files", default=None, help="comma-separated names of LARGE_DIR's files (default: all)")
    ap.add_argument("--columns", default=None,
                    help="scale section: only the columns whose key holds one of these comma-separated substrings")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of fresh-process runs (scale, job)")
    ap.add_argument("--threads", type=int, default=None, help="threads of the batch modes (default: all usable cores)")
    ap.add_argument("--limit-mb", type=float, default=0.0, help="each file's first N MB (a quick check)")
    ap.add_argument("--merge-slices", type=int, default=20, help="merge section: ab_builds.py's slices")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"), help="floor section: the C compiler")
    ap.add_argument("--floor-cache", type=int, default=None,
                    help="floor section: spmbpe's cache_capacity (default: the tokenizer's own)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    if not sections or any(s not in SECTIONS for s in sections):
        ap.error(f"--sections: choose from {','.join(SECTIONS)}")
    args.threads = args.threads or usable_cores()
    if args.repeat < 1 or args.threads < 1:
        ap.error("--repeat and --threads must be at least 1")
    large = args.corpus or scale.default_corpus()
    names = sorted(p.name for p in large.glob("*.txt")) if large.is_dir() else []
    if args.files:
        wanted = [w.strip() for w in args.files.split(",") if w.strip()]
        missing = [w for w in wanted if w not in names]
        if missing:
            ap.error(f"not in {large}: {', '.join(missing)}")
        names = wanted
    if not names:
        ap.error(f"no .txt files in {large}: build it with make_large_corpus.py, or name it with --corpus")
    if args.cold is not None:
        if not args.cold.is_file():
            ap.error(f"--cold {args.cold}: no such file")
        if args.cold.name in names:
            ap.error(f"--cold {args.cold.name}: the large corpus has a file of that name")
    if args.base is not None and not any((args.base / "spmbpe").glob("_core*")):
        ap.error(f"--base {args.base}: no spmbpe built in place there")
    pythonpath = scale.checkout_first()
    import spmbpe

    files = {n: large / n for n in names}
    if args.cold:
        files[args.cold.name] = args.cold
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    # (Read once, at the start: the figures are of the code as it was then.)
    commit, base_commit = commit_of(ROOT), commit_of(args.base) if args.base else None
    header = {
        "date": started, "machine": machine_line(), "load_at_start": load_line(),
        "spmbpe": f"{spmbpe.__version__} from {Path(spmbpe.__file__).parent}, commit {commit}",
        "base": f"{args.base} at commit {base_commit}" if args.base else None,
        "threads": args.threads, "repeat": args.repeat, "limit_mb": args.limit_mb,
        "cc": cc_version(args.cc), "corpus": str(large), "cold": str(args.cold) if args.cold else None,
        "python": [sys.executable] + args.python, "pythonpath": pythonpath,
    }
    p = "" if args.markdown else "# "
    for key, value in header.items():
        if value is not None:
            print(f"{p}{key}: {value}")
    sys.stdout.flush()
    report: Dict[str, Any] = {"header": header}
    summary = Summary()
    tmp = Path(tempfile.mkdtemp(prefix="spmbpe-targets-"))
    status = 0
    try:
        if "merge" in sections:
            merge_section(args, files, summary, report)
        if "floor" in sections:
            floor_section(args, files, summary, report)
        if "scale" in sections:
            corpus = tmp / "corpus"
            corpus.mkdir()
            for n, path in files.items():
                (corpus / n).symlink_to(path.resolve())
            scale_section(args, corpus, list(files), summary, report, tmp)
            status |= report["scale"]["status"]
        if "job" in sections:
            job_section(args, large, summary, report, tmp)
            status |= report["job"]["status"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # The columns' versions, every interpreter's, as the scale runs saw them.
    versions = sorted({f"{c['library']} {c['version']}" for part in ("scale", "job") if part in report
                       for c in report[part]["columns"].values()})
    report["header"]["versions"] = versions
    report["header"]["load_at_end"] = load_line()
    report["summary"] = summary.rows
    print()
    print(f"Issue 49's targets ({started}; commit {commit}"
          + (f" against base {base_commit}" if args.base else "") + f"; {args.threads} threads)")
    print(f"{p}{machine_line()}")
    if versions:
        print(f"{p}versions: {', '.join(versions)}; {header['cc']}")
    print(f"{p}{header['load_at_start']} at start, {report['header']['load_at_end']} at end")
    summary.table(args.markdown)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
