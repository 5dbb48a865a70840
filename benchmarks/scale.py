"""Corpus-scale throughput: a large corpus read once, spmbpe in every format beside the peers.

    python benchmarks/scale.py [--corpus DIR] [--files a.txt,b.txt] [--limit-mb N]
                               [--modes line,batch,batch1,numpy,doc,pieces,warm,cli] [--repeat N]
                               [--threads N] [--sample-lines N] [--columns SUBSTR,...]
                               [--python PATH ...] [--markdown] [--json OUT.json]

The corpus: the .txt files of DIR (default: $SPMBPE_LARGE_CORPUS, else
../large_corpus beside the checkout), built with
``python3 ../shared/tools/make_large_corpus.py DIR`` (at least 40 MB of English
manual pages and of Python sources, a few MB of seven other languages).  The
unit is a non-blank line.  Every timed run is a fresh process with a fresh
tokenizer that reads the file once: no cache is warm, as when a corpus is
preprocessed.

Modes (MB/s of UTF-8 input, best of --repeat runs):

  line    every line by its own call, one thread
  batch   the lines in one batch call on --threads threads, lists of ids
  batch1  spmbpe's encode_batch on one thread (its two-thread scaling)
  numpy   the lines in one batch call into one flat array (spmbpe's
          encode_batch(return_numpy=True); a peer's own flat output)
  doc     spmbpe: the whole file as one text (one document against its lines)
  pieces  spmbpe: the file cut at line ends into 10 KB documents, one call each
          (a document's speed per MB against a small one's)
  warm    spmbpe: per line on the file's first 256 KB, encoded again and
          again by one tokenizer (the small-text speed the cache gives)
  files   a peer's call that reads the lines from a file itself, on --threads
          threads (gigatoken's encode_files, a document per line), the lines
          written to a file first, untimed
  cli     spmbpe: `python -m spmbpe encode --model M -o OUT.bin` on the lines,
          end to end in its own process (start-up, reading, writing)
  inproc  spmbpe: the CLI's job in the worker's process: that file read, its
          lines in one encode_batch(return_numpy=True) on --threads threads,
          the .bin the CLI writes (the same bytes: the ids as Megatron's
          dtype) and the documents' sizes written

Columns: spmbpe on mistral-v1 in each format it reads -- the .model, a GGUF
of the same vocabulary (written here with the gguf package), the
tokenizer.json, an HF folder (tokenizer.model + tokenizer_config.json) --
with encode_ordinary, and per line also with encode(special="all") ("all",
the path of encode() with its default on a text without a special token); then every peer importable: sentencepiece,
splintr-rs, tokenizers, kitoken, gigatoken, tokie (benchmarks/_peers.py).
``pip install "spmbpe[bench]"`` installs them all in one environment;
``--python PATH`` (repeatable) adds the peers of another environment's
interpreter, e.g. a second tokenizers version: each column is titled with
its library's version, and a column already given by an earlier interpreter
is not repeated.

Ids first: on a sample of each file (--sample-lines lines spread over it, and
its first 256 KB as one document), every column's ids in every mode are
compared with sentencepiece's (spmbpe .model's when sentencepiece is missing).
A column that differs in a mode is not timed in it; the table shows
"differs" and a footnote an example.  A peer whose call reads a control
piece's spelling ("</s>") as a special token, with no option to read it as
text, is checked on the sample's other lines (the number left out is in the
footnote).  An spmbpe column that differs is a bug: the exit status is 1.

Memory (MB of resident set, per column, in the process of its timed run):
"loaded" is the RSS the tokenizer adds when created; "after batch" what it
still holds after its largest batch (lists) once the output is freed
(gc.collect and malloc_trim); "peak" the highest RSS during that batch
(VmHWM) over the RSS before the tokenizer, output included.  For the CLI the
peak is its whole process's.

The summary gives the same-run ratios against the project's targets (issue
21): spmbpe over the fastest agreeing peer, per line and in batch; each
format and call over the .model's encode_ordinary; per line at corpus scale
over warm; one document over its lines; the CLI over in-process numpy; the
two-thread batch over one; memory against sentencepiece's.  The columns of a
mode are timed in turn, one run of each per round, the order reversed every
other round; with --repeat > 1 each ratio is also given as the median of the
rounds' ratios ("paired"; between two modes, whose rounds are minutes apart,
it steadies less).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _common import corpus_lines, load_line, machine_line, timed, usable_cores, utf8_len  # noqa: E402
import _peers  # noqa: E402

MODES = ("line", "batch", "batch1", "numpy", "files", "doc", "pieces", "warm", "cli", "inproc")
TITLES = {"line": "per line", "batch": "batch {n}t", "batch1": "batch 1t", "numpy": "numpy {n}t",
          "files": "files {n}t", "doc": "document", "pieces": "10 KB docs", "warm": "warm", "cli": "CLI .bin",
          "inproc": "read+numpy+write"}
SPMBPE_ONLY = {"batch1", "doc", "pieces", "warm", "cli", "inproc"}
# Modes whose call reads the lines from a file (written first, untimed).
FILE_MODES = {"files", "cli", "inproc"}
PIECE_BYTES = 10_000
WARM_BYTES = 256_000
DOC_SAMPLE_BYTES = 256_000

# Issue 21's targets, same-run ratios on 2 cores: (English and code, other languages).
TARGET_LINE = (5.0, 3.0)
TARGET_BATCH = (8.0, 5.0)
TARGET_SCALING = 1.8
TARGET_WARM = 0.70
TARGET_FORMAT = 0.90
TARGET_DOC = 1.0
TARGET_CLI = 0.90


def default_corpus() -> Path:
    env = os.environ.get("SPMBPE_LARGE_CORPUS")
    return Path(env) if env else ROOT.parent / "large_corpus"


def checkout_first() -> Optional[str]:
    """Put this checkout first on sys.path when its extension is built in
    place, so that the spmbpe measured is the one beside this script (an
    installed spmbpe otherwise).  Returns the directory added."""
    pkg = ROOT / "spmbpe"
    if any(pkg.glob("_core*.so")) or any(pkg.glob("_core*.pyd")):
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        return str(ROOT)
    return None


# --------------------------------------------------------------------------
# Data


def read_slice(path: str, limit: int) -> str:
    """The file's text, its first `limit` bytes (0: all) cut at a line end."""
    with open(path, "rb") as f:
        raw = f.read(limit + 1) if limit else f.read()
    if limit and len(raw) > limit:
        cut = raw.rfind(b"\n", 0, limit)
        raw = raw[:cut + 1] if cut >= 0 else raw[:limit]
        raw = raw.decode("utf-8", "ignore").encode("utf-8")  # a cut character
    return raw.decode("utf-8")


def sample_of(lines: List[str], n: int) -> List[str]:
    """`n` lines spread evenly over the file."""
    if len(lines) <= n:
        return list(lines)
    step = len(lines) / n
    return [lines[int(i * step)] for i in range(n)]


def pieces_of(text: str, size: int) -> List[str]:
    """The text cut at line ends into documents of about `size` bytes."""
    out, cur, n = [], [], 0
    for x in text.splitlines(keepends=True):
        cur.append(x)
        n += len(x.encode("utf-8"))
        if n >= size:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


def head_lines(lines: List[str], size: int) -> List[str]:
    out, total = [], 0
    for x in lines:
        if total >= size:
            break
        out.append(x)
        total += len(x.encode("utf-8"))
    return out


# --------------------------------------------------------------------------
# Worker: one tokenizer in one process (started by the parent)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        return True
    except OSError:
        return False


def _trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _as_rows(mode: str, out) -> List[List[int]]:
    """Any mode's output as a list of id lists, one per text."""
    if mode == "numpy":
        ids, starts = out
        starts = [int(s) for s in starts]
        return [[int(v) for v in ids[a:b]] for a, b in zip(starts, starts[1:])]
    return [[int(v) for v in row] for row in out]


def _first_difference(texts, mine, ref, skip) -> Tuple[int, int, str]:
    """(differing texts, texts left out, an example) of `mine` against `ref`."""
    differing, left_out, example = 0, 0, ""
    if len(mine) != len(ref):
        return 1, 0, f"{len(mine)} results for {len(ref)} texts"
    for i, (text, a, b) in enumerate(zip(texts, mine, ref)):
        if skip and any(s in text for s in skip):
            left_out += 1
            continue
        if list(a) == list(b):
            continue
        differing += 1
        if not example:
            k = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            example = f"text {i + 1}, token {k}: {list(a[k:k + 4])} vs reference {list(b[k:k + 4])} in {text[:60]!r}"
    return differing, left_out, example


def worker(spec: Dict[str, Any]) -> Dict[str, Any]:
    task = spec["task"]
    if task == "probe":
        cols, notes = _peers.column_registry(spec.get("formats"), _spmbpe_importable())
        return {"columns": {k: {"library": c.library, "version": c.version, "modes": sorted(c.modes),
                                "spmbpe": c.spmbpe, "family": c.family} for k, c in cols.items()},
                "missing": notes, "python": sys.version.split()[0], "executable": sys.executable}
    cols, _ = _peers.column_registry(spec.get("formats"), spec["column"].startswith("spmbpe"), spec["column"])
    col = cols[spec["column"]]
    text = read_slice(spec["file"], spec["limit"])
    lines = corpus_lines(text)
    n = spec["threads"]
    if task in ("reference", "check"):
        sample = sample_of(lines, spec["sample_lines"])
        doc = read_slice(spec["file"], min(DOC_SAMPLE_BYTES, spec["limit"] or DOC_SAMPLE_BYTES))
        if task == "reference":
            tok = col.make()
            return {"line": [list(map(int, col.modes["line"](tok, x))) for x in sample],
                    "doc": list(map(int, col.modes["line"](tok, doc)))}
        with open(spec["reference"], encoding="utf-8") as f:
            ref = json.load(f)
        results = {}
        for mode in spec["modes"]:
            skip = col.reads_specials.get(mode, ())
            try:
                tok = col.make()
                if mode in ("line", "warm", "pieces"):  # (pieces: the same call as line)
                    mine = [col.modes["line"](tok, x) for x in sample]
                elif mode == "doc":
                    mine = [col.modes["line"](tok, doc)]
                elif mode == "cli":
                    mine = [_cli_check(spec, sample)]
                elif mode == "inproc":
                    mine = [_inproc_check(tok, sample, n)]
                elif mode == "files":
                    mine = _as_rows("numpy", _files_call(col, tok, sample, n))
                elif mode == "batch1":
                    mine = _as_rows("batch", col.modes["batch"](tok, sample, 1))
                else:
                    mine = _as_rows(mode, col.modes[mode](tok, sample, n))
            except Exception as e:  # noqa: BLE001 - a call that fails is reported like one that differs
                detail = e.stderr.decode("utf-8", "replace").strip()[-300:] if getattr(e, "stderr", None) else e
                results[mode] = {"differing": 1, "left_out": 0, "total": 1, "skip": list(skip),
                                 "example": f"the call raised {type(e).__name__}: {detail}"}
                continue
            if mode == "doc":
                texts, expect = [doc], [ref["doc"]]
            elif mode in ("cli", "inproc"):
                texts, expect = [f"the sample's lines, {mode}"], [[i for row in ref["line"] for i in row]]
            else:
                texts, expect = sample, ref["line"]
            differing, left_out, example = _first_difference(texts, mine, expect, skip)
            results[mode] = {"differing": differing, "left_out": left_out, "total": len(texts),
                             "example": example, "skip": list(skip)}
        return {"check": results}
    # task == "time"
    mode = spec["mode"]
    if mode == "cli":
        return _cli_time(spec, lines)
    if mode in ("files", "inproc"):
        return _file_time(spec, col, mode, lines)
    data: Any = text if mode == "doc" else lines
    size = len(text.encode("utf-8")) if mode == "doc" else utf8_len(lines)
    if mode == "pieces":
        data = pieces_of(text, PIECE_BYTES)
        size = utf8_len(data)
    if mode == "warm":
        data = head_lines(lines, WARM_BYTES)
        size = utf8_len(data)
    # NumPy imported outside the timing (spmbpe imports it on the first
    # return_numpy call; some peers on their own import).
    _peers._import("numpy")
    _trim()
    _reset_hwm()
    base = _rss()
    tok = col.make()
    loaded = _rss() - base
    call = col.bind(tok) if col.bind else functools.partial(col.modes["line"], tok)
    if col.loop:
        each = col.loop(tok)
    else:
        def each(texts):
            for x in texts:
                call(x)  # ids dropped: what stays is the tokenizer's
    if mode == "line":
        run = lambda: each(lines)  # noqa: E731
    elif mode == "doc":
        run = lambda: call(data)  # noqa: E731
    elif mode in ("warm", "pieces"):
        run = lambda: each(data)  # noqa: E731
        if mode == "warm":
            run()  # the pass that fills the cache, untimed
    elif mode == "batch1":
        run = lambda: col.modes["batch"](tok, data, 1)  # noqa: E731
    else:
        fn = col.modes[mode]
        run = lambda: fn(tok, data, n)  # noqa: E731
    seconds, out = timed(run)
    if mode == "warm":
        for _ in range(4):  # best of five warm passes
            seconds = min(seconds, timed(run)[0])
    peak = _hwm() - base
    del out
    _trim()
    after = _rss() - base
    return {"seconds": seconds, "bytes": size, "loaded": loaded, "after": after, "peak": peak}


def _spmbpe_importable() -> bool:
    try:
        import spmbpe  # noqa: F401
        return True
    except ImportError:
        return False


def _cli_command(spec: Dict[str, Any], src: str, out: str) -> List[str]:
    model = spec["formats"][spec["column"].split()[1]]  # "spmbpe gguf" -> the GGUF's path
    return [sys.executable, "-m", "spmbpe", "encode", "--model", model, "--threads",
            str(spec["threads"]), "--no-progress", "-o", out, src]


def _cli_check(spec: Dict[str, Any], sample: List[str]) -> List[int]:
    """The CLI's .bin for the sample's lines, as one flat list of ids."""
    with tempfile.TemporaryDirectory(prefix="spmbpe-scale-") as tmp:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.bin")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(sample) + "\n")
        subprocess.run(_cli_command(spec, src, out), check=True, capture_output=True)
        raw = open(out, "rb").read()
        meta = out + ".meta.json"
        dtype = json.load(open(meta)).get("dtype", "uint16") if os.path.exists(meta) else "uint16"
    import array

    ids = array.array({"uint16": "H", "uint32": "I"}[str(dtype)])
    ids.frombytes(raw)
    if sys.byteorder != "little":
        ids.byteswap()
    return list(ids)


def _cli_time(spec: Dict[str, Any], lines: List[str]) -> Dict[str, Any]:
    """Wall time and peak RSS of one CLI run over the lines (written to a
    file first, outside the timing)."""
    tmp = tempfile.mkdtemp(prefix="spmbpe-scale-")
    try:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.bin")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        cmd = _cli_command(spec, src, out)
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.strip()[-500:]}")
        return {"seconds": seconds, "bytes": utf8_len(lines), "loaded": None, "after": None,
                "peak": usage.ru_maxrss * 1024}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_lines(path: str, lines: List[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def _files_call(col, tok, lines: List[str], n: int):
    """A peer's file call on the lines, written to a file: (flat ids, offsets)."""
    with tempfile.TemporaryDirectory(prefix="spmbpe-scale-") as tmp:
        src = os.path.join(tmp, "in.txt")
        _write_lines(src, lines)
        return col.modes["files"](tok, src, n)


def _bin_dtype(vocab_size: int):
    # What `spmbpe encode --format bin` writes: Megatron's optimal dtype,
    # uint16 below 65,500 ids, else int32.
    import numpy as np

    return np.uint16 if vocab_size < 65500 else np.int32


def inproc_job(tok, src: str, out: str, n: int) -> None:
    """The command line's job in this process: the file read, its lines in
    one NumPy batch, the ids written as the CLI's .bin and the documents'
    sizes (int32) beside them, as its .idx holds them."""
    import numpy as np

    with open(src, "rb") as f:
        text = f.read().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    del text
    ids, starts = tok.encode_batch(lines, num_threads=n, return_numpy=True, special="none")
    ids.astype(_bin_dtype(tok.vocab_size)).tofile(out)
    np.diff(starts).astype(np.int32).tofile(out + ".sizes")


def _inproc_check(tok, sample: List[str], n: int) -> List[int]:
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="spmbpe-scale-") as tmp:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.bin")
        _write_lines(src, sample)
        inproc_job(tok, src, out, n)
        return [int(x) for x in np.fromfile(out, dtype=_bin_dtype(tok.vocab_size))]


def _file_time(spec: Dict[str, Any], col, mode: str, lines: List[str]) -> Dict[str, Any]:
    """One run of a call that reads the lines from a file (written first,
    outside the timing): a peer's `files` call, or spmbpe's in-process job."""
    _peers._import("numpy")
    tmp = tempfile.mkdtemp(prefix="spmbpe-scale-")
    try:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.bin")
        _write_lines(src, lines)
        size = utf8_len(lines)
        del lines
        _trim()
        _reset_hwm()
        base = _rss()
        tok = col.make()
        loaded = _rss() - base
        if mode == "files":
            fn = col.modes["files"]
            run = lambda: fn(tok, src, spec["threads"])  # noqa: E731
        else:
            run = lambda: inproc_job(tok, src, out, spec["threads"])  # noqa: E731
        seconds, result = timed(run)
        peak = _hwm() - base
        del result
        _trim()
        return {"seconds": seconds, "bytes": size, "loaded": loaded, "after": _rss() - base, "peak": peak}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------
# Parent: columns, checks, rounds


class Runner:
    def __init__(self, args, formats: Dict[str, str], pythonpath: Optional[str]) -> None:
        self.args, self.formats, self.pythonpath = args, formats, pythonpath

    def call(self, python: str, spec: Dict[str, Any]) -> Dict[str, Any]:
        spec = dict(spec, formats=self.formats if python == sys.executable else None,
                    threads=self.args.threads)
        env = _peers.env_threads(self.args.threads)
        if python == sys.executable and self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.run([python, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"worker {spec.get('column', spec['task'])} ({python}) failed:\n"
                               f"{proc.stderr.strip()[-2000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _targets(name: str) -> Tuple[float, float]:
    kind = _peers.file_kind(name)
    i = 0 if kind == "main" else 1
    return TARGET_LINE[i], TARGET_BATCH[i]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None,
                        help="directory of .txt files (default: $SPMBPE_LARGE_CORPUS, else ../large_corpus)")
    parser.add_argument("--files", default=None, help="comma-separated file names in the corpus (default: all)")
    parser.add_argument("--limit-mb", type=float, default=0.0,
                        help="use only the first N MB of each file, cut at a line end (default: all)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per cell, each a fresh process; the best counts")
    parser.add_argument("--threads", type=int, default=None, help="threads of the batch modes (default: all usable cores)")
    parser.add_argument("--sample-lines", type=int, default=2000, help="lines of each file in the id check")
    parser.add_argument("--columns", default=None,
                        help="comma-separated substrings: only the columns whose key holds one (spmbpe .model always runs)")
    parser.add_argument("--python", action="append", default=[], metavar="PATH",
                        help="another interpreter whose importable peers are added (repeatable)")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        parser.error(f"unknown mode(s) {bad}; choose from {','.join(MODES)}")
    args.threads = args.threads or usable_cores()
    if args.threads < 1 or args.repeat < 1 or args.sample_lines < 1 or args.limit_mb < 0:
        parser.error("--threads, --repeat and --sample-lines must be at least 1, --limit-mb not negative")
    for p in args.python:
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            parser.error(f"--python {p}: not an executable file")
    corpus = args.corpus or default_corpus()
    files = sorted(corpus.glob("*.txt")) if corpus.is_dir() else []
    if args.files:
        wanted = [w.strip() for w in args.files.split(",") if w.strip()]
        missing = [w for w in wanted if not (corpus / w).is_file()]
        if missing:
            parser.error(f"not in {corpus}: {', '.join(missing)}")
        files = [corpus / w for w in wanted]
    if not files:
        print(f"no .txt files in {corpus}; build the corpus with\n"
              f"  python3 ../shared/tools/make_large_corpus.py {corpus}\n"
              f"or name it with --corpus DIR (or SPMBPE_LARGE_CORPUS)", file=sys.stderr)
        return 2

    pythonpath = checkout_first()
    import spmbpe

    tmp = Path(tempfile.mkdtemp(prefix="spmbpe-scale-"))
    try:
        formats = _peers.write_formats(tmp)
        runner = Runner(args, formats, pythonpath)
        return _run(args, modes, files, runner, spmbpe)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(args, modes: List[str], files: List[Path], runner: Runner, spmbpe) -> int:
    limit = int(args.limit_mb * 1e6)
    # Columns: spmbpe's and the peers of this interpreter, then those of each --python.
    columns: Dict[str, Dict[str, Any]] = {}
    notes: List[str] = []
    for python in [sys.executable] + args.python:
        probe = runner.call(python, {"task": "probe"})
        for key, info in probe["columns"].items():
            if key not in columns:
                columns[key] = dict(info, python=python)
        if probe["missing"]:
            notes.append(f"not importable in {python} (Python {probe['python']}): {', '.join(probe['missing'])}")
    if "gguf" not in runner.formats:
        notes.append("spmbpe gguf left out: writing the GGUF needs the gguf and sentencepiece packages")
    everything = dict(columns)  # (a reference need not be a column of the table)
    if args.columns:
        subs = [s.strip() for s in args.columns.split(",") if s.strip()]
        columns = {k: v for k, v in columns.items() if k == "spmbpe model" or any(s in k for s in subs)}
    keys = list(columns)
    # The reference of each family: sentencepiece for the .model (and the
    # GGUF converted from it), tokenizers for the tokenizer.json and the
    # model folder (transformers 5's pipeline); spmbpe's own ids when the
    # reference library is missing.
    refs: Dict[str, str] = {}
    for family, lib, fallback in (("spm", "sentencepiece ", "spmbpe model"), ("json", "tokenizers ", "spmbpe json")):
        if any(columns[k]["family"] == family for k in keys):
            refs[family] = next((k for k in everything if k.startswith(lib)), fallback)
            if refs[family] == fallback:
                notes.append(f"{lib.strip()} is not installed: the ids of the {family} columns are checked "
                             f"against {fallback}")

    def col_modes(key: str) -> List[str]:
        info = columns[key]
        own = set(info["modes"])
        out = []
        for m in modes:
            if m in SPMBPE_ONLY:
                if info["spmbpe"] and "batch" in own and (m != "batch1" or key == "spmbpe model"):
                    out.append(m)
            elif m in own:
                out.append(m)
        return out

    p = "" if args.markdown else "# "
    print(f"{p}Machine: {machine_line()}")
    print(f"{p}spmbpe {spmbpe.__version__} from {Path(spmbpe.__file__).parent}")
    print(f"{p}Columns: {', '.join(keys)}")
    print(f"{p}MB/s of UTF-8 input, best of {args.repeat} fresh-process run(s); batch modes on {args.threads} "
          f"thread(s); {load_line()} at start; ids checked against {' and '.join(refs.values())} on {args.sample_lines} lines per file"
          + (f"; first {args.limit_mb:g} MB of each file" if limit else ""))
    for note in notes:
        print(f"{p}{note}")
    sys.stdout.flush()

    report: Dict[str, Any] = {"machine": machine_line(), "columns": columns, "files": {}, "notes": notes,
                              "threads": args.threads, "repeat": args.repeat, "limit_mb": args.limit_mb,
                              "references": refs}
    footnotes: List[str] = []
    bad_spmbpe = 0
    for path in files:
        name = path.name
        text = read_slice(str(path), limit)
        lines = corpus_lines(text)
        fr: Dict[str, Any] = {"bytes": len(text.encode("utf-8")), "lines": len(lines), "checks": {},
                              "runs": {}, "memory": {}}
        report["files"][name] = fr
        base = {"file": str(path), "limit": limit, "sample_lines": args.sample_lines}
        ref_paths: Dict[str, Path] = {}
        try:
            for family, ref_key in refs.items():
                ref_paths[family] = Path(tempfile.mkstemp(prefix="spmbpe-scale-ref-", suffix=".json")[1])
                ref = runner.call(everything[ref_key]["python"], dict(base, task="reference", column=ref_key))
                ref_paths[family].write_text(json.dumps(ref), encoding="utf-8")
            ok: Dict[str, List[str]] = {}
            for key in keys:
                cm = col_modes(key)
                family = columns[key]["family"]
                ref_key = refs[family]
                try:
                    res = runner.call(columns[key]["python"], dict(base, task="check", column=key, modes=cm,
                                                                   reference=str(ref_paths[family])))["check"]
                except RuntimeError as e:  # the worker died (a crash): every mode fails
                    last = str(e).strip().splitlines()[-1][:300]
                    res = {m: {"differing": 1, "left_out": 0, "total": 1, "skip": [],
                               "example": f"the worker failed: {last}"} for m in cm}
                fr["checks"][key] = res
                ok[key] = []
                for m, r in res.items():
                    if r["differing"]:
                        footnotes.append(_footnote(len(footnotes) + 1, name, m, key, ref_key, r))
                        r["note"] = len(footnotes)
                        bad_spmbpe += columns[key]["spmbpe"]
                    else:
                        ok[key].append(m)
                        if r["left_out"]:
                            footnotes.append(_footnote(len(footnotes) + 1, name, m, key, ref_key, r))
                            r["note"] = len(footnotes)
        finally:
            for ref_path in ref_paths.values():
                ref_path.unlink(missing_ok=True)
        # Timing: per mode, the agreeing columns in turn, --repeat rounds.
        for mode in modes:
            entries = [k for k in keys if mode in ok[k]]
            for r in range(args.repeat):
                for key in (entries if r % 2 == 0 else list(reversed(entries))):
                    try:
                        res = runner.call(columns[key]["python"], dict(base, task="time", column=key, mode=mode))
                    except RuntimeError as e:
                        # (Agreed on the sample, failed on the file: reported, never a figure.)
                        check = fr["checks"][key][mode]
                        if "failed" not in check:
                            check["failed"] = str(e).strip().splitlines()[-1][:300]
                            footnotes.append(f"[{len(footnotes) + 1}] {name} {mode}: {key} failed on the "
                                             f"file: {check['failed']}")
                            check["note"] = len(footnotes)
                            bad_spmbpe += columns[key]["spmbpe"]
                        continue
                    fr["runs"].setdefault(f"{key}|{mode}", []).append(res)
        _print_file(args, name, fr, keys, modes, columns, col_modes)
    if footnotes:
        print()
        for note in footnotes:
            print(note)
    _summary(args, report, keys, modes)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    if bad_spmbpe:
        print(f"\n{bad_spmbpe} spmbpe column/mode(s) differ from their reference or failed: a bug", file=sys.stderr)
        return 1
    return 0


def _footnote(n: int, name: str, mode: str, key: str, ref_key: str, r: Dict[str, Any]) -> str:
    text = f"[{n}] {name} {mode}: {key}"
    if r["differing"]:
        text += f" differs from {ref_key} on {r['differing']} of {r['total']} texts, first at {r['example']}"
    else:
        text += f" agrees with {ref_key}"
    if r["left_out"]:
        text += (f"; {r['left_out']} text(s) holding {'/'.join(r['skip'])} left out: its call reads them "
                 f"as special tokens")
    return text


def rate(fr: Dict[str, Any], key: str, mode: str) -> Optional[float]:
    runs = fr["runs"].get(f"{key}|{mode}")
    if not runs:
        return None
    return max(r["bytes"] / 1e6 / r["seconds"] for r in runs)


def rounds(fr: Dict[str, Any], key: str, mode: str) -> List[float]:
    return [r["seconds"] / r["bytes"] for r in fr["runs"].get(f"{key}|{mode}", [])]  # s per byte


def _fmt(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def _mb(x: Optional[float]) -> str:
    return "-" if x is None else f"{x / 1e6:.1f}"


def _print_file(args, name, fr, keys, modes, columns, col_modes) -> None:
    heads = [TITLES[m].format(n=args.threads) for m in modes] + ["loaded MB", "after batch MB", "peak batch MB"]
    print()
    print(f"{name}: {fr['bytes'] / 1e6:.1f} MB, {fr['lines']:,} lines")
    rows = []
    for key in keys:
        cells = []
        checks = fr["checks"].get(key, {})
        for m in modes:
            c = checks.get(m)
            if c is None:
                cells.append("-")
            elif c["differing"]:
                cells.append(f"differs[{c['note']}]")
            elif c.get("failed"):
                cells.append(f"failed[{c['note']}]")
            else:
                cell = _fmt(rate(fr, key, m))
                cells.append(cell + (f"[{c['note']}]" if c.get("note") else ""))
        runs = fr["runs"].get(f"{key}|line") or fr["runs"].get(f"{key}|batch") or []
        batch = fr["runs"].get(f"{key}|batch") or []
        loaded = min((r["loaded"] for r in runs if r["loaded"] is not None), default=None)
        after = min((r["after"] for r in batch), default=None)
        peak = min((r["peak"] for r in batch), default=None)
        fr["memory"][key] = {"loaded": loaded, "after_batch": after, "peak_batch": peak}
        cli = fr["runs"].get(f"{key}|cli")
        if cli:
            fr["memory"][key]["peak_cli"] = min(r["peak"] for r in cli)
        rows.append([key] + cells + [_mb(loaded), _mb(after), _mb(peak)])
    _table(args.markdown, ["column"] + heads, rows)


def _table(markdown: bool, head: List[str], rows: List[List[str]]) -> None:
    if markdown:
        print()
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * (len(head) - 1))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print()
    else:
        widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
        print("  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(head)))
        print("-" * (sum(widths) + 2 * (len(head) - 1)))
        for row in rows:
            print("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)))
    sys.stdout.flush()


def _ratio(fr, a: Tuple[str, str], bs: Sequence[Tuple[str, str]]) -> Tuple[Optional[float], Optional[float], str]:
    """a's rate over the fastest of bs: of the best runs, and the median of
    the rounds' ratios (paired; None with one round), and which b was fastest."""
    ra = rate(fr, *a)
    rb = [(rate(fr, *b), b) for b in bs]
    rb = [(x, b) for x, b in rb if x]
    if not ra or not rb:
        return None, None, ""
    best, which = max(rb)
    ta = rounds(fr, *a)
    tbs = [rounds(fr, *b) for _, b in rb]
    paired = None
    if len(ta) > 1 and all(len(t) == len(ta) for t in tbs):
        paired = statistics.median(min(ts) / t for t, ts in zip(ta, zip(*tbs)))
    return ra / best, paired, which[0]


def _summary(args, report, keys, modes) -> None:
    # spmbpe model is measured against the peers that give sentencepiece's
    # ids, spmbpe json against tokenizers (those that give its ids).
    peers = [k for k in keys if not report["columns"][k]["spmbpe"] and report["columns"][k]["family"] == "spm"]
    tk = [k for k in keys if k.startswith("tokenizers ")]
    rows: List[List[str]] = []
    for name, fr in report["files"].items():
        t_line, t_batch = _targets(name)
        figures: List[Tuple[str, Tuple, float, bool]] = []  # (what, ratio triple, target, at least)

        def add(what, triple, target, at_least=True):
            if triple[0] is not None:
                figures.append((what, triple, target, at_least))

        if "line" in modes:
            add("per line: spmbpe model / fastest agreeing peer",
                _ratio(fr, ("spmbpe model", "line"), [(k, "line") for k in peers]), t_line)
            if tk and "spmbpe json" in keys:
                add("per line: spmbpe json / fastest tokenizers",
                    _ratio(fr, ("spmbpe json", "line"), [(k, "line") for k in tk]), t_line)
            for k in keys:
                if k.startswith("spmbpe ") and k != "spmbpe model":
                    add(f"per line: {k} / spmbpe model", _ratio(fr, (k, "line"), [("spmbpe model", "line")]),
                        TARGET_FORMAT)
        if "warm" in modes and "line" in modes:
            add("per line at corpus scale / warm (spmbpe model)",
                _ratio(fr, ("spmbpe model", "line"), [("spmbpe model", "warm")]), TARGET_WARM)
        if "doc" in modes and "line" in modes:
            add("one document / its lines (spmbpe model)",
                _ratio(fr, ("spmbpe model", "doc"), [("spmbpe model", "line")]), TARGET_DOC)
        if "doc" in modes and "pieces" in modes:
            add("one document / the same text as 10 KB documents (spmbpe model)",
                _ratio(fr, ("spmbpe model", "doc"), [("spmbpe model", "pieces")]), TARGET_DOC)
        peer_batches = [(k, m) for k in peers for m in ("batch", "numpy", "files") if m in modes]
        for m in ("batch", "numpy"):
            if m in modes:
                add(f"{m}: spmbpe model / fastest agreeing peer batch",
                    _ratio(fr, ("spmbpe model", m), peer_batches), t_batch)
        if "batch" in modes and "batch1" in modes:
            add(f"batch: spmbpe model {args.threads} threads / 1 thread",
                _ratio(fr, ("spmbpe model", "batch"), [("spmbpe model", "batch1")]), TARGET_SCALING)
        if "cli" in modes and "numpy" in modes:
            for k in keys:
                if fr["runs"].get(f"{k}|cli"):
                    add(f"CLI .bin / in-process numpy ({k})", _ratio(fr, (k, "cli"), [(k, "numpy")]), TARGET_CLI)
        mem = fr["memory"]
        ref = next((k for k in peers if k.startswith("sentencepiece ")), None)
        if ref and ref in mem:
            # Every format's tokenizer, not only the .model's: the target is
            # sentencepiece's memory whatever file the vocabulary came from.
            # (A column's " all" twin is the same tokenizer loaded again.)
            mine_keys = [k for k in keys if report["columns"][k]["spmbpe"] and not k.endswith(" all")]
            for what, field in (("loaded", "loaded"), ("after batch", "after_batch")):
                for k in mine_keys:
                    mine, theirs = mem.get(k, {}).get(field), mem[ref].get(field)
                    if mine is not None and theirs:
                        figures.append((f"memory {what}: {k} / {ref}", (mine / theirs, None, ""), 1.0, False))
        for what, (ratio, paired, which), target, at_least in figures:
            met = ratio >= target if at_least else ratio <= target
            rows.append([name, what + (f" ({which})" if which and "fastest" in what else ""),
                         f"{ratio:.2f}x", "-" if paired is None else f"{paired:.2f}x",
                         f"{'>=' if at_least else '<='} {target:g}x", "met" if met else "NOT MET"])
    if rows:
        print()
        print("Same-run ratios against issue 21's targets (of the best runs; paired: median of the rounds' ratios)")
        _table(args.markdown, ["file", "figure", "ratio", "paired", "target", ""], rows)
    report["summary"] = rows


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main())
