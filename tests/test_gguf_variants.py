"""llama.cpp's GGUF rules the Llama 2 fixture does not exercise.

Each variant of ``gguf_variants.VARIANTS`` is the fixture with a few changes
(appended pieces, other flags, missing keys, another model name); the golden
ids in ``data/gguf-variants.jsonl`` come from llama.cpp (llama-cpp-python
0.3.36, ``tools/make_gguf_variant_goldens.py``) on the very files
``gguf_variants.write_variant`` writes here:

* ``ids``             = ``tokenize(text, add_bos=False, special=False)``
* ``ids_special``     = ``tokenize(text, add_bos=False, special=True)``
* ``ids_bos_special`` = ``tokenize(text, add_bos=True, special=True)``, i.e.
  BOS/EOS as the file's add_bos_token / add_eos_token say;
* ``decode_hex`` and ``decode_skip_hex``: ``llama_detokenize`` of those ids
  with ``remove_special`` false and ``unparse_special`` true (``decode``),
  and the other way round (``decode(skip_special=True)``).
"""

from __future__ import annotations

import json
import pathlib

import pytest

import gguf_variants
import spmbpe

GOLDENS = pathlib.Path(__file__).parent / "data" / "gguf-variants.jsonl"


def _rows():
    # Split on "\n" only: str.splitlines would also cut at U+2028, U+0085, ...
    text = GOLDENS.read_bytes().decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line]


ROWS = _rows()


def _row_id(row):
    return f"{row['variant']}:{row['text'][:40]!r}"


@pytest.fixture(scope="module")
def variant_tokenizer(tmp_path_factory):
    """name -> spmbpe tokenizer of that variant (each file written once per module)."""
    folder = tmp_path_factory.mktemp("gguf-variants")
    cache = {}

    def get(name):
        if name not in cache:
            path = gguf_variants.write_variant(name, folder / f"{name}.gguf")
            cache[name] = spmbpe.load(path)
        return cache[name]

    return get


def test_goldens_cover_every_variant():
    assert {row["variant"] for row in ROWS} == set(gguf_variants.VARIANTS)


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_variant_matches_llama_cpp(variant_tokenizer, row):
    tok = variant_tokenizer(row["variant"])
    text = row["text"]
    got = {
        "ids": tok.encode(text, special="none"),
        "ids_special": tok.encode(text, special="all"),
        "ids_bos_special": tok.encode(text, special="all", add_special_tokens=True),
    }
    want = {key: row[key] for key in got}
    assert got == want, f"{row['variant']} {text!r}"


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_variant_decodes_as_llama_cpp(variant_tokenizer, row):
    # A leading BOS and a trailing EOS that the vocabulary adds go with
    # remove_special whatever their type (ends_by_id: both NORMAL; no_types:
    # the BOS).
    tok = variant_tokenizer(row["variant"])
    ids = row["ids_bos_special"]
    for skip, key in ((False, "decode_hex"), (True, "decode_skip_hex")):
        want = bytes.fromhex(row[key])
        assert tok.decode_bytes(ids, skip_special=skip) == want, (key, ids)
        streaming = tok.streaming_decoder(skip_special=skip)
        text = "".join(streaming.add_token(i) for i in ids) + streaming.flush()
        assert text == want.decode("utf-8", "replace") == tok.decode(ids, skip_special=skip), (key, ids)
