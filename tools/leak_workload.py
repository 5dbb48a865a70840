#!/usr/bin/env python3
"""A small workload for leak checkers (LeakSanitizer via tools/sanitize.sh
--leaks, or valgrind): every loader, encode/decode path and error path, run
`--iterations` times over fresh tokenizers that are then dropped.

A leak in spmbpe's C code then shows up as an allocation repeated once per
iteration; CPython's own state at exit does not repeat.

    valgrind --leak-check=full --show-leak-kinds=definite \\
        python tools/leak_workload.py --iterations 5
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
if (ROOT / "spmbpe" / "__init__.py").exists() and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import spmbpe  # noqa: E402
from spmbpe import _testing  # noqa: E402
from spmbpe.errors import SpmbpeError  # noqa: E402

import fuzz  # noqa: E402  (the fixture cutters)

TEXTS = ["Hello world", " a  b ", "</s><s>[INST]x", "\u00e9\u4e2d\U0001f600" * 50, "", "x" * 5000]


def workload(tmp: pathlib.Path) -> None:
    files = {
        "gguf": tmp / "v.gguf",
        "model": tmp / "v.model",
        "json": tmp / "tokenizer.json",
        "bad": tmp / "bad.gguf",
    }
    folder = tmp / "folder"
    for path in files.values():
        if not path.exists():
            raise RuntimeError(f"missing {path}")
    toks = [spmbpe.load(str(p)) for k, p in files.items() if k != "bad"]
    toks.append(spmbpe.load(str(folder)))
    toks.append(spmbpe.load(str(folder), reference="transformers4"))
    for tok in toks:
        for text in TEXTS:
            ids = tok.encode(text, special="all")
            tok.encode(text, special="none")
            tok.encode_with_offsets(text, special="all")
            tok.decode(ids)
            tok.decode_bytes(ids, skip_special=True)
        tok.encode_batch(TEXTS * 4, special="all", num_threads=2)  # (mixed: planned and whole texts)
        tok.encode_batch(TEXTS * 4, special="none", num_threads=2)  # (plain: a shared BatchJob)
        try:
            tok.encode_batch(TEXTS * 4, special="all", num_threads=2, return_numpy=True)
            tok.encode_batch(TEXTS * 4, special="none", num_threads=2, return_numpy=True)
        except ImportError:
            pass
        for bad in (["\ud800"], [None]):
            try:
                tok.encode_batch(bad)
            except (ValueError, TypeError):
                pass
        try:
            tok.decode([tok.vocab_size])
        except SpmbpeError:
            pass
        try:
            tok.encode("a<s>b", special=set())
        except SpmbpeError:
            pass
        try:
            tok.encode_batch(["x", "a</s>b"])  # (the default refuses a special token)
        except SpmbpeError:
            pass
    try:
        spmbpe.load(str(files["bad"]))
    except SpmbpeError:
        pass
    # A text too long for the core in the middle of a shared job (the job
    # stops, the batch is redone on one thread for its error).
    tok = spmbpe.load(str(files["model"]))
    _testing.limit_segment_bytes(tok._core, 1000)
    try:
        tok.encode_batch(TEXTS * 8, special="none", num_threads=2)
    except ValueError:
        pass
    del tok
    del toks


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spmbpe-leak-") as name:
        tmp = pathlib.Path(name)
        (tmp / "v.gguf").write_bytes(fuzz.gguf_file(fuzz.small_gguf_kvs(2000)))
        (tmp / "v.model").write_bytes(fuzz.small_model(2000))
        (tmp / "tokenizer.json").write_bytes(fuzz.small_tokenizer_json(2000))
        (tmp / "bad.gguf").write_bytes(fuzz.gguf_file(fuzz.small_gguf_kvs(300))[:-100])
        folder = tmp / "folder"
        folder.mkdir()
        (folder / "tokenizer.model").write_bytes(fuzz.small_model(2000))
        (folder / "tokenizer_config.json").write_text(json.dumps({"legacy": False, "add_bos_token": True, "tokenizer_class": "LlamaTokenizer"}))
        for _ in range(args.iterations):
            workload(tmp)
            gc.collect()
    print(f"leak workload: {args.iterations} iterations done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
