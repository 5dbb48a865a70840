"""Differential test: spmbpe's GGUF tokenizer against live sentencepiece.

Llama 2's ``tokenizer.model`` is a sentencepiece BPE model whose pieces,
scores and types are exactly what ``ggml-vocab-llama-spm.gguf`` stores.  We
rebuild that ModelProto from the GGUF (``spm_proto``, no protobuf package
needed) with Llama 2's settings -- identity normalizer, dummy prefix on, extra
whitespace kept, spaces escaped to U+2581, byte fallback, unk 0 / bos 1 /
eos 2 / no pad -- and load it into sentencepiece, which then serves as an
oracle for ``spmbpe.load(gguf).encode_ordinary``.

Domain of the oracle
--------------------
*Encoding*: any text without lone surrogates, special tokens read as plain
text.  sentencepiece never matches control pieces in text, which is exactly
``encode_ordinary`` (llama.cpp's ``parse_special=false``).
``test_oracle_reproduces_llama_cpp_golden_ids`` shows sentencepiece agrees
with llama.cpp on every row of ``llama-spm.gguf.jsonl`` (all 883), so no row
had to be left out.

*Decoding*: sentencepiece's and spmbpe's (llama.cpp's) decoding rules differ
outside the ids that encoding produces; ``test_decode_differences`` pins each
difference:

* control ids (``<s>``, ``</s>``): sentencepiece prints nothing; spmbpe prints
  the piece unless ``skip_special=True``;
* ``<unk>``: sentencepiece prints its unk surface `` ⁇ `` (and that counts as
  the first piece, so a following ``▁`` is kept); spmbpe prints ``<unk>``, or
  nothing with ``skip_special=True``;
* the dummy-prefix space: sentencepiece only takes a leading ``▁`` off the
  first (non-control) *text* piece; spmbpe, like llama.cpp's
  ``llama_detokenize``, takes one leading space off whatever the *first id*
  decodes to, so a leading ``<0x20>`` byte piece loses its space too, and a
  leading control id (rendered, or skipped) leaves the next piece's space;
* bytes that are not UTF-8: sentencepiece writes one U+FFFD per bad byte;
  ``decode(errors="replace")`` follows Python, one U+FFFD per maximal invalid
  subsequence.

The decode comparisons therefore run on ids from ``encode_ordinary`` (where
the first piece always starts with the dummy ``▁`` and the bytes are always
whole characters), and on id sequences built from NORMAL pieces, control
pieces and byte pieces spelling whole characters, starting with neither a
control piece nor ``<0x20>``, decoded with ``skip_special=True``.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
from typing import NamedTuple, Tuple

import pytest
import sentencepiece
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gguf_variants
import spm_proto
import spmbpe
from spmbpe import TokenType
from long_run import examples

DATA_DIR = pathlib.Path(__file__).parent / "data"
LLAMA_SPM_GGUF = DATA_DIR / "ggml-vocab-llama-spm.gguf"
BOUNDARY = "\u2581"  # "▁"
FIRST_BYTE_ID = 3  # <0x00>; ids 3..258 are <0x00>..<0xFF>

GOLDEN_ROWS = [
    json.loads(line)
    for line in (DATA_DIR / "llama-spm.gguf.jsonl").read_bytes().decode("utf-8").split("\n")
    if line.strip()
]

# Hypothesis examples (derandomized: every run draws the same inputs).  Sized
# for ~10-20 s in all in the long run, a tenth in the quick one; raise
# locally to hunt for disagreements, e.g. SPMBPE_DIFF_EXAMPLES=20000.  The
# decode test gets a third of them.
MAX_EXAMPLES = int(os.environ.get("SPMBPE_DIFF_EXAMPLES", "0")) or examples(1500)


def _hypothesis_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class Oracle(NamedTuple):
    proto: bytes  # the rebuilt ModelProto
    sp: "sentencepiece.SentencePieceProcessor"
    tok: spmbpe.SpmTokenizer
    pieces: Tuple[bytes, ...]  # raw piece bytes from the GGUF, by id
    scores: Tuple[float, ...]
    types: Tuple[int, ...]
    normal_texts: Tuple[str, ...]  # NORMAL pieces with ▁ turned into a space
    normal_ids: Tuple[int, ...]
    control_ids: Tuple[int, ...]
    single_chars: frozenset  # characters that are a piece by themselves


def _read_gguf_vocabulary():
    """Pieces (bytes), scores, types and the unk/bos/eos ids of the fixture,
    as gguf.GGUFReader reads them (gguf_variants.fixture_fields)."""
    fields = {key: value for key, _, _, value in gguf_variants.fixture_fields()}
    return (
        list(fields["tokenizer.ggml.tokens"]),
        list(fields["tokenizer.ggml.scores"]),
        list(fields["tokenizer.ggml.token_type"]),
        {k: fields[f"tokenizer.ggml.{k}_token_id"] for k in ("unknown", "bos", "eos")},
    )


@functools.lru_cache(maxsize=None)
def _oracle() -> Oracle:
    pieces, scores, types, special_ids = _read_gguf_vocabulary()
    proto = spm_proto.bpe_model_proto(
        pieces,
        scores,
        types,
        unk_id=special_ids["unknown"],
        bos_id=special_ids["bos"],
        eos_id=special_ids["eos"],
        pad_id=-1,
        byte_fallback=True,
        normalizer_name="identity",
        add_dummy_prefix=True,
        remove_extra_whitespaces=False,
        escape_whitespaces=True,
    )
    sp = sentencepiece.SentencePieceProcessor(model_proto=proto)
    normal = [i for i, t in enumerate(types) if t == TokenType.NORMAL]
    texts = [pieces[i].decode("utf-8") for i in normal]
    return Oracle(
        proto=proto,
        sp=sp,
        tok=spmbpe.load(LLAMA_SPM_GGUF),
        pieces=tuple(pieces),
        scores=tuple(scores),
        types=tuple(types),
        normal_texts=tuple(t.replace(BOUNDARY, " ") for t in texts),
        normal_ids=tuple(normal),
        control_ids=tuple(i for i, t in enumerate(types) if t == TokenType.CONTROL),
        single_chars=frozenset(t for t in texts if len(t) == 1),
    )


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return _oracle()


def _show(oracle: Oracle, ids) -> list:
    return [(i, oracle.pieces[i].decode("utf-8", "replace")) for i in ids]


# --- spm_proto on a toy vocabulary ------------------------------------------------------------


def test_varint_wire_form():
    assert spm_proto._varint(0) == b"\x00"
    assert spm_proto._varint(1) == b"\x01"
    assert spm_proto._varint(300) == b"\xac\x02"
    assert spm_proto._varint(-1) == b"\xff" * 9 + b"\x01"  # int32 -1, ten bytes


TOY_PIECES = (
    ["<unk>", "<s>", "</s>"]
    + [f"<0x{b:02X}>" for b in range(256)]
    + ["\u2581", "a", "b", "\u2581a", "ab"]
)
TOY_SCORES = [0.0] * 259 + [-10.0, -10.0, -20.0, -1.0, -1.5]
TOY_TYPES = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256 + [
    TokenType.NORMAL
] * 5


def _toy(**settings_) -> "sentencepiece.SentencePieceProcessor":
    proto = spm_proto.bpe_model_proto(TOY_PIECES, TOY_SCORES, TOY_TYPES, **settings_)
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


def _toy_unigram() -> "sentencepiece.SentencePieceProcessor":
    proto = spm_proto.model_proto(
        TOY_PIECES,
        TOY_SCORES,
        TOY_TYPES,
        trainer=spm_proto.trainer_spec(
            model_type=spm_proto.MODEL_TYPE_UNIGRAM, vocab_size=len(TOY_PIECES)
        ),
        normalizer=spm_proto.normalizer_spec(),
    )
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


def test_toy_proto_settings_take_effect():
    """Every encoding setting spm_proto writes reaches sentencepiece: flipping
    one from Llama 2's value changes the result."""
    # ids: 0-2 <unk> <s> </s>, 3-258 bytes, 259 ▁, 260 a, 261 b, 262 ▁a, 263 ab
    sp = _toy()
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) == (0, 1, 2, -1)
    assert sp.get_score(262) == -1.0 and sp.is_byte(3) and sp.is_control(1)
    # model_type BPE: "▁a" (-1) merges before "ab" (-1.5); unigram instead
    # maximizes the total score: ▁ + ab (-11.5) beats ▁a + b (-21).
    assert sp.encode("ab", out_type=str) == ["\u2581a", "b"]
    assert _toy_unigram().encode("ab", out_type=str) == ["\u2581", "ab"]
    # add_dummy_prefix
    assert _toy(add_dummy_prefix=False).encode("ab", out_type=str) == ["ab"]
    # remove_extra_whitespaces (Llama 2 keeps every space)
    spaced = " a  a "
    assert sp.encode(spaced, out_type=str) == ["\u2581", "\u2581a", "\u2581", "\u2581a", "\u2581"]
    collapsed = _toy(remove_extra_whitespaces=True)
    assert collapsed.encode(spaced, out_type=str) == ["\u2581a", "\u2581a"]
    # escape_whitespaces: the space stays a space, which is no piece -> bytes
    space_byte = FIRST_BYTE_ID + 0x20
    assert _toy(escape_whitespaces=False).encode("a a") == [space_byte, 260, space_byte, 260]
    # byte_fallback: "é" is no piece
    assert sp.encode("é") == [259, FIRST_BYTE_ID + 0xC3, FIRST_BYTE_ID + 0xA9]
    # (sentencepiece refuses byte pieces in a model without byte fallback)
    no_bytes = [i for i, t in enumerate(TOY_TYPES) if t != TokenType.BYTE]
    proto = spm_proto.bpe_model_proto(
        [TOY_PIECES[i] for i in no_bytes],
        [TOY_SCORES[i] for i in no_bytes],
        [TOY_TYPES[i] for i in no_bytes],
        byte_fallback=False,
    )
    without_fallback = sentencepiece.SentencePieceProcessor(model_proto=proto)
    assert without_fallback.encode("é") == [3, 0]  # ▁ <unk>
    # (unk_id/bos_id/eos_id/pad_id are recorded as a trainer writes them, but
    # a loaded model finds <unk> by its type and <s>, </s>, <pad> by their
    # piece text, so they have no effect to check here.)
    assert _toy(bos_id=2, eos_id=1).bos_id() == 1


# --- the oracle is Llama 2's tokenizer ----------------------------------------------------------


def test_proto_is_what_sentencepiece_reserializes(oracle):
    # Our bytes parse, and protobuf writes the parsed model back identically:
    # the encoding is well-formed and canonical.
    assert oracle.sp.serialized_model_proto() == oracle.proto
    # and the defaults of bpe_model_proto are the settings spelled out above
    assert spm_proto.bpe_model_proto(oracle.pieces, oracle.scores, oracle.types) == oracle.proto


def test_oracle_has_the_gguf_vocabulary(oracle):
    sp = oracle.sp
    assert sp.get_piece_size() == len(oracle.pieces) == 32000
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) == (0, 1, 2, -1)
    assert [sp.id_to_piece(FIRST_BYTE_ID + b) for b in range(256)] == [
        f"<0x{b:02X}>" for b in range(256)
    ]
    for i, (piece, score, ttype) in enumerate(zip(oracle.pieces, oracle.scores, oracle.types)):
        assert sp.id_to_piece(i) == piece.decode("utf-8")
        assert sp.get_score(i) == score  # both float32, exactly
        assert sp.is_unknown(i) == (ttype == TokenType.UNKNOWN)
        assert sp.is_control(i) == (ttype == TokenType.CONTROL)
        assert sp.is_byte(i) == (ttype == TokenType.BYTE)
        assert sp.is_unused(i) == (ttype == TokenType.UNUSED)


def test_oracle_reproduces_llama_cpp_golden_ids(oracle):
    """sentencepiece on the rebuilt model gives llama.cpp's ids (special=False)
    on every golden row: the oracle is valid on the whole file."""
    assert len(GOLDEN_ROWS) == 883
    wrong = [
        (n, row["text"], row["ids"], oracle.sp.encode(row["text"]))
        for n, row in enumerate(GOLDEN_ROWS)
        if oracle.sp.encode(row["text"]) != row["ids"]
    ]
    assert wrong == []


# --- text strategies ----------------------------------------------------------------------------


def _chars(lo: int, hi: int) -> st.SearchStrategy:
    return st.characters(min_codepoint=lo, max_codepoint=hi, exclude_categories=("Cs",))


# Random pieces of the vocabulary, ▁ read as a space: the texts the merges know.
vocab_pieces = st.deferred(lambda: st.sampled_from(_oracle().normal_texts))

ascii_text = st.text(_chars(0x00, 0x7F), max_size=12)

whitespace = st.lists(
    st.sampled_from(
        [" ", " ", " ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\x00",
         "\u00a0", "\u3000", "\u2028", "\u0085", "\u200b", BOUNDARY]
    ),
    min_size=1,
    max_size=8,
).map("".join)

cjk = st.text(
    st.one_of(
        _chars(0x4E00, 0x9FFF),  # CJK unified ideographs
        _chars(0x3040, 0x30FF),  # hiragana, katakana
        _chars(0xAC00, 0xD7A3),  # hangul syllables
        _chars(0x3000, 0x303F),  # CJK punctuation
        _chars(0xFF00, 0xFFEF),  # full-width forms
    ),
    min_size=1,
    max_size=6,
)

emoji = st.lists(
    st.one_of(
        _chars(0x1F300, 0x1FAFF),
        _chars(0x2600, 0x27BF),
        st.sampled_from(["\u200d", "\ufe0f", "\U0001f3fb", "\U0001f1fa\U0001f1f8"]),
    ),
    min_size=1,
    max_size=5,
).map("".join)

combining = st.tuples(
    st.one_of(_chars(0x41, 0x7A), _chars(0xC0, 0x24F), _chars(0x391, 0x3C9), _chars(0x905, 0x939)),
    st.text(st.characters(categories=("Mn", "Mc", "Me")), min_size=1, max_size=4),
).map("".join)

# Characters that are no piece of their own: byte fallback (1 to 4 bytes).
absent = st.deferred(
    lambda: st.text(
        st.characters(min_codepoint=0x80, exclude_categories=("Cs",)).filter(
            lambda c: c not in _oracle().single_chars
        ),
        min_size=1,
        max_size=4,
    )
)

# Spelled like special pieces; encode_ordinary and sentencepiece read them as text.
special_lookalikes = st.sampled_from(["<s>", "</s>", "<unk>", "<0x41>", "<0x0A>", "<pad>"])

fragment = st.one_of(
    vocab_pieces,
    vocab_pieces,
    ascii_text,
    whitespace,
    cjk,
    emoji,
    combining,
    absent,
    special_lookalikes,
    st.text(max_size=8),  # hypothesis' default alphabet leaves out surrogates
)

texts = st.one_of(
    st.lists(fragment, max_size=12).map("".join),
    st.text(),
)


# --- differential tests -------------------------------------------------------------------------


@_hypothesis_settings(MAX_EXAMPLES)
@given(text=texts)
def test_encode_ordinary_matches_sentencepiece(oracle, text):
    expected = oracle.sp.encode(text)
    actual = oracle.tok.encode_ordinary(text)
    assert actual == expected, (
        f"text={text!r}\n"
        f"sentencepiece: {_show(oracle, expected)}\n"
        f"spmbpe:        {_show(oracle, actual)}"
    )
    # Decoding what encoding produced: the rules coincide here (the first
    # piece starts with the dummy ▁; byte pieces spell whole characters), and
    # both give the text back with U+2581 read as a space.
    assert oracle.tok.decode(expected) == oracle.sp.decode(expected) == text.replace(BOUNDARY, " ")


def _starts_with_space_byte(ids) -> bool:
    """Is the first non-control piece <0x20>?"""
    types = _oracle().types
    first = next((i for i in ids if types[i] != TokenType.CONTROL), None)
    return first == FIRST_BYTE_ID + 0x20


# Ids where sentencepiece's decoding rules and llama.cpp's coincide (see the
# module docstring): NORMAL and CONTROL pieces, and byte pieces spelling whole
# characters, the first id being neither a control piece nor <0x20>.
decodable_ids = (
    st.lists(
        st.one_of(
            st.deferred(lambda: st.sampled_from(_oracle().normal_ids)).map(lambda i: [i]),
            st.deferred(lambda: st.sampled_from(_oracle().normal_ids)).map(lambda i: [i]),
            st.deferred(lambda: st.sampled_from(_oracle().control_ids)).map(lambda i: [i]),
            st.characters(exclude_categories=("Cs",)).map(
                lambda c: [FIRST_BYTE_ID + b for b in c.encode("utf-8")]
            ),
        ),
        max_size=12,
    )
    .map(lambda runs: [i for run in runs for i in run])
    .filter(lambda ids: not _starts_with_space_byte(ids))
    .filter(lambda ids: not ids or _oracle().types[ids[0]] != TokenType.CONTROL)
)


@_hypothesis_settings(max(1, MAX_EXAMPLES // 3))
@given(ids=decodable_ids)
def test_decode_matches_sentencepiece(oracle, ids):
    assert oracle.tok.decode(ids, skip_special=True) == oracle.sp.decode(ids)


def test_decode_differences(oracle):
    """Where the two decoders part ways (ids encoding never produces)."""
    sp, tok = oracle.sp, oracle.tok
    hello, space, byte = 15043, 29871, lambda b: FIRST_BYTE_ID + b  # "▁Hello", "▁", <0xNN>
    assert tok.id_to_piece(byte(0x20)) == "<0x20>"
    # control pieces: nothing in sentencepiece; the piece unless skipped in spmbpe
    assert sp.decode([1, hello, 2]) == "Hello"
    assert tok.decode([1, hello, 2]) == "<s> Hello</s>"
    # ... and llama.cpp takes the space off the first id only, here the BOS
    assert tok.decode([1, hello, 2], skip_special=True) == " Hello"
    # <unk>: sentencepiece's unk surface, which also ends the dummy-prefix position
    assert sp.decode([0, hello]) == " \u2047  Hello"
    assert tok.decode([0, hello]) == "<unk> Hello"
    assert tok.decode([0, hello], skip_special=True) == " Hello"
    # a leading <0x20> byte piece keeps its space in sentencepiece only
    assert sp.decode([byte(0x20), hello]) == "  Hello"
    assert tok.decode([byte(0x20), hello]) == " Hello"
    # ... while a leading ▁ text piece loses it in both
    assert sp.decode([space, hello]) == tok.decode([space, hello]) == " Hello"
    # invalid UTF-8: one U+FFFD per byte vs one per maximal invalid subsequence
    truncated_euro = [byte(0xE2), byte(0x82)]
    assert sp.decode(truncated_euro) == "\ufffd\ufffd"
    assert tok.decode(truncated_euro) == "\ufffd"
    assert tok.decode_bytes(truncated_euro) == b"\xe2\x82"
