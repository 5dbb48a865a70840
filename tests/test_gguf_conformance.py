"""Conformance with llama.cpp on its own Llama 2 vocabulary (ggml-vocab-llama-spm.gguf).

Two sources of reference ids:

* llama.cpp's test vectors (``.inp`` / ``.out``), read exactly as llama.cpp's
  ``tests/test-tokenizer-0.cpp`` reads them and tokenized the way it does:
  ``common_tokenize(ctx, text, add_special=false, parse_special=false)``,
  i.e. ``encode(text, special="none")``.
* ``llama-spm.gguf.jsonl``: ids from llama-cpp-python 0.3.36 for three call modes.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from spmbpe import TokenType

DATA_DIR = pathlib.Path(__file__).parent / "data"
LLAMA_SPM_GGUF = DATA_DIR / "ggml-vocab-llama-spm.gguf"

SEPARATOR = "\n__ggml_vocab_test__\n"
BOUNDARY = "\u2581"  # "▁", the word-boundary marker


def _read_llama_cpp_vectors():
    """Mirror ``read_tests`` in llama.cpp's test-tokenizer-0.cpp."""
    raw = LLAMA_SPM_GGUF.with_name(LLAMA_SPM_GGUF.name + ".inp").read_bytes().decode("utf-8")
    # Inputs: cut at every separator; the file ends with one, which closes the
    # last input without opening an empty one.
    inputs = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt == -1:
            inputs.append(raw[pos:])
            break
        inputs.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    # Outputs: std::getline lines (no empty line after the final newline),
    # each stripped, ids separated by single spaces; an empty line is [].
    out_text = LLAMA_SPM_GGUF.with_name(LLAMA_SPM_GGUF.name + ".out").read_bytes().decode("utf-8")
    lines = out_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    outputs = [[int(tok) for tok in line.strip().split(" ") if tok] for line in lines]
    return inputs, outputs


INP_TEXTS, OUT_IDS = _read_llama_cpp_vectors()

GOLDEN_FILE = DATA_DIR / "llama-spm.gguf.jsonl"
# (line number, row); split on "\n" only: str.splitlines would also cut at
# U+2028, U+0085, ...
GOLDEN_LINES = [
    (number, json.loads(line))
    for number, line in enumerate(GOLDEN_FILE.read_bytes().decode("utf-8").split("\n"), start=1)
    if line.strip()
]
GOLDEN_ROWS = [row for _, row in GOLDEN_LINES]
GOLDEN_TEXTS = [row["text"] for row in GOLDEN_ROWS]


def test_llama_cpp_vector_files_have_one_output_line_per_input():
    assert len(INP_TEXTS) == len(OUT_IDS)
    assert len(INP_TEXTS) == 46


def test_golden_file_has_every_row():
    assert len(GOLDEN_ROWS) == 883


# Each golden set is checked whole by one test, which stops at the first
# text that differs and names it (a case per text costs more in pytest than
# the encoding itself).


def test_llama_cpp_test_vectors(llama_spm):
    for number, (text, expected) in enumerate(zip(INP_TEXTS, OUT_IDS)):
        assert llama_spm.encode(text, special="none") == expected, f"input {number} of the .inp file: {text!r}"


def test_golden_rows(llama_spm):
    for number, row in GOLDEN_LINES:
        text = row["text"]
        got = (
            llama_spm.encode(text, special="none"),
            llama_spm.encode(text, special="all"),
            llama_spm.encode(text, special="all", add_special_tokens=True),
        )
        assert got == (row["ids"], row["ids_special"], row["ids_bos_special"]), f"{GOLDEN_FILE.name}:{number}: {text!r}"


def test_decode_inverts_encode_ordinary(llama_spm):
    where = [f"input {i} of the .inp file" for i in range(len(INP_TEXTS))]
    where += [f"{GOLDEN_FILE.name}:{number}" for number, _ in GOLDEN_LINES]
    for text, place in zip(INP_TEXTS + GOLDEN_TEXTS, where):
        ids = llama_spm.encode_ordinary(text)
        # The vocabulary has all 256 byte pieces, so no text needs <unk> (none
        # of the reference ids contain it); a text that did could not round-trip.
        assert llama_spm.unk_id not in ids, place
        decoded = llama_spm.decode(ids)
        if BOUNDARY in text:
            # A literal U+2581 is the marker spaces are escaped to, so encoding
            # cannot tell it from a space and decoding gives a space back (as
            # sentencepiece's and llama.cpp's decoders do). Pin exactly that.
            assert decoded == text.replace(BOUNDARY, " "), f"{place}: {text!r}"
            assert llama_spm.encode_ordinary(decoded) == ids, f"{place}: {text!r}"
        else:
            assert decoded == text, f"{place}: {text!r}"


@pytest.mark.parametrize("num_threads", [1, 2])
def test_encode_batch_matches_per_text_encode(llama_spm, num_threads):
    texts = INP_TEXTS + GOLDEN_TEXTS
    batch = llama_spm.encode_batch(texts, special="all", num_threads=num_threads)
    assert batch == [llama_spm.encode(t, special="all") for t in texts]
    # and, for the golden rows, the reference ids
    assert batch[len(INP_TEXTS):] == [row["ids_special"] for row in GOLDEN_ROWS]


@pytest.mark.parametrize("num_threads", [1, 2])
def test_encode_batch_passes_special_and_add_special_tokens(llama_spm, num_threads):
    assert llama_spm.encode_batch(
        GOLDEN_TEXTS, special="none", num_threads=num_threads
    ) == [row["ids"] for row in GOLDEN_ROWS]
    assert llama_spm.encode_batch(
        GOLDEN_TEXTS, special="all", add_special_tokens=True, num_threads=num_threads
    ) == [row["ids_bos_special"] for row in GOLDEN_ROWS]


def test_metadata(llama_spm):
    # Values as stored in the GGUF file's tokenizer.ggml.* keys.
    assert llama_spm.vocab_size == 32000
    assert llama_spm.bos_id == 1
    assert llama_spm.eos_id == 2
    assert llama_spm.unk_id == 0
    assert llama_spm.add_bos is True
    assert llama_spm.add_eos is False
    assert llama_spm.add_prefix_space is True
    assert llama_spm.prefix_scheme == "after_each_special"


@pytest.mark.parametrize(
    ("token_id", "piece", "token_type"),
    [
        (0, "<unk>", TokenType.UNKNOWN),
        (1, "<s>", TokenType.CONTROL),
        (2, "</s>", TokenType.CONTROL),
        (3, "<0x00>", TokenType.BYTE),
        # ids 3..258 are the 256 byte pieces, so 100 is <0x61> ("a"), a BYTE piece
        (100, "<0x61>", TokenType.BYTE),
        (258, "<0xFF>", TokenType.BYTE),
        (259, "▁▁", TokenType.NORMAL),
        (15043, "▁Hello", TokenType.NORMAL),
        (29871, "▁", TokenType.NORMAL),
    ],
)
def test_token_types_and_pieces(llama_spm, token_id, piece, token_type):
    assert llama_spm.token_type(token_id) == token_type
    assert llama_spm.id_to_piece(token_id) == piece
    assert llama_spm.piece_to_id(piece) == token_id
