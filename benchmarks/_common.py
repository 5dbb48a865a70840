"""Shared by the benchmark scripts: file paths, machine description, timing helpers."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import platform
import re
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "corpus"
MODEL = DATA / "mistral-v1.model"          # sentencepiece ModelProto of Mistral 7B v0.1
JSON = DATA / "mistral-v1.tokenizer.json"  # the same vocabulary converted to a tokenizer.json
GGUF = DATA / "ggml-vocab-llama-spm.gguf"  # llama.cpp's Llama 2 (SPM) vocabulary

# Python distribution name -> module name, for the version line.
LIBRARIES = [
    ("spmbpe", "spmbpe"),
    ("sentencepiece", "sentencepiece"),
    ("tokenizers", "tokenizers"),
    ("splintr-rs", "splintr"),
    ("kitoken", "kitoken"),
    ("gigatoken", "gigatoken"),
    ("tokie", "tokie"),
    ("llama-cpp-python", "llama_cpp"),
]


def add_site_dirs(dirs: Iterable[str]) -> None:
    """Append directories (e.g. another venv's site-packages holding llama_cpp)
    to sys.path, after this interpreter's own, so its packages win."""
    extra = [d for d in dirs if d]
    env = os.environ.get("SPMBPE_BENCH_SITE", "")
    extra += [d for d in env.split(os.pathsep) if d]
    for d in extra:
        if d not in sys.path:
            sys.path.append(d)


def optional_import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def os_name() -> str:
    pretty = None
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    kernel = f"{platform.system()} {platform.release()}"
    return f"{pretty}, {kernel}" if pretty else kernel


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def machine_line() -> str:
    cores = usable_cores()
    total = os.cpu_count()
    cores_text = f"{cores} cores" + (f" (of {total})" if total and total != cores else "")
    return (f"{cores_text}, {cpu_model()}, {platform.machine()}; {os_name()}; "
            f"Python {platform.python_version()} ({platform.python_implementation()}, {platform.python_compiler()})")


def version_of(dist: str, module: str) -> Optional[str]:
    mod = sys.modules.get(module) or optional_import(module)
    if mod is None:
        return None
    version = getattr(mod, "__version__", None)
    if version is None:
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            version = "?"
    return str(version)


def versions_line(wanted: Optional[Iterable[str]] = None) -> str:
    parts, missing = [], []
    for dist, module in LIBRARIES:
        if wanted is not None and module not in wanted:
            continue
        v = version_of(dist, module)
        (parts if v else missing).append(f"{dist} {v}" if v else dist)
    line = ", ".join(parts)
    if missing:
        line += f"; not installed: {', '.join(missing)}"
    return line


def load_line() -> str:
    try:
        one, five, fifteen = os.getloadavg()
        return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"
    except OSError:
        return "load average unknown"


@contextlib.contextmanager
def quiet_stderr():
    """Silence C-level writes to stderr (llama.cpp logs even with verbose=False)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def timed(run: Callable[[], object]) -> Tuple[float, object]:
    """Seconds of one call, with the cyclic GC off during it (as timeit does)."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        out = run()
        seconds = time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()
    return seconds, out


def corpus_lines(text: str) -> List[str]:
    """The corpus's per-line unit: every non-blank line (see tests/data/corpus/README.md)."""
    return [x for x in text.splitlines() if x.strip()]


def utf8_len(texts: Iterable[str]) -> int:
    return sum(len(x.encode("utf-8")) for x in texts)


_CHUNK = re.compile(r" *[^ ]+| +")


def word_chunks(line: str) -> List[Tuple[bool, str]]:
    """A line's word-level chunks, as (starts the line, text): a chunk starts
    at the line's start and at each space that follows a non-space ("a  b c"
    -> "a", "  b", " c").  With sentencepiece's dummy prefix and its escaping
    of spaces, a chunk's pieces are those of "▁" + its text at the line's
    start, else of its text with its first space as the "▁": " word" is
    "▁word" wherever it stands.  (benchmarks/floor.c cuts lines the same way.)"""
    return [(i == 0, c) for i, c in enumerate(_CHUNK.findall(line))]
