"""Tokenizer memory and load time: spmbpe against the file's size and the references.

    python benchmarks/memory.py [--repeat N] [--processes N] [--site DIR]

Memory: in a fresh Python process per tokenizer, the resident set size
(/proc/self/statm) after importing the library, then after loading the
tokenizer; the difference is the tokenizer's memory.  "kept" is measured
after gc.collect() and glibc's malloc_trim(0), which hands freed heap back to
the system, so what is left is what the tokenizer holds; "raw" is without
malloc_trim; "peak" is the highest RSS during the load (VmHWM, reset just
before it through /proc/self/clear_refs) over the RSS before it.  The project's target: spmbpe's kept memory at most 3x its
file's size.

Load time: best of --repeat loads, each a fresh object in one process (the
file is in the page cache), and the median of --processes first loads, each
in a fresh process (library imported before the clock starts).  The target:
spmbpe.load of mistral-v1's .model no slower than sentencepiece.

Tokenizers: spmbpe on mistral-v1.model, mistral-v1.tokenizer.json and the
llama-spm GGUF; sentencepiece on the .model; tokenizers on the .json;
splintr-rs' bundled mistral_v1; llama.cpp on the GGUF (when llama_cpp is
importable, see --site / SPMBPE_BENCH_SITE).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    GGUF, JSON, MODEL, add_site_dirs, load_line, machine_line, optional_import, quiet_stderr, versions_line,
)

# key -> (module to import, file measured against, loader source)
TOKENIZERS = {
    "spmbpe .model": ("spmbpe", MODEL),
    "sentencepiece": ("sentencepiece", MODEL),
    "splintr-rs": ("splintr", None),
    "spmbpe json": ("spmbpe", JSON),
    "tokenizers": ("tokenizers", JSON),
    "spmbpe gguf": ("spmbpe", GGUF),
    "llama.cpp": ("llama_cpp", GGUF),
}


def loader(key: str):
    """A function that loads the tokenizer `key` (its module already imported)."""
    module, path = TOKENIZERS[key]
    mod = sys.modules.get(module) or __import__(module)
    if module == "spmbpe":
        # `import spmbpe` defers its modules to the first load: imported
        # here, the library's code stays out of the tokenizer's memory.
        __import__("spmbpe.loading")
        return lambda: mod.load(path)
    if key == "sentencepiece":
        return lambda: mod.SentencePieceProcessor(model_file=str(path))
    if key == "splintr-rs":
        return lambda: mod.Tokenizer.from_pretrained("mistral_v1")
    if key == "tokenizers":
        return lambda: mod.Tokenizer.from_file(str(path))
    if key == "llama.cpp":
        def make():
            with quiet_stderr():
                return mod.Llama(str(path), vocab_only=True, verbose=False)
        return make
    raise KeyError(key)


# --------------------------------------------------------------------------
# Child process: one measurement


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak() -> int:
    """Peak RSS since the last reset: VmHWM, else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _trim() -> bool:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False


def child(key: str) -> Dict[str, float]:
    import gc

    module = TOKENIZERS[key][0]
    __import__(module)
    make = loader(key)
    gc.collect()
    _trim()
    reset = _reset_peak()
    before = _rss()
    start = time.perf_counter()
    tok = make()
    seconds = time.perf_counter() - start
    peak = _peak() - before if reset else float("nan")
    gc.collect()
    raw = _rss()
    trimmed = _trim()
    kept = _rss()
    assert tok is not None
    return {"first_load": seconds, "raw": raw - before, "kept": kept - before,
            "peak": peak, "trimmed": trimmed}


# --------------------------------------------------------------------------
# Parent


def run_child(key: str, site: List[str]) -> Optional[Dict[str, float]]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", key]
    for d in site:
        cmd += ["--site", d]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  {key}: child failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def best_load(key: str, repeat: int) -> float:
    make = loader(key)
    make()  # warm: page cache, lazy imports
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        tok = make()
        best = min(best, time.perf_counter() - start)
        del tok
    return best


def mb(n: float) -> str:
    return f"{n / 1e6:.2f}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20, help="loads per tokenizer in this process (default 20)")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh processes per tokenizer for memory and first load (default 3)")
    parser.add_argument("--site", action="append", default=[],
                        help="append DIR to sys.path before importing the references (repeatable)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    add_site_dirs(args.site)

    if args.child:
        print(json.dumps(child(args.child)))
        return 0

    keys = [k for k, (module, _) in TOKENIZERS.items() if optional_import(module) is not None]
    print(f"# Machine: {machine_line()}")
    print(f"# Libraries: {versions_line()}")
    print(f"# {load_line()} at start; memory: min over {args.processes} fresh processes; "
          f"load: best of {args.repeat} in one process, median of {args.processes} first loads")
    head = (f"{'tokenizer':<14} {'file':<28} {'file MB':>8} {'kept MB':>8} {'x file':>7} {'raw MB':>8} "
            f"{'peak MB':>8} {'load ms':>8} {'1st ms':>8}")
    print(head)
    print("-" * len(head))
    results = {}
    for key in keys:
        runs = [r for r in (run_child(key, args.site) for _ in range(args.processes)) if r]
        if not runs:
            continue
        path = TOKENIZERS[key][1]
        size = path.stat().st_size if path else None
        kept = min(r["kept"] for r in runs)
        raw = min(r["raw"] for r in runs)
        peak = min(r["peak"] for r in runs)
        first = statistics.median(r["first_load"] for r in runs)
        load = best_load(key, args.repeat)
        results[key] = {"kept": kept, "load": load, "first": first, "size": size}
        ratio = f"{kept / size:.2f}x" if size else "-"
        name = path.name if path else "(bundled mistral_v1)"
        print(f"{key:<14} {name:<28} {mb(size) if size else '-':>8} {mb(kept):>8} {ratio:>7} {mb(raw):>8} "
              f"{mb(peak):>8} {load * 1e3:8.1f} {first * 1e3:8.1f}", flush=True)

    print()
    print("Targets:")
    for key in ("spmbpe .model", "spmbpe json", "spmbpe gguf"):
        r = results.get(key)
        if r and r["size"]:
            ratio = r["kept"] / r["size"]
            print(f"  {key}: memory {mb(r['kept'])} MB = {ratio:.2f}x its file "
                  f"({'within' if ratio <= 3 else 'ABOVE'} the 3x target)")
    mine, theirs = results.get("spmbpe .model"), results.get("sentencepiece")
    if mine and theirs:
        for what, label in (("load", "best load"), ("first", "first load in a fresh process")):
            ratio = mine[what] / theirs[what]
            print(f"  mistral-v1 .model, {label}: spmbpe {mine[what] * 1e3:.1f} ms, sentencepiece "
                  f"{theirs[what] * 1e3:.1f} ms = {ratio:.2f}x ({'ok' if ratio <= 1 else 'SLOWER'})")
        print(f"  memory vs sentencepiece: spmbpe {mb(mine['kept'])} MB, sentencepiece {mb(theirs['kept'])} MB")
    print(f"# {load_line()} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
