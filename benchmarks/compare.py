"""Throughput of spmbpe against the reference tokenizers, as a table.

    python benchmarks/compare.py [--corpus DIR] [--files a.txt,b.txt] [--repeat N]
                                 [--modes line,doc,batch] [--threads N] [--markdown]
                                 [--site DIR]

Each row is one corpus file and mode; each column one tokenizer on one
vocabulary file, in MB/s of UTF-8 input (best of --repeat runs):

  line   every non-blank line encoded by its own call, one thread
  doc    the whole file as one text, one thread
  batch  the non-blank lines in one batch call: spmbpe's encode_batch with
         --threads threads (default: all usable cores); sentencepiece's
         encode(list, num_threads=N); tokenizers' and splintr-rs' encode_batch
         on a Rayon pool of N threads (RAYON_NUM_THREADS, unless already set).
         llama.cpp's binding has no batch call (shown as "-").

Columns, each reference beside spmbpe on the same vocabulary:

  spmbpe (.model)     spmbpe.load(tests/data/mistral-v1.model)
  sentencepiece       SentencePieceProcessor on that file
  splintr-rs          splintr.Tokenizer.from_pretrained("mistral_v1"), its bundled copy
  spmbpe (json)       spmbpe.load(tests/data/mistral-v1.tokenizer.json)
  tokenizers          tokenizers.Tokenizer.from_file on that file
  kitoken             kitoken.Kitoken.from_sentencepiece_file on the .model
  gigatoken           gigatoken.Tokenizer.from_sentencepiece on the .model
  tokie               tokie.Tokenizer.from_json on the tokenizer.json
  spmbpe (gguf)       spmbpe.load(tests/data/ggml-vocab-llama-spm.gguf)
  llama.cpp           llama_cpp.Llama(..., vocab_only=True).tokenize on that file

(kitoken, gigatoken and tokie are built as benchmarks/scale.py builds them,
from benchmarks/_peers.py; `pip install "spmbpe[bench]"` installs them.)

Every call encodes plain text: no BOS/EOS, special-token spellings are text
(spmbpe encode_ordinary / special="none"; tokenizers add_special_tokens=False
with encode_special_tokens=True; llama.cpp special=False; splintr-rs
encode_ordinary, but its encode_batch always matches special tokens;
gigatoken and tokie have no call that reads a special token's spelling as
text, which is a known disagreement on a text that holds one).

Before timing, each reference's ids are compared with spmbpe's on the same
file (per line for line/batch, whole for doc).  When they differ the cell
shows "differs" and a footnote gives the number of differing lines; a
disagreement this script knows about (KNOWN_DISAGREEMENTS) is explained, any
other one is reported as unexpected and the exit status is 1.

Every tokenizer, spmbpe included, is created anew before each timed run
(outside the timing), so no cache survives from one run to the next.  The
columns of a row are timed in turn, one run of each per round (--repeat
rounds), so that the same-run ratios compare runs made under the same
conditions.  A reference that is not importable is left out; --site DIR (or
SPMBPE_BENCH_SITE) appends a directory such as another virtual environment's
site-packages to sys.path, e.g. for a locally built llama-cpp-python.

At the end: spmbpe (.model) / the fastest of sentencepiece, splintr-rs,
kitoken and gigatoken (those installed) per file in the
single-thread modes, against the project's targets, and the batch scaling of
spmbpe (.model) with --threads threads over its own one-thread encode_batch
(timed in turn with the row's columns).  Each ratio is given twice: of the
best runs (the table's MB/s), and as the median over the rounds of the ratio
within each round ("paired").  On a shared VM whose speed drifts
within a minute, the best runs of two columns may come from different
spells; a round's runs are seconds apart, so the paired median is the
steadier figure from run to run.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peers  # noqa: E402
from _common import (  # noqa: E402
    CORPUS, GGUF, JSON, MODEL, add_site_dirs, corpus_lines, load_line, machine_line, optional_import,
    quiet_stderr, timed, usable_cores, utf8_len, versions_line,
)

MODES = ("line", "doc", "batch")
MODE_TITLES = {"line": "per line", "doc": "document", "batch": "batch"}

# Targets from the project's issue (single thread, spmbpe over the faster of
# sentencepiece and splintr-rs), by file name; anything else: no target.
TARGETS = {"en_botchan.txt": 10.0, "code_py.txt": 10.0}
MULTI_TARGET = 3.0
SCALING_TARGET = 1.7


def target_for(name: str) -> Optional[float]:
    if name in TARGETS:
        return TARGETS[name]
    if name.startswith("multi_"):
        return MULTI_TARGET
    return None


# --------------------------------------------------------------------------
# Columns


@dataclass
class Column:
    key: str
    title: str
    make: Callable[[], object]
    run: Dict[str, Callable]  # mode -> fn(tokenizer, data) -> ids (list, or list of lists)
    baseline: Optional[str] = None  # key of the spmbpe column on the same file
    # fn(mode, text) -> explanation when spmbpe and this reference are known to
    # differ on this text (a line, or the document), else None.
    known: Callable[[str, str], Optional[str]] = field(default=lambda mode, text: None)
    # Its batch call leaves worker threads spinning for a while after it
    # returns (Rayon's pool, in tokenizers and splintr-rs).
    spins: bool = False


def spmbpe_column(key: str, title: str, path: Path, threads: int) -> Column:
    import spmbpe

    return Column(
        key, title, lambda: spmbpe.load(path),
        {
            "line": lambda t, lines: [t.encode_ordinary(x) for x in lines],
            "doc": lambda t, doc: t.encode_ordinary(doc),
            "batch": lambda t, lines: t.encode_batch(lines, special="none", num_threads=threads),
        },
    )


def _plain_text_tokenizers(tok):
    # tokenizers matches added tokens (<s>, </s>, <unk>) in the text even with
    # add_special_tokens=False; this makes it read them as text, like
    # spmbpe's special="none".
    tok.encode_special_tokens = True
    return tok


def peer_column(dist: str, key: str, title: str, baseline: str, threads: int) -> Optional[Column]:
    """A peer of benchmarks/_peers.py as a column here, or None when its
    library is not importable."""
    built, _ = _peers.peer_columns(dist)
    if not built:
        return None
    peer = built[0]
    line, batch = peer.modes["line"], peer.modes.get("batch")

    def per_line(t, lines):
        # As a user's loop calls it (Column.loop): no frame of ours per text.
        if peer.loop is not None:
            return peer.loop(t, keep=True)(lines)
        call = peer.bind(t) if peer.bind is not None else functools.partial(line, t)
        return [call(x) for x in lines]

    run: Dict[str, Callable] = {"line": per_line, "doc": lambda t, doc: line(t, doc)}
    if batch is not None:
        run["batch"] = lambda t, lines: batch(t, lines, threads)
    specials = dict(peer.reads_specials)
    if "line" in specials:
        specials["doc"] = specials["line"]  # the document goes through the same call

    def known(mode: str, text: str) -> Optional[str]:
        spellings = specials.get(mode, ())
        if any(s in text for s in spellings):
            return (f"{peer.library} has no plain-text form of this call: it turns the spellings of "
                    f"{', '.join(spellings)} into their ids, which sentencepiece reads as text")
        return None

    # Their batch calls run on Rayon pools (or one like it) that spin after returning.
    return Column(key, title, peer.make, run,
                  baseline=baseline, known=known, spins=True)


def build_columns(threads: int) -> Tuple[List[Column], List[str]]:
    """The columns whose libraries are importable, and notes on the others."""
    cols: List[Column] = []
    notes: List[str] = []

    cols.append(spmbpe_column("spmbpe.model", "spmbpe (.model)", MODEL, threads))

    spm = optional_import("sentencepiece")
    if spm is not None:
        cols.append(Column(
            "sentencepiece", "sentencepiece",
            lambda: spm.SentencePieceProcessor(model_file=str(MODEL)),
            {
                "line": lambda t, lines: [t.encode(x) for x in lines],
                "doc": lambda t, doc: t.encode(doc),
                "batch": lambda t, lines: t.encode(lines, num_threads=threads),
            },
            baseline="spmbpe.model",
        ))

    splintr = optional_import("splintr")
    if splintr is not None:
        specials = sorted(splintr.Tokenizer.from_pretrained("mistral_v1").special_tokens())

        def splintr_known(mode: str, text: str) -> Optional[str]:
            if mode == "batch" and any(s in text for s in specials):
                return ("splintr-rs' encode_batch has no plain-text form: it turns special-token "
                        "spellings (</s>, <|think|>, ...) into their ids, which sentencepiece reads as text")
            return None

        cols.append(Column(
            "splintr", "splintr-rs",
            lambda: splintr.Tokenizer.from_pretrained("mistral_v1"),
            {
                "line": lambda t, lines: [t.encode_ordinary(x) for x in lines],
                "doc": lambda t, doc: t.encode_ordinary(doc),
                "batch": lambda t, lines: t.encode_batch(lines),
            },
            baseline="spmbpe.model", known=splintr_known, spins=True,
        ))

    for dist, key in (("kitoken", "kitoken"), ("gigatoken", "gigatoken")):
        col = peer_column(dist, key, dist, "spmbpe.model", threads)
        if col is not None:
            cols.append(col)

    cols.append(spmbpe_column("spmbpe.json", "spmbpe (json)", JSON, threads))
    tokenizers = optional_import("tokenizers")
    if tokenizers is not None:
        cols.append(Column(
            "tokenizers", "tokenizers",
            lambda: _plain_text_tokenizers(tokenizers.Tokenizer.from_file(str(JSON))),
            {
                "line": lambda t, lines: [t.encode(x, add_special_tokens=False).ids for x in lines],
                "doc": lambda t, doc: t.encode(doc, add_special_tokens=False).ids,
                "batch": lambda t, lines: [e.ids for e in t.encode_batch(lines, add_special_tokens=False)],
            },
            baseline="spmbpe.json", spins=True,
        ))
    col = peer_column("tokie", "tokie", "tokie", "spmbpe.json", threads)
    if col is not None:
        cols.append(col)

    cols.append(spmbpe_column("spmbpe.gguf", "spmbpe (gguf)", GGUF, threads))
    llama_cpp = optional_import("llama_cpp")
    if llama_cpp is not None:
        def make_llama():
            with quiet_stderr():
                return llama_cpp.Llama(str(GGUF), vocab_only=True, verbose=False)

        def enc(m, text):
            return m.tokenize(text.encode("utf-8"), add_bos=False, special=False)

        cols.append(Column(
            "llama.cpp", "llama.cpp", make_llama,
            {
                "line": lambda m, lines: [enc(m, x) for x in lines],
                "doc": enc,
            },
            baseline="spmbpe.gguf",
        ))
    else:
        notes.append("llama.cpp: llama_cpp not importable (see --site)")
    return cols, notes


# Known disagreements between spmbpe and a reference on the same file are
# decided per text by each column's `known` function and explained in the
# footnote.  None occurs on this corpus today: sentencepiece, splintr-rs,
# tokenizers and llama.cpp agree with spmbpe on every line and document.  The
# one rule listed is splintr-rs' batch call, which has no form that leaves
# special-token spellings as text.


# --------------------------------------------------------------------------
# Checking and timing


@dataclass
class Check:
    differing: int = 0  # differing lines (or 1 for a differing document)
    total: int = 0
    unexpected: int = 0
    example: str = ""
    reasons: Dict[str, int] = field(default_factory=dict)


def check(col: Column, mode: str, data, mine, theirs) -> Check:
    if mode == "doc":
        pairs = [(data, mine, theirs)]
    else:
        pairs = list(zip(data, mine, theirs))
        if len(mine) != len(theirs):
            return Check(1, len(data), 1, f"{len(theirs)} results for {len(data)} texts")
    result = Check(total=len(pairs))
    for i, (text, a, b) in enumerate(pairs):
        if list(a) == list(b):
            continue
        result.differing += 1
        reason = col.known(mode, text)
        if reason is None:
            result.unexpected += 1
            if not result.example:
                k = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                where = "document" if mode == "doc" else f"line {i + 1}"
                result.example = (f"{where}, token {k}: spmbpe {list(a[k:k + 4])} vs {list(b[k:k + 4])}"
                                  f" in {text[:60]!r}")
        else:
            result.reasons[reason] = result.reasons.get(reason, 0) + 1
    return result


# The key in `runs` of spmbpe (.model)'s one-thread batch (batch scaling).
ONE_THREAD = "spmbpe.model, 1 thread"


def seconds_in_turn(entries: Sequence[Tuple[Column, Callable]], data, repeat: int,
                    settle: float = 0.0) -> List[List[float]]:
    """The times of each (column, run), one per round, the runs taken in turn: each
    round times every entry once (in reverse order every other round), so
    that a slow spell of the machine falls on all of them alike and a ratio
    between them (spmbpe over a reference, batch scaling) compares runs made
    under the same conditions.  On a shared VM whose speed drifts
    between minutes, timing one column's runs back to back and then the
    next's made the same-run ratios swing as much.  `settle`: seconds to
    wait after a run of a column that `spins`, so that its worker threads
    (Rayon's spin before they sleep) are idle when the next run starts.
    Only there: a sleep before every run leaves both cores idle long enough
    that waking a second thread is slow, which takes most of the gain of
    spmbpe's second thread on the corpus files (compare
    benchmarks/batch_scaling.py --settle 0.05 with --settle 0)."""
    times: List[List[float]] = [[] for _ in entries]
    order = list(range(len(entries)))
    for r in range(repeat):
        for k in order if r % 2 == 0 else reversed(order):
            col, run = entries[k]
            tok = col.make()  # fresh: nothing survives from the previous run
            seconds, out = timed(lambda: run(tok, data))
            del out, tok
            times[k].append(seconds)
            if settle and col.spins:
                time.sleep(settle)
    return times


def paired_median(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """The median over the rounds of numerators[r] / denominators[r]."""
    return statistics.median(a / b for a, b in zip(numerators, denominators))


# --------------------------------------------------------------------------
# Output


class Table:
    def __init__(self, titles: Sequence[str], markdown: bool) -> None:
        self.titles, self.markdown = list(titles), markdown
        self.width = max(13, *(len(t) for t in titles))

    def header(self) -> None:
        if self.markdown:
            print("| file | mode | " + " | ".join(self.titles) + " |")
            print("|---|---|" + "---:|" * len(self.titles))
        else:
            line = f"{'file':<16} {'mode':<12} " + " ".join(f"{t:>{self.width}}" for t in self.titles)
            print(line)
            print("-" * len(line))
        sys.stdout.flush()

    def row(self, name: str, mode: str, cells: Sequence[str]) -> None:
        if self.markdown:
            print(f"| {name} | {mode} | " + " | ".join(cells) + " |")
        else:
            print(f"{name:<16} {mode:<12} " + " ".join(f"{c:>{self.width}}" for c in cells))
        sys.stdout.flush()


def fmt_rate(mb_per_s: float) -> str:
    return f"{mb_per_s:.2f}" if mb_per_s < 100 else f"{mb_per_s:.0f}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory of .txt files (default: %(default)s)")
    parser.add_argument("--files", default=None, help="comma-separated file names in the corpus (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cell; the best counts (default: 3)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of line,doc,batch")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for every batch call (default: all usable cores)")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown (for the README)")
    parser.add_argument("--site", action="append", default=[],
                        help="append DIR to sys.path before importing the references (repeatable)")
    args = parser.parse_args(argv)

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        parser.error(f"unknown mode(s) {bad}; choose from {','.join(MODES)}")
    threads = args.threads or usable_cores()
    if threads < 1 or args.repeat < 1:
        parser.error("--threads and --repeat must be at least 1")
    # Rayon reads this when its pool starts (first batch call of tokenizers / splintr-rs).
    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))

    files = sorted(args.corpus.glob("*.txt"))
    if args.files:
        wanted = [w.strip() for w in args.files.split(",") if w.strip()]
        missing = [w for w in wanted if not (args.corpus / w).is_file()]
        if missing:
            parser.error(f"not in {args.corpus}: {', '.join(missing)}")
        files = [args.corpus / w for w in wanted]
    if not files:
        print(f"no .txt files in {args.corpus}", file=sys.stderr)
        return 2

    add_site_dirs(args.site)
    cols, notes = build_columns(threads)
    by_key = {c.key: c for c in cols}

    p = "" if args.markdown else "# "
    print(f"{p}Machine: {machine_line()}")
    print(f"{p}Libraries: {versions_line()}")
    print(f"{p}MB/s of UTF-8 input, best of {args.repeat}; {load_line()} at start; batch: {threads} thread(s)"
          f" (RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}); fresh tokenizer per timed run")
    for note in notes:
        print(f"{p}{note}")
    if args.markdown:
        print()

    table = Table([c.title for c in cols], args.markdown)
    table.header()

    footnotes: List[str] = []
    unexpected = 0
    rates: Dict[Tuple[str, str, str], float] = {}  # (file, mode, column key) -> MB/s
    scaling: Dict[str, Tuple[float, float]] = {}  # file -> (1 thread, N threads) MB/s
    runs: Dict[Tuple[str, str, str], List[float]] = {}  # (file, mode, column key) -> seconds per round
    model_col = by_key["spmbpe.model"]

    for path in files:
        doc = path.read_text(encoding="utf-8")
        lines = corpus_lines(doc)
        for mode in modes:
            if mode == "doc":
                data, size = doc, len(doc.encode("utf-8"))
            else:
                data, size = lines, utf8_len(lines)
            baseline_ids: Dict[str, object] = {}
            cells: Dict[str, str] = {}
            entries: List[Tuple[Column, Callable]] = []
            for col in cols:
                run = col.run.get(mode)
                if run is None:
                    cells[col.key] = "-"
                    continue
                if col.baseline is not None:
                    base = by_key[col.baseline]
                    if col.baseline not in baseline_ids:
                        baseline_ids[col.baseline] = base.run[mode](base.make(), data)
                    result = check(col, mode, data, baseline_ids[col.baseline], run(col.make(), data))
                    if result.differing:
                        footnotes.append(_footnote(len(footnotes) + 1, path.name, mode, col, result))
                        unexpected += result.unexpected
                        mark = "differs" if not result.unexpected else "MISMATCH"
                        cells[col.key] = f"{mark}[{len(footnotes)}]"
                        continue
                entries.append((col, run))
            one_thread = None
            if mode == "batch" and any(col is model_col for col, _ in entries):
                # Scaling: spmbpe's one-thread batch, timed in turn with the rest.
                one_thread = len(entries)
                entries.append((model_col, lambda t, xs: t.encode_batch(xs, special="none", num_threads=1)))
            times = seconds_in_turn(entries, data, args.repeat, settle=0.05 if mode == "batch" else 0.0)
            best = [min(t) for t in times]
            for k, ((col, _), seconds) in enumerate(zip(entries, best)):
                if k == one_thread:
                    runs[(path.name, mode, ONE_THREAD)] = times[k]
                    continue
                runs[(path.name, mode, col.key)] = times[k]
                rate = size / 1e6 / seconds
                rates[(path.name, mode, col.key)] = rate
                cells[col.key] = fmt_rate(rate)
            if one_thread is not None:
                scaling[path.name] = (size / 1e6 / best[one_thread], rates[(path.name, mode, model_col.key)])
            mode_title = MODE_TITLES[mode] + (f" ({threads}t)" if mode == "batch" else "")
            table.row(path.name, mode_title, [cells[col.key] for col in cols])

    if footnotes:
        print()
        for note in footnotes:
            print(note)

    _summary(files, modes, rates, runs, scaling, threads, args.markdown, set(by_key))
    if unexpected:
        print(f"\n{unexpected} unexpected disagreement(s) with a reference: a bug in spmbpe or the reference",
              file=sys.stderr)
        return 1
    return 0


def _footnote(n: int, name: str, mode: str, col: Column, result: Check) -> str:
    unit = "document" if mode == "doc" else f"{result.differing} of {result.total} lines"
    text = f"[{n}] {name} {mode}: {col.title} differs from {by_title(col)} on {unit}"
    if result.reasons:
        text += "; known: " + "; ".join(f"{why} ({k})" for why, k in result.reasons.items())
    if result.unexpected:
        text += f"; UNEXPECTED ({result.unexpected}), first at {result.example}"
    return text


def by_title(col: Column) -> str:
    return {"spmbpe.model": "spmbpe (.model)", "spmbpe.json": "spmbpe (json)",
            "spmbpe.gguf": "spmbpe (gguf)"}.get(col.baseline or "", col.baseline or "")


def _summary(files, modes, rates, runs, scaling, threads, markdown, keys) -> None:
    refs = [k for k in ("sentencepiece", "splintr", "kitoken", "gigatoken") if k in keys]
    single = [m for m in modes if m in ("line", "doc")]
    if refs and single:
        names = ", ".join({"sentencepiece": "sentencepiece", "splintr": "splintr-rs"}.get(k, k) for k in refs)
        print()
        print(f"Single thread: spmbpe (.model) / the fastest of {names}, same run "
              f"(target: >= 10x on en_botchan.txt and code_py.txt, >= 3x on multi_*.txt); "
              f"of the best runs, and the median of the rounds' ratios (paired)")
        titles = [t for m in single for t in (MODE_TITLES[m], f"{MODE_TITLES[m]} (paired)")]
        if markdown:
            print()
            print("| file | " + " | ".join(titles) + " | target |")
            print("|---|" + "---:|" * len(titles) + "---:|")
        else:
            print(f"{'file':<16} " + " ".join(f"{t:>20}" for t in titles) + f" {'target':>8}")
        for path in files:
            cells = []
            target = target_for(path.name)
            for m in single:
                mine = rates.get((path.name, m, "spmbpe.model"))
                theirs = [rates[(path.name, m, k)] for k in refs if (path.name, m, k) in rates]
                if mine is None or not theirs:
                    cells += ["-", "-"]
                    continue
                # (Per round: the faster reference is the one with the shorter time.)
                faster = [min(ts) for ts in zip(*(runs[(path.name, m, k)] for k in refs
                                                  if (path.name, m, k) in runs))]
                for ratio in (mine / max(theirs), paired_median(faster, runs[(path.name, m, "spmbpe.model")])):
                    flag = "" if target is None or ratio >= target else " (below)"
                    cells.append(f"{ratio:.2f}x{flag}")
            tgt = f">= {target:g}x" if target else "-"
            if markdown:
                print(f"| {path.name} | " + " | ".join(cells) + f" | {tgt} |")
            else:
                print(f"{path.name:<16} " + " ".join(f"{c:>20}" for c in cells) + f" {tgt:>8}")
    if scaling:
        print()
        print(f"Batch scaling: spmbpe (.model) encode_batch, {threads} threads / 1 thread "
              f"(target: >= {SCALING_TARGET}x with 2 threads); of the best runs, and paired")
        if markdown:
            print()
            print(f"| file | 1 thread MB/s | {threads} threads MB/s | scaling | scaling (paired) |")
            print("|---|---:|---:|---:|---:|")
        else:
            print(f"{'file':<16} {'1 thread':>10} {f'{threads} threads':>10} {'scaling':>8} {'paired':>8}")
        for name, (one, many) in scaling.items():
            ratio = f"{many / one:.2f}x" if one and many else "-"
            mine = runs.get((name, "batch", "spmbpe.model"))
            paired = f"{paired_median(runs[(name, 'batch', ONE_THREAD)], mine):.2f}x" if mine else "-"
            if markdown:
                print(f"| {name} | {fmt_rate(one)} | {fmt_rate(many) if many else '-'} | {ratio} | {paired} |")
            else:
                print(f"{name:<16} {fmt_rate(one):>10} {fmt_rate(many) if many else '-':>10} {ratio:>8} {paired:>8}")


if __name__ == "__main__":
    sys.exit(main())
