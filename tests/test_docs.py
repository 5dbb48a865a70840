"""The docs are read: short enough to read, no lab diary, no dead links.

History (rounds of work, what was tried and dropped, before/after figures)
lives in ``git log``; the docs say how things are, and performance figures
come from the benchmarks with their machine, versions and commit.  Code
comments keep the *why* and leave measured figures to the benchmarks that
print them.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

# The sources whose comments and docstrings must carry no measured figures,
# as (folder, glob).  The comment reader below understands "#" comments,
# triple-quoted strings and C's /* */ and // comments, so a folder of
# .pyx/.pxd or .h/.c files is one more line here.
COMMENTED_SOURCES = [
    ("spmbpe", "*.py"),
    ("spmbpe", "*.pyx"),
    ("spmbpe", "*.pxd"),
    ("spmbpe/core", "*.pyx"),
    ("spmbpe/core", "*.pxd"),
    ("csrc", "*.h"),
    ("csrc", "*.c"),
    ("benchmarks", "*.py"),
    ("tools", "*.py"),
]

PERFORMANCE_MAX_LINES = 400


# -- reading Markdown ----------------------------------------------------


def _prose_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks, with
    inline code spans blanked out."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
            continue
        if fence is None:
            yield number, re.sub(r"`+[^`]*`+", "``", line)


def _headings(text: str) -> List[Tuple[int, str]]:
    """(line number, heading text) of the ATX headings outside code."""
    out = []
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~"):
            fence = marker if fence is None else (None if marker == fence else fence)
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fence is None and m:
            out.append((number, m.group(1)))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped
    (letters, digits, marks, "-" and "_" kept), spaces as "-"."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.strip().lower()
    kept = []
    for ch in text:
        if ch == " ":
            kept.append("-")
        elif ch in "-_" or unicodedata.category(ch)[0] in "LNM":
            kept.append(ch)
    return "".join(kept)


def _anchors(path: Path) -> Set[str]:
    seen: Dict[str, int] = {}
    anchors = set()
    for _, heading in _headings(path.read_text(encoding="utf-8")):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", path.read_text(encoding="utf-8")):
        anchors.add(m.group(1))
    return anchors


def _links(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, target) of every inline and reference-style link."""
    for number, line in _prose_lines(text):
        for m in re.finditer(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            yield number, m.group(1)
        m = re.match(r"\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", line)
        if m:
            yield number, m.group(1)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# -- the rules -----------------------------------------------------------

ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|"
    "twentieth|thirtieth|\\d+(?:st|nd|rd|th)"
)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"

# Marks of a diary: what happened when, not how things are.
HISTORY = [
    ("a date", re.compile(rf"\b(?:19|20)\d\d-[01]\d(?:-[0-3]\d)?\b|\b(?:{MONTHS})\s+(?:\d{{1,2}},\s+)?(?:19|20)\d\d\b"
                          rf"|\b\d{{1,2}}\s+(?:{MONTHS})\s+(?:19|20)\d\d\b")),
    ("a round of work", re.compile(rf"\b(?:(?:twenty|thirty)-)?(?:{ORDINALS})\s+rounds?\b|\brounds?\s+\d+\b"
                                   r"|\bthis round\b|\bthe round's\b", re.I)),
    ("a tried-and-dropped log", re.compile(r"\btried and dropped\b|^\s*[-*]\s+\*\*(?:kept|dropped|tried)\b", re.I)),
    ("a figure's before and after", re.compile(r"\d[\d.,]*\s?(?:[a-zµ%/]+\s?)?(?:->|→)\s?\d"
                                               r"|\bwent from \d|\bbefore these changes\b", re.I)),
    ("a heading for a moment in time", re.compile(r"^#{1,6}\s.*\b(?:before|after|since|until)\b.*$", re.I)),
]


def test_docs_exist():
    assert (ROOT / "docs" / "performance.md").is_file()
    assert len(DOCS) > 2


def test_performance_notes_are_short():
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").count("\n")
    assert lines < PERFORMANCE_MAX_LINES, (
        f"docs/performance.md has {lines} lines; keep it under {PERFORMANCE_MAX_LINES}: "
        "the method, one current table per benchmark, where the time goes, how to reproduce"
    )


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_no_dated_history(doc):
    found = []
    text = doc.read_text(encoding="utf-8")
    for number, line in _prose_lines(text):
        for what, rule in HISTORY:
            m = rule.search(line)
            if m:
                found.append(f"{_rel(doc)}:{number}: {what}: {m.group(0)!r} in {line.strip()[:100]!r}")
    assert not found, "history belongs in git log, not in the docs:\n" + "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_headings_are_unique(doc):
    """One section per subject (not one per snapshot), and every heading's
    anchor unambiguous."""
    seen: Dict[str, int] = {}
    repeated = []
    for number, heading in _headings(doc.read_text(encoding="utf-8")):
        slug = _slug(heading)
        if slug in seen:
            repeated.append(f"{_rel(doc)}:{number}: {heading!r} (also line {seen[slug]})")
        seen.setdefault(slug, number)
    assert not repeated, "\n".join(repeated)


def _broken_links(doc: Path) -> List[str]:
    """"line: target (why)" for each relative link of `doc` whose file or
    heading does not exist."""
    broken = []
    for number, target in _links(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.exists():
            broken.append(f"{number}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{number}: {target} (no heading with that anchor)")
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_relative_links_resolve(doc):
    broken = _broken_links(doc)
    assert not broken, "\n".join(f"{_rel(doc)}:{b}" for b in broken)


def test_the_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# Where the time goes\n\n## At scale: `bench/x.py`\n")
    page.write_text("[ok](b.md#where-the-time-goes) [ok](b.md#at-scale-benchxpy) [ok](#top)\n"
                    "[bad](b.md#nowhere) [bad](c.md) `[code](c.md)` [web](https://example.org/x.md)\n\n"
                    "# Top\n\n```\n[code](d.md)\n```\n")
    targets = [t for _, t in _links(page.read_text())]
    assert targets == ["b.md#where-the-time-goes", "b.md#at-scale-benchxpy", "#top",
                       "b.md#nowhere", "c.md", "https://example.org/x.md"]
    assert _broken_links(page) == ["2: b.md#nowhere (no heading with that anchor)", "2: c.md (no such file)"]


@pytest.mark.parametrize("line, what", [
    ("### At corpus scale (2026-12-05, after issue 21's twentieth round)", "a date"),
    ("in the fourth round (afternoon) the cache", "a round of work"),
    ("Tried and dropped in this round: huge pages", "a tried-and-dropped log"),
    ("- **Kept: the reader counts line ends**", "a tried-and-dropped log"),
    ("40 MB to `.bin` went 0.94 -> 0.69 s", "a figure's before and after"),
    ("the median run over 40 MB went from 0.48 s to 0.35 s", "a figure's before and after"),
    ("### Small files, before and after the change", "a heading for a moment in time"),
])
def test_the_history_rules_catch_a_diary(line, what):
    rules = dict(HISTORY)
    assert rules[what].search(re.sub(r"`+[^`]*`+", "``", line))


# -- code comments -------------------------------------------------------

# A measured figure: a time or a rate, a speed-up, a share or count of
# instructions or of a run's time, a figure's before and after.
FIGURE = re.compile(
    r"\b\d[\d,.]*(?:\s?-\s?\d[\d,.]*)?\s?(?:ns|us|µs|ms|[kMG]B/s)\b"
    r"|\b\d[\d,.]*(?:\s?-\s?\d[\d,.]*)?\s(?:s|seconds?)\s+(?:of|a|per|for|in|where|against)\b"
    r"|\b\d+\.\d+x\b|\b\d[\d.]*x\s+(?:faster|slower)\b|\b\d[\d.]*\s+times\s+(?:faster|slower)\b"
    r"|\b\d[\d.]*%\s+(?:of|more|less|fewer|faster|slower)\b"
    r"|\b\d[\d,.]*\s+(?:million\s+)?instructions\b"
    r"|\d[\d.,]*\s?(?:[a-zµ%/]+\s?)?(?:->|→)\s?\d"
)


def _comments(path: Path) -> Iterator[Tuple[int, str]]:
    """(line number, text) of each line of the file's comments and
    triple-quoted strings (docstrings): "#" comments for Python and Cython,
    /* */ and // for C."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".c", ".h"):
        pattern = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
    else:
        pattern = re.compile(r"\"\"\".*?\"\"\"|'''.*?'''|#[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
    for m in pattern.finditer(text):
        token = m.group(0)
        if token[0] in "\"'" and not token.startswith(('"""', "'''")):
            continue  # an ordinary string literal: code, not prose
        first = text.count("\n", 0, m.start()) + 1
        for k, line in enumerate(token.splitlines()):
            yield first + k, line


def _commented_files() -> List[Path]:
    """The files of COMMENTED_SOURCES but tests (benchmarks/test_*.py), whose
    numbers are their own inputs, not measurements."""
    files = []
    for folder, pattern in COMMENTED_SOURCES:
        files += sorted(p for p in (ROOT / folder).glob(pattern) if not p.name.startswith("test_"))
    return files


@pytest.mark.parametrize("path", _commented_files(), ids=_rel)
def test_comments_carry_no_measured_figures(path):
    found = [f"{_rel(path)}:{n}: {line.strip()[:110]}" for n, line in _comments(path) if FIGURE.search(line)]
    assert not found, ("comments keep the why; the figures belong to the benchmarks that print them:\n"
                       + "\n".join(found))


@pytest.mark.parametrize("comment", [
    "# pages past 4 MB), 50-100 ms of a 40 MB file's close.",
    "    input that fsync took 17-22 ms of the command's close",
    "# of Python 1.06-1.12x faster a second time",
    "# (the lookups were 55% of reading the rules; 8.9 -> 7.3 ms",
    "# the cache's code ran 14% more instructions on the man pages",
    "# 1.2-1.9 ns a byte, now 0.5-0.9",
    "# (about 0.1 s of CPU here)",
])
def test_the_figure_rule_catches_a_timing(comment):
    assert FIGURE.search(comment)


@pytest.mark.parametrize("comment", [
    "# Items per step when copying a spooled array",
    "# 64 KiB blocks; at most 98,304 chunks (three quarters of 131,072 slots)",
    "# transformers 4.x's slow tokenizer; tokenizers up to 0.20 take it as an attribute",
    "# sampled from /proc every 0.2 s",
    "# ids: 32-bit, native order; the 2x, 4x inputs",
])
def test_the_figure_rule_leaves_sizes_and_settings(comment):
    assert not FIGURE.search(comment)


def test_the_comment_reader_reads_python_and_c(tmp_path):
    py = tmp_path / "m.py"
    py.write_text('x = "# not a comment"\n# a comment\ndef f():\n    """A docstring\n    on two lines."""\n')
    assert [line.strip() for _, line in _comments(py)] == ["# a comment", '"""A docstring', 'on two lines."""']
    c = tmp_path / "m.h"
    c.write_text('const char *s = "/* no */";\n/* one\n * two */\nint x; // three\n')
    assert [n for n, _ in _comments(c)] == [2, 3, 4]
