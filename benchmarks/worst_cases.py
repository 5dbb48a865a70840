"""spmbpe on adversarial inputs: the time must grow as O(n log n), not O(n^2).

    python benchmarks/worst_cases.py [--quick] [--scale F] [--cases a,b] [--vocabs model,gguf]
                                     [--repeat N] [--threads N] [--references]

Cases (full size; each is also timed at 1/4 and 1/2 of it, so the table shows
1x, 2x and 4x inputs and how the time grows between them):

  ascii   10 MB of random ASCII letters, no space: one 10 MB segment
  cjk     10 MB of random CJK ideographs (U+4E00-U+9FFF), no space
  emoji   10 MB of random emoji (U+1F300-U+1F64F), no space; mostly byte pieces
  repeat  1 MB of one repeated character ("a")
  spaces  1 MB of U+0020 (one run of spaces: Mistral has pieces of up to 16 "▁")
  lines   1,000,000 one-character lines through encode_batch

Each is encoded with spmbpe on mistral-v1's .model (sentencepiece rules) and
on the llama-spm GGUF (llama.cpp rules), plain text (special="none"), a
fresh tokenizer per timed run.  "exp" is log(t4x / t1x) / log 4: about 1.0-1.1
for n log n, 2 for quadratic; above 1.35 the row is flagged (unless the 4x
time is under 0.1 s, too short to judge).

--quick divides every size by 10 and takes the best of 3 (a quick check);
--scale multiplies the sizes.  Exit status 1 when a row is flagged.
--references also times sentencepiece and splintr-rs (mistral-v1) on the same
inputs, and checks their ids against spmbpe's (slow: they are not built for
these inputs).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    GGUF, MODEL, load_line, machine_line, optional_import, timed, usable_cores, versions_line,
)

MIN_SECONDS = 0.1  # a 4x time below this is noise, not a growth rate
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _random_text(alphabet: List[str], n_bytes: int, bytes_per_char: int, seed: int) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choices(alphabet, k=n_bytes // bytes_per_char))


# name -> (full size in bytes (or lines), kind, generator(size) -> text or list of lines, description)
def _cases() -> Dict[str, Tuple[int, str, Callable[[int], object], str]]:
    cjk = [chr(c) for c in range(0x4E00, 0xA000)]
    emoji = [chr(c) for c in range(0x1F300, 0x1F650)]
    return {
        "ascii": (10_000_000, "text", lambda n: _random_text(list(LETTERS), n, 1, 1),
                  "random ASCII letters, no space"),
        "cjk": (10_000_000, "text", lambda n: _random_text(cjk, n, 3, 2), "random CJK, no space"),
        "emoji": (10_000_000, "text", lambda n: _random_text(emoji, n, 4, 3), "random emoji, no space"),
        "repeat": (1_000_000, "text", lambda n: "a" * n, "one repeated character 'a'"),
        "spaces": (1_000_000, "text", lambda n: " " * n, "one run of U+0020"),
        "lines": (1_000_000, "lines", lambda n: random.Random(4).choices(LETTERS, k=n),
                  "one-character lines, encode_batch"),
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="every size / 10")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size (default 1)")
    parser.add_argument("--cases", default=None, help="comma-separated subset of " + ",".join(_cases()))
    parser.add_argument("--vocabs", default="model,gguf", help="comma-separated subset of model,gguf")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed runs per size; the best counts (default 1, with --quick 3)")
    parser.add_argument("--threads", type=int, default=None,
                        help="num_threads of encode_batch for 'lines' (default: all usable cores)")
    parser.add_argument("--references", action="store_true",
                        help="also time sentencepiece and splintr-rs on mistral-v1 (and check their ids)")
    args = parser.parse_args(argv)

    import spmbpe

    cases = _cases()
    names = list(cases) if not args.cases else [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in cases]
    if unknown:
        parser.error(f"unknown case(s) {unknown}")
    scale = args.scale / (10 if args.quick else 1)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 1
    threads = args.threads or usable_cores()
    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))

    vocab_paths = {"model": (".model", MODEL), "gguf": ("gguf", GGUF)}
    vocabs = [v.strip() for v in args.vocabs.split(",") if v.strip()]
    if any(v not in vocab_paths for v in vocabs):
        parser.error("--vocabs: choose from model,gguf")

    # (label, make, encode text, encode lines)
    runners = []
    for v in vocabs:
        label, path = vocab_paths[v]
        runners.append((f"spmbpe {label}", (lambda p=path: spmbpe.load(p)),
                        lambda t, s: t.encode_ordinary(s),
                        lambda t, xs: t.encode_batch(xs, special="none", num_threads=threads)))
    refs = []
    if args.references:
        spm = optional_import("sentencepiece")
        if spm is not None:
            refs.append(("sentencepiece", lambda: spm.SentencePieceProcessor(model_file=str(MODEL)),
                         lambda t, s: t.encode(s), lambda t, xs: t.encode(xs, num_threads=threads)))
        splintr = optional_import("splintr")
        if splintr is not None:
            refs.append(("splintr-rs", lambda: splintr.Tokenizer.from_pretrained("mistral_v1"),
                         lambda t, s: t.encode_ordinary(s), lambda t, xs: t.encode_batch(xs)))

    print(f"# Machine: {machine_line()}")
    print(f"# Libraries: {versions_line(['spmbpe'] + (['sentencepiece', 'splintr'] if args.references else []))}")
    print(f"# {load_line()} at start; best of {args.repeat}; fresh tokenizer per run; "
          f"lines: encode_batch num_threads={threads}")
    head = (f"{'case':<7} {'tokenizer':<14} "
            + " ".join(f"{h:>22}" for h in ("1x", "2x", "4x"))
            + f" {'t2/t1':>6} {'t4/t1':>6} {'exp':>5}")
    print(head)
    print("-" * len(head))

    flagged = 0
    mismatches = 0
    started = time.perf_counter()
    for name in names:
        full, kind, gen, _desc = cases[name]
        full = max(16, int(full * scale))
        largest = gen(full)
        # Prefixes of 1/4, 1/2 and all of the largest input (in characters or lines).
        inputs = [largest[: len(largest) * k // 4] for k in (1, 2, 4)]
        nbytes = [len(x) if kind == "lines" else len(x.encode("utf-8")) for x in inputs]
        spmbpe_ids = None
        for label, make, enc_text, enc_lines in runners + refs:
            run = enc_lines if kind == "lines" else enc_text
            seconds = []
            for data in inputs:
                best = math.inf
                for _ in range(args.repeat):
                    tok = make()
                    s, out = timed(lambda: run(tok, data))
                    best = min(best, s)
                seconds.append(best)
            # The largest input's ids: spmbpe .model is the baseline for the references.
            note = ""
            if label == "spmbpe .model":
                spmbpe_ids = out
            elif spmbpe_ids is not None and label in ("sentencepiece", "splintr-rs"):
                if list(map(list, out)) != list(map(list, spmbpe_ids)) if kind == "lines" else list(out) != list(spmbpe_ids):
                    note = "  ids DIFFER from spmbpe .model"
                    mismatches += 1
            del out
            cells = []
            for s, n in zip(seconds, nbytes):
                unit = "Ml" if kind == "lines" else "MB"  # million lines, or MB of UTF-8
                cells.append(f"{n / 1e6:.3g}{unit} {s:6.3f}s {n / 1e6 / s:6.2f}{unit}/s")
            r2, r4 = seconds[1] / seconds[0], seconds[2] / seconds[0]
            exponent = math.log(r4) / math.log(4) if r4 > 0 else float("nan")
            flag = ""
            if seconds[2] < MIN_SECONDS:
                flag = "  (too short to judge)"
            elif exponent > 1.35 and label.startswith("spmbpe"):
                flag = "  SUPERLINEAR"
                flagged += 1
            print(f"{name:<7} {label:<14} " + " ".join(f"{c:>22}" for c in cells)
                  + f" {r2:6.2f} {r4:6.2f} {exponent:5.2f}{flag}{note}", flush=True)
        del largest, inputs
    print(f"# total {time.perf_counter() - started:.1f} s; {load_line()} at end")
    print("# cases: " + "; ".join(f"{n}: {cases[n][3]}" for n in names))
    return 1 if flagged or mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
