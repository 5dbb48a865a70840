"""Regenerate tests/data/llama-spm.decode.jsonl.gz: llama.cpp's text for id lists
of the Llama 2 vocabulary (tests/data/ggml-vocab-llama-spm.gguf).

    python tools/make_decode_goldens.py [--out PATH] [--check]

Requirements: ``llama_cpp`` (llama-cpp-python; the committed goldens come from
0.3.36, the version of the project's other llama.cpp goldens) must already be
importable by the Python running this script. The script does NOT install or
build llama.cpp (it compiles for 10-20 minutes); install it yourself, in a
separate virtual environment:

    python -m venv /tmp/lcp && /tmp/lcp/bin/pip install "llama-cpp-python==0.3.36"
    /tmp/lcp/bin/python tools/make_decode_goldens.py

It calls llama.cpp's own C function, ``llama_detokenize(vocab, tokens,
n_tokens, text, text_len_max, remove_special, unparse_special)`` (not the
Python binding's ``Llama.detokenize``, which joins ``llama_token_to_piece``
results itself and so keeps one more leading space), and writes one JSON
object per id list:

    {"ids",
     "text_special_hex": llama_detokenize(remove_special=false, unparse_special=true)
                         -- what llama.cpp's common_detokenize(special=true) returns,
     "text_removed_hex": llama_detokenize(remove_special=true,  unparse_special=false),
     "text_plain_hex":   llama_detokenize(remove_special=false, unparse_special=false)}

(hex: the texts are raw bytes, which may split a UTF-8 character).

The id lists: of every other row of tests/data/llama-spm.gguf.jsonl, its
encodings without and with BOS (the first 48 ids, so that some lists end
inside a character spelled in byte pieces), each also with EOS appended; and
random lists (fixed seed) of control, unknown, byte and "▁" pieces among
others. The file is gzip-compressed JSONL.
``--check`` recomputes the texts of the existing file and compares.
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import pathlib
import random
import sys
from typing import Any, Dict, List

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
GGUF = DATA / "ggml-vocab-llama-spm.gguf"
ENCODE_GOLDENS = DATA / "llama-spm.gguf.jsonl"
OUT = DATA / "llama-spm.decode.jsonl.gz"
MAX_IDS = 48
N_RANDOM = 600
SEED = 20261202


class LlamaDetokenizer:
    """llama_detokenize over the vocabulary of the GGUF at `path`:
    ``detokenizer(ids, remove_special, unparse_special) -> bytes``. ``llm`` is
    the llama_cpp.Llama whose vocabulary the C function reads (held here, so
    that the vocabulary lives as long as the detokenizer; callers tokenize
    with it)."""

    def __init__(self, path: pathlib.Path = GGUF) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        model = self.llm._model.model
        get_vocab = getattr(llama_cpp, "llama_model_get_vocab", None)
        self._vocab = get_vocab(model) if get_vocab is not None else model

    def __call__(self, ids: List[int], remove_special: bool, unparse_special: bool) -> bytes:
        llama_cpp = self._llama_cpp
        tokens = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        size = 64 + 32 * len(ids)
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_detokenize(self._vocab, tokens, len(ids), buf, size, remove_special, unparse_special)
            if n >= 0:
                return buf.raw[:n]
            size = -n + 1


def id_lists() -> List[List[int]]:
    lists: List[List[int]] = []
    with open(ENCODE_GOLDENS, encoding="utf-8") as f:
        for k, line in enumerate(f):
            if k % 2:
                continue
            row = json.loads(line)
            for key in ("ids", "ids_bos_special"):
                lists.append(row[key][:MAX_IDS])
                lists.append(row[key][:MAX_IDS] + [2])
    rng = random.Random(SEED)
    special = [0, 1, 2]
    byte_ids = list(range(3, 259))
    marked = [29871, 259, 1678, 268]  # "▁", "▁▁", "▁▁▁", "▁▁▁▁"
    for _ in range(N_RANDOM):
        ids = []
        for _ in range(rng.randint(0, 9)):
            kind = rng.random()
            if kind < 0.2:
                ids.append(rng.choice(special))
            elif kind < 0.45:
                ids.append(rng.choice(byte_ids))
            elif kind < 0.6:
                ids.append(rng.choice(marked))
            else:
                ids.append(rng.randrange(32000))
        lists.append(ids)
    return lists


def rows(detokenize: Any, lists: List[List[int]]) -> List[Dict[str, Any]]:
    return [
        {
            "ids": ids,
            "text_special_hex": detokenize(ids, False, True).hex(),
            "text_removed_hex": detokenize(ids, True, False).hex(),
            "text_plain_hex": detokenize(ids, False, False).hex(),
        }
        for ids in lists
    ]


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the existing file instead")
    args = parser.parse_args(argv)
    detokenize = LlamaDetokenizer()
    if args.check:
        with gzip.open(args.out, "rt", encoding="utf-8") as f:
            old = [json.loads(line) for line in f]
        new = rows(detokenize, [r["ids"] for r in old])
        bad = [o["ids"] for o, n in zip(old, new) if o != n]
        print(f"{len(old) - len(bad)} of {len(old)} rows agree")
        return 1 if bad else 0
    out = rows(detokenize, id_lists())
    # mtime 0: the same rows give the same bytes.
    with gzip.GzipFile(args.out, "wb", mtime=0) as f:
        for row in out:
            f.write((json.dumps(row) + "\n").encode("utf-8"))
    print(f"wrote {len(out)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
