"""Port of the seed's unit tests (Rust ``SpmTokenizer``, ``#[cfg(test)] mod tests``).

Every test keeps the seed's vocabulary and expectations; only the API changed
(see the seed -> spmbpe mapping in the API contract).
"""

from __future__ import annotations

import pytest

from spmbpe import SpmTokenizer

BOUNDARY = "\u2581"  # "▁", SentencePiece's word-boundary marker


def rank_scored_vocab():
    """The seed's synthetic vocabulary: score of id i is -i (a merge rank).

    The ids make the summed score favour fragments (▁h + el + lo = -15 beats
    ▁hello = -22), so only true best-pair merging reaches the whole word.
    "▁hell" is left out on purpose so one merge chain stops early.
    """
    tokens = [
        "<pad>", "<eos>", "<bos>", "<unk>",       # 0..3
        "▁h", "el", "lo", "▁w", "or", "ld",       # 4..9   fragments, best scores
        "h", "e", "l", "o", "w", "r", "d", "▁",   # 10..17 single characters
        "ll", "▁he",                              # 18..19 intermediates
        "▁hel", "▁wor",                           # 20..21 intermediates
        "▁hello", "▁world",                       # 22..23 whole words, worst scores
    ]
    scores = [-float(i) for i in range(len(tokens))]
    return tokens, scores


def make_tok(**kwargs) -> SpmTokenizer:
    tokens, scores = rank_scored_vocab()
    return SpmTokenizer(tokens, scores, **kwargs)


def pieces(tok: SpmTokenizer, text: str) -> list[str]:
    return [tok.id_to_piece(i) for i in tok.encode(text, special="all")]


def tok_with_added(prefix_scheme: str = "once") -> SpmTokenizer:
    # <bos>/<eos> as plain added tokens, not as the vocabulary's BOS/EOS ids
    # (those behave differently at byte 0 under "once").
    return make_tok(prefix_scheme=prefix_scheme, added_tokens={"<bos>": 2, "<eos>": 1})


# --- merging -----------------------------------------------------------------


def test_whole_words_win_over_cheaper_fragment_sequences():
    # Best-adjacent-pair merging must reach the whole word even though the
    # fragments have the better summed score.
    t = make_tok()
    assert pieces(t, "hello") == ["▁hello"]
    assert pieces(t, "hello world") == ["▁hello", "▁world"]


def test_a_merge_chain_that_stops_short_keeps_every_character():
    # No "▁hell" piece: merging halts at "▁hel" + "l" without inventing a
    # token, losing a character or falling back to <unk>.
    t = make_tok()
    assert pieces(t, "hell") == ["▁hel", "l"]


def test_repeated_words_tokenize_identically():
    # Many equal-score candidates in flight must not change the outcome.
    t = make_tok()
    assert pieces(t, "hello hello hello") == ["▁hello", "▁hello", "▁hello"]


# --- dummy prefix and decoding -----------------------------------------------


def test_spaces_become_word_boundaries_and_round_trip():
    t = make_tok()
    ids = t.encode("hello world", special="all")
    assert t.decode(ids) == "hello world"


def test_a_leading_space_survives_decoding():
    # Decoding removes only the dummy prefix, never a space the caller wrote.
    t = make_tok()
    assert t.decode(t.encode(" hello", special="all")) == " hello"
    assert t.decode(t.encode(" hello world", special="all")) == " hello world"
    assert t.decode(t.encode("", special="all")) == ""


def test_prefix_space_can_be_disabled():
    # add_space_prefix = false (Gemma): no boundary is prepended ...
    t = make_tok(add_prefix_space=False)
    assert pieces(t, "hello") == ["h", "el", "lo"]
    # ... and decode removes none either, so a written space survives.
    assert t.decode(t.encode(" hello", special="all")) == " hello"


def test_leading_space_is_never_swallowed_by_the_dummy_prefix():
    # The prefix is added unconditionally; this vocabulary has no "▁▁", so the
    # prefix and the written space stay two separate boundary pieces.
    t = make_tok()
    assert pieces(t, " ") == ["▁", "▁"]
    assert pieces(t, " hello") == ["▁", "▁hello"]
    assert pieces(t, " hello world") == ["▁", "▁hello", "▁world"]


def test_leading_space_yields_exactly_one_extra_leading_boundary_piece():
    # A leading space adds exactly one boundary piece in front of what the
    # text without it encodes to.
    t = make_tok()
    without = pieces(t, "hello")
    with_space = pieces(t, " hello")
    assert len(with_space) == len(without) + 1
    assert with_space[0] == BOUNDARY
    assert with_space[1:] == without


def test_empty_input_produces_no_tokens():
    t = make_tok(add_prefix_space=False)
    assert t.encode("", special="all") == []


def test_empty_input_with_prefix_space_still_produces_no_tokens():
    # The dummy prefix must not turn "" into a token (sentencepiece and
    # llama.cpp both give []), with or without an added-token matcher.
    assert make_tok().encode("") == []
    with_matcher = make_tok(added_tokens={"<bos>": 2})
    assert with_matcher.encode("", special="all") == []


# --- BOS / EOS -----------------------------------------------------------------


def test_bos_and_eos_are_reported_but_never_encoded():
    # The ids are exposed, but plain encode never inserts them.
    with_ids = make_tok(bos_id=2, eos_id=1)
    assert pieces(with_ids, "hello") == ["▁hello"]
    assert with_ids.bos_id == 2
    assert with_ids.eos_id == 1

    without = make_tok()
    assert pieces(without, "hello") == ["▁hello"]
    assert without.bos_id is None
    assert without.eos_id is None


# --- unknown characters ---------------------------------------------------------


def test_unknown_characters_use_byte_fallback():
    # With the complete <0xNN> set an unknown character becomes its UTF-8 bytes.
    tokens = ["<unk>", "▁"] + [f"<0x{b:02X}>" for b in range(256)]
    scores = [-float(i) for i in range(len(tokens))]
    t = SpmTokenizer(tokens, scores, add_prefix_space=False)
    ids = t.encode("é", special="all")
    assert len(ids) == 2, "é is two UTF-8 bytes, so two byte tokens"
    assert t.decode(ids) == "é"


def test_unknown_characters_without_byte_fallback_use_unk():
    # No byte pieces at all: the unknown character is <unk>, not dropped.
    t = SpmTokenizer(["<unk>", "▁", "a"], [], add_prefix_space=False)
    assert pieces(t, "z") == ["<unk>"]


# --- added tokens and the two prefix schemes ----------------------------------


def test_added_tokens_in_the_input_encode_to_their_own_id():
    # "once": the prefix belongs to the whole input; <bos> sits at offset 0, so
    # the prefix stands alone and the gap after it is not prefixed.
    t = tok_with_added()
    assert pieces(t, "<bos>hello world<eos>") == [
        "▁", "<bos>", "h", "el", "lo", "▁world", "<eos>",
    ]


def test_only_the_stretch_at_byte_zero_carries_the_dummy_prefix():
    # "once": only the leading gap gets the prefix, however many gaps follow.
    t = tok_with_added()
    assert pieces(t, "hello<eos>world") == ["▁hello", "<eos>", "w", "or", "ld"]
    assert pieces(t, "hello<eos>world<eos>hello") == [
        "▁hello", "<eos>", "w", "or", "ld", "<eos>", "h", "el", "lo",
    ]


def test_a_leading_added_token_leaves_the_dummy_prefix_standing_alone():
    t = tok_with_added()
    assert pieces(t, "<bos>") == ["▁", "<bos>"]
    assert pieces(t, "<bos>hello") == ["▁", "<bos>", "h", "el", "lo"]
    # A leading space makes the first gap " ", which carries the prefix; with
    # no "▁▁" piece here the two markers stay separate.
    assert pieces(t, " <bos>hello") == ["▁", "▁", "<bos>", "h", "el", "lo"]


def test_sentinel_added_tokens_swallow_the_standalone_prefix():
    # "once": a leading BOS/EOS/UNK swallows the lone prefix, any other leading
    # added token leaves it. Here only <bos> is a sentinel (bos_id=2).
    t = make_tok(
        bos_id=2, prefix_scheme="once", added_tokens={"<bos>": 2, "<eos>": 1}
    )
    assert pieces(t, "<bos>hello") == ["<bos>", "h", "el", "lo"]
    assert pieces(t, "<eos>hello") == ["▁", "<eos>", "h", "el", "lo"]
    # Only at offset 0: a sentinel in second place does not drop the prefix.
    assert pieces(t, "<eos><bos>hello") == ["▁", "<eos>", "<bos>", "h", "el", "lo"]


def test_the_two_prefix_schemes_disagree_exactly_here():
    hf = tok_with_added("once")
    cpp = tok_with_added("after_each_special")

    # Leading added token: "once" strands the marker; llama.cpp emits none and
    # prefixes the following text instead.
    assert pieces(hf, "<bos>hello") == ["▁", "<bos>", "h", "el", "lo"]
    assert pieces(cpp, "<bos>hello") == ["<bos>", "▁hello"]

    # Added token mid-text: llama.cpp prefixes the gap after it too.
    assert pieces(hf, "hello<eos>world") == ["▁hello", "<eos>", "w", "or", "ld"]
    assert pieces(cpp, "hello<eos>world") == ["▁hello", "<eos>", "▁world"]

    # Only a marker.
    assert pieces(hf, "<bos>") == ["▁", "<bos>"]
    assert pieces(cpp, "<bos>") == ["<bos>"]

    # No added token in the text: one gap at offset 0, both schemes agree.
    for text in ["hello world", " hello", "hello"]:
        assert pieces(hf, text) == pieces(cpp, text), text


def test_the_sentinel_rule_is_inert_under_the_llama_cpp_scheme():
    # llama.cpp never emits a lone marker, so a sentinel and an ordinary added
    # token in the same place encode alike.
    t = make_tok(
        bos_id=2,
        prefix_scheme="after_each_special",
        added_tokens={"<bos>": 2, "<eos>": 1},
    )
    assert pieces(t, "<bos>hello") == ["<bos>", "▁hello"]
    assert pieces(t, "<eos>hello") == ["<eos>", "▁hello"]


@pytest.mark.parametrize("scheme", ["once", "after_each_special"])
def test_prefix_disabled_adds_no_marker_around_added_tokens(scheme):
    # Without a dummy prefix there is nothing to place, so both schemes agree
    # and no marker appears anywhere.
    t = make_tok(
        add_prefix_space=False, prefix_scheme=scheme, added_tokens={"<bos>": 2}
    )
    assert pieces(t, "<bos>hello") == ["<bos>", "h", "el", "lo"]
    assert pieces(t, "hello<bos>") == ["h", "el", "lo", "<bos>"]


def test_ordinary_mode_prefixes_the_whole_text_once():
    # special="none" never splits: the marker's spelling is plain content.
    t = tok_with_added()
    ids = t.encode("<bos>hello", special="none")
    assert ids == t.encode_ordinary("<bos>hello")
    assert 2 not in ids, "the marker is content, not its own id"


def test_without_added_tokens_encoding_is_unchanged():
    t = make_tok()
    assert pieces(t, "hello world") == ["▁hello", "▁world"]
    assert 2 not in t.encode("<bos>hello", special="all"), "no matcher, so <bos> is plain text"
