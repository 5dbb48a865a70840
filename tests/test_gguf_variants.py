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
    """(line number, row) of every golden row."""
    # Split on "\n" only: str.splitlines would also cut at U+2028, U+0085, ...
    text = GOLDENS.read_bytes().decode("utf-8")
    return [(number, json.loads(line)) for number, line in enumerate(text.split("\n"), start=1) if line]


ROWS = _rows()


def _rows_of(variant):
    return [(number, row) for number, row in ROWS if row["variant"] == variant]


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
    assert {row["variant"] for _, row in ROWS} == set(gguf_variants.VARIANTS)


# Each variant's rows are checked whole by one test, which stops at the
# first row that differs and names its line (a case per row costs more in
# pytest than the encoding itself).


@pytest.mark.parametrize("variant", sorted(gguf_variants.VARIANTS))
def test_variant_matches_llama_cpp(variant_tokenizer, variant):
    tok = variant_tokenizer(variant)
    for number, row in _rows_of(variant):
        text = row["text"]
        got = {
            "ids": tok.encode(text, special="none"),
            "ids_special": tok.encode(text, special="all"),
            "ids_bos_special": tok.encode(text, special="all", add_special_tokens=True),
        }
        want = {key: row[key] for key in got}
        assert got == want, f"{GOLDENS.name}:{number}: {variant} {text!r}"


@pytest.mark.parametrize("variant", sorted(gguf_variants.VARIANTS))
def test_variant_decodes_as_llama_cpp(variant_tokenizer, variant):
    # A leading BOS and a trailing EOS that the vocabulary adds go with
    # remove_special whatever their type (ends_by_id: both NORMAL; no_types:
    # the BOS).
    tok = variant_tokenizer(variant)
    for number, row in _rows_of(variant):
        ids = row["ids_bos_special"]
        for skip, key in ((False, "decode_hex"), (True, "decode_skip_hex")):
            where = f"{GOLDENS.name}:{number}: {key} of {ids}"
            want = bytes.fromhex(row[key])
            assert tok.decode_bytes(ids, skip_special=skip) == want, where
            streaming = tok.streaming_decoder(skip_special=skip)
            text = "".join(streaming.add_token(i) for i in ids) + streaming.flush()
            assert text == want.decode("utf-8", "replace") == tok.decode(ids, skip_special=skip), where
