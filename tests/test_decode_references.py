"""decode as each reference decodes (issue 22): live sentencepiece for
``.model`` files, live tokenizers for a ``tokenizer.json``, llama.cpp's own
output for a GGUF (``tests/data/llama-spm.decode.jsonl.gz``, from
``tools/make_decode_goldens.py``), and the streaming decoder and
``decode_bytes`` agreeing with ``decode`` on every one.

The id lists mix what decoding meets in model output and what encoding never
produces: control and unknown ids anywhere, lone ``▁`` pieces, runs of byte
pieces that are not valid UTF-8 (split by control pieces too), user-defined
pieces, and ids from anywhere in the vocabulary.
"""

from __future__ import annotations

import gzip
import json
import pathlib

import pytest
import sentencepiece
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spm_proto
import spmbpe
from spmbpe import TokenType
from long_run import examples

DATA = pathlib.Path(__file__).parent / "data"
SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _stream(tok, ids, **options):
    decoder = tok.streaming_decoder(**options)
    return "".join(decoder.add_token(i) for i in ids) + decoder.flush()


def _ids_for(tok):
    """A strategy of id lists over `tok`'s vocabulary, weighted towards the
    pieces whose decoding the references disagree on."""
    n = tok.vocab_size
    by_type = {t: [i for i in range(n) if tok.token_type(i) == t] for t in TokenType}
    byte_ids = by_type[TokenType.BYTE]
    marked = [i for i in range(n) if tok.id_to_piece(i).startswith("\u2581")][:2000]
    choices = [st.integers(0, n - 1), st.sampled_from(marked)]
    for t in (TokenType.CONTROL, TokenType.UNKNOWN, TokenType.USER_DEFINED, TokenType.UNUSED):
        if by_type[t]:
            choices.append(st.sampled_from(by_type[t]))
    if byte_ids:
        choices += [st.sampled_from(byte_ids)] * 2
        # whole characters as byte pieces (byte pieces are in byte order)
        choices.append(
            st.characters(exclude_categories=("Cs",)).map(lambda c: [byte_ids[b] for b in c.encode()])
        )
    one = st.one_of(*choices).map(lambda x: x if isinstance(x, list) else [x])
    return st.lists(one, max_size=10).map(lambda runs: [i for run in runs for i in run])


# ---------------------------------------------------------------- sentencepiece


@pytest.fixture(scope="module", params=["mistral-v1.model", "mistral-v3.model"])
def model_pair(request):
    path = str(DATA / request.param)
    return spmbpe.load(path), sentencepiece.SentencePieceProcessor(model_file=path)


def test_model_decode_examples_from_sentencepiece(model_pair):
    tok, sp = model_pair
    hello = tok.encode("Hello")
    byte = lambda b: tok.piece_to_id(f"<0x{b:02X}>")  # noqa: E731
    cases = [
        [tok.bos_id] + hello + [tok.eos_id],  # control pieces are nothing: "Hello"
        [tok.unk_id] + hello,  # unknown is " ⁇ ", and the text is no longer empty
        [byte(0x20)] + hello,  # a byte piece is never stripped
        [tok.piece_to_id("\u2581")] + hello,  # the lone "▁" loses its marker; Hello keeps its own
        [byte(0xE4), byte(0xB8)],  # an incomplete character: U+FFFD per byte
        [byte(0xE4), tok.bos_id, byte(0xB8), byte(0xAD)],  # runs split by a control piece
    ]
    for ids in cases:
        assert tok.decode(ids) == sp.decode(ids), ids
        assert _stream(tok, ids) == sp.decode(ids), ids
    assert tok.decode([tok.bos_id] + hello + [tok.eos_id]) == "Hello"
    assert tok.decode([tok.unk_id] + hello) == " \u2047  Hello"
    # spmbpe 0.1's rendering of control and unknown pieces, on request
    assert tok.decode([tok.bos_id] + hello + [tok.eos_id], special_as_text=True) == "<s> Hello</s>"
    assert tok.decode([tok.unk_id] + hello, special_as_text=True) == "<unk> Hello"


def test_model_decode_equals_sentencepiece(model_pair):
    tok, sp = model_pair

    @SETTINGS
    @given(ids=_ids_for(tok))
    def check(ids):
        expected = sp.decode(ids)
        assert tok.decode(ids) == expected
        assert tok.decode_bytes(ids) == expected.encode("utf-8")
        assert _stream(tok, ids) == expected

    check()


@pytest.mark.parametrize("add_dummy_prefix", [True, False])
@pytest.mark.parametrize("remove_extra_whitespaces", [True, False])
def test_model_decode_by_normalizer_flags(tmp_path, add_dummy_prefix, remove_extra_whitespaces):
    # sentencepiece strips the leading "▁" while the text is empty with
    # add_dummy_prefix or remove_extra_whitespaces, again and again with the
    # latter: a synthetic model with "▁" pieces, bytes and a control piece.
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces += ["\u2581", "\u2581\u2581", "\u2581a", "a", "b", "\u2581b", "ab"]
    types = [2, 3, 3] + [6] * 256 + [1] * 7
    proto = spm_proto.bpe_model_proto(
        pieces, [0.0] * len(pieces), types, add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
    )
    path = tmp_path / "m.model"
    path.write_bytes(proto)
    tok = spmbpe.load(path)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    marker, double, ma = (pieces.index(p) for p in ("\u2581", "\u2581\u2581", "\u2581a"))
    for ids in ([ma], [marker, ma], [marker, marker, ma], [double, ma], [1, marker, ma], [259 + 3, ma]):
        assert tok.decode(ids) == sp.decode(ids), ids
        assert _stream(tok, ids) == sp.decode(ids), ids

    @settings(max_examples=examples(200), deadline=None)
    @given(ids=st.lists(st.integers(0, len(pieces) - 1), max_size=8))
    def check(ids):
        assert tok.decode(ids) == sp.decode(ids)
        assert _stream(tok, ids) == sp.decode(ids)

    check()


# ---------------------------------------------------------------- tokenizers


@pytest.fixture(scope="module")
def json_pair():
    path = str(DATA / "mistral-v1.tokenizer.json")
    return spmbpe.load(path), tokenizers.Tokenizer.from_file(path)


def test_tokenizer_json_decode_examples_from_tokenizers(json_pair):
    tok, ref = json_pair
    byte = lambda b: tok.piece_to_id(f"<0x{b:02X}>")  # noqa: E731
    hello = tok.encode("Hello")
    cases = [
        [byte(0x76), byte(0xB4)] + hello,  # an invalid run: U+FFFD for every byte, "v" too
        [byte(0xA2)] + hello + [byte(0x74)],  # a later valid run is its text
        [1] + hello + [2],
        [byte(0x20)] + hello,
    ]
    for ids in cases:
        for skip in (False, True):
            expected = ref.decode(ids, skip_special_tokens=skip)
            assert tok.decode(ids, skip_special=skip) == expected, (ids, skip)
            assert _stream(tok, ids, skip_special=skip) == expected, (ids, skip)
    assert tok.decode([byte(0x76), byte(0xB4)]) == "\ufffd\ufffd"


def test_tokenizer_json_decode_equals_tokenizers(json_pair):
    tok, ref = json_pair

    @SETTINGS
    @given(ids=_ids_for(tok), skip=st.booleans())
    def check(ids, skip):
        expected = ref.decode(ids, skip_special_tokens=skip)
        assert tok.decode(ids, skip_special=skip) == expected
        assert _stream(tok, ids, skip_special=skip) == expected

    check()


# ---------------------------------------------------------------- llama.cpp


def _llama_goldens():
    with gzip.open(DATA / "llama-spm.decode.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_gguf_decode_equals_llama_cpp():
    tok = spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf")
    rows = _llama_goldens()
    assert len(rows) > 2000
    for row in rows:
        ids = row["ids"]
        # common_detokenize(special=true): llama_detokenize(remove_special=false, unparse_special=true)
        text = bytes.fromhex(row["text_special_hex"]).decode("utf-8", "replace")
        assert tok.decode(ids) == text, ids
        assert _stream(tok, ids) == text, ids
        assert tok.decode_bytes(ids).hex() == row["text_special_hex"], ids
        # llama_detokenize(remove_special=true, unparse_special=false)
        skipped = bytes.fromhex(row["text_removed_hex"])
        assert tok.decode_bytes(ids, skip_special=True) == skipped, ids
        assert tok.decode(ids, skip_special=True) == skipped.decode("utf-8", "replace"), ids
        assert _stream(tok, ids, skip_special=True) == skipped.decode("utf-8", "replace"), ids
        # llama_detokenize(remove_special=false, unparse_special=false) gives
        # the same text: a BOS rendered as nothing also keeps the next space.
        assert row["text_plain_hex"] == row["text_removed_hex"] or ids[-1:] == [2], ids
