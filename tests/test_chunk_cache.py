"""The chunk cache (csrc/spm_cache.h) holds exactly the ids the merge gives.

Every other test of the cache looks at ids that come out of an encode; these
look at what the cache itself answers for a chunk (``_testing.cached_ids``),
for chunks of every shape of entry (keys of up to 16 bytes and longer, up to
3 ids and more; each entry is its key padded to 4 bytes, then its ids),
through the table's growth and with several threads inserting at once, and
check it against live sentencepiece.
"""

from __future__ import annotations

import itertools
import random
import re
from collections import defaultdict

import pytest
import sentencepiece

import spmbpe
from spmbpe import _testing

from conftest import DATA_DIR

MODEL = DATA_DIR / "mistral-v1.model"
MARKER = "\u2581".encode()


@pytest.fixture(scope="module")
def sp():
    return sentencepiece.SentencePieceProcessor(model_file=str(MODEL))


@pytest.fixture(scope="module")
def probe():
    """A tokenizer only asked where its chunks are cut."""
    return spmbpe.load(MODEL)


def one_chunk(tok, word: str) -> bool:
    """Whether " word" (a word after a space) is one chunk, in a span long
    enough to be cut into chunks."""
    size = len(word.encode())
    return _testing.chunk_bounds(tok._core, f"{word} {word}", True) == [size, 2 * size + 1]


@pytest.fixture(scope="module")
def shapes(sp, probe):
    """The words of the test corpora that are one chunk after a space, by
    the shape of their entry: (key over 16 bytes, more than 3 ids)."""
    words = set()
    for name in ("en_botchan.txt", "code_py.txt", "multi_de.txt", "multi_fr.txt"):
        words |= set(re.findall(r"[A-Za-z]{3,}", (DATA_DIR / "corpus" / name).read_text(encoding="utf-8")))
    # (A key is a chunk's bytes after its "▁": compounds give long keys.)
    ordered = sorted(words)
    words |= {a + b for a, b in zip(ordered, ordered[1:]) if len(a + b) > 16}
    out = defaultdict(list)
    for word in sorted(words):
        if one_chunk(probe, word):
            out[(len(word) > 16, len(sp.encode(word)) > 3)].append(word)
    assert all(len(out[shape]) >= 100 for shape in itertools.product((False, True), repeat=2))
    return out


def test_each_shape_of_entry_answers_the_references_ids(sp, shapes):
    tok = spmbpe.load(MODEL)
    words = [w for ws in shapes.values() for w in ws[:40]]
    text = " ".join(words)
    assert tok.encode_ordinary(text) == sp.encode(text)
    for (long_key, many_ids), ws in shapes.items():
        for word in ws[:40]:
            assert _testing.cached_ids(tok._core, MARKER + word.encode()) == sp.encode(word), (long_key, many_ids, word)
    # The text again, now from the cache.
    assert tok.encode_ordinary(text) == sp.encode(text)
    # A key that is a cached one's prefix, or one longer, is not found
    # (unless it is a word of the text too).
    others = [(w[:-1], w + "q") for w in words]
    others = [k for pair in others for k in pair if k not in set(words)]
    assert len(others) > 250
    for word in others:
        assert _testing.cached_ids(tok._core, MARKER + word.encode()) is None


def test_growth_moves_every_shape_of_entry(sp, shapes):
    """Thousands of chunks: the table doubles from 1,024 slots several
    times, each move placing an entry by the hash it keeps."""
    words = [w for ws in shapes.values() for w in ws]
    random.Random(11).shuffle(words)
    tok = spmbpe.load(MODEL)
    for k in range(0, len(words), 2000):  # several calls: growth between and within them
        part = " ".join(words[k:k + 2000])
        assert tok.encode_ordinary(part) == sp.encode(part)
    slots, used, data, full = _testing.cache_info(tok._core)
    assert slots >= 32768 and used >= len(words) and not full
    for word in words:
        assert _testing.cached_ids(tok._core, MARKER + word.encode()) == sp.encode(word), word


@pytest.mark.parametrize("data_bytes, tag_bits", [(64 * 1024, 17), (None, 11), (1 << 29, 4)])
def test_a_slot_keeps_as_many_tag_bits_as_the_arena_leaves(sp, shapes, data_bytes, tag_bits):
    """A table slot is 32 bits: an entry's offset (in 4-byte units) in as
    many low bits as the arena needs, the hash's tag in the rest.  With room
    for 512 MB of entries only 4 bits of tag are left, so most slots a
    lookup passes have the tag it looks for and the key decides: each chunk
    still answers its own ids, through the table's growth, and a prefix or
    an extension of a cached key answers none."""
    words = [w for ws in shapes.values() for w in ws[:300]]
    random.Random(5).shuffle(words)
    tok = spmbpe.load(MODEL)
    if data_bytes is not None:
        _testing.limit_cache(tok._core, 1 << 17, data_bytes)
    for k in range(0, len(words), 400):
        part = " ".join(words[k:k + 400])
        assert tok.encode_ordinary(part) == sp.encode(part)
    assert _testing.cache_tag_bits(tok._core) == tag_bits
    slots, used, data, full = _testing.cache_info(tok._core)
    held = [w for w in words if _testing.cached_ids(tok._core, MARKER + w.encode()) is not None]
    assert len(held) == len(words) or full
    assert len(held) > 150 and slots > 1024  # (it grew)
    for word in held:
        assert _testing.cached_ids(tok._core, MARKER + word.encode()) == sp.encode(word), word
    others = {w[:-1] for w in held} | {w + "q" for w in held}
    for word in others - set(words):
        assert _testing.cached_ids(tok._core, MARKER + word.encode()) is None, word


def test_threads_fill_every_shape_of_entry(sp, shapes):
    """Threads inserting chunks of every shape at once into a small cache
    that grows and fills: every batch gives the references' ids, and what
    the cache holds is right."""
    words = [w for ws in shapes.values() for w in ws[:500]]
    assert len(words) > 1536  # more than the cache below holds
    rng = random.Random(3)
    texts = [" ".join(rng.sample(words, 12)) for _ in range(600)]
    want = [sp.encode(t) for t in texts]
    tok = spmbpe.load(MODEL)
    _testing.limit_cache(tok._core, 2048, 64 * 1024)
    for _ in range(3):
        assert tok.encode_batch(texts, special="none", num_threads=3) == want
    for word in words:
        got = _testing.cached_ids(tok._core, MARKER + word.encode())
        assert got is None or got == sp.encode(word), word
    assert _testing.cache_info(tok._core)[3]  # full: inserts stopped, ids still exact


@pytest.mark.parametrize("n", range(41))
def test_key_comparison_reads_every_byte_and_none_past_the_key(n):
    """The cache compares keys a word at a time, the last word masked to the
    key's length: two keys that differ in any one byte are unequal, and the
    bytes after a key (the text's next chunk, an entry's ids) never count.
    (A lookup reaches the comparison only when the tag of the hash matches
    too, 11 bits of it in a default cache, so ids alone would seldom show a
    wrong comparison.)"""
    rng = random.Random(n)
    key = bytes(rng.randrange(256) for _ in range(n))
    assert _testing.keys_equal(key, key, n)
    assert _testing.keys_equal(key + b"x" * 9, key + b"y" * 9, n)
    for at in range(n):
        for flip in (0x01, 0x80):
            other = bytearray(key)
            other[at] ^= flip
            assert not _testing.keys_equal(key, bytes(other), n), (n, at, flip)


def _held(tok, words):
    return {w: _testing.cached_ids(tok._core, MARKER + w.encode()) for w in words}


def test_a_sweep_keeps_the_entries_found_and_drops_the_rest(sp, shapes):
    """A full cache is swept once calls that started with it full have made
    a table's worth of lookups (1,024 here): the entries found since the
    last sweep stay, packed at the arena's start, each still answering the
    references' ids, and the rest go, making room for new chunks.  Three
    sweeps, so that entries the last one packed are moved and dropped too."""
    pool = [w for ws in shapes.values() for w in ws[:250]]
    random.Random(7).shuffle(pool)
    keep, drop = pool[:200], pool[200:900]
    tok = spmbpe.load(MODEL)
    _testing.limit_cache(tok._core, 1024, 1 << 20)  # 768 chunks

    def encode(words):
        text = " ".join(words)
        assert tok.encode_ordinary(text) == sp.encode(text)

    def sweep():
        # (When the next call starts; a lone letter is not looked up.)
        assert _testing.cache_info(tok._core)[3]
        assert tok.encode_ordinary("q") == sp.encode("q")

    encode(keep + drop)  # 900 one-chunk words: keep's go in first
    assert _testing.cache_info(tok._core)[1:4:2] == (768, True)
    for _ in range(6):  # 1,200 lookups since it filled, keep's only
        encode(keep)
    sweep()
    _, used, _, full = _testing.cache_info(tok._core)
    assert (used, full) == (200, False)
    assert _held(tok, keep) == {w: sp.encode(w) for w in keep}
    assert set(_held(tok, drop).values()) == {None}

    encode(drop)  # 568 of them fit: the first ones
    assert _testing.cache_info(tok._core)[1:4:2] == (768, True)
    for _ in range(4):  # 1,200 lookups: drop[:300] found, keep not
        encode(drop[:300])
    sweep()
    assert _testing.cache_info(tok._core)[1:4:2] == (300, False)
    assert _held(tok, drop[:300]) == {w: sp.encode(w) for w in drop[:300]}
    assert set(_held(tok, keep + drop[300:]).values()) == {None}

    # The packed entries' first half goes, its second half moves down,
    # and entries from the writers' blocks follow it.
    encode(keep + drop[300:700])  # keep and 268 of drop's
    assert _testing.cache_info(tok._core)[1:4:2] == (768, True)
    found = drop[150:300] + keep
    for _ in range(3):  # 1,050 lookups
        encode(found)
    sweep()
    assert _testing.cache_info(tok._core)[1:4:2] == (len(found), False)
    assert _held(tok, found) == {w: sp.encode(w) for w in found}
    assert set(_held(tok, drop[:150] + drop[300:]).values()) == {None}
    # And new chunks go in after them.
    encode(drop[300:400])
    assert _testing.cache_info(tok._core)[1] == len(found) + 100
    assert _held(tok, drop[300:400]) == {w: sp.encode(w) for w in drop[300:400]}


def test_a_long_document_sweeps_the_cache_between_its_blocks(sp, shapes):
    """One call: a document whose first part fills the cache with chunks
    that do not come back, then repeats other words.  It is read in blocks
    of 64 kB, and the cache is swept between two of them (only this call
    encodes), so the later words are cached by the end of the call; swept
    only when a call starts, they were not cached at all."""
    pool = [w for ws in shapes.values() for w in ws[:300]]
    random.Random(9).shuffle(pool)
    first, later = pool[:1000], pool[1000:1100]
    text = " ".join(first) + " " + " ".join(later * 400)
    assert len(text) > 200_000  # (three blocks or more)
    tok = spmbpe.load(MODEL)
    _testing.limit_cache(tok._core, 1024, 1 << 20)
    assert tok.encode_ordinary(text) == sp.encode(text)
    assert _held(tok, later) == {w: sp.encode(w) for w in later}
    assert set(_held(tok, first).values()) == {None}


def test_a_word_met_twice_is_cached_whole_under_its_own_key():
    # A word the warm path (spm_cache_words) looked up and missed is merged
    # with its key's hash taken from that lookup, not hashed or looked up
    # again; met a second time it is cached whole, and must then be found
    # by its own key: keys of up to 8, 16 and 32 bytes, after a space,
    # after indentation, and first in a span (the dummy prefix's "▁").
    tok, slow = spmbpe.load(MODEL), spmbpe.load(MODEL)
    _testing.disable_chunking(slow._core)
    assert tok._core.cut_chars
    words = ["x.y(z)", "foo.bar(baz)", "self.assertEqual(a,b)", "os.path.join(root,name)"]
    for word in words:
        for before, key in (("a ", word), ("a    ", "   " + word), ("", word)):
            text = before + word
            _testing.clear_cache(tok._core)
            assert _testing.cached_ids(tok._core, MARKER + key.encode()) is None
            for _ in range(3):
                assert tok.encode_ordinary(text) == slow.encode_ordinary(text), text
            assert _testing.cached_ids(tok._core, MARKER + key.encode()) == slow._core.encode(key, True), text
