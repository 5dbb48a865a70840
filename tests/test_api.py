"""Behaviour of spmbpe's public API (see the API contract), on the Llama 2 GGUF
vocabulary (fixture ``llama_spm``) and on small synthetic vocabularies.

Expected ids come from llama.cpp's reference output (``tests/data``), from
llama.cpp's rules worked by hand on a tiny vocabulary, or from a structural
property (round trip, two APIs agreeing) -- never from spmbpe's own output.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

import spmbpe
from spmbpe import AddedToken, SpmTokenizer, TokenType
from spmbpe.errors import (
    DisallowedSpecialError,
    InvalidTokenIdError,
    SpmbpeError,
    VocabularyError,
)

import long_run

DATA_DIR = pathlib.Path(__file__).parent / "data"

GOLDEN_ROWS = [
    json.loads(line)
    for line in (DATA_DIR / "llama-spm.gguf.jsonl").read_bytes().decode("utf-8").split("\n")
    if line.strip()
]
LLAMA_SPECIALS = ("<unk>", "<s>", "</s>")  # the GGUF's UNKNOWN and CONTROL pieces

def _has_special(text: str) -> bool:
    return any(s in text for s in LLAMA_SPECIALS)


ROWS_WITH_SPECIALS = [(i, r) for i, r in enumerate(GOLDEN_ROWS) if _has_special(r["text"])]
ROWS_WITHOUT_SPECIALS = [r for r in GOLDEN_ROWS if not _has_special(r["text"])]


# --- synthetic vocabularies ------------------------------------------------------


def rank_scored_tokens():
    """The seed's vocabulary (score of id i is -i) plus an added-token slot <M> (24)."""
    return [
        "<pad>", "<eos>", "<bos>", "<unk>",
        "▁h", "el", "lo", "▁w", "or", "ld",
        "h", "e", "l", "o", "w", "r", "d", "▁",
        "ll", "▁he", "▁hel", "▁wor", "▁hello", "▁world",
        "<M>",
    ]


M_ID = 24


def rank_tok(**kwargs) -> SpmTokenizer:
    tokens = rank_scored_tokens()
    return SpmTokenizer(tokens, [-float(i) for i in range(len(tokens))], **kwargs)


def pieces(tok: SpmTokenizer, ids) -> list[str]:
    return [tok.id_to_piece(i) for i in ids]


def byte_vocab(missing_byte=None):
    """<unk>, ▁, a, then the <0xNN> byte pieces (all 256, or all but one)."""
    tokens = ["<unk>", "▁", "a"]
    types = [TokenType.UNKNOWN, TokenType.NORMAL, TokenType.NORMAL]
    for b in range(256):
        if b != missing_byte:
            tokens.append(f"<0x{b:02X}>")
            types.append(TokenType.BYTE)
    return SpmTokenizer(tokens, None, token_types=types, add_prefix_space=False)


# --- input validation -------------------------------------------------------------


@pytest.mark.parametrize("bad", [b"hello", bytearray(b"hello"), None, 42, ["hello"]],
                         ids=["bytes", "bytearray", "None", "int", "list"])
def test_encode_rejects_non_str(llama_spm, bad):
    with pytest.raises(TypeError):
        llama_spm.encode(bad)
    with pytest.raises(TypeError):
        llama_spm.encode_ordinary(bad)


def test_encode_batch_rejects_non_str_items(llama_spm):
    with pytest.raises(TypeError):
        llama_spm.encode_batch(["fine", b"bytes"])


@pytest.mark.parametrize(("text", "position"), [("ab\ud800c", 2), ("hello\udfff", 5)])
def test_lone_surrogate_raises_value_error_naming_its_position(llama_spm, text, position):
    for call in (
        lambda: llama_spm.encode(text),
        lambda: llama_spm.encode_ordinary(text),
        lambda: llama_spm.encode_batch(["ok", text]),
    ):
        with pytest.raises(ValueError) as excinfo:
            call()
        assert re.search(rf"\b{position}\b", str(excinfo.value)), str(excinfo.value)


@pytest.mark.parametrize("bad_id", [32000, -1, 2**31, 2**64])
def test_decode_rejects_out_of_range_ids(llama_spm, bad_id):
    for call in (llama_spm.decode, llama_spm.decode_bytes):
        with pytest.raises(InvalidTokenIdError) as excinfo:
            call([15043, bad_id])
        err = excinfo.value
        assert isinstance(err, ValueError)
        assert isinstance(err, IndexError)
        assert isinstance(err, SpmbpeError)
        assert str(bad_id) in str(err)


@pytest.mark.parametrize("bad_id", [32000, -1])
def test_id_to_piece_rejects_out_of_range_ids(llama_spm, bad_id):
    with pytest.raises(InvalidTokenIdError) as excinfo:
        llama_spm.id_to_piece(bad_id)
    assert str(bad_id) in str(excinfo.value)


def test_errors_are_reexported_at_top_level():
    assert spmbpe.DisallowedSpecialError is DisallowedSpecialError
    assert spmbpe.InvalidTokenIdError is InvalidTokenIdError
    assert spmbpe.VocabularyError is VocabularyError
    assert spmbpe.SpmbpeError is SpmbpeError


# --- pieces and ids -------------------------------------------------------------------


def test_piece_to_id(llama_spm):
    # llama.cpp: "Hello" -> [15043]
    assert llama_spm.piece_to_id("▁Hello") == 15043
    assert llama_spm.id_to_piece(15043) == "▁Hello"
    # absent piece -> unk id, as sentencepiece's PieceToId
    assert llama_spm.piece_to_id("definitely not a piece") == llama_spm.unk_id == 0


def test_piece_to_id_without_unk_raises_key_error():
    tok = SpmTokenizer(["a", "b", "ab"])
    assert tok.unk_id is None
    assert tok.piece_to_id("ab") == 2
    with pytest.raises(KeyError):
        tok.piece_to_id("zz")


def test_unk_id_defaults():
    assert SpmTokenizer(["a", "<unk>", "<UNK>"]).unk_id == 1
    assert SpmTokenizer(["a", "<UNK>"]).unk_id == 1
    assert SpmTokenizer(["a", "b"]).unk_id is None
    assert SpmTokenizer(["<unk>", "x"], unk_id=1).unk_id == 1


def test_constructor_properties():
    tok = rank_tok(bos_id=2, eos_id=1, pad_id=0, add_bos=True, add_eos=True,
                   add_prefix_space=False, prefix_scheme="once")
    assert tok.vocab_size == 25
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id) == (2, 1, 0, 3)
    assert tok.add_bos is True and tok.add_eos is True
    assert tok.add_prefix_space is False
    assert tok.prefix_scheme == "once"
    default = rank_tok()
    assert default.prefix_scheme == "after_each_special"
    assert default.add_prefix_space is True
    assert default.add_bos is False and default.add_eos is False
    assert default.pad_id is None
    # no token_types given: every piece is NORMAL
    assert default.token_type(0) == TokenType.NORMAL
    assert default.token_type(M_ID) == TokenType.NORMAL


def test_constructor_keywords_are_the_spec_settings_with_its_defaults():
    """The constructor's keyword list lives in TokenizerSpec: each keyword
    past the vocabulary's lists is a spec setting forwarded as given, and its
    default is the spec's own, so the two cannot drift apart."""
    import dataclasses
    import inspect

    from spmbpe.spec import TokenizerSpec

    fields = {f.name: f for f in dataclasses.fields(TokenizerSpec)}
    keywords = list(inspect.signature(SpmTokenizer.__init__).parameters.values())[1:]
    assert [p.name for p in keywords[:3]] == ["tokens", "scores", "token_types"]
    assert len(keywords) > 3
    for parameter in keywords[3:]:
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, parameter.name
        assert parameter.name in fields, parameter.name
        assert parameter.default == fields[parameter.name].default, parameter.name
    tok = rank_tok(bos_id=2, pad_id=0, add_bos=True, prefix_scheme="once", reference="sentencepiece")
    given = {"bos_id": 2, "pad_id": 0, "add_bos": True, "prefix_scheme": "once", "reference": "sentencepiece"}
    settings = tok._spec.settings
    for parameter in keywords[3:]:
        assert settings[parameter.name] == given.get(parameter.name, parameter.default), parameter.name


def test_token_type_enum_numbers_match_gguf():
    assert [int(t) for t in (TokenType.NORMAL, TokenType.UNKNOWN, TokenType.CONTROL,
                             TokenType.USER_DEFINED, TokenType.UNUSED, TokenType.BYTE)] == [1, 2, 3, 4, 5, 6]


# --- special= policy ------------------------------------------------------------------


def test_allow_list_rejects_a_special_token_it_does_not_name(llama_spm):
    text = "a</s>b<s>"
    with pytest.raises(DisallowedSpecialError) as excinfo:
        llama_spm.encode(text, special={"</s>"})
    err = excinfo.value
    assert isinstance(err, ValueError)
    assert err.token == "<s>"
    # "a" 0, "</s>" 1-4, "b" 5, "<s>" starts at character 6
    assert err.offset == text.index("<s>") == 6


def test_disallowed_special_offset_counts_characters_not_bytes(llama_spm):
    text = "日本<s>"
    with pytest.raises(DisallowedSpecialError) as excinfo:
        llama_spm.encode(text, special=[])
    assert excinfo.value.token == "<s>"
    assert excinfo.value.offset == 2


def test_allow_list_naming_every_special_equals_all(llama_spm):
    text = "a</s>b<s>"
    # llama.cpp: "a</s>b" -> [263, 2, 289], "<s>" -> [1]; every gap is
    # tokenized on its own, so the concatenation follows.
    assert llama_spm.encode(text, special="all") == [263, 2, 289, 1]
    for allowed in ({"</s>", "<s>"}, ["<s>", "</s>"], ("</s>", "<s>"), frozenset({"<s>", "</s>"})):
        assert llama_spm.encode(text, special=allowed) == [263, 2, 289, 1]


def test_allow_list_on_golden_rows_with_specials(llama_spm):
    # Every such row, in one test that stops at the first that differs.
    for i, row in ROWS_WITH_SPECIALS:
        text = row["text"]
        assert llama_spm.encode(text, special=set(LLAMA_SPECIALS)) == row["ids_special"], f"row {i}: {text!r}"
        with pytest.raises(DisallowedSpecialError) as excinfo:
            llama_spm.encode(text, special=[])
        err = excinfo.value
        assert err.token in LLAMA_SPECIALS, f"row {i}: {text!r}"
        assert text[err.offset:err.offset + len(err.token)] == err.token, f"row {i}: {text!r}"


def test_empty_allow_list_without_specials_in_text_equals_none(llama_spm):
    for row in ROWS_WITHOUT_SPECIALS:
        assert llama_spm.encode(row["text"], special=[]) == row["ids"]
        assert llama_spm.encode(row["text"], special=set()) == row["ids"]


@pytest.mark.parametrize("bad", ["bogus", "ALL", ""])
def test_unknown_special_mode_string_is_rejected(llama_spm, bad):
    with pytest.raises((ValueError, TypeError)):
        llama_spm.encode("a</s>b", special=bad)


def test_encode_ordinary_equals_special_none(llama_spm):
    for _, row in ROWS_WITH_SPECIALS:
        text = row["text"]
        assert llama_spm.encode_ordinary(text) == llama_spm.encode(text, special="none") == row["ids"]


def test_str_subclasses_and_sampling_flags_give_the_reference_ids(llama_spm):
    # encode and encode_ordinary hand a plain str straight to the core
    # (spmbpe/_core.pyx TokenizerBase); anything else takes the planned path.
    # Both must give llama.cpp's ids.
    class Text(str):
        pass

    for row in ROWS_WITHOUT_SPECIALS[:40]:
        text, ids = row["text"], row["ids"]
        assert llama_spm.encode(Text(text)) == ids
        assert llama_spm.encode(Text(text), special="none") == ids
        assert llama_spm.encode_ordinary(Text(text)) == ids
        assert llama_spm.encode(text, enable_sampling=True, alpha=0.0) == ids
        assert llama_spm.encode(text, special=Text("all")) == ids
        assert llama_spm.encode(Text(text), add_special_tokens=True) == [1] + ids
    for _, row in ROWS_WITH_SPECIALS:
        assert llama_spm.encode_ordinary(Text(row["text"])) == row["ids"]


# --- BOS / EOS -------------------------------------------------------------------------


def test_encode_adds_bos_only_when_asked(llama_spm):
    # llama.cpp: "Hello" -> [15043]; the file's add_bos_token is true, add_eos_token false
    assert llama_spm.encode("Hello") == [15043]
    assert llama_spm.encode("Hello", special="none") == [15043]
    assert llama_spm.encode_ordinary("Hello") == [15043]
    assert llama_spm.encode("Hello", add_special_tokens=True) == [1, 15043]
    assert llama_spm.encode("Hello", special="none", add_special_tokens=True) == [1, 15043]
    assert llama_spm.encode("", add_special_tokens=True) == [1]
    assert llama_spm.encode_batch(["Hello", ""], add_special_tokens=True) == [[1, 15043], [1]]


def test_add_bos_and_add_eos_on_a_synthetic_vocabulary():
    both = rank_tok(bos_id=2, eos_id=1, add_bos=True, add_eos=True)
    assert both.encode("hello") == [22]
    assert both.encode("hello", add_special_tokens=True) == [2, 22, 1]
    eos_only = rank_tok(bos_id=2, eos_id=1, add_eos=True)
    assert eos_only.encode("hello", add_special_tokens=True) == [22, 1]
    neither = rank_tok(bos_id=2, eos_id=1)
    assert neither.encode("hello", add_special_tokens=True) == [22]


# --- decoding ------------------------------------------------------------------------------


def test_decode_skip_special_drops_control_and_unknown_ids(llama_spm):
    # llama.cpp's llama_detokenize(remove_special=true, unparse_special=false):
    # only the first id loses its leading space, and a skipped leading BOS or
    # <unk> is that first id, so the next piece keeps its space.
    assert llama_spm.decode([1, 15043], skip_special=True) == " Hello"
    assert llama_spm.decode([1, 15043, 2], skip_special=True) == " Hello"
    assert llama_spm.decode([0, 15043], skip_special=True) == " Hello"
    assert llama_spm.decode([15043, 1, 3186, 2], skip_special=True) == "Hello world"
    assert llama_spm.decode([15043, 3186]) == "Hello world"  # llama.cpp: "Hello world"
    assert llama_spm.decode([]) == ""


def test_decode_bytes(llama_spm):
    # llama.cpp: " this is 🦙.cpp" -> 29871 445 338 29871 243 162 169 156 29889 8223
    ids = [29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223]
    assert llama_spm.decode_bytes(ids) == " this is 🦙.cpp".encode("utf-8")
    assert llama_spm.decode(ids) == " this is 🦙.cpp"
    # byte pieces are raw bytes: 243 is <0xF0>
    assert llama_spm.id_to_piece(243) == "<0xF0>"
    assert llama_spm.decode_bytes([243, 162]) == b"\xf0\x9f"
    assert llama_spm.decode_bytes([1, 15043, 2], skip_special=True) == b" Hello"


def test_decode_of_a_partial_utf8_sequence(llama_spm):
    partial = [243, 162]  # first two bytes of a four-byte character
    assert llama_spm.decode(partial) == b"\xf0\x9f".decode("utf-8", "replace")
    with pytest.raises(UnicodeDecodeError):
        llama_spm.decode(partial, errors="strict")


def test_decode_accepts_any_iterable_of_ints(llama_spm):
    assert llama_spm.decode(iter([15043, 3186])) == "Hello world"
    assert llama_spm.decode((15043, 3186)) == "Hello world"


# --- batch -------------------------------------------------------------------------------------


def test_encode_batch_accepts_iterables_and_empty_input(llama_spm):
    texts = [r["text"] for r in GOLDEN_ROWS[:50]]
    expected = [r["ids_special"] for r in GOLDEN_ROWS[:50]]
    assert llama_spm.encode_batch(iter(texts)) == expected
    assert llama_spm.encode_batch(t for t in texts) == expected
    assert llama_spm.encode_batch([]) == []
    assert llama_spm.encode_batch([], num_threads=2) == []


# --- long inputs --------------------------------------------------------------------------------


# Ten megabytes in the long run, one in the quick one.
_MEGABYTES = 10 if long_run.LONG else 1


def test_megabytes_of_ascii_without_spaces(llama_spm):
    text = "ab" * (_MEGABYTES * 500_000)
    ids = llama_spm.encode(text)
    assert llama_spm.decode(ids) == text


def test_megabytes_of_cjk_without_spaces(llama_spm):
    block = "".join(chr(0x4E00 + (i * 7919) % 0x5000) for i in range(10_000))
    text = block * (_MEGABYTES * 33)  # 330,000 characters a megabyte, about 0.99 MB of UTF-8
    ids = llama_spm.encode(text)
    assert llama_spm.decode(ids) == text


# --- vocabulary construction -----------------------------------------------------------------


def test_empty_vocabulary_is_rejected():
    with pytest.raises(VocabularyError):
        SpmTokenizer([])
    assert issubclass(VocabularyError, ValueError)


def test_scores_of_the_wrong_length_are_rejected():
    with pytest.raises(VocabularyError):
        SpmTokenizer(["<unk>", "a", "b"], [0.0, -1.0])
    with pytest.raises(VocabularyError):
        SpmTokenizer(["<unk>", "a"], [0.0, -1.0, -2.0])


@pytest.mark.parametrize("kwargs", [{"bos_id": 3}, {"eos_id": -1}, {"unk_id": 99},
                                    {"added_tokens": {"<x>": 3}}])
def test_ids_out_of_range_are_rejected(kwargs):
    with pytest.raises(VocabularyError):
        SpmTokenizer(["<unk>", "a", "b"], **kwargs)


def test_missing_scores_mean_id_order():
    tokens = ["<unk>", "▁", "a", "b", "c", "ab", "bc"]
    explicit = SpmTokenizer(tokens, [-float(i) for i in range(len(tokens))])
    for tok in (SpmTokenizer(tokens), SpmTokenizer(tokens, []), SpmTokenizer(tokens, None)):
        for text in ("abc", "cab", "bcab", "a b c"):
            assert tok.encode(text) == explicit.encode(text)
    # "ab" (id 5) ranks before "bc" (id 6)
    no_prefix = SpmTokenizer(tokens, add_prefix_space=False)
    assert pieces(no_prefix, no_prefix.encode("abc")) == ["ab", "c"]


def test_duplicate_pieces_resolve_to_the_lowest_id():
    tokens = ["<unk>", "▁", "a", "b", "ab", "ab", "b"]
    tok = SpmTokenizer(tokens, add_prefix_space=False)
    assert tok.piece_to_id("ab") == 4
    assert tok.piece_to_id("b") == 3
    assert tok.encode("ab") == [4]
    assert tok.encode("b") == [3]


def test_byte_fallback_with_all_256_byte_pieces():
    tok = byte_vocab()
    c3, a9 = tok.piece_to_id("<0xC3>"), tok.piece_to_id("<0xA9>")
    assert tok.encode("é") == [c3, a9]
    assert tok.encode("aéa") == [2, c3, a9, 2]
    assert tok.decode(tok.encode("aéa")) == "aéa"


def test_no_byte_fallback_with_only_255_byte_pieces():
    tok = byte_vocab(missing_byte=0x00)  # the set is incomplete, though C3/A9 exist
    assert tok.encode("é") == [0]
    assert tok.encode("aéa") == [2, 0, 2]


def test_never_merge_score_loses_to_every_real_merge():
    # "ab" carries sentencepiece's never-merge score; "bc" a poor but real one.
    tokens = ["<unk>", "▁", "a", "b", "c", "ab", "bc"]
    scores = [0.0, 0.0, 0.0, 0.0, 0.0, -1e9, -1e6]
    tok = SpmTokenizer(tokens, scores, add_prefix_space=False)
    assert pieces(tok, tok.encode("abc")) == ["a", "bc"]
    # still built when nothing else competes (llama.cpp builds "▁▁", score
    # -1e9, for " ": [259])
    assert pieces(tok, tok.encode("ab")) == ["ab"]
    # control: with a real score "ab" wins
    better = SpmTokenizer(tokens, [0.0, 0.0, 0.0, 0.0, 0.0, -1.0, -1e6], add_prefix_space=False)
    assert pieces(better, better.encode("abc")) == ["ab", "c"]


def test_never_merge_pieces_in_the_gguf_still_merge_runs_of_spaces(llama_spm):
    # llama.cpp: " " -> [259] "▁▁", "  " -> [1678] "▁▁▁", "   " -> [268] "▁▁▁▁"
    assert llama_spm.encode(" ") == [259]
    assert llama_spm.encode("  ") == [1678]
    assert llama_spm.encode("   ") == [268]


# --- token types and added tokens ------------------------------------------------------------


def types_with_m(m_type: TokenType) -> list[int]:
    """NORMAL everywhere, ``m_type`` for <M>."""
    types = [TokenType.NORMAL] * len(rank_scored_tokens())
    types[M_ID] = m_type
    return types


def test_control_piece_from_token_types_obeys_special():
    tok = rank_tok(token_types=types_with_m(TokenType.CONTROL))
    assert pieces(tok, tok.encode("hello<M>world", special="all")) == ["▁hello", "<M>", "▁world"]
    assert M_ID not in tok.encode("hello<M>world", special="none")
    with pytest.raises(DisallowedSpecialError) as excinfo:
        tok.encode("hello<M>world", special=[])
    assert (excinfo.value.token, excinfo.value.offset) == ("<M>", 5)
    # The default, special="raise", is the empty allow-list.
    with pytest.raises(DisallowedSpecialError) as excinfo:
        tok.encode("hello<M>world")
    assert (excinfo.value.token, excinfo.value.offset) == ("<M>", 5)
    assert tok.encode("hello<M>world", special={"<M>"}) == tok.encode("hello<M>world", special="all")


def test_user_defined_piece_is_always_split_out():
    # llama.cpp splits USER_DEFINED pieces even with parse_special=false
    tok = rank_tok(token_types=types_with_m(TokenType.USER_DEFINED))
    expected = ["▁hello", "<M>", "▁world"]
    for special in ("all", "none", []):
        assert pieces(tok, tok.encode("hello<M>world", special=special)) == expected
    assert pieces(tok, tok.encode_ordinary("hello<M>world")) == expected


def test_non_special_added_token_is_always_split_out():
    tok = rank_tok(added_tokens=[AddedToken("<M>", M_ID, special=False)])
    expected = ["▁hello", "<M>", "▁world"]
    for special in ("all", "none", []):
        assert pieces(tok, tok.encode("hello<M>world", special=special)) == expected


def test_added_tokens_mapping_means_special_tokens():
    tok = rank_tok(added_tokens={"<M>": M_ID})
    assert pieces(tok, tok.encode("hello<M>world", special="all")) == ["▁hello", "<M>", "▁world"]
    with pytest.raises(DisallowedSpecialError):
        tok.encode("hello<M>world", special=[])


def test_added_token_dataclass_defaults():
    t = AddedToken("<M>", M_ID)
    assert (t.special, t.lstrip, t.rstrip) == (True, False, False)


def test_rstrip_added_token_drops_following_whitespace():
    # llama.cpp RSTRIP: whitespace right after the token is removed; the text
    # left over still follows a special token and so gets the dummy prefix.
    tok = rank_tok(added_tokens=[AddedToken("<M>", M_ID, rstrip=True)])
    assert pieces(tok, tok.encode("<M>  hello", special="all")) == ["<M>", "▁hello"]
    assert pieces(tok, tok.encode("<M>\n\t hello", special="all")) == ["<M>", "▁hello"]
    assert pieces(tok, tok.encode("<M>   ", special="all")) == ["<M>"]
    # whitespace before the token is kept: "hello " -> "▁hello▁"
    assert pieces(tok, tok.encode("hello <M>", special="all")) == ["▁hello", "▁", "<M>"]


def test_without_rstrip_the_whitespace_is_tokenized():
    # gap "  hello" + dummy prefix = "▁▁▁hello"; no "▁▁" piece, so the two
    # extra markers stay alone and the rest merges to "▁hello"
    tok = rank_tok(added_tokens=[AddedToken("<M>", M_ID)])
    assert pieces(tok, tok.encode("<M>  hello", special="all")) == ["<M>", "▁", "▁", "▁hello"]


def test_lstrip_added_token_drops_preceding_whitespace():
    # llama.cpp LSTRIP: whitespace right before the token is removed.
    tok = rank_tok(added_tokens=[AddedToken("<M>", M_ID, lstrip=True)])
    assert pieces(tok, tok.encode("hello  <M>world", special="all")) == ["▁hello", "<M>", "▁world"]
    assert pieces(tok, tok.encode("  <M>hello", special="all")) == ["<M>", "▁hello"]
    # whitespace after the token is kept: " world" -> "▁▁world"
    assert pieces(tok, tok.encode("<M> world", special="all")) == ["<M>", "▁", "▁world"]


def test_strip_flags_do_not_apply_when_the_token_is_not_matched():
    tok = rank_tok(added_tokens=[AddedToken("<M>", M_ID, lstrip=True, rstrip=True)])
    assert tok.encode("hello <M> world", special="none") == tok.encode_ordinary("hello <M> world")
    assert M_ID not in tok.encode("hello <M> world", special="none")


def test_openssl_is_loaded_only_for_a_fingerprint():
    # hashlib brings OpenSSL into the process (megabytes of resident memory,
    # more than the tokenizer itself): loading, encoding and decoding leave it out.
    code = (
        "import sys, spmbpe; tok = spmbpe.load('mistral-v1'); tok.decode(tok.encode_batch(['a b'])[0]);"
        "assert 'hashlib' not in sys.modules, 'loaded'; assert len(tok.fingerprint) == 64;"
        "assert 'hashlib' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(__file__).parent.parent)
