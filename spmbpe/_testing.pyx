# cython: language_level=3, boundscheck=False, wraparound=False
"""Test hooks into a compiled core, kept out of the production class.

Each function takes an ``SpmCore`` (the compiled core a tokenizer holds,
which tests reach) and reads the C structures it owns (spmbpe/_core.pxd),
so that tests and benchmarks can switch an optimisation off, bound the
cache, or look at the chunk boundaries, without SpmCore carrying methods
no user calls.

A separate small extension: it links no C of its own, and reads the core
through the declarations of its .pxd and the kernels it exports.
"""

from libc.stdint cimport int32_t, uint32_t, uint64_t

from spmbpe._core cimport SpmCore, Workspace, check_rc, encode_span, fine_cut_at, next_fine_cut, pool_clear_cache
from spmbpe._csrc cimport (
    SPM_CACHE_MAX_SLOTS,
    spm_cache_clear,
    spm_cache_entry,
    spm_cache_get,
    spm_cache_ids,
    spm_chunk_key,
    spm_cache_key_of,
    spm_bytes_equal_wide,
    spm_cache_table,
    spm_ucs_to_utf8,
)
from libc.stdlib cimport free, malloc

from spmbpe._core import MAX_SEGMENT_BYTES

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL
    int PyUnicode_KIND(object text)
    const void *PyUnicode_DATA(object text)


def disable_chunking(SpmCore core not None):
    """Merges whole segments from now on (to check that chunking and caching
    change no id)."""
    core.t.rules.chunked = False


def disable_small_merges(SpmCore core not None):
    """Merges every segment or chunk over the heap from now on (to check
    that merge_small's linear scan changes no id)."""
    core.t.small_merges = False


def limit_segment_bytes(SpmCore core not None, Py_ssize_t limit):
    """Lowers the longest segment `core` takes (MAX_SEGMENT_BYTES) to
    `limit`, so that tests can reach the limit without a 700 MB text."""
    if not 0 <= limit <= MAX_SEGMENT_BYTES:
        raise ValueError(f"limit must be from 0 to {MAX_SEGMENT_BYTES}")
    core.t.max_segment = limit


def clear_cache(SpmCore core not None):
    """Drops every cached chunk: now when no thread is encoding, else when
    the last one is done (they may be reading the cache)."""
    pool_clear_cache(&core.pool)


def cache_info(SpmCore core not None):
    """(table slots, chunks cached, bytes of entries, whether inserts have
    stopped because it is full) of the chunk cache, all 0 before the first
    chunked encode; exact only when no thread is encoding."""
    cdef const spm_cache_table *t
    if not core.pool.cache_ready:
        return 0, 0, 0, False
    t = core.pool.cache.table
    return t.mask + 1, t.used, min(core.pool.cache.data_len, core.pool.cache.data_cap), bool(core.pool.cache.full)


def table_sizes(SpmCore core not None):
    """{table: (slots, entries)} of the tables the core has built for
    merging (none before the first encode of a sentencepiece vocabulary:
    they are built then): "vocab", "chars", "pairs", "char_pairs".  The
    slots are what a table's memory grows with."""
    cdef dict out = {}
    if core.t.vocab != NULL:
        out["vocab"] = (core.t.vocab.cap, core.t.n_pieces)
    if core.t.chars != NULL:
        out["chars"] = (core.t.chars.mask + 1, core.t.chars.count)
    if core.t.pairs != NULL:
        out["pairs"] = (core.t.pairs.mask + 1, core.t.pairs.count)
    if core.t.rules.char_pairs != NULL:
        out["char_pairs"] = (core.t.rules.char_pairs.mask + 1, core.t.rules.char_pairs.count)
    return out


def cached_ids(SpmCore core not None, bytes chunk not None):
    """The ids the chunk cache holds for an escaped chunk ("\u2581" for a
    space, as UTF-8), or None.  Only when no thread is encoding."""
    cdef bytes marker = "\u2581".encode()
    cdef bint lead = chunk.startswith(marker)
    cdef bytes key_bytes = chunk[3:] if lead else chunk
    cdef spm_chunk_key key
    cdef const spm_cache_entry *e
    cdef const int32_t *ids
    cdef int i
    if core.t.rules.escape_spaces:
        # (The cache keys a chunk by its text as given: spaces as spaces.)
        key_bytes = key_bytes.replace(marker, b" ")
    if not core.pool.cache_ready or not chunk:
        return None
    spm_cache_key_of(&key, key_bytes, len(key_bytes), len(key_bytes), lead)
    e = spm_cache_get(&core.pool.cache, &key)
    if e == NULL:
        return None
    ids = spm_cache_ids(e)
    return [ids[i] for i in range(e.ids_len)]


def cache_tag_bits(SpmCore core not None):
    """How many bits of a chunk cache slot hold the hash's tag (the rest
    hold an entry's offset, as many as the arena needs), or 0 before the
    first chunked encode."""
    return 32 - core.pool.cache.offset_bits if core.pool.cache_ready else 0


def limit_cache(SpmCore core not None, uint32_t slots, size_t data_bytes):
    """Bounds the chunk cache to `slots` table slots (a power of two, 1024
    or more; at most half are used) and `data_bytes` of entries, so that
    tests can fill it.  Only before the first encode."""
    if slots < 1024 or slots & (slots - 1) or slots > SPM_CACHE_MAX_SLOTS:
        raise ValueError(f"slots must be a power of two from 1024 to {SPM_CACHE_MAX_SLOTS}")
    if core.pool.cache_ready or core.pool.active:
        raise RuntimeError("limit_cache must come before the first encode")
    core.pool.cache_slots = slots
    core.pool.cache_bytes = data_bytes


def isolated_bytes(SpmCore core not None):
    """The bytes that chunks are cut on both sides of: never merged with a
    neighbour in this vocabulary (derive_chunk_rules, core/tables.pyx)."""
    cdef uint64_t isolated = core.t.rules.isolated
    return bytes([c for c in range(0x40) if (isolated >> c) & 1])


def chunk_bounds(SpmCore core not None, str text, bint prefix):
    """Where the chunks of the segment `text` end (byte offsets in its
    UTF-8; the last is its length) as the kernel cuts it while encoding it
    (with the dummy prefix when `prefix`): [len] when it merges it whole."""
    cdef Py_ssize_t n
    cdef const char *src = PyUnicode_AsUTF8AndSize(text, &n)
    cdef Workspace *w = core.acquire()
    cdef size_t i
    cdef int rc
    try:
        w.want_bounds = True
        w.bounds_len = 0
        rc = encode_span(&core.t, w, src, n, prefix)
        check_rc(rc, &core.t, w, text)
        return [w.bounds[i] for i in range(w.bounds_len)]
    finally:
        w.want_bounds = False
        core.release(w)


cdef inline Py_ssize_t _after_char(const char *src, Py_ssize_t p, Py_ssize_t n) noexcept:
    """Where the character at src[p] ends (cut short at n)."""
    p += 1
    while p < n and (<unsigned char>src[p] & 0xC0) == 0x80:
        p += 1
    return p


def fine_cuts(SpmCore core not None, str text not None, Py_ssize_t open_end):
    """The points (byte offsets in the UTF-8 of `text`, taken as one chunk
    whose opening "▁"s end at byte `open_end`) where the chunk is cut
    further, found twice: (fine_cut_at at each character's start, as
    next_fine_cut's table and loop find them), for tests to compare."""
    cdef Py_ssize_t n, p
    cdef const char *src = PyUnicode_AsUTF8AndSize(text, &n)
    cdef list each = [], found = []
    if not core.t.rules.cut_chars:
        raise ValueError("the core does not cut chunks between characters")
    if not 0 <= open_end <= n or (open_end < n and (<unsigned char>src[open_end] & 0xC0) == 0x80):
        raise ValueError("open_end must be a character's start in the text")
    p = open_end
    while p < n:
        if fine_cut_at(&core.t, src, 0, open_end, p, n):
            each.append(p)
        p = _after_char(src, p, n)
    p = open_end
    if p < n and not fine_cut_at(&core.t, src, 0, open_end, p, n):
        p = next_fine_cut(&core.t, src, 0, open_end, _after_char(src, p, n), n, n)
    while p < n:
        found.append(p)
        p = next_fine_cut(&core.t, src, 0, open_end, _after_char(src, p, n), n, n)
    return each, found


def str_to_utf8(str text not None, Py_ssize_t start, Py_ssize_t end):
    """The UTF-8 of characters [start, end) of `text` as the core converts
    a str from how CPython stores it (csrc/spm_ucs.h), or -1 - i when
    character i is a surrogate."""
    if not 0 <= start <= end <= len(text):
        raise IndexError((start, end))
    cdef char *out = <char *>malloc(4 * (end - start) + 1)
    if out == NULL:
        raise MemoryError()
    try:
        n = spm_ucs_to_utf8(PyUnicode_KIND(text), PyUnicode_DATA(text), start, end, out)
        return out[:n] if n >= 0 else n
    finally:
        free(out)


def keys_equal(bytes a not None, bytes b not None, Py_ssize_t n):
    """Whether a[0:n] == b[0:n] by the chunk cache's key comparison
    (spm_bytes_equal_wide, which reads whole words past n: both are given
    8 more bytes here, which must not change the answer)."""
    if n < 0 or n > len(a) or n > len(b):
        raise ValueError("n must be within both keys")
    cdef bytes pa = a + b"\xa5" * 8, pb = b + b"\x5a" * 8
    return bool(spm_bytes_equal_wide(pa, pb, <size_t>n))
