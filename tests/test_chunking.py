"""Exact chunking and the chunk cache: every path gives the same ids.

The core splits a segment before each "▁" that follows other text when no
piece it may build contains "x▁"; with a few such pieces it skips only the
boundaries they could cover; with many it merges whole segments.  These
tests compare against the whole-segment merge over the heap
(disable_chunking, disable_small_merges) — the algorithm of both references —
on real vocabularies and on synthetic ones that break the property in a few
pieces and everywhere.  The same comparison covers merge_small (short chunks
merged by a linear scan) and large documents cut at exact boundaries to be
encoded on several threads (SpmCore.split_points).

Chunks are also cut between two characters that no buildable piece holds
side by side (Chinese and Japanese have no spaces; a word beside
punctuation), and on both sides of a byte no piece of two or more bytes
holds (digits and newlines in Mistral v1); the same comparison covers those
cuts on synthetic vocabularies with multi-character CJK, emoji, Cyrillic
and punctuation pieces, and live sentencepiece on Mistral v1.
"""

import functools
import gc
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe import _testing

from long_run import combinations, examples, sample

DATA = Path(__file__).parent / "data"
FILES = ["ggml-vocab-llama-spm.gguf", "mistral-v1.model", "mistral-v3.model", "mistral-v1.tokenizer.json"]


def _pair(path_or_args):
    if isinstance(path_or_args, (str, Path)):
        fast, slow = spmbpe.load(path_or_args), spmbpe.load(path_or_args)
    else:
        fast, slow = (spmbpe.SpmTokenizer(*path_or_args[0], **path_or_args[1]) for _ in range(2))
    _testing.disable_chunking(slow._core)
    _testing.disable_small_merges(slow._core)
    return fast, slow


def _encode_in_parts(core, text, parts):
    """The ids of `text` cut at core.split_points(text, True, parts), each
    part encoded on its own (the first with the dummy prefix), joined."""
    cuts = core.split_points(text, True, parts)
    pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    joined = core.encode(pieces[0], True)
    for piece in pieces[1:]:
        joined += core.encode(piece, False)
    return joined


@functools.lru_cache(maxsize=None)
def _file_pair(name):
    fast, slow = _pair(DATA / name)
    assert fast._core.chunked and not slow._core.chunked
    return fast, slow


@pytest.fixture(scope="module", params=FILES)
def pair(request):
    return _file_pair(request.param)


@functools.lru_cache(maxsize=None)
def _texts():
    texts = []
    for name in ("llama-spm.gguf.jsonl", "mistral-v1.model.jsonl", "mistral-v3.model.jsonl"):
        with open(DATA / name, encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    for path in sorted((DATA / "corpus").glob("*.txt")):
        texts += [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()][:150]
    return tuple(texts)


def test_goldens_and_corpus_agree_with_whole_segment_merging(pair):
    fast, slow = pair
    texts = list(_texts())
    # Twice: the second pass is served from the cache.
    for _ in range(2):
        assert fast.encode_batch(texts, num_threads=1, special="all") == slow.encode_batch(texts, num_threads=1, special="all")
    for name in ("en_botchan.txt", "multi_ja.txt", "multi_zh_CN.txt", "multi_ru.txt"):
        doc = (DATA / "corpus" / name).read_text(encoding="utf-8")[:50000]
        assert fast.encode(doc, special="all") == slow.encode(doc, special="all")
        assert fast.encode_with_offsets(doc, special="all") == slow.encode_with_offsets(doc, special="all")


_WORDS = st.sampled_from(["the", " the", "  ", "▁", "a", "ab", "abc", " x", "日本", "🦙", "\n", "\t", "é", "<s>", "</s>", "q "])


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(text=st.lists(_WORDS, max_size=30).map("".join) | st.text(max_size=60).filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)))
def test_hypothesis_on_real_vocabularies(text):
    for fast, slow in _PAIRS:
        assert fast.encode(text, special="all") == slow.encode(text, special="all")


_PAIRS = [_pair(DATA / name) for name in ("mistral-v3.model", "ggml-vocab-llama-spm.gguf")]


def _synthetic(violators):
    """A small rank-scored vocabulary; `violators` are pieces with "x▁"."""
    pieces = ["<unk>", "▁", "a", "b", "c", "x", ">", "<", "/", "▁a", "▁b", "ab", "bc", "▁ab", "▁abc", "c▁", *violators]
    scores = [-float(i) for i in range(len(pieces))]
    return (pieces, scores), {}


@pytest.mark.parametrize(
    "violators",
    [[], [">▁</", "c▁a"], ["a▁", "b▁", "c▁b", "x▁x", ">▁", "▁a▁b"] + [f"{ch}▁{d}" for ch in "abcx<>/" for d in "abcx<>/"]],
    ids=["none-but-one", "a-few", "everywhere"],
)
@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(text=st.lists(st.sampled_from(["a", "b", "c", "x", " ", "  ", ">", "<", "/", "▁"]), max_size=40).map("".join))
def test_synthetic_vocabularies_that_break_the_property(violators, text):
    fast, slow = _pair(_synthetic(violators))
    assert fast.encode(text, special="all") == slow.encode(text, special="all")
    assert fast.encode_with_offsets(text, special="all") == slow.encode_with_offsets(text, special="all")


def test_chunking_is_off_when_pieces_cross_boundaries_everywhere():
    many = [f"{a}▁{b}" for a in "abcdefghij" for b in "abcdefghij"]
    fast, _ = _pair(_synthetic(many))
    assert not fast._core.chunked
    few, _ = _pair(_synthetic([">▁</"]))
    assert few._core.chunked


@pytest.mark.parametrize("name", FILES)
def test_a_large_document_cut_for_threads_gives_the_ids_of_the_whole(name):
    tok = spmbpe.load(DATA / name)
    doc = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")
    doc = doc[:60000] + "  \u2581x" + (DATA / "corpus" / "multi_ja.txt").read_text(encoding="utf-8")[:40000]
    whole = tok.encode(doc, special="all")
    cuts = tok._core.split_points(doc, tok.add_prefix_space, 7)
    assert 3 <= len(cuts) <= 6 and cuts == sorted(set(cuts))
    for threads in (2, 3):
        assert tok.encode_batch([doc, "a b", doc[:20000]], num_threads=threads, special="all")[0] == whole
        ids, offsets = tok.encode_batch([doc], num_threads=threads, return_numpy=True, special="all")
        assert ids.tolist() == whole and offsets.tolist() == [0, len(whole)]


# Texts longer than two blocks (core BLOCK_BYTES, 64 KiB) are escaped and
# merged a block at a time, each block ending before a space that follows
# an ASCII character other than a space.  Where the first search for such a
# space starts: a run of spaces, a literal "▁", a non-ASCII character or a
# line end before the space, or no space for longer than a block.
_BLOCK = 1 << 16
_JUNCTIONS = ["  y z", "é y", "\u2581 y", "\u3042 y", "\n y", " y", "y z", "x" * 70000 + " y"]


def _long_document(junction, lead=""):
    tail = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")
    cjk = (DATA / "corpus" / "multi_ja.txt").read_text(encoding="utf-8")
    body = lead + "x" * (_BLOCK - 2 - len(lead)) + junction
    return body + " " + tail[:70000] + junction + cjk[:50000] + junction + tail[-30000:]


# (Every file, junction and lead in the long run; in the quick one each
# junction once, each file twice, each lead two or three times.)
@pytest.mark.parametrize("name, junction, lead", combinations(FILES, range(len(_JUNCTIONS)), ["", " ", "\u2581"]))
def test_long_texts_merged_block_by_block_give_the_ids_of_the_whole(name, junction, lead):
    # (The lead: the tokenizer.json's prefix rule reads the first character.)
    fast, slow = _file_pair(name)
    doc = _long_document(_JUNCTIONS[junction], lead)
    assert len(doc.encode("utf-8")) > 2 * _BLOCK
    assert fast.encode(doc, special="all") == slow.encode(doc, special="all")


def test_long_texts_block_by_block_equal_sentencepiece_and_keep_their_offsets():
    import sentencepiece

    tok = spmbpe.load(DATA / "mistral-v1.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))
    for junction in sample(_JUNCTIONS, 4):  # (every one in the long run)
        doc = _long_document(junction)
        assert tok.encode(doc, special="none") == sp.encode(doc)
    # Offsets merge the whole text (their spans are positions in it): the
    # spans of whole-segment merging.
    doc = _long_document(" y")
    _, slow = _pair(DATA / "mistral-v1.model")
    ids, spans = tok.encode_with_offsets(doc, special="none")
    assert ids == sp.encode(doc) and spans == slow.encode_with_offsets(doc, special="none")[1]


def test_a_long_text_past_the_segment_limit_is_refused_before_any_block():
    tok = spmbpe.load(DATA / "mistral-v1.model")
    doc = _long_document(" y")
    _testing.limit_segment_bytes(tok._core, 3 * _BLOCK)
    with pytest.raises(ValueError, match=f"longer than the {3 * _BLOCK} bytes"):
        tok.encode(doc, special="none")


# A long text that is one segment (encode_ordinary; encode when no added
# token can occur in it) is read from the str as CPython stores it, 1, 2 or
# 4 bytes per character, a block of 64 KiB // that many characters at a
# time (SpmCore.encode_long), without the UTF-8 copy that CPython would
# keep on the str.  Each storage, with the junctions above at the block's
# edge in characters.
_KINDS = {"ascii": "", "latin-1": "\u00e9", "ucs-2": "\u3042", "ucs-4": "\U0001f999"}


def _str_kind(text):
    """Bytes per character CPython stores `text` with."""
    top = max(map(ord, text), default=0)
    return 1 if top <= 0xFF else 2 if top <= 0xFFFF else 4


def _long_str(kind_char, junction, lead=""):
    tail = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")
    if not kind_char:
        tail = tail.encode("ascii", "replace").decode("ascii")
    elif ord(kind_char) <= 0xFF:
        tail = tail.encode("latin-1", "replace").decode("latin-1")
    rest = junction + " " + tail[:70000] + junction + kind_char * 3 + " " + tail[-40000:]
    # The junction where the first search for a block's end starts.
    block = _BLOCK // _str_kind(lead + kind_char + rest)
    return lead + kind_char + "x" * (block - 2 - len(lead) - len(kind_char)) + rest


# (Every file, storage and junction in the long run; in the quick one each
# junction once, each file and storage twice.)
@pytest.mark.parametrize("name, kind, junction", combinations(FILES, list(_KINDS), range(len(_JUNCTIONS))))
def test_long_strs_read_block_by_block_give_the_ids_of_the_whole(name, kind, junction):
    fast, slow = _file_pair(name)
    junction = _JUNCTIONS[junction]
    # (A "▁" lead makes any str two bytes a character.)
    for lead in ("", " ", "\u2581") if kind.startswith("ucs") else ("", " "):
        doc = _long_str(_KINDS[kind], junction, lead)
        size = sys.getsizeof(doc)
        assert fast.encode_ordinary(doc) == slow.encode_ordinary(doc)
        # (slow merges whole segments from the str's UTF-8: only fast can
        # show that no copy was left on the str.)
        if kind != "ascii":
            fresh = doc.encode("utf-8").decode("utf-8")
            fast.encode_ordinary(fresh)
            assert sys.getsizeof(fresh) == size


@pytest.mark.parametrize("kind", list(_KINDS))
def test_long_strs_equal_sentencepiece_and_keep_no_utf8_copy(kind):
    import sentencepiece

    tok = spmbpe.load(DATA / "mistral-v1.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))
    cjk = (DATA / "corpus" / "multi_ja.txt").read_text(encoding="utf-8")
    # Byte-fallback emoji give four ids a character, Japanese about one:
    # the list outgrows its first guess (a token per four characters).
    for doc in (_long_str(_KINDS[kind], " y"), _long_str(_KINDS[kind], "x") + cjk[:60000] + "\U0001f999" * 9000):
        size = sys.getsizeof(doc)
        ordinary, ids = tok.encode_ordinary(doc), tok.encode(doc)
        assert sys.getsizeof(doc) == size
        expected = sp.encode(doc)  # (sentencepiece leaves a UTF-8 copy on doc)
        assert ordinary == expected and ids == expected
    # The list is an ordinary list of the right size, not tracked by the
    # cyclic GC (as every list of ids).
    assert sys.getsizeof(ids) == sys.getsizeof([0] * len(ids))
    # (A list made through CPython's public API, as the GC expects it.)
    assert gc.is_tracked(ids)
    copy = list(ids)
    ids.append(7)
    ids.extend(range(3))
    assert ids == copy + [7, 0, 1, 2]


# Outputs in blocks of 32 MB or more are new memory, whose pages are
# faulted in by one call as they are about to be written (csrc/spm_pages.h):
# a long document's list (4.2 million items), and a NumPy batch's flat ids
# (sized for 8.4 million).  Byte-fallback emoji give four ids a character.
def test_outputs_past_32_mb_hold_every_id():
    import sentencepiece

    tok = spmbpe.load(DATA / "mistral-v1.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))
    emoji = "\U0001f999"
    # (sentencepiece's ids of a short run give those of the long one.)
    two = sp.encode(emoji * 2)
    head, each = two[:-8], two[-4:]
    assert len(each) == 4 and two[-8:-4] == each and tok.encode_ordinary(emoji * 2) == two
    n = 1_050_000
    ids = tok.encode_ordinary(emoji * n)
    assert len(ids) == len(head) + 4 * n
    assert ids[: len(head)] == head and ids[len(head):] == each * n
    assert gc.is_tracked(ids)
    del ids
    texts = [emoji * 1000] * 2100
    one = head + each * 1000
    flat, offsets = tok.encode_batch(texts, num_threads=2, return_numpy=True, special="none")
    assert flat.tolist() == one * len(texts)
    assert offsets.tolist() == list(range(0, len(one) * len(texts) + 1, len(one)))


@pytest.mark.parametrize("where", [0, 1, 70000, -1])
def test_a_surrogate_in_a_long_str_is_named_as_in_a_short_one(where):
    tok = spmbpe.load(DATA / "mistral-v1.model")
    doc = list(_long_str(_KINDS["ucs-2"], " y"))
    doc[where] = "\ud800"
    doc = "".join(doc)
    at = where % len(doc)
    for call in (tok.encode_ordinary, tok.encode, lambda t: tok.encode(t, special="all")):
        with pytest.raises(ValueError, match=f"lone surrogate '\\\\ud800' at position {at},"):
            call(doc)


def test_a_long_str_past_the_segment_limit_in_utf8_bytes_is_refused():
    # 140,000 Japanese characters: fewer characters than the limit, more
    # UTF-8 bytes (three each), so the limit is checked on the UTF-8 length.
    tok = spmbpe.load(DATA / "mistral-v1.model")
    doc = ("\u3042\u3044 " * 50000)[:140000]
    _testing.limit_segment_bytes(tok._core, 3 * _BLOCK)
    with pytest.raises(ValueError, match=f"a text segment of {len(doc.encode())} UTF-8 bytes is longer than the {3 * _BLOCK} bytes"):
        tok.encode_ordinary(doc)
    _testing.limit_segment_bytes(tok._core, len(doc.encode()))
    assert tok.encode_ordinary(doc) == spmbpe.load(DATA / "mistral-v1.model").encode_ordinary(doc)


@pytest.mark.parametrize("violators", [[">▁</"], ["a▁b", "b▁▁a"]])
@settings(max_examples=examples(100), deadline=None, derandomize=True)
@given(text=st.lists(st.sampled_from(["a", "b", " ", "  ", ">", "</", "▁", "ab"]), min_size=1, max_size=80).map("".join),
       parts=st.integers(2, 9))
def test_cut_points_are_exact_with_pieces_that_cross_boundaries(violators, text, parts):
    args = _synthetic(violators)
    tok = spmbpe.SpmTokenizer(*args[0], **args[1])
    assert _encode_in_parts(tok._core, text, parts) == tok._core.encode(text, True)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(text=st.lists(st.sampled_from(["a", "b", "c", " ", "ab", "bc", "▁"]), max_size=60).map("".join))
def test_ties_go_to_the_leftmost_pair_on_every_path(text):
    # All scores equal: only the position decides (leftmost first, as in
    # both references' heaps), in merge_small and in the heap alike.
    pieces = ["<unk>", "▁", "a", "b", "c", "ab", "bc", "ca", "▁a", "▁b", "abc", "bca", "cab", "▁ab", "aa", "bb"]
    fast, slow = _pair(((pieces, [0.0] * len(pieces)), {}))
    assert fast.encode(text, special="all") == slow.encode(text, special="all")


@pytest.mark.parametrize("name", FILES)
def test_spans_of_cached_chunks_equal_the_merged_ones(name):
    # The second "word" of each kind is served from the cache; its spans are
    # rebuilt from piece lengths, except for byte and unknown pieces, which
    # are merged again (their spans are the character's).
    fast, slow = _pair(DATA / name)
    text = " ".join(["hello", "🦙x", "日本語", "\u0378y", "tokenization", "a\u00e9"] * 3) + " hello"
    assert fast.encode_with_offsets(text, special="all") == slow.encode_with_offsets(text, special="all")
    assert fast.encode_with_offsets(text, special="all") == fast.encode_with_offsets(text, special="all")


def test_spans_of_cached_unknown_runs():
    args = (["<unk>", "▁", "a", "b", "▁a", "ab"], None), {"add_prefix_space": True}
    fast, slow = _pair(args)
    text = "a xyz ab xyz a xyz"
    assert fast.encode_with_offsets(text, special="all") == slow.encode_with_offsets(text, special="all")


def test_spans_of_a_cached_chunk_with_an_unknown_piece_typed_normal():
    # The unknown id found by its name ("<unk>" typed NORMAL here): a cached
    # chunk holding it is merged again for its spans, as a typed one is.
    # (Found by hypothesis: the spans came from the piece "<unk>"'s length.)
    args = (_CJK_PIECES, [-float(i) for i in range(len(_CJK_PIECES))]), {"reference": "sentencepiece"}
    fast, slow = _pair(args)
    text = "x文日文文"
    fast.encode(text, special="all")  # (fills the cache)
    assert fast.encode_with_offsets(text, special="all") == slow.encode_with_offsets(text, special="all")
    assert fast.encode_with_offsets(text, special="all")[1] == [(0, 0), (0, 2), (2, 3), (3, 5)]


# Characters of 1 to 4 UTF-8 bytes; the pieces pair them in every way a cut
# between characters must respect (CJK with CJK, with ASCII, with emoji).
_CJK_CHARS = ["日", "本", "語", "。", "a", "b", " ", "é", "🦙", "x", "中", "文"]
_CJK_PIECES = [
    "<unk>", "▁", "日", "本", "語", "。", "a", "b", "é", "🦙", "中",
    "日本", "本語", "日本語", "語。", "a日", "本a", "▁日", "▁日本", "🦙🦙", "🦙日", "é本",
    "ab", "▁a", "中中", "中中中",
]


def _cjk_vocabulary(**options):
    return (_CJK_PIECES, [-float(i) for i in range(len(_CJK_PIECES))]), options


@pytest.mark.parametrize(
    "options, cuts",
    [({}, True), ({"reference": "sentencepiece"}, False)],
    ids=["llama.cpp", "sentencepiece-collapses-unknown"],
)
@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(text=st.lists(st.sampled_from(_CJK_CHARS), max_size=50).map("".join))
def test_cuts_between_characters_give_the_ids_of_whole_segments(options, cuts, text):
    # "文" and "x" are unknown; sentencepiece turns a run of unknown
    # characters into one <unk>, which a cut would split: no cuts then.
    fast, slow = _pair(_cjk_vocabulary(**options))
    assert fast._core.cut_chars is cuts
    assert fast.encode(text, special="all") == slow.encode(text, special="all")
    assert fast.encode_with_offsets(text, special="all") == slow.encode_with_offsets(text, special="all")
    assert _encode_in_parts(fast._core, text, 5) == slow._core.encode(text, True)


def test_cuts_between_characters_with_byte_fallback():
    pieces = _CJK_PIECES + [f"<0x{b:02X}>" for b in range(256)]
    types = [1] * len(_CJK_PIECES) + [6] * 256
    types[0] = 2
    scores = [-float(i) for i in range(len(pieces))]
    fast, slow = _pair(((pieces, scores), {"reference": "sentencepiece", "token_types": types}))
    assert fast._core.byte_fallback and fast._core.cut_chars
    text = "文文日本語。x中中中中文🦙🦙🦙日本a日本é本" * 3
    assert fast.encode(text, special="all") == slow.encode(text, special="all")
    assert fast.encode(text, special="all").count(fast.unk_id) == 0


def test_real_vocabularies_cut_chinese_and_japanese_between_characters():
    tok = spmbpe.load(DATA / "mistral-v1.model")
    assert tok._core.chunked and tok._core.cut_chars
    text = (DATA / "corpus" / "multi_ja.txt").read_text(encoding="utf-8")[:3000]
    # Cut points fall inside runs of Japanese, not only before spaces.
    cuts = tok._core.split_points(text, True, 40)
    assert sum(1 for c in cuts if not text[c].isspace() and not text[c - 1].isspace()) > 20


# Cuts between two characters that no buildable piece holds side by side,
# ASCII ones and other scripts included, and on both sides of a byte that no
# piece of two or more bytes holds (digits and newlines in Mistral v1).
_PUNCT = st.sampled_from([
    "the", " the", "word", ",", ".", "(", ")", "()", "[0]", "==", "->", ":", "'", '"', "x,", " 1", "1", "2024",
    "3.14", "\n", "\n\n", "\t", "  ", " ", "é", "été", "à,", "при", "вет", ",я", "Ω", "日本", "。", "\x00", "\x7f",
])


def test_isolated_bytes_of_mistral_v1_are_those_no_piece_holds():
    # Derived from live sentencepiece: the bytes below 0x40 (not the space)
    # that no normal piece of two or more bytes holds.
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))
    held = set()
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i).encode("utf-8")
        if len(piece) >= 2 and not (sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i)):
            held.update(piece)
    expected = bytes(c for c in range(0x40) if c not in held and c != 0x20)
    tok = spmbpe.load(DATA / "mistral-v1.model")
    assert _testing.isolated_bytes(tok._core) == expected
    assert b"\n" in expected and b"0123456789" in expected
    # llama.cpp may build "<0x0A>" from its text, so the GGUF's digits merge.
    gguf = spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf")
    assert b"\n" in _testing.isolated_bytes(gguf._core) and b"1" not in _testing.isolated_bytes(gguf._core)


_PUNCT_PAIRS = [_pair(DATA / name) for name in ("mistral-v1.model", "mistral-v1.tokenizer.json")]


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(text=st.lists(_PUNCT, max_size=30).map("".join))
def test_punctuation_digits_and_newlines_on_real_vocabularies(text):
    import sentencepiece

    for fast, slow in _PAIRS + _PUNCT_PAIRS:
        assert fast.encode(text, special="all") == slow.encode(text, special="all")
    fast = _PUNCT_PAIRS[0][0]
    assert fast.encode(text, special="all") == _MISTRAL_SP.encode(text)
    assert fast.encode_with_offsets(text, special="all") == _PUNCT_PAIRS[0][1].encode_with_offsets(text)


def _mistral_sp():
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))


_MISTRAL_SP = _mistral_sp()

def _mistral_hf():
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(DATA / "mistral-v1.tokenizer.json"))


_MISTRAL_HF = _mistral_hf()

# Words of two-byte characters, which escape takes in a loop of their own
# after a first one (Cyrillic, Greek, Hebrew, Arabic, Armenian, Latin-1, and
# the ends of the two-byte range), beside ASCII, punctuation, digits, CJK
# and emoji, and any run of characters of that range.
_TWO_BYTE = st.sampled_from([
    "привет", " мир", "Ёлка", "ёж", "ЖЖЖ", "αβγ", " Ωμέγα", "שלום", " עולם", "سلام", "عليكم", "Բարեւ",
    "été", "Straße", "\u0080\u07ff", "\u07ffя", "яé日", "я🦙", "я1", "я\n", "я ", "я,", "б.", "(я)",
]) | st.text(st.characters(min_codepoint=0x80, max_codepoint=0x7FF, exclude_categories=("Cs",)), min_size=1,
             max_size=8)


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(text=st.lists(_TWO_BYTE | _PUNCT, max_size=20).map("".join))
def test_two_byte_words_equal_sentencepiece_and_tokenizers(text):
    model, json_tok = _PUNCT_PAIRS[0][0], _PUNCT_PAIRS[1][0]
    assert model.encode_ordinary(text) == _MISTRAL_SP.encode(text)
    assert json_tok.encode_ordinary(text) == _MISTRAL_HF.encode(text, add_special_tokens=False).ids


def test_russian_lines_and_document_equal_sentencepiece_and_tokenizers():
    doc = (DATA / "corpus" / "multi_ru.txt").read_text(encoding="utf-8")
    lines = sample([x for x in doc.splitlines() if x.strip()], 1000)  # (every line in the long run)
    model, json_tok = _PUNCT_PAIRS[0][0], _PUNCT_PAIRS[1][0]
    # Twice: the second pass is served from the cache.
    for _ in range(2):
        assert model.encode_batch(lines, num_threads=1) == _MISTRAL_SP.encode(lines)
        assert json_tok.encode_batch(lines, num_threads=1) == [
            e.ids for e in _MISTRAL_HF.encode_batch(lines, add_special_tokens=False)]
    assert model.encode(doc) == _MISTRAL_SP.encode(doc)
    assert json_tok.encode(doc) == _MISTRAL_HF.encode(doc, add_special_tokens=False).ids


# Pieces that hold ASCII pairs, digits beside letters, a newline beside a
# letter and pairs of two-byte characters: the cuts must leave all of them.
_PAIR_PIECES = [
    "<unk>", "▁", "a", "b", ",", ".", "1", "2", "\n", "é", "я", "б", "(", ")",
    "a,", ",b", "1a", "a\n", "éb", "яб", "бя", ").", "▁(", "▁a", "ab", "ba", "12", "▁1",
]


def _pair_vocabulary(byte_fallback):
    """SpmTokenizer arguments of the _PAIR_PIECES vocabulary, with or
    without the 256 byte pieces."""
    pieces = list(_PAIR_PIECES)
    types = [1] * len(pieces)
    types[0] = 2
    if byte_fallback:
        pieces += [f"<0x{b:02X}>" for b in range(256)]
        types += [6] * 256
    return (pieces, [-float(i) for i in range(len(pieces))]), {"token_types": types}


@pytest.mark.parametrize("byte_fallback", [False, True], ids=["unknown", "byte-fallback"])
@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(text=st.lists(st.sampled_from(["a", "b", ",", ".", "1", "2", "3", "\n", "\t", " ", "é", "я", "б", "(", ")", "ü"]),
                     max_size=50).map("".join))
def test_cuts_beside_ascii_and_two_byte_characters_give_the_ids_of_whole_segments(byte_fallback, text):
    fast, slow = _pair(_pair_vocabulary(byte_fallback))
    assert fast._core.cut_chars
    # "1", "2" and "\n" are in pieces of two bytes; "\t" in none, nor "3"
    # unless "<0x33>" may be built (llama.cpp builds any piece from its text).
    isolated = _testing.isolated_bytes(fast._core)
    assert b"\t" in isolated and (b"3" in isolated) is not byte_fallback
    assert not set(isolated) & set(b" ,.12\n()")
    assert fast.encode(text, special="all") == slow.encode(text, special="all")
    assert fast.encode_with_offsets(text, special="all") == slow.encode_with_offsets(text, special="all")
    assert _encode_in_parts(fast._core, text, 7) == slow._core.encode(text, True)


# Every chunked vocabulary: the real ones, the synthetic ones with ASCII
# pairs, digits and newlines in pieces, and those with CJK, emoji and
# accented pieces (cut between characters; sentencepiece's, which collapses
# unknown runs, not).
_BOUND_PAIRS = [_pair(DATA / name) for name in FILES] + [
    _pair(args) for args in [_pair_vocabulary(byte_fallback) for byte_fallback in (False, True)]
    + [_cjk_vocabulary(), _cjk_vocabulary(reference="sentencepiece")]
]
_ASCII = st.lists(
    st.sampled_from(["the", " the", "a", "ab", "x,", " ", "  ", "1", "12", "\n", "\t", ".", "()", "[0]", "->", "\x00", "\x7f"])
    | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=4),
    max_size=30,
).map("".join)
_ANY = st.lists(
    st.sampled_from(["the", " ", "  ", "1", "\n", ",", "é", "éb", "яб", "б", "日本語", "。", "🦙", "🦙日", "中中",
                     "\u2581", "\u2581\u2581", " \u2581", "\u2581a", "a\u2581", "\u00a0", "ü", "文x",
                     # Runs of two-byte characters (escape's loop of their own), the
                     # ends of their range, and what ends a run.
                     "привет", " мир", "ёж", "αβγ", "שלום", "سلام", "\u0080\u07ff", "\u07ffя", "яé日"])
    | st.text(max_size=4).filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)),
    max_size=30,
).map("".join)


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(text=_ASCII | _ANY, prefix=st.booleans())
def test_every_chunk_the_kernel_cuts_merges_to_the_ids_of_the_whole(text, prefix):
    # The chunks the kernel cuts a segment into (before a "▁" after other
    # text; between characters no buildable piece holds side by side;
    # beside a byte no piece of two or more bytes holds), each encoded on
    # its own -- the first with the dummy prefix -- give exactly the ids of
    # the whole segment merged at once.
    for fast, slow in _BOUND_PAIRS:
        assert fast._core.chunked
        bounds = _testing.chunk_bounds(fast._core, text, prefix)
        data = text.encode()
        assert bounds == sorted(set(bounds)) and (bounds[-1] == len(data) if data else bounds in ([], [0]))
        pieces = [data[a:b].decode() for a, b in zip([0] + bounds, bounds)]
        joined = []
        for k, piece in enumerate(pieces):
            joined += slow._core.encode(piece, prefix and k == 0)
        assert joined == slow._core.encode(text, prefix), (fast, text, prefix, pieces)


def test_points_a_piece_holding_x_marker_lies_across_are_not_cut():
    fast, _ = _BOUND_PAIRS[1]
    text = "ab été"
    assert _testing.chunk_bounds(fast._core, text, True) == [2, len(text.encode())]
    # Pieces that cross a boundary before "▁": the kernel checks each one.
    args, options = _synthetic([">▁</"])
    crossing = spmbpe.SpmTokenizer(*args, **options)._core
    assert crossing.chunked
    assert _testing.chunk_bounds(crossing, "a> </b c", True) == [len("a> </b"), len("a> </b c")]
    assert _testing.chunk_bounds(crossing, "a> <b c", True) == [len("a>"), len("a> <b"), len("a> <b c")]


@functools.lru_cache(maxsize=None)
def _fine_cut_cores():
    """Every chunked core that cuts between characters: _BOUND_PAIRS' and
    the trained models' (.model and tokenizer.json) that do, whose ASCII
    pairs and isolated bytes vary."""
    import gzip
    import tempfile

    cores = [fast._core for fast, _ in _BOUND_PAIRS if fast._core.cut_chars]
    with tempfile.TemporaryDirectory(prefix="spmbpe-fine-cuts-") as folder:
        for path in sorted((DATA / "trained").glob("*.gz")):
            if path.name.endswith((".model.gz", ".tokenizer.json.gz")):
                target = Path(folder) / path.name[: -len(".gz")]
                target.write_bytes(gzip.decompress(path.read_bytes()))
                core = spmbpe.load(target)._core
                if core.cut_chars:
                    cores.append(core)
    return cores


def test_fine_cuts_by_the_ascii_table_are_fine_cut_at_s():
    # next_fine_cut decides a cut between two ASCII characters by one bit of
    # a table built at load; it must cut exactly where fine_cut_at, at each
    # character's start, does: random ASCII (code-like and every byte),
    # with spaces, "▁"s and other characters mixed in, from each opening.
    import random

    cores = _fine_cut_cores()
    assert len(cores) >= 6
    rng = random.Random(20261207)
    cut = kept = 0
    alphabets = [
        "".join(map(chr, range(0x80))),
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789()[]{}.,:;=+-*/<>!?&|'\"#%\n\t",
        "abc123 .,\u2581é日🦙\n",
    ]
    for core in cores:
        for _ in range(examples(400)):
            alphabet = rng.choice(alphabets)
            body = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
            opening = rng.choice(["", " ", "  ", "\u2581", "\u2581 "])
            text = opening + body
            each, found = _testing.fine_cuts(core, text, len(opening.encode()))
            assert found == each, (core, text)
            assert each == sorted(set(each))
            cut += len(each)
            kept += len(text) - len(each)
    assert cut > 100 and kept > 100
