"""Build a cold-heavy corpus: real text whose words are mostly rare, for the
benchmarks that measure the first sighting of a chunk (the merge itself).

    python benchmarks/make_cold_corpus.py DIR [--mb 100] [--fetch] [--root PATH]
                                          [--compare LARGE_CORPUS_DIR]

The text comes from Debian packages, never from the large corpus of
``make_large_corpus.py`` (manual pages, the Python standard library, the
gettext catalogs of de, fr, es, ru, ja, zh_CN and ko, Debian changelogs).  Five
kinds, each a share of --mb:

  definitions  27%  reference works: GCIDE (Webster 1913 and later), WordNet 3.0,
                    FOLDOC, the Jargon File, the Devil's Dictionary, V.E.R.A.
                    (dict-gcide, dict-wn, dict-foldoc, dict-jargon, dict-devil,
                    dict-vera; their dictd ``.dict.dz`` files, read as gzip)
  code         18%  C headers of the kernel and glibc (linux-libc-dev,
                    libc6-dev) and Perl's own modules (perl-modules-5.36)
  quotations   18%  fortune cookies: short texts in English, German, Italian,
                    Spanish, Russian, Polish, Czech, Bulgarian, Esperanto,
                    Irish, Chinese (fortunes, fortunes-min, fortunes-de, -it,
                    -es, -ru, -pl, -cs, -bg, -eo, -ga, -zh)
  wordlists    27%  one word a line: English, German, French, Spanish,
                    Italian, Portuguese, Swedish, Danish, Dutch, Polish,
                    Norwegian, Catalan, Ukrainian, Bulgarian (wamerican,
                    wbritish, wngerman, wfrench, wspanish, witalian,
                    wportuguese, wswedish, wdanish, wdutch, wpolish,
                    wnorwegian, wcatalan, wukrainian, wbulgarian)
  names        10%  iso-codes' translations of country, language, currency
                    and script names into about 160 languages (all but the
                    seven of the large corpus)

A kind larger than its share is sampled in blocks of about 64 KB spread evenly
over it (every letter of a dictionary, every language of a list), a smaller one
is taken whole and what it leaves of its share goes to the others, in
proportion to theirs.  The kinds are then interleaved, block by block, so that any
slice of the file (benchmarks/ab_builds.py's slices, scale.py's --limit-mb)
holds every kind in about its share.  Its only line break is "\\n": carriage
returns, form feeds and the other characters Python's str.splitlines breaks at
are replaced by "\\n", so that every reader (splitlines, the command line,
gigatoken's separator) sees the same lines.

Writes DIR/cold.txt (the corpus, about --mb MB), DIR/kinds/<kind>.txt (each
kind alone) and DIR/cold.json (packages and versions, sizes, and the rarity
figures below), and prints those figures: per kind and for the whole file,
the share of word-level chunks (a chunk starts at a line start and at each
space that follows a non-space, as in benchmarks/floor.py) and of their bytes
that are first sightings in that text, and the same share of words (runs of
letters and digits).  --compare DIR adds the same figures for the .txt files
of a large corpus, for contrast.

The packages: either install them (as root, ``apt-get install`` with the names
in PACKAGES; dict-* pull dictd in) and run without --fetch, reading them from
``/``; or pass --fetch, which downloads the .deb files with ``apt-get
download`` into DIR/debs and unpacks them with ``dpkg-deb -x`` into
DIR/debroot (installing nothing on the system: no root, no daemon) and reads
them from there.  Nothing is installed unless asked.  The same package
versions give the same corpus, byte for byte.
"""

from __future__ import annotations

import argparse
import gettext
import glob
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import word_chunks  # noqa: E402

KINDS: Dict[str, Tuple[float, Tuple[str, ...]]] = {
    "definitions": (0.27, ("dict-gcide", "dict-wn", "dict-foldoc", "dict-jargon", "dict-devil", "dict-vera")),
    "code": (0.18, ("linux-libc-dev", "libc6-dev", "perl-modules-5.36")),
    "quotations": (0.18, ("fortunes", "fortunes-min", "fortunes-de", "fortunes-it", "fortunes-es", "fortunes-ru",
                          "fortunes-pl", "fortunes-cs", "fortunes-bg", "fortunes-eo", "fortunes-ga", "fortunes-zh")),
    "wordlists": (0.27, ("wamerican", "wbritish", "wngerman", "wfrench", "wspanish", "witalian", "wportuguese",
                         "wswedish", "wdanish", "wdutch", "wpolish", "wnorwegian", "wcatalan", "wukrainian",
                         "wbulgarian")),
    "names": (0.10, ("iso-codes",)),
}
PACKAGES = tuple(p for _, pkgs in KINDS.values() for p in pkgs)
BLOCK = 64_000
# The gettext languages of make_large_corpus.py's multi_<lang>.txt files.
LARGE_CORPUS_LANGS = {"de", "fr", "es", "ru", "ja", "zh_CN", "ko"}
# Every line break of str.splitlines but "\n" (and "\r\n" as one).
_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_WORD = re.compile(r"\w+")


# --------------------------------------------------------------------------
# Sources: each kind as a list of texts, in a fixed order


def _read(path: str) -> str:
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".dz") or path.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", "replace")


def _files(root: Path, pattern: str) -> List[str]:
    return sorted(p for p in glob.glob(str(root / pattern), recursive=True)
                  if os.path.isfile(p) and not os.path.islink(p))


def definitions(root: Path) -> List[str]:
    names = ("gcide", "wn", "foldoc", "jargon", "devil", "vera")
    return [_read(str(root / f"usr/share/dictd/{n}.dict.dz")) for n in names
            if (root / f"usr/share/dictd/{n}.dict.dz").is_file()]


def code(root: Path) -> List[str]:
    headers = _files(root, "usr/include/**/*.h")
    perl = [p for p in _files(root, "usr/share/perl/*/**/*") if p.endswith((".pm", ".pl", ".pod"))]
    return ["".join(_read(p) for p in headers), "".join(_read(p) for p in perl)]


def quotations(root: Path) -> List[str]:
    base = root / "usr/share/games/fortunes"
    texts = []
    for p in _files(base, "**/*"):
        rel = os.path.relpath(p, base)
        # .dat: strfile's index; .u8: a UTF-8 copy of a file also present;
        # off/: rot13-encoded.
        if rel.endswith((".dat", ".u8")) or rel.startswith("off" + os.sep):
            continue
        texts.append(_read(p))
    return texts


def wordlists(root: Path) -> List[str]:
    return [_read(p) for p in _files(root, "usr/share/dict/*")
            if not os.path.basename(p).startswith("README")]


def names(root: Path) -> List[str]:
    texts = []
    for mo in _files(root, "usr/share/locale/*/LC_MESSAGES/iso_*.mo"):
        lang = Path(mo).parts[-3]
        if lang in LARGE_CORPUS_LANGS:
            continue
        with open(mo, "rb") as f:
            catalog = gettext.GNUTranslations(f)._catalog  # msgid -> translation
        texts.append("\n".join(v for k, v in sorted(catalog.items(), key=lambda kv: str(kv[0]))
                               if k and isinstance(v, str) and v.strip()) + "\n")
    return texts


SOURCES = {"definitions": definitions, "code": code, "quotations": quotations, "wordlists": wordlists,
           "names": names}


# --------------------------------------------------------------------------
# Blocks, sampling, interleaving


def clean(text: str) -> str:
    """Lines broken at "\\n" only, no blank runs of more than one line."""
    text = _BREAKS.sub("\n", text).replace("\x00", "")
    return re.sub(r"\n{3,}", "\n\n", text)


def blocks(text: str, size: int = BLOCK) -> List[str]:
    """The text cut at line ends into blocks of about `size` characters."""
    out, start = [], 0
    while start < len(text):
        cut = text.find("\n", start + size)
        end = len(text) if cut < 0 else cut + 1
        out.append(text[start:end])
        start = end
    return out


def sample(texts: Iterable[str], budget: int) -> List[str]:
    """Blocks of every text, each text giving an equal share of `budget`
    UTF-8 bytes (a smaller text all it has, its leftover shared by the others),
    its blocks taken evenly spread over it."""
    parts = [blocks(t) for t in texts if t.strip()]
    sizes = [[len(b.encode("utf-8")) for b in p] for p in parts]
    order = sorted(range(len(parts)), key=lambda i: sum(sizes[i]))
    share: Dict[int, int] = {}
    left = budget
    for k, i in enumerate(order):
        want = left // (len(order) - k)
        share[i] = min(want, sum(sizes[i]))
        left -= share[i]
    out = []
    for i, p in enumerate(parts):
        total = sum(sizes[i])
        if share[i] >= total:
            out.extend(p)
            continue
        keep = share[i] / total
        taken, acc = 0, 0.0
        for b, n in zip(p, sizes[i]):
            acc += n * keep
            if acc >= taken + n / 2:  # evenly spread: keep a block when its share is due
                out.append(b)
                taken += n
    return out


def budgets(texts: Dict[str, List[str]], budget: int) -> List[int]:
    """Each kind's share of `budget` in UTF-8 bytes: a kind with less text
    than its share gets what it has, the rest is shared by the others in
    proportion to their shares."""
    have = {k: sum(len(t.encode("utf-8")) for t in ts) for k, ts in texts.items()}
    out: Dict[str, int] = {}
    open_kinds = list(texts)
    left = budget
    while open_kinds:
        weight = sum(KINDS[k][0] for k in open_kinds)
        short = [k for k in open_kinds if have[k] <= left * KINDS[k][0] / weight]
        if not short:
            for k in open_kinds:
                out[k] = int(left * KINDS[k][0] / weight)
            break
        for k in short:
            out[k] = have[k]
            left -= have[k]
            open_kinds.remove(k)
    return [out[k] for k in texts]


def interleave(kinds: Dict[str, List[str]]) -> str:
    """The kinds' blocks in one text: at each step the next block of the kind
    whose emitted fraction is lowest, so that every slice holds each kind in
    about its share."""
    totals = {k: sum(len(b) for b in bs) for k, bs in kinds.items() if bs}
    done = {k: 0 for k in totals}
    pos = {k: 0 for k in totals}
    out = []
    while pos:
        k = min(pos, key=lambda x: (done[x] / totals[x], x))
        b = kinds[k][pos[k]]
        out.append(b if b.endswith("\n") else b + "\n")
        done[k] += len(b)
        pos[k] += 1
        if pos[k] == len(kinds[k]):
            del pos[k]
    return "".join(out)


# --------------------------------------------------------------------------
# Rarity


def rarity(text: str) -> Dict[str, float]:
    """First sightings in reading order: the share of word-level chunks (and
    of their bytes) seen for the first time, and of words."""
    seen_chunks, seen_words = set(), set()
    chunks = chunk_bytes = new_chunks = new_bytes = words = new_words = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        for first, c in word_chunks(line):
            n = len(c.encode("utf-8"))
            chunks += 1
            chunk_bytes += n
            key = (first, c)
            if key not in seen_chunks:
                seen_chunks.add(key)
                new_chunks += 1
                new_bytes += n
        for w in _WORD.findall(line):
            words += 1
            if w not in seen_words:
                seen_words.add(w)
                new_words += 1
    return {"bytes": len(text.encode("utf-8")), "chunks": chunks,
            "new_chunks": new_chunks / max(chunks, 1), "new_chunk_bytes": new_bytes / max(chunk_bytes, 1),
            "words": words, "new_words": new_words / max(words, 1)}


def _rarity_row(name: str, r: Dict[str, float]) -> str:
    return (f"{name:<26} {r['bytes'] / 1e6:8.1f} {r['chunks']:>11,} {100 * r['new_chunks']:8.1f}% "
            f"{100 * r['new_chunk_bytes']:8.1f}% {100 * r['new_words']:8.1f}%")


# --------------------------------------------------------------------------


def fetch(out: Path) -> Tuple[Path, Dict[str, str]]:
    """apt-get download the packages into out/debs and unpack them into
    out/debroot: (the root, package -> version)."""
    debs, root = out / "debs", out / "debroot"
    debs.mkdir(parents=True, exist_ok=True)
    root.mkdir(exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    versions = fetched_versions(debs)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root, versions


def fetched_versions(debs: Path) -> Dict[str, str]:
    versions = {}
    for deb in sorted(debs.glob("*.deb")):
        proc = subprocess.run(["dpkg-deb", "--show", "--showformat=${Package} ${Version}", str(deb)],
                              capture_output=True, text=True)
        fields = proc.stdout.split()
        if proc.returncode == 0 and len(fields) == 2 and fields[0] in PACKAGES:
            versions[fields[0]] = fields[1]
    return versions


def installed_versions() -> Dict[str, str]:
    versions = {}
    for p in PACKAGES:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout:
            versions[p] = proc.stdout
    return versions


def main(argv: List[str] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="packages: " + " ".join(PACKAGES))
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=100.0, help="size of cold.txt in MB (default 100)")
    ap.add_argument("--fetch", action="store_true",
                    help="apt-get download the packages and unpack them under OUT (installs nothing)")
    ap.add_argument("--root", type=Path, default=None,
                    help="where the packages' files are (default: OUT/debroot after --fetch, else /)")
    ap.add_argument("--compare", type=Path, default=None, help="a large corpus directory to set the figures against")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.fetch:
        root, versions = fetch(args.out)
    else:
        root = args.root or (args.out / "debroot" if (args.out / "debroot").is_dir() else Path("/"))
        # (An unpacked tree's versions are those of the .deb files beside it.)
        versions = installed_versions() if root == Path("/") else fetched_versions(root.parent / "debs")
    missing = [p for p in PACKAGES if root == Path("/") and p not in versions]
    budget = int(args.mb * 1e6)
    texts = {kind: [clean(t) for t in SOURCES[kind](root)] for kind in KINDS}
    shares = budgets(texts, budget)
    kinds = {kind: sample(texts[kind], shares[i]) for i, kind in enumerate(texts)}
    for kind, bs in kinds.items():
        if not bs:
            print(f"{kind}: nothing found under {root} (packages {', '.join(KINDS[kind][1])})", file=sys.stderr)
    if not any(kinds.values()):
        print(f"no source text under {root}: install the packages or pass --fetch\n  packages: "
              f"{' '.join(PACKAGES)}", file=sys.stderr)
        return 2
    (args.out / "kinds").mkdir(exist_ok=True)
    report: Dict[str, object] = {"root": str(root), "packages": versions, "missing": missing, "kinds": {}}
    print(f"{'text':<26} {'MB':>8} {'chunks':>11} {'new':>9} {'new bytes':>9} {'new words':>9}")
    for kind, bs in kinds.items():
        text = "".join(b if b.endswith("\n") else b + "\n" for b in bs)
        (args.out / "kinds" / f"{kind}.txt").write_text(text, encoding="utf-8")
        r = rarity(text)
        report["kinds"][kind] = r
        print(_rarity_row(f"kinds/{kind}.txt", r), flush=True)
    text = interleave(kinds)
    (args.out / "cold.txt").write_text(text, encoding="utf-8")
    report["cold"] = rarity(text)
    print(_rarity_row("cold.txt", report["cold"]), flush=True)
    if args.compare:
        report["compare"] = {}
        for p in sorted(args.compare.glob("*.txt")):
            r = rarity(p.read_text(encoding="utf-8", errors="replace"))
            report["compare"][p.name] = r
            print(_rarity_row(p.name, r), flush=True)
    print("new: the share of word-level chunks (and of their bytes, and of words) seen for the first time "
          "in that text, in reading order")
    if missing:
        print(f"not installed (their kinds are smaller or empty): {', '.join(missing)}", file=sys.stderr)
    (args.out / "cold.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
