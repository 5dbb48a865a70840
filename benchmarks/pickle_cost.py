"""Pickle size and time of spmbpe tokenizers (what a process pool, datasets
or Ray pays to ship one to a worker).

    python benchmarks/pickle_cost.py [--repeat N]

For each vocabulary in tests/data: the file's size, the pickle's size, the
median time of pickle.dumps and pickle.loads, and of spmbpe.load on the file
for comparison.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import time

import spmbpe

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
FILES = [
    ("mistral-v1 .model", "mistral-v1.model"),
    ("Llama 2 .gguf", "ggml-vocab-llama-spm.gguf"),
    ("mistral-v1 tokenizer.json", "mistral-v1.tokenizer.json"),
]


def _median_ms(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print("| vocabulary | file | pickle | pickle.dumps | pickle.loads | spmbpe.load |")
    print("|---|---|---|---|---|---|")
    for name, file in FILES:
        path = os.path.join(DATA, file)
        tok = spmbpe.load(path)
        load_ms, _ = _median_ms(lambda: spmbpe.load(path), args.repeat)
        dumps_ms, data = _median_ms(lambda: pickle.dumps(tok), args.repeat)
        loads_ms, back = _median_ms(lambda: pickle.loads(data), args.repeat)
        assert back.fingerprint == tok.fingerprint
        print(
            f"| {name} | {os.path.getsize(path) / 1e3:,.0f} kB | {len(data) / 1e3:,.0f} kB | "
            f"{dumps_ms:.1f} ms | {loads_ms:.1f} ms | {load_ms:.1f} ms |"
        )


if __name__ == "__main__":
    main()
