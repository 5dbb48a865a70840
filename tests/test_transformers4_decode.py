"""decode under ``reference="transformers4"`` equals transformers 4's slow
``LlamaTokenizer.decode`` (4.57: ``PreTrainedTokenizer._decode`` and
``LlamaTokenizer.convert_tokens_to_string``), live, on model folders with
and without ``legacy``, added tokens that are not special, additional
special tokens past the model's pieces, ``add_prefix_space: false`` and
``clean_up_tokenization_spaces: true``; the streaming decoder and
``decode_bytes`` agree with it.
"""

from __future__ import annotations

import functools
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe import TokenType

from long_run import examples
from test_hf_folder import hf_slow
from transformers4_folders import FOLDERS, build_folders


@pytest.fixture(scope="module")
def transformers():
    tf = pytest.importorskip("transformers")
    pytest.importorskip("google.protobuf")
    tf.logging.set_verbosity_error()
    return tf


@pytest.fixture(scope="module")
def pairs(transformers, tmp_path_factory):
    folders = build_folders(tmp_path_factory.mktemp("tf4_decode"))
    return {
        name: (spmbpe.load(folder, reference="transformers4"), hf_slow(transformers, folder))
        for name, folder in folders.items()
    }


def _stream(tok, ids, **options):
    decoder = tok.streaming_decoder(**options)
    chunks = [decoder.add_token(i) for i in ids]
    return chunks, decoder.flush()


def _check(tok, hf, ids):
    for skip in (False, True):
        expected = hf.decode(ids, skip_special_tokens=skip)
        got = tok.decode(ids, skip_special=skip)
        assert got == expected, (ids, skip, hf.convert_ids_to_tokens(ids), expected, got)
        chunks, rest = _stream(tok, ids, skip_special=skip)
        assert "".join(chunks) + rest == expected, (ids, skip, chunks, rest)
        if not tok._spec.reference_options.get("clean_up_spaces"):
            assert tok.decode_bytes(ids, skip_special=skip) == expected.encode("utf-8")


# ------------------------------------------------------ what transformers 4 does

# (folder, ids, decode, decode with skip_special), as transformers 4.57.6
# gives them (asserted live as well).
FIXED = [
    # legacy: a space before a special token that follows pieces, in front
    # of their text; each run between special tokens loses its own "▁".
    ("v1-legacy", [1, 22557, 1526], "<s>Hello world", "Hello world"),
    ("v1-legacy", [22557, 1526, 2], " Hello world</s>", "Hello world"),
    ("v1-legacy", [1, 22557, 1526, 2], "<s> Hello world</s>", "Hello world"),
    ("v1-legacy", [1, 29473, 22557], "<s> Џ Hello", "Џ Hello"),
    ("v1-legacy", [3, 1, 22557], " \x00<s>Hello", "\x00 Hello"),
    ("v1-legacy", [1, 2], "<s></s>", ""),
    # The first token's rest after its "▁" is looked up again; "▁" * 15 is
    # not a piece, and sentencepiece gives a piece it does not know as
    # spelled. As a second token, it is a piece of sixteen spaces.
    ("v1-legacy", [359, 22557], "\u2581" * 15 + " Hello", "\u2581" * 15 + " Hello"),
    ("v1-legacy", [1, 359], "<s>" + " " * 15, "\u2581" * 15),
    # non-legacy: no such space; sentencepiece keeps the run's later "▁".
    ("v1-nonlegacy", [1, 22557, 1526, 2], "<s> Hello world</s>", "Hello world"),
    # added tokens that are not special: texts joined with spaces, and kept
    # by skip_special (only all_special_ids are skipped).
    ("v3-nonlegacy", [3, 4, 22557], "[INST] [/INST] sketch", "[INST] [/INST] sketch"),
    ("v3-nonlegacy", [3, 1, 22557], "[INST] <s> sketch", "[INST] sketch"),
    ("v3-nonlegacy", [29473, 1], "<s>", ""),
    ("v3-nonlegacy", [1, 29473, 22557], "<s>  sketch", " sketch"),
    # the last run is joined even when its text is empty.
    ("v3-nonlegacy", [3, 29473], "[INST] ", "[INST] "),
    # ids of byte pieces that added tokens spell otherwise.
    ("v1-respelled", [22557, 5, 22557], "Hello <mytok> Hello", "Hello <mytok> Hello"),
    ("v1-respelled", [22557, 6, 22557], " Hello<myspecial>Hello", "Hello Hello"),
]


@pytest.mark.parametrize("name, ids, decoded, skipped", FIXED)
def test_fixed_id_lists(pairs, name, ids, decoded, skipped):
    tok, hf = pairs[name]
    assert hf.decode(ids) == decoded and hf.decode(ids, skip_special_tokens=True) == skipped
    assert tok.decode(ids) == decoded
    assert tok.decode(ids, skip_special=True) == skipped
    _check(tok, hf, ids)


def test_clean_up_tokenization_spaces(pairs):
    tok, hf = pairs["v1-clean-up"]
    ids = tok.encode("Hello , world . I do n't know ' s ?")
    assert tok.decode(ids) == "Hello, world. I don't know's?" == hf.decode(ids)
    plain, _ = pairs["v1-legacy"]
    assert plain.decode(ids) == "Hello , world . I do n't know ' s ?"
    # It reads the whole text: a streaming decoder gives it at flush().
    chunks, rest = _stream(tok, ids)
    assert chunks == [""] * len(ids) and rest == "Hello, world. I don't know's?"


def test_streaming_holds_text_only_where_a_space_may_come_before_it(pairs):
    legacy, _ = pairs["v1-legacy"]
    ids = [22557, 1526, 2]  # ▁Hello ▁world </s>
    # legacy, special tokens kept: the space before </s> goes in front of
    # "Hello world", so that text waits for the special token or flush().
    assert _stream(legacy, ids) == (["", "", " Hello world</s>"], "")
    assert _stream(legacy, ids[:2]) == (["", ""], "Hello world")
    # skipped special tokens cannot add that space: nothing waits.
    assert _stream(legacy, ids, skip_special=True) == (["Hello", " world", ""], "")
    nonlegacy, _ = pairs["v1-nonlegacy"]
    assert _stream(nonlegacy, ids) == (["Hello", " world", "</s>"], "")


def test_a_tokenizer_built_from_lists_decodes_as_the_folder(pairs):
    """SpmTokenizer(pieces, reference="huggingface") names no special
    tokens: its bos/eos/unk ids are them, as LlamaTokenizer's defaults."""
    folder, hf = pairs["v1-legacy"]
    n = 32000
    tok = spmbpe.SpmTokenizer(
        [folder.id_to_piece(i) for i in range(n)], None, token_types=[folder.token_type(i) for i in range(n)],
        reference="huggingface", bos_id=1, eos_id=2, unk_id=0,
    )
    for ids in ([1, 22557, 1526, 2], [22557, 2, 1, 1526], [0, 3, 1], [1, 29473, 22557], []):
        for skip in (False, True):
            assert tok.decode(ids, skip_special=skip) == hf.decode(ids, skip_special_tokens=skip), (ids, skip)


def test_settings_travel_with_the_pickle(pairs):
    for name in ("v1-clean-up", "v1-added", "v3-no-prefix-space"):
        tok, hf = pairs[name]
        back = pickle.loads(pickle.dumps(tok))
        ids = tok.encode("a <x> b <y> c , d [INST] e", special="all") + [2, tok.vocab_size - 1, 1]
        assert back.decode(ids) == tok.decode(ids) == hf.decode(ids)
        assert back.fingerprint == tok.fingerprint
    assert pairs["v1-clean-up"][0].fingerprint != pairs["v1-legacy"][0].fingerprint


# ------------------------------------------------------ random, live


@functools.lru_cache(maxsize=None)
def _interesting(tok):
    """Ids a random list should hit often: special and added tokens,
    control, byte and unknown pieces, "▁" alone and doubled, and pieces
    that start with "▁" (whose rest may or may not be a piece)."""
    out = [0, 1, 2, 29473, 29871, 259, 1678, 22557]
    for i in range(tok.vocab_size):
        if tok.token_type(i) in (TokenType.BYTE, TokenType.CONTROL, TokenType.UNKNOWN) or i >= 32000:
            out.append(i)
    return tuple(sorted(set(i for i in out if i < tok.vocab_size)))


def _settings(n: int):
    return settings(
        max_examples=examples(n), deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.mark.parametrize("name", sorted(FOLDERS))
@_settings(300)
@given(data=st.data())
def test_random_id_lists_equal_transformers(pairs, name, data):
    tok, hf = pairs[name]
    one = st.one_of(st.sampled_from(_interesting(tok)), st.integers(0, tok.vocab_size - 1))
    ids = data.draw(st.lists(one, max_size=10), label="ids")
    _check(tok, hf, ids)


TEXT = st.lists(
    st.one_of(
        st.sampled_from([
            "Hello", " world", "  ", "\n", "\u2581", "<s>", "</s>", "[INST]", " [/INST] ", "<x>", "<y>",
            "<pad>", "<|im_start|>", "<|im_end|>", "<mytok>", "<myspecial>", "don't", " , ", " .", "日本語", "🦙", "\t",
        ]),
        st.text(st.characters(codec="utf-8"), max_size=4),
    ),
    max_size=8,
).map("".join)


@pytest.mark.parametrize("name", sorted(FOLDERS))
@_settings(150)
@given(text=TEXT)
def test_decoded_encodings_equal_transformers(pairs, name, text):
    tok, hf = pairs[name]
    for add in (False, True):
        _check(tok, hf, tok.encode(text, add_special_tokens=add, special="all"))
