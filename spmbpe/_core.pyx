# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled SentencePiece-BPE merger and vocabulary table.

`PieceTable` is the vocabulary as a C hash table from piece bytes to id.
`SpmCore` adds the merge ranks and the decode table, and encodes *segments*:
stretches of text between added tokens, each escaped (spaces -> U+2581,
optional dummy prefix) and merged best-scoring pair first over a C binary
heap, with the GIL released.  Policy (added tokens, where the dummy prefix
goes, BOS/EOS) is the Python layer's; this module knows nothing of it.
"""

from array import array

cimport cython
cimport cpython.array as carray

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

from spmbpe._csrc cimport (
    spm_ascii_after_marker,
    spm_bigram,
    spm_fetch_add_u32,
    spm_load_acquire_u32,
    spm_load_u32,
    spm_store_release_u32,
    spm_store_u32,
    spm_sub_release_u32,
    spm_yield,
    spm_cache_clear,
    spm_cache_entry,
    spm_cache_free,
    spm_cache_get,
    spm_cache_ids,
    spm_cache_init,
    spm_cache_put,
    spm_cache_prefetch,
    spm_cache_flush,
    spm_cache_quiesce,
    spm_cache_writer_init,
    spm_cache_table,
    SPM_CACHE_MAX_DATA,
    SPM_CACHE_MAX_SLOTS,
    spm_charpairs_free,
    spm_charpairs_has,
    spm_charpairs_new,
    spm_charpairs_wanted,
    spm_piece_scan,
    spm_ascii_pack,
    spm_ascii_pair_held,
    spm_ascii_scan,
    SPM_ASCII_PAIRS,
    spm_hash_bytes,
    spm_head8,
    spm_utf8_len as utf8_len,
    SPM_PAIRS_EMPTY,
    spm_pair_slot,
    spm_pairs_find,
    spm_pairs_free,
    spm_pairs_new,
    spm_heap_free,
    spm_heap_init,
    spm_heap_pop,
    spm_heap_push,
    spm_heap_reserve,
    spm_vocab_find,
    spm_vocab_free,
    spm_vocab_mark,
    spm_vocab_mergeable,
    spm_vocab_new,
    spm_vocab_slot,
    SPM_ID_MASK,
)

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL
    void PyObject_GC_UnTrack(void *op)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)

from spmbpe.errors import InvalidTokenIdError

# The longest segment (in UTF-8 bytes) one merge can take: every symbol index
# and byte offset of the escaped text (up to 3 bytes per input byte, plus the
# prefix) must fit in an int32.
cdef Py_ssize_t MAX_SEGMENT_BYTES_C = (INT32_MAX - 3) // 3
# Idle workspaces a core keeps (one per thread that encodes at a time).
cdef int _POOL_SIZE = 16
# Single texts shorter than this are merged without releasing the GIL (the
# release and re-acquisition cost more); batches release it once per chunk.
cdef Py_ssize_t _NOGIL_BYTES = 2048
# A pooled workspace keeps buffers up to this size (bytes of escaped text, or
# ids) between calls; larger ones are freed when it goes back to the pool.
cdef size_t _KEEP_TEXT_BYTES = 1 << 22
MAX_SEGMENT_BYTES = MAX_SEGMENT_BYTES_C
# Chunks up to this many bytes merge by a linear scan over at most that many
# symbols (merge_small); longer ones over the heap.
cdef enum:
    SMALL_BYTES = 48
# The escaped text buffer has this much slack past its end, so lookups may
# read 8 bytes at any position (spm_vocab_mergeable reads 8 at a time).
cdef enum:
    TEXT_SLACK = 8
# Entries of a workspace's PairMemo (a power of two).
cdef enum:
    MEMO_SIZE = 4096
    CHAR_MEMO_SIZE = 4096

cdef enum:
    OK = 0
    ERR_NOMEM = -1
    ERR_UNENCODABLE = -2
    ERR_TOO_LONG = -3

# U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's whitespace marker, in UTF-8.
cdef const char *MARKER = b"\xe2\x96\x81"


# ---------------------------------------------------------------- workspace

cdef inline void ws_init(Workspace *w) noexcept nogil:
    w.text = NULL
    w.text_cap = 0
    w.symbols = NULL
    w.symbols_cap = 0
    spm_heap_init(&w.heap)
    w.ids = NULL
    w.ids_len = 0
    w.ids_cap = 0
    w.bad_start = -1
    w.bad_len = 0
    w.split_left = NULL
    w.split_touched = NULL
    w.split_touched_len = 0
    w.split_touched_cap = 0
    w.spans = NULL
    w.spans_cap = 0
    w.want_spans = False
    w.bounds = NULL
    w.bounds_cap = 0
    w.ready_bounds = -1
    w.alpha = 0.0
    w.rng = 0
    w.memo = NULL
    w.char_ids = NULL
    spm_cache_writer_init(&w.cache_writer)


cdef inline uint64_t splitmix64(uint64_t *state) noexcept nogil:
    """The next value of a splitmix64 generator (Steele, Lea, Flood 2014)."""
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline bint skip_merge(Workspace *w) noexcept nogil:
    """BPE-dropout: whether to skip the merge about to be made (probability
    w.alpha), as sentencepiece's bpe_model.cc does inside its merge loop."""
    if w.alpha <= 0.0:
        return False
    return (splitmix64(&w.rng) >> 11) * (1.0 / 9007199254740992.0) < w.alpha


cdef inline void ws_free(Workspace *w) noexcept nogil:
    free(w.text)
    free(w.symbols)
    spm_heap_free(&w.heap)
    free(w.ids)
    free(w.split_left)
    free(w.split_touched)
    free(w.spans)
    free(w.bounds)
    free(w.memo)
    free(w.char_ids)
    ws_init(w)


cdef inline int grow_int32(int32_t **buf, size_t *cap, size_t need) noexcept nogil:
    """Makes an int32 buffer hold at least `need` items (doubling)."""
    cdef size_t size
    cdef int32_t *grown
    if need <= cap[0]:
        return OK
    size = cap[0] * 2 if cap[0] else 256
    while size < need:
        size *= 2
    grown = <int32_t *>realloc(buf[0], size * sizeof(int32_t))
    if grown == NULL:
        return ERR_NOMEM
    buf[0] = grown
    cap[0] = size
    return OK


cdef inline int ws_push_id(Workspace *w, int32_t token_id) noexcept nogil:
    if grow_int32(&w.ids, &w.ids_cap, w.ids_len + 1) != OK:
        return ERR_NOMEM
    w.ids[w.ids_len] = token_id
    w.ids_len += 1
    return OK


cdef inline int ws_reserve(Workspace *w, size_t text_bytes) noexcept nogil:
    """Room for an escaped segment of text_bytes and its symbols."""
    cdef char *text
    cdef Symbol *symbols
    if text_bytes > w.text_cap:
        text = <char *>realloc(w.text, text_bytes + TEXT_SLACK)
        if text == NULL:
            return ERR_NOMEM
        memset(text + text_bytes, 0, TEXT_SLACK)
        w.text = text
        w.text_cap = text_bytes
    if text_bytes > w.symbols_cap:
        symbols = <Symbol *>realloc(w.symbols, text_bytes * sizeof(Symbol))
        if symbols == NULL:
            return ERR_NOMEM
        w.symbols = symbols
        w.symbols_cap = text_bytes
    return OK


cdef inline uint64_t *char_memo_entry(Workspace *w, const char *s, int32_t n, uint64_t *key) noexcept nogil:
    """The entry of w's character memo (allocated) for the character s[0:n]
    of at most 4 bytes, not NUL (so that its key is never 0, the empty
    entry), with its key in key[0].  The entry holds key << 32 | id (-1:
    not in the vocabulary) when it holds this character."""
    key[0] = spm_head8(s, <size_t>n, 1)
    return &w.char_ids[((key[0] * <uint64_t>0x9E3779B97F4A7C15) >> 40) & (CHAR_MEMO_SIZE - 1)]


cdef inline bint cacheable_chunk(const char *text, int32_t begin, int32_t end) noexcept nogil:
    """Whether the chunk text[begin:end] goes through the cache: not one
    character (looked up faster than the cache is) and not too long."""
    return end - begin <= 256 and utf8_len(<uint8_t>text[begin]) < end - begin


cdef inline bint isolated_byte(uint64_t isolated, uint8_t u) noexcept nogil:
    """Whether byte u is one of SpmCore.isolated (bit u, below 0x40)."""
    return u < 0x40 and (isolated >> u) & 1


# Each ASCII byte as escaped text, padded to four bytes, and its length:
# the space is "▁".
cdef char ESCAPED_ASCII[128][4]
cdef uint8_t ESCAPED_LEN[128]
memset(ESCAPED_ASCII, 0, sizeof(ESCAPED_ASCII))
for _c in range(0x80):
    ESCAPED_ASCII[_c][0] = <char>_c
    ESCAPED_LEN[_c] = 1
memcpy(ESCAPED_ASCII[0x20], MARKER, 3)
ESCAPED_LEN[0x20] = 3
del _c


cdef Py_ssize_t escape_spaces(const char *src, Py_ssize_t i, Py_ssize_t n, char *text,
                              Py_ssize_t m) noexcept nogil:
    """Writes src[i:n] to text[m:] with spaces as "▁"; returns the new m.
    Eight bytes at once when none is a space."""
    cdef Py_ssize_t stop
    cdef uint64_t word, spaces
    cdef char c
    while i < n:
        stop = n
        if i + 8 <= n:
            memcpy(&word, src + i, 8)
            spaces = word ^ <uint64_t>0x2020202020202020
            spaces = (spaces - <uint64_t>0x0101010101010101) & ~spaces & <uint64_t>0x8080808080808080
            if not spaces:
                memcpy(text + m, src + i, 8)
                m += 8
                i += 8
                continue
            stop = i + 8
        while i < stop:
            c = src[i]
            if c == c' ':
                memcpy(text + m, MARKER, 3)
                m += 3
            else:
                text[m] = c
                m += 1
            i += 1
    return m


cdef inline int32_t add_symbol(Symbol *sym, int32_t count, int32_t start,
                               int32_t n) noexcept nogil:
    """Appends a symbol linked after the previous one; `start` is its byte
    offset (or, in the ranked-merge path, its id)."""
    sym[count].prev = count - 1
    sym[count].next = count + 1
    sym[count].start = start
    sym[count].n = n
    return count + 1


cdef inline int hex_value(char c) noexcept nogil:
    if c'0' <= c <= c'9':
        return c - c'0'
    if c'A' <= c <= c'F':
        return c - c'A' + 10
    if c'a' <= c <= c'f':
        return c - c'a' + 10
    return -1


# ---------------------------------------------------------------- pieces

cdef class PieceTable:
    """The vocabulary: piece i is ``arena[offsets[i]:offsets[i+1]]`` (UTF-8),
    looked up through a C hash table (the lowest id wins a duplicate)."""

    def __cinit__(self):
        self.vocab = NULL
        self.offsets = NULL
        self.size = 0
        self.utf8_bad = -2

    def __init__(self, bytes arena, offsets, *, bint utf8_checked=False):
        """Piece i is arena[offsets[i]:offsets[i + 1]].  `utf8_checked`: the
        caller has found every piece valid UTF-8 (the .model reader does, to
        name a bad piece's file offset), so first_invalid_utf8 is -1."""
        if self.vocab != NULL:
            # Cores built on this table hold its C structures: it never changes.
            raise TypeError("a PieceTable is immutable: it cannot be initialized twice")
        cdef const int64_t[::1] view = offsets
        cdef Py_ssize_t n = view.shape[0] - 1
        cdef Py_ssize_t i
        if n < 1:
            raise ValueError("a vocabulary needs at least one piece")
        if n > SPM_ID_MASK:
            # The table keeps a flag beside each id: ids take 30 bits.
            raise ValueError(f"too many pieces ({n}); at most {SPM_ID_MASK}")
        if view[0] != 0 or view[n] != PyBytes_GET_SIZE(arena):
            raise ValueError("piece offsets do not span the arena")
        if view[n] > INT32_MAX:
            raise ValueError(f"the pieces take {view[n]} bytes; at most {INT32_MAX}")
        self.first_empty = -1
        if utf8_checked:
            self.utf8_bad = -1
        for i in range(n):
            if view[i + 1] < view[i]:
                raise ValueError(f"piece offsets decrease at piece {i}")
            if view[i + 1] == view[i] and self.first_empty < 0:
                self.first_empty = <int32_t>i
        self.offsets = <int32_t *>malloc((n + 1) * sizeof(int32_t))
        if self.offsets == NULL:
            raise MemoryError("cannot allocate the vocabulary table")
        for i in range(n + 1):
            self.offsets[i] = <int32_t>view[i]
        self.arena = arena
        self.size = <int32_t>n
        self.vocab = spm_vocab_new(self.size, PyBytes_AS_STRING(arena), self.offsets)
        if self.vocab == NULL:
            raise MemoryError("cannot allocate the vocabulary table")

    @staticmethod
    def from_pieces(list pieces):
        """A table from a list of bytes, one per id."""
        return PieceTable(b"".join(pieces), _offsets_of(pieces))

    def __dealloc__(self):
        if self.vocab != NULL:
            spm_vocab_free(self.vocab)
            self.vocab = NULL
        free(self.offsets)
        self.offsets = NULL

    def __len__(self):
        return self.size

    def find(self, bytes piece):
        """The lowest id of a piece given as UTF-8 bytes, or -1."""
        return spm_vocab_find(self.vocab, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))

    def piece_bytes(self, Py_ssize_t i):
        """The UTF-8 bytes of piece i (0 <= i < len(self))."""
        if not 0 <= i < self.size:
            raise IndexError(i)
        return self.arena[self.offsets[i]:self.offsets[i + 1]]

    def piece(self, Py_ssize_t i):
        """The text of piece i."""
        return self.piece_bytes(i).decode("utf-8")

    def pieces(self):
        """Every piece's text, by id."""
        cdef Py_ssize_t i
        return [self.arena[self.offsets[i]:self.offsets[i + 1]].decode("utf-8")
                for i in range(self.size)]

    def lengths(self):
        """Byte length of each piece, as array('q')."""
        cdef Py_ssize_t i
        out = array("q", bytes(8 * self.size))
        cdef int64_t[::1] view = out
        for i in range(self.size):
            view[i] = self.offsets[i + 1] - self.offsets[i]
        return out

    @property
    def first_duplicate(self):
        """The first id whose piece a lower id already has, or -1."""
        return self.vocab.first_duplicate

    def first_invalid_utf8(self):
        """The first id whose piece is not valid UTF-8, or -1."""
        # Loaders check it to report a file offset; the tokenizer checks
        # again for tables built by hand.  Pieces never change: once will do.
        cdef Py_ssize_t i
        if self.utf8_bad == -2:
            self.utf8_bad = -1
            for i in range(self.size):
                if not utf8_valid(<const uint8_t *>PyBytes_AS_STRING(self.arena) + self.offsets[i],
                                  self.offsets[i + 1] - self.offsets[i],
                                  self.offsets[i + 1] + 8 <= self.offsets[self.size]):
                    self.utf8_bad = i
                    break
        return self.utf8_bad


def first_invalid_utf8_piece(const uint8_t[::1] arena, const int64_t[::1] offsets):
    """The first i whose piece arena[offsets[i]:offsets[i + 1]] is not valid
    UTF-8, or -1 (offsets ascending, within the arena)."""
    cdef Py_ssize_t i
    cdef const uint8_t *base = &arena[0] if arena.shape[0] else <const uint8_t *>b""
    for i in range(offsets.shape[0] - 1):
        if not utf8_valid(base + offsets[i], offsets[i + 1] - offsets[i],
                          offsets[i + 1] + 8 <= arena.shape[0]):
            return i
    return -1


cdef bint utf8_valid(const uint8_t *s, Py_ssize_t n, bint padded) noexcept nogil:
    """Strict UTF-8 (no overlong forms, surrogates or code points past
    U+10FFFF), as Python's decoder accepts it.  `padded`: 8 bytes may be
    read past s + n (spm_head8)."""
    cdef Py_ssize_t i = 0
    cdef uint8_t c, c1
    if spm_ascii_after_marker(<const char *>s, <size_t>n, padded):
        return True
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif 0xE0 <= c <= 0xEF:
            if i + 2 >= n:
                return False
            c1 = s[i + 1]
            if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
                return False
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 > 0x9F):
                return False
            i += 3
        elif 0xF0 <= c <= 0xF4:
            if i + 3 >= n:
                return False
            c1 = s[i + 1]
            if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80 or (s[i + 3] & 0xC0) != 0x80:
                return False
            if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 > 0x8F):
                return False
            i += 4
        else:
            return False
    return True


def split_length_prefixed(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t count,
                          bint big_endian):
    """Reads `count` strings stored as (uint64 length, bytes) from buf[pos:].

    Returns (arena, offsets, end): the strings back to back, count + 1
    offsets into them (array('q')), and the position after the last one;
    None when a length runs past the buffer (the caller reports it).
    """
    cdef Py_ssize_t size = buf.shape[0]
    cdef Py_ssize_t p = pos
    cdef Py_ssize_t i, j
    cdef uint64_t n
    cdef int64_t total = 0
    out = array("q", bytes(8 * (count + 1)))
    cdef int64_t[::1] offsets = out
    # First pass: lengths and bounds.
    for i in range(count):
        if size - p < 8:
            return None
        n = 0
        if big_endian:
            for j in range(8):
                n = (n << 8) | buf[p + j]
        else:
            for j in range(7, -1, -1):
                n = (n << 8) | buf[p + j]
        p += 8
        if n > <uint64_t>(size - p):
            return None
        offsets[i] = total
        total += <int64_t>n
        p += <Py_ssize_t>n
    offsets[count] = total
    # Second pass: copy the bytes.
    cdef bytes arena = PyBytes_FromStringAndSize(NULL, total)
    cdef char *dst = PyBytes_AS_STRING(arena)
    p = pos
    for i in range(count):
        n = <uint64_t>(offsets[i + 1] - offsets[i])
        p += 8
        if n:
            memcpy(dst + offsets[i], &buf[p], n)
        p += <Py_ssize_t>n
    return arena, out, p


def batch_slices(list texts, Py_ssize_t parts, Py_ssize_t min_share, Py_ssize_t max_items):
    """encode_batch's split of `texts` into consecutive groups of about
    total / parts characters each (at least min_share, at most max_items
    texts): (share, longest, stops), stops[k] being where group k ends and
    longest the length of the longest text.  A C loop: the Python one took
    a millisecond per 10,000 texts while the threads waited."""
    cdef Py_ssize_t n = len(texts), i, total = 0, longest = 0, length, share, filled = 0, start = 0
    cdef list stops = []
    for i in range(n):
        length = len(<object>texts[i])
        total += length
        if length > longest:
            longest = length
    share = max(min_share, -(-total // max(parts, 1)))
    for i in range(n):
        filled += len(<object>texts[i])
        if filled >= share or i + 1 - start >= max_items:
            stops.append(i + 1)
            start = i + 1
            filled = 0
    if start < n:
        stops.append(n)
    return share, longest, stops


cdef carray.array _INT64_ARRAY = array("q")
cdef carray.array _FLOAT_ARRAY = array("f")


def scan_model_pieces(const uint8_t[::1] buf, Py_ssize_t pos, int64_t base):
    """Reads consecutive ModelProto `pieces` entries in the common layout from
    buf[pos:]: key 0x0A, one-byte length, then the piece string (0x0A, one-byte
    length), the score (0x15, a
    float32) and optionally the type (0x18, 1..6), in that order -- what every
    sentencepiece serializer writes.  Stops at the first entry in any other
    shape, which the caller parses with the general reader.

    Returns (arena, offsets, scores, types, end, bad): the piece bytes back
    to back; an array('q') of count + 1 offsets, `base` then each piece's
    end plus `base`; an array('f') of the scores as the file's 4
    little-endian bytes (the caller swaps them on a big-endian machine); one
    type byte per piece; where the scan stopped; and the index in this run
    of the first piece that is not valid UTF-8, or -1.  This is the `.model`
    load's hot loop (32k-256k pieces): the arrays are filled in place and
    each piece is checked while it is in the cache, so that the reader
    copies nothing again.
    """
    cdef Py_ssize_t n = buf.shape[0]
    cdef Py_ssize_t p = pos
    cdef Py_ssize_t count = 0
    cdef int64_t total = 0
    cdef Py_ssize_t ln, sl, ps, pe, end
    cdef uint8_t t
    # First pass: how many entries take this shape, and their total length.
    while p + 4 <= n:
        ln = buf[p + 1]
        sl = buf[p + 3]
        ps = p + 4
        pe = ps + sl
        end = p + 2 + ln
        if (buf[p] != 0x0A or buf[p + 2] != 0x0A or ln >= 0x80 or sl >= 0x80
                or end > n or pe >= end or buf[pe] != 0x15):
            break
        if end == pe + 7:
            t = buf[pe + 5 + 1]
            if buf[pe + 5] != 0x18 or t < 1 or t > 6:
                break
        elif end != pe + 5:
            break
        count += 1
        total += sl
        p = end
    cdef bytes arena = PyBytes_FromStringAndSize(NULL, total)
    # (Filled below: no zeroing pass, so the load touches each page once.)
    offsets = carray.clone(_INT64_ARRAY, count + 1, False)
    scores = carray.clone(_FLOAT_ARRAY, count, False)
    cdef bytes types = PyBytes_FromStringAndSize(NULL, count)
    cdef int64_t[::1] o = offsets
    cdef float[::1] sc = scores
    cdef char *a = PyBytes_AS_STRING(arena)
    cdef char *ty = PyBytes_AS_STRING(types)
    cdef Py_ssize_t i, bad = -1
    cdef int64_t at = 0
    o[0] = base
    p = pos
    for i in range(count):
        ln = buf[p + 1]
        sl = buf[p + 3]
        ps = p + 4
        pe = ps + sl
        end = p + 2 + ln
        if sl:
            memcpy(a + at, &buf[ps], sl)
            if bad < 0 and not utf8_valid(&buf[ps], sl, ps + sl + 8 <= n):
                bad = i
        at += sl
        o[i + 1] = base + at
        memcpy(&sc[i], &buf[pe + 1], 4)
        ty[i] = <char>(buf[pe + 6] if end == pe + 7 else 1)
        p = end
    return arena, offsets, scores, types, p, bad


# ---------------------------------------------------------------- the core

# Token types (spmbpe.TokenType), as stored in SpmCore's types buffer.
cdef enum:
    TYPE_NORMAL = 1
    TYPE_UNKNOWN = 2
    TYPE_CONTROL = 3
    TYPE_USER_DEFINED = 4
    TYPE_UNUSED = 5
    TYPE_BYTE = 6


cdef class SpmCore:
    """Merge ranks, flags and decode table over a PieceTable.

    SpmCore(table, scores, flags, types, unk_id, collapse_unknown)

    scores: float32 buffer (array('f')), the merge rank of each piece.
    flags: uint8 buffer, FLAG_* bits per piece.
    types: uint8 buffer, the TokenType of each piece (decides decoding).
    unk_id: the id unknown characters become without byte fallback, or -1.
    collapse_unknown: a run of unknown characters gives one unk_id.
    byte_fallback: unknown characters become their UTF-8 bytes as
    ``<0xNN>`` pieces, when all 256 exist.
    """

    def __cinit__(self):
        self.vocab = NULL
        self.pairs = NULL
        self.char_pairs = NULL
        self.own_vocab = False
        self.small_merges = False
        self.id_objects = NULL
        self.max_segment = MAX_SEGMENT_BYTES_C
        self.n_pieces = 0
        self.unk_id = -1
        self.byte_fallback = False
        self.collapse_unknown = False
        self.fuse_unknown = False
        self.ignore_merges = False
        self.chunked = False
        self.escape_spaces = True
        self.n_violations = 0
        self.pool = NULL
        self.pool_len = 0
        self.active = 0
        self.cache_ready = False
        self.clear_pending = False
        self.cache_slots = SPM_CACHE_MAX_SLOTS
        self.cache_bytes = SPM_CACHE_MAX_DATA

    def __init__(self, PieceTable table not None, scores, flags, types,
                 int unk_id, bint collapse_unknown, bint byte_fallback=True):
        cdef Py_ssize_t n = table.size
        cdef int b
        cdef int32_t found
        cdef const uint8_t[::1] kinds = types
        if len(scores) != n or len(flags) != n or kinds.shape[0] != n:
            raise ValueError("scores, flags and types must have one entry per piece")
        if unk_id >= n:
            raise ValueError(f"unk_id {unk_id} is not a piece id")
        self.table = table
        self.vocab = table.vocab
        self.scores = scores
        self.flags = flags
        self.n_pieces = <int32_t>n
        self.unk_id = unk_id if unk_id >= 0 else -1
        self.collapse_unknown = collapse_unknown
        cdef const uint8_t[::1] flag_view = flags
        self.any_resplit = False
        for b in range(n):
            if flag_view[b] & FLAG_RESPLIT:
                self.any_resplit = True
                break

        # Byte fallback is all or nothing: a partial <0xNN> set cannot encode
        # every character, so without all 256 unknown characters become <unk>.
        self.byte_fallback = byte_fallback
        for b in range(256 if byte_fallback else 0):
            name = f"<0x{b:02X}>".encode("ascii")
            found = spm_vocab_find(self.vocab, PyBytes_AS_STRING(name), 6)
            if found < 0:
                self.byte_fallback = False
                break
            self.byte_ids[b] = found

        self.types = types
        buildable = bytearray(n)
        cdef uint8_t[::1] build_view = buildable
        for b in range(n):
            build_view[b] = flag_view[b] & FLAG_MERGEABLE
        self._find_violations(bytes(buildable))
        self._mark_mergeable(build_view)
        if not self.any_resplit:
            # The table's slots now say what may merge; the flags are read
            # only to resplit UNUSED pieces.
            self.flags = _NO_FLAGS

    def _mark_mergeable(self, uint8_t[::1] selected):
        """Marks in the vocabulary table every piece a merge may build (the
        lowest id of a text decides, as the table resolves it) with its
        score, so that one slot answers the merge loop.  A table another
        core has marked is copied.  Short chunks then merge by linear scan
        (merge_small), which picks the same pair as the heap: best score,
        leftmost on ties.  Not for UNUSED pieces to resplit (their halves
        depend on the heap's queue order) nor NaN scores (which order
        differently in the heap)."""
        cdef Py_ssize_t i, n = self.n_pieces
        cdef const int32_t *offsets = self.table.offsets
        cdef const char *arena = PyBytes_AS_STRING(self.table.arena)
        cdef bint any_nan = False
        for i in range(n):
            if self.scores[i] != self.scores[i]:
                any_nan = True
                break
        if self.vocab.marked:
            self.vocab = spm_vocab_new(<int32_t>n, arena, offsets)
            if self.vocab == NULL:
                self.vocab = self.table.vocab
                raise MemoryError("cannot allocate the vocabulary table")
            self.own_vocab = True
        spm_vocab_mark(self.vocab, &self.scores[0], &selected[0])
        self.small_merges = not self.any_resplit and not any_nan

    cdef list id_list(self, const int32_t *ids, size_t n):
        """A list of the ids as Python ints.  Each id's int object is made
        once and shared (allocating a fresh int per token is most of the
        cost of returning a list); the GIL is held."""
        cdef list out = PyList_New(n)
        cdef size_t i
        cdef int32_t token_id
        cdef PyObject *item
        cdef object obj
        if self.id_objects == NULL:
            self.id_objects = <PyObject **>calloc(self.n_pieces, sizeof(PyObject *))
            if self.id_objects == NULL:
                raise MemoryError()
        for i in range(n):
            token_id = ids[i]
            item = self.id_objects[token_id]
            if item == NULL:
                obj = token_id
                item = <PyObject *>obj
                Py_INCREF(obj)
                self.id_objects[token_id] = item
            Py_INCREF(<object>item)
            PyList_SET_ITEM(out, i, <object>item)
        # A list of ints cannot be part of a reference cycle, so the cyclic
        # GC need not visit it (msgspec untracks its decoded containers of
        # atoms the same way): per-line encoding makes thousands of these
        # lists, and traversing them was a fifth of the time.  Lists the
        # caller later fills with containers are only at risk of an
        # uncollected cycle, never of a wrong free.
        PyObject_GC_UnTrack(<void *>out)
        return out

    def __dealloc__(self):
        cdef int32_t i
        if self.id_objects != NULL:
            for i in range(self.n_pieces):
                Py_XDECREF(self.id_objects[i])
            free(self.id_objects)
            self.id_objects = NULL
        # The hash table belongs to self.table, which frees it, unless this
        # core had to copy it.
        if self.own_vocab and self.vocab != NULL:
            spm_vocab_free(self.vocab)
        self.vocab = NULL
        if self.pairs != NULL:
            spm_pairs_free(self.pairs)
            self.pairs = NULL
        spm_charpairs_free(self.char_pairs)
        self.char_pairs = NULL
        if self.pool != NULL:
            while self.pool_len:
                self.pool_len -= 1
                ws_free(self.pool[self.pool_len])
                free(self.pool[self.pool_len])
            free(self.pool)
            self.pool = NULL
        if self.cache_ready:
            spm_cache_free(&self.cache)
            self.cache_ready = False

    cdef Workspace *acquire(self) except NULL:
        """An idle workspace, or a new one.  Called with the GIL held, which
        makes the pool and the count of active workspaces thread-safe: when
        none is active, no thread reads the shared cache, so this is where
        it frees what growing retired, and empties itself when full."""
        cdef Workspace *w
        if self.active == 0 and self.chunked:
            if not self.cache_ready:
                # (Without memory for it, chunks are merged every time.)
                self.cache_ready = spm_cache_init(&self.cache, self.cache_slots, self.cache_bytes) == 0
            elif self.clear_pending:
                spm_cache_clear(&self.cache)
            else:
                spm_cache_quiesce(&self.cache)
            self.clear_pending = False
        if self.pool_len:
            self.pool_len -= 1
            w = self.pool[self.pool_len]
        else:
            w = <Workspace *>malloc(sizeof(Workspace))
            if w == NULL:
                raise MemoryError()
            ws_init(w)
        w.ids_len = 0
        w.want_spans = False
        w.alpha = 0.0
        self.active += 1
        return w

    cdef void release(self, Workspace *w):
        """Back to the pool.  Buffers grown for one very large text are freed
        first (a pooled workspace would otherwise keep ~50 bytes per byte of
        that text for the tokenizer's lifetime)."""
        self.active -= 1
        if self.cache_ready:
            spm_cache_flush(&self.cache, &w.cache_writer)
        if w.text_cap > _KEEP_TEXT_BYTES:
            free(w.text)
            free(w.symbols)
            spm_heap_free(&w.heap)
            free(w.bounds)
            w.text = NULL
            w.text_cap = 0
            w.symbols = NULL
            w.symbols_cap = 0
            w.bounds = NULL
            w.bounds_cap = 0
        if w.ids_cap > _KEEP_TEXT_BYTES:
            free(w.ids)
            free(w.spans)
            w.ids = NULL
            w.ids_cap = 0
            w.spans = NULL
            w.spans_cap = 0
        if self.pool == NULL:
            self.pool = <Workspace **>calloc(_POOL_SIZE, sizeof(Workspace *))
        if self.pool != NULL and self.pool_len < _POOL_SIZE:
            self.pool[self.pool_len] = w
            self.pool_len += 1
        else:
            ws_free(w)
            free(w)

    def set_escape_spaces(self, bint escape):
        """Whether segments have their spaces turned into "▁" (sentencepiece's
        escape_whitespaces; text from its normalizer is already escaped)."""
        self.escape_spaces = escape

    def disable_chunking(self):
        """Merges whole segments from now on (to check that chunking and
        caching change no id)."""
        self.chunked = False

    def limit_segment_bytes(self, Py_ssize_t limit):
        """Lowers the longest segment this core takes (MAX_SEGMENT_BYTES) to
        `limit`, so that tests can reach the limit without a 700 MB text."""
        if not 0 <= limit <= MAX_SEGMENT_BYTES_C:
            raise ValueError(f"limit must be from 0 to {MAX_SEGMENT_BYTES_C}")
        self.max_segment = limit

    def disable_small_merges(self):
        """Merges every segment or chunk over the heap from now on (to check
        that merge_small's linear scan changes no id)."""
        self.small_merges = False

    def clear_cache(self):
        """Drops every cached chunk: now when no thread is encoding, else
        when the last one is done (they may be reading the cache)."""
        if self.active == 0 and self.cache_ready:
            spm_cache_clear(&self.cache)
        else:
            self.clear_pending = True

    @property
    def isolated_bytes(self):
        """The bytes that chunks are cut on both sides of: never merged with
        a neighbour in this vocabulary (see _find_violations)."""
        return bytes([c for c in range(0x40) if (self.isolated >> c) & 1])

    def cache_info(self):
        """(table slots, chunks cached, bytes of entries, whether inserts have
        stopped because it is full) of the chunk cache, all 0 before the
        first chunked encode; exact only when no thread is encoding."""
        cdef const spm_cache_table *t
        if not self.cache_ready:
            return 0, 0, 0, False
        t = self.cache.table
        return t.mask + 1, t.used, min(self.cache.data_len, self.cache.data_cap), bool(self.cache.full)

    def limit_cache(self, uint32_t slots, size_t data_bytes):
        """Bounds the chunk cache to `slots` table slots (a power of two,
        1024 or more; at most half are used) and `data_bytes` of entries, so
        that tests can fill it.  Only before the first encode."""
        if slots < 1024 or slots & (slots - 1) or slots > SPM_CACHE_MAX_SLOTS:
            raise ValueError(f"slots must be a power of two from 1024 to {SPM_CACHE_MAX_SLOTS}")
        if self.cache_ready or self.active:
            raise RuntimeError("limit_cache must come before the first encode")
        self.cache_slots = slots
        self.cache_bytes = data_bytes

    def _find_violations(self, const uint8_t[::1] buildable, const uint8_t[::1] sides=None):
        """Chunking: merges never cross the boundary before a "▁" that
        follows other text unless a piece the merger may build contains
        "x▁" (x not "▁").  Such pieces are kept (up to 64 occurrences) so
        the boundaries they could cover are not used; with more, or with
        UNUSED pieces to resplit (sentencepiece resplits by the last pair
        queued anywhere in the text), or without a "▁" piece, the core
        merges whole segments.

        Chunks are also cut between two other characters that no buildable
        piece holds side by side (spm_charpairs.h; spm_ascii_scan for two
        ASCII characters): Chinese and Japanese have no spaces, and a word
        beside punctuation is then the same chunk whatever the punctuation,
        so fewer distinct chunks are merged.  And on both sides of a byte
        below 0x40 that is never merged with a neighbour (digits and
        newlines in Llama's vocabularies): no buildable piece of two or more
        bytes holds it; with tokenizers' ranked merges (`sides`: 1 for each
        id on either side of a rule), the id its character becomes is in no
        rule.  Neither kind of cut when a run of unknown characters becomes
        one id, which a cut would split."""
        cdef const char *arena = PyBytes_AS_STRING(self.table.arena)
        cdef const int32_t *offsets = self.table.offsets
        cdef Py_ssize_t i
        cdef int64_t k, crossing, total
        cdef int64_t at[65]
        cdef list found = []
        cdef spm_charpairs *pairs = NULL
        cdef uint8_t *seen = NULL
        cdef uint64_t low_bytes = 0   # bytes below 0x40 held by pieces of 2+ bytes
        self.chunked = False
        self.cut_chars = False
        self.isolated = 0
        memset(self.ascii_held, 0, sizeof(self.ascii_held))
        self.n_violations = 0
        spm_charpairs_free(self.char_pairs)
        self.char_pairs = NULL
        if self.any_resplit or self.ignore_merges or spm_vocab_find(self.vocab, MARKER, 3) < 0:
            return
        if self.byte_fallback or not (self.collapse_unknown or self.fuse_unknown):
            pairs = spm_charpairs_new()
            seen = <uint8_t *>calloc(SPM_ASCII_PAIRS + 1, 1)
            if pairs == NULL or seen == NULL:
                spm_charpairs_free(pairs)
                free(seen)
                raise MemoryError("cannot allocate the character pairs")
        for i in range(self.n_pieces):
            if not buildable[i]:
                continue
            crossing = spm_piece_scan(pairs, arena, offsets[self.n_pieces], offsets[i], offsets[i + 1],
                                      at, 65)
            if crossing < 0:
                spm_charpairs_free(pairs)
                free(seen)
                raise MemoryError("cannot allocate the character pairs")
            if len(found) + crossing > 64:
                spm_charpairs_free(pairs)
                free(seen)
                return
            for k in range(crossing):
                found.append((i, at[k]))
            if seen != NULL and offsets[i + 1] - offsets[i] >= 2:
                low_bytes |= spm_ascii_scan(seen, arena, offsets[i], offsets[i + 1])
        if seen != NULL:
            self._mark_ascii(seen, low_bytes, sides)
            spm_ascii_pack(self.ascii_held, seen)
            free(seen)
        pieces = []
        total = 0
        for i, (token_id, k) in enumerate(found):
            piece = self.table.piece_bytes(token_id)
            self.violation[i][0] = total
            self.violation[i][1] = len(piece)
            self.violation[i][2] = k
            pieces.append(piece)
            total += len(piece)
        self.violators = b"".join(pieces)
        self.violator_bytes = PyBytes_AS_STRING(self.violators)
        self.n_violations = len(found)
        self.chunked = True
        self.char_pairs = pairs
        self.cut_chars = pairs != NULL
        self._build_ascii_cuts()

    cdef void _mark_ascii(self, uint8_t *seen, uint64_t low_bytes, const uint8_t[::1] sides):
        """Sets self.isolated from the bytes below 0x40 that buildable pieces
        of two or more bytes hold (`low_bytes`), or, with tokenizers' ranked
        merges, from the ids in a rule (`sides`); and marks in `seen` (see
        spm_ascii_scan) every pair beside a character whose id is not its
        text's, so that no cut is made there."""
        cdef int c, a
        cdef int32_t symbol
        cdef char one
        cdef bint merges
        for c in range(0x80):
            if sides is None:
                # sentencepiece and llama.cpp merge by text.
                merges = c >= 0x40 or (low_bytes >> c) & 1
            else:
                # tokenizers merges ids: the character's own, else its bytes,
                # else the unknown id, else none (it is dropped, and its
                # neighbours meet).  Bytes and the unknown id do not spell
                # the character, so the pairs of texts say nothing of them.
                one = <char>c
                symbol = spm_vocab_find(self.vocab, &one, 1)
                if symbol >= 0:
                    merges = sides[symbol]
                else:
                    symbol = self.byte_ids[c] if self.byte_fallback else self.unk_id
                    merges = symbol < 0 or sides[symbol]
                    if merges:
                        for a in range(0x80):
                            seen[a << 7 | c] = 1
                            seen[c << 7 | a] = 1
            # (The space is "▁" after escaping, chunked by its own rule.)
            if not merges and c < 0x40 and c != 0x20:
                self.isolated |= <uint64_t>1 << c

    def set_ranked_merges(self, left, right, merged, bint fuse_unknown, bint ignore_merges):
        """Switches to HuggingFace tokenizers' BPE: merges ranked by pair
        (rule i joins ids left[i] and right[i] into merged[i], rank i),
        characters looked up one by one before merging (bytes, else a
        (fused) unknown id, else dropped, as tokenizers does)."""
        cdef const int32_t[::1] l = left
        cdef const int32_t[::1] r = right
        cdef const int32_t[::1] m = merged
        cdef Py_ssize_t n = l.shape[0], i
        if r.shape[0] != n or m.shape[0] != n:
            raise ValueError("left, right and merged differ in length")
        if n >= (1 << 24):
            # Ranks travel as float32 scores, exact below 2**24.
            raise ValueError(f"{n} merge rules; at most {(1 << 24) - 1} are supported")
        for i in range(n):
            if not (0 <= l[i] < self.n_pieces and 0 <= r[i] < self.n_pieces and 0 <= m[i] < self.n_pieces):
                raise ValueError(f"merge rule {i} names an id outside the vocabulary")
        if self.pairs != NULL:
            spm_pairs_free(self.pairs)
        self.pairs = spm_pairs_new(n, &l[0] if n else NULL, &r[0] if n else NULL, &m[0] if n else NULL)
        if self.pairs == NULL:
            raise MemoryError("cannot allocate the merge rules")
        self.fuse_unknown = fuse_unknown
        self.ignore_merges = ignore_merges
        # Only merge results can cross a boundary, and only the ids in a
        # rule are ever merged.
        buildable = bytearray(self.n_pieces)
        sides = bytearray(self.n_pieces)
        cdef uint8_t[::1] build_view = buildable
        cdef uint8_t[::1] side_view = sides
        for i in range(n):
            build_view[m[i]] = 1
            side_view[l[i]] = 1
            side_view[r[i]] = 1
        self._find_violations(bytes(buildable), bytes(sides))

    def ranked_merges(self):
        """The merge rules set by set_ranked_merges, as (left, right, merged)
        arrays ('i') in rank order (one rule per pair: the last of a pair
        listed twice, which is the one that applies).  Read back from the C
        table, so that pickling needs no second copy of the merges."""
        left, right, merged = array("i"), array("i"), array("i")
        if self.pairs == NULL:
            return left, right, merged
        cdef uint64_t i
        cdef list rules = []
        for i in range(self.pairs.mask + 1):
            if self.pairs.slots[i].key != SPM_PAIRS_EMPTY:
                rules.append((self.pairs.slots[i].rank, self.pairs.slots[i].key))
        rules.sort()
        cdef int32_t a, b
        for rank, key in rules:
            a = <int32_t>(<uint64_t>key >> 32)
            b = <int32_t>(<uint64_t>key & 0xFFFFFFFF)
            left.append(a)
            right.append(b)
            merged.append(spm_pairs_find(self.pairs, a, b).merged)
        return left, right, merged

    @property
    def vocab_size(self):
        return self.n_pieces

    # ------------------------------------------------------------ encoding

    def encode(self, str text, bint prefix):
        """Ids of one segment: text escaped (with the dummy prefix when
        `prefix`) and merged."""
        return self.encode_text(text, prefix)

    cdef list encode_text(self, str text, bint prefix):
        cdef Py_ssize_t n
        cdef const char *src = PyUnicode_AsUTF8AndSize(text, &n)
        cdef Workspace *w = self.acquire()
        try:
            self._check(self.segment(src, n, prefix, w), w, text)
            return self.id_list(w.ids, w.ids_len)
        finally:
            self.release(w)

    def encode_parts(self, list parts, double alpha=0.0, uint64_t seed=0):
        """Ids of a partitioned text.

        Each part is a token id (emitted as is), a tuple (token_id, start,
        end), or a tuple (text, prefix[, skip[, origin, lead]]): a segment to
        escape and merge, without its first `skip` ids (see
        encode_parts_offsets for origin and lead).  With `alpha` > 0, BPE-
        dropout with that probability, from a generator seeded by `seed`.
        """
        cdef Workspace *w = self.acquire()
        w.alpha = alpha
        w.rng = seed
        try:
            self._encode_parts(parts, w)
            return self.id_list(w.ids, w.ids_len)
        finally:
            self.release(w)

    def encode_parts_offsets(self, list parts):
        """Ids of a partitioned text with the character span of each.

        Parts: (token_id, start, end) for a token matched in the text, or
        (text, prefix, skip, origin, lead) for a segment: `origin` is the
        character offset in the original text of the segment's first
        character that is not one of its `lead` synthetic leading characters
        (a dummy prefix or HF's unk token put in front); those and the core's
        own prefix are zero-width.  A sixth item, a list of the original
        offset of each character of the text (and of its end), replaces
        origin and lead (normalized text).  Returns (ids, starts, ends).
        """
        cdef Workspace *wp = self.acquire()
        cdef Workspace w = wp[0]
        cdef list ids = [], starts = [], ends = []
        cdef object part
        cdef str text
        cdef Py_ssize_t n, i, k, origin, lead, skip, produced
        cdef const char *src
        cdef int rc
        cdef bint prefix
        cdef size_t mark
        cdef int32_t *char_of = NULL
        cdef int32_t s0, e0, c0, c1, pre
        w.want_spans = True
        try:
            for part in parts:
                _check_part(part, True)
                if type((<tuple>part)[0]) is not str:
                    ids.append((<tuple>part)[0])
                    starts.append((<tuple>part)[1])
                    ends.append((<tuple>part)[2])
                    continue
                text, prefix, skip, origin, lead = (<tuple>part)[:5]
                align = (<tuple>part)[5] if len(<tuple>part) > 5 else None
                src = PyUnicode_AsUTF8AndSize(text, &n)
                mark = w.ids_len
                with nogil:
                    rc = self.encode_segment(src, n, prefix, &w)
                self._check(rc, &w, text)
                produced = w.ids_len - mark
                if produced == 0:
                    continue
                # Character index of each escaped byte: the core's prefix is
                # character -1; a space is one character of three bytes.
                free(char_of)
                char_of = <int32_t *>malloc((3 * n + 4) * sizeof(int32_t))
                if char_of == NULL:
                    raise MemoryError()
                pre = 3 if prefix else 0
                for i in range(pre):
                    char_of[i] = -1
                k = -1
                e0 = pre
                for i in range(n):
                    if (<uint8_t>src[i] & 0xC0) != 0x80:
                        k += 1
                    if src[i] == c' ' and self.escape_spaces:
                        char_of[e0] = char_of[e0 + 1] = char_of[e0 + 2] = <int32_t>k
                        e0 += 3
                    else:
                        char_of[e0] = <int32_t>k
                        e0 += 1
                first = mark + (skip if produced >= skip else 0)
                for i in range(first, w.ids_len):
                    s0 = w.spans[2 * i]
                    e0 = w.spans[2 * i + 1]
                    c0 = char_of[s0] if s0 < e0 else (char_of[s0] if s0 < pre + 3 * n else <int32_t>(k + 1))
                    if c0 < 0:
                        c0 = 0
                    c1 = char_of[e0 - 1] + 1 if e0 > s0 else c0
                    ids.append(w.ids[i])
                    if align is not None:
                        starts.append(align[c0])
                        ends.append(align[c1])
                    else:
                        starts.append(origin + max(0, c0 - lead))
                        ends.append(origin + max(0, c1 - lead))
            return ids, starts, ends
        finally:
            free(char_of)
            w.want_spans = False
            wp[0] = w
            self.release(wp)

    def encode_parts_batch(self, list batch, bint flat=False, double alpha=0.0, seeds=None,
                           bint prefix=True):
        """encode_parts over a list of partitioned texts.  An item that is a
        str stands for the plan [(text, prefix)] (nothing for ""): a text with
        nothing to split out or normalize, passed without building a plan.

        The parts are gathered first (UTF-8 pointers into the part strings,
        which `batch` keeps alive), then every text is merged in one stretch
        without the GIL, so threads encoding other batches run meanwhile.
        With `flat`, returns (ids, ends) instead of lists: every id as native
        uint32 in a bytearray, and array('q') of each text's end index —
        no Python int per token.  With `alpha` > 0, BPE-dropout, text t's
        generator seeded by seeds[t] (array('Q')).
        """
        cdef Py_ssize_t n_parts, t
        cdef const uint64_t[::1] seed_view = seeds if seeds is not None else _NO_SEEDS
        cdef Py_ssize_t n_texts = len(batch)
        cdef list out
        cdef BatchPart *items = NULL
        cdef int32_t *counts = NULL
        cdef size_t *ends = NULL
        cdef int rc
        cdef Py_ssize_t failed = -1
        cdef size_t mark
        cdef Workspace *w
        if alpha > 0.0 and seed_view.shape[0] < n_texts:
            raise ValueError("sampling needs one seed per text")
        n_parts = _count_parts(batch)
        items = <BatchPart *>malloc((n_parts + 1) * sizeof(BatchPart))
        counts = <int32_t *>malloc((n_texts + 1) * sizeof(int32_t))
        ends = <size_t *>malloc((n_texts + 1) * sizeof(size_t))
        if items == NULL or counts == NULL or ends == NULL:
            free(items)
            free(counts)
            free(ends)
            raise MemoryError()
        w = self.acquire()
        w.alpha = alpha
        try:
            self.gather(batch, items, counts, prefix)
            with nogil:
                rc = self.encode_items(w, items, counts, n_texts, ends, &failed,
                                       &seed_view[0] if seed_view.shape[0] else NULL)
            if rc != OK:
                self._check(rc, w, _part_text(batch, failed))
            if flat:
                ends_out = array("q", bytes(8 * n_texts))
                for t in range(n_texts):
                    ends_out[t] = ends[t]
                return PyByteArray_FromStringAndSize(<char *>w.ids, w.ids_len * sizeof(int32_t)), ends_out
            out = []
            mark = 0
            for t in range(n_texts):
                out.append(self.id_list(w.ids + mark, ends[t] - mark))
                mark = ends[t]
            return out
        finally:
            free(items)
            free(counts)
            free(ends)
            self.release(w)

    cdef int gather(self, list batch, BatchPart *items, int32_t *counts, bint prefix) except -1:
        """The parts of every text of `batch` (see encode_parts_batch) into
        items (_count_parts(batch) of them) and how many each text has into
        counts: UTF-8 pointers into the part strings, which `batch` keeps
        alive."""
        cdef Py_ssize_t i = 0, t, n
        cdef list parts
        cdef object part, entry
        for t in range(len(batch)):
            entry = batch[t]
            if type(entry) is not list:
                items[i].src = PyUnicode_AsUTF8AndSize(entry, &n)
                counts[t] = 1 if n else 0
                if n:
                    items[i].n = n
                    items[i].prefix = prefix
                    items[i].skip = 0
                    items[i].token_id = -1
                    i += 1
                continue
            parts = <list>entry
            if len(parts) > INT32_MAX:
                raise ValueError(f"a text of {len(parts)} parts; at most {INT32_MAX}")
            counts[t] = <int32_t>len(parts)
            for part in parts:
                _check_part(part, False)
                if type(part) is tuple and type((<tuple>part)[0]) is str:
                    items[i].src = PyUnicode_AsUTF8AndSize((<tuple>part)[0], &n)
                    items[i].n = n
                    items[i].prefix = (<tuple>part)[1]
                    items[i].skip = (<tuple>part)[2] if len(<tuple>part) > 2 else 0
                    items[i].token_id = -1
                else:
                    if type(part) is tuple:
                        part = (<tuple>part)[0]
                    items[i].token_id = part
                    if not 0 <= items[i].token_id < self.n_pieces:
                        raise ValueError(f"token id {items[i].token_id} is not a piece id")
                i += 1
        return 0

    cdef int encode_items(self, Workspace *w, const BatchPart *items, const int32_t *counts,
                          Py_ssize_t n_texts, size_t *ends, Py_ssize_t *failed,
                          const uint64_t *seeds) noexcept nogil:
        cdef Py_ssize_t t, k, i = 0
        cdef size_t mark, produced, skip
        cdef int rc
        for t in range(n_texts):
            if seeds != NULL:
                w.rng = seeds[t]
            for k in range(counts[t]):
                if items[i].token_id >= 0:
                    if ws_push_id(w, <int32_t>items[i].token_id) != OK:
                        return ERR_NOMEM
                else:
                    mark = w.ids_len
                    rc = self.encode_segment(items[i].src, items[i].n, items[i].prefix, w)
                    if rc != OK:
                        failed[0] = i
                        return rc
                    skip = <size_t>items[i].skip
                    produced = w.ids_len - mark
                    if skip and produced >= skip:
                        memmove(w.ids + mark, w.ids + mark + skip, (produced - skip) * sizeof(int32_t))
                        w.ids_len -= skip
                i += 1
            ends[t] = w.ids_len
        return OK

    cdef _encode_parts(self, list parts, Workspace *w):
        cdef object part
        cdef str text
        cdef bint prefix
        cdef Py_ssize_t n
        cdef const char *src
        cdef int rc
        cdef int64_t token_id
        cdef size_t mark, produced, skip
        for part in parts:
            _check_part(part, False)
            if type(part) is tuple and type((<tuple>part)[0]) is not str:
                part = (<tuple>part)[0]  # (token_id, start, end): the id
            if type(part) is tuple:
                text = (<tuple>part)[0]
                prefix = (<tuple>part)[1]
                src = PyUnicode_AsUTF8AndSize(text, &n)
                mark = w.ids_len
                self._check(self.segment(src, n, prefix, w), w, text)
                if len(<tuple>part) > 2 and (<tuple>part)[2]:
                    # (text, prefix, skip, ...): leave out the segment's first
                    # `skip` ids, when it has that many (HF's "<unk>" trick).
                    skip = (<tuple>part)[2]
                    produced = w.ids_len - mark
                    if produced >= skip:
                        memmove(w.ids + mark, w.ids + mark + skip, (produced - skip) * sizeof(int32_t))
                        w.ids_len -= skip
            else:
                token_id = part
                if not 0 <= token_id < self.n_pieces:
                    raise ValueError(f"token id {token_id} is not a piece id")
                if ws_push_id(w, <int32_t>token_id) != OK:
                    raise MemoryError()

    cdef _check(self, int rc, Workspace *w, str text):
        cdef bytes bad
        if rc == OK:
            return
        if rc == ERR_NOMEM:
            raise MemoryError("out of memory while merging")
        if rc == ERR_TOO_LONG:
            raise ValueError(
                f"a text segment of {len(text.encode('utf-8', 'surrogatepass'))} UTF-8 bytes "
                f"is longer than the {self.max_segment} bytes one merge can take"
            )
        bad = PyBytes_FromStringAndSize(w.text + w.bad_start, w.bad_len)
        shown = bad.decode("utf-8", "replace").replace("\u2581", " ")
        raise ValueError(
            f"cannot encode the character {shown!r}: it is not in the vocabulary, "
            f"and the vocabulary has neither the 256 <0xNN> byte pieces nor an unknown piece"
        )

    cdef int segment(self, const char *src, Py_ssize_t n, bint prefix, Workspace *w) noexcept:
        """encode_segment, releasing the GIL only for a long text (the
        release and re-acquisition cost more than merging a short one)."""
        cdef int rc
        if n > _NOGIL_BYTES:
            with nogil:
                rc = self.encode_segment(src, n, prefix, w)
            return rc
        return self.encode_segment(src, n, prefix, w)

    cdef int encode_segment(self, const char *src, Py_ssize_t n, bint prefix,
                            Workspace *w) noexcept nogil:
        """Escapes src[0:n] into the workspace, merges it and appends the ids."""
        cdef Py_ssize_t m
        if n == 0 and not prefix:
            return OK
        m = self.escape(src, n, prefix, w)
        if m < 0:
            return <int>m
        return self.run(w, <int32_t>m)

    cdef Py_ssize_t escape(self, const char *src, Py_ssize_t n, bint prefix,
                           Workspace *w) noexcept nogil:
        """Writes src[0:n] to w.text with spaces as "▁" (and the dummy prefix
        when `prefix`); returns its length, or an error code (< 0).  Sets
        w.ready_bounds when it found all the chunk boundaries on the way
        (run then skips find_bounds)."""
        cdef Py_ssize_t i = 0, m = 0
        cdef uint8_t u
        cdef uint32_t prev
        cdef int32_t nb = 0
        cdef int32_t *bounds
        cdef char *text
        cdef const uint64_t *cuts = self.ascii_cuts
        if n > self.max_segment:
            return ERR_TOO_LONG
        if ws_reserve(w, <size_t>(3 * n + 3)) != OK:
            return ERR_NOMEM
        text = w.text
        # llama.cpp (llama_escape_whitespace) and sentencepiece's identity
        # normalizer both turn only U+0020 into the marker.
        if prefix:
            memcpy(text, MARKER, 3)
            m = 3
        w.ready_bounds = -1
        if not self.escape_spaces:
            memcpy(text + m, src, n)
            return m + n
        if self.chunked and self.n_violations == 0:
            # ASCII text: the chunk boundaries too, as find_bounds would find
            # them (ascii_cuts, by the byte before and this one).  At the
            # first byte >= 0x80 find_bounds becomes the one to find them,
            # and the rest is only escaped.  (Four bytes are written per
            # byte, into the slack past the end at worst, and the lengths
            # come from a table: a branch on the space, taken about every
            # sixth byte at random, cost more than the rest of the loop.)
            if grow_int32(&w.bounds, &w.bounds_cap, <size_t>(n + 2)) != OK:
                return ERR_NOMEM
            bounds = w.bounds
            prev = 0x20 if prefix else ASCII_START
            while i < n:
                u = <uint8_t>src[i]
                if u >= 0x80:
                    break
                bounds[nb] = <int32_t>m
                nb += <int32_t>((cuts[prev << 1 | u >> 6] >> (u & 63)) & 1)
                memcpy(text + m, ESCAPED_ASCII[u], 4)
                m += ESCAPED_LEN[u]
                prev = u
                i += 1
            if i == n:
                bounds[nb] = <int32_t>m
                w.ready_bounds = nb + 1
                return m
        return escape_spaces(src, i, n, text, m)

    cdef void _build_ascii_cuts(self) noexcept:
        """Fills ascii_cuts from the chunking rules of find_bounds for two
        ASCII bytes: before a space that follows another byte; with
        cut_chars on both sides of an isolated byte and between two bytes
        no buildable piece holds side by side (the byte after a space
        meets the marker, never a pair).  The row ASCII_START (the first
        byte without a prefix) cuts nowhere; a prefix is a space."""
        cdef uint32_t p, u
        cdef bint cut
        memset(self.ascii_cuts, 0, sizeof(self.ascii_cuts))
        for p in range(0x80):
            for u in range(0x80):
                if u == 0x20:
                    cut = p != 0x20
                elif p == 0x20:
                    cut = isolated_byte(self.isolated, <uint8_t>u)
                else:
                    cut = isolated_byte(self.isolated, <uint8_t>u) or isolated_byte(self.isolated, <uint8_t>p) \
                        or (self.cut_chars and not spm_ascii_pair_held(self.ascii_held, p, u))
                if cut:
                    self.ascii_cuts[p << 1 | u >> 6] |= <uint64_t>1 << (u & 63)

    def chunk_bounds(self, str text, bint prefix):
        """The chunk boundaries of the segment `text` (byte offsets in its
        escaped form, ending with its length) found by find_bounds, and those
        escape found on the way, or None when it leaves them to find_bounds
        (text with a byte >= 0x80, or no chunking).  For tests: the two must
        agree, since run takes escape's when it has them."""
        cdef Py_ssize_t n, m
        cdef const char *src = PyUnicode_AsUTF8AndSize(text, &n)
        cdef Workspace *w = self.acquire()
        cdef list from_escape = None
        cdef int32_t nb
        try:
            m = self.escape(src, n, prefix, w)
            if m < 0:
                self._check(<int>m, w, text)
            if w.ready_bounds >= 0:
                from_escape = [w.bounds[i] for i in range(w.ready_bounds)]
            nb = self.find_bounds(w, <int32_t>m) if self.chunked else 0
            if nb < 0:
                raise MemoryError()
            return [w.bounds[i] for i in range(nb)], from_escape
        finally:
            self.release(w)

    def split_points(self, str text, bint prefix, Py_ssize_t parts):
        """Up to parts - 1 character offsets at which the segment `text` can
        be cut so that the pieces (the first with `prefix`, the others
        without) encode to exactly the ids of the whole: chunk boundaries,
        the first at or after each equal share of its length.  Empty when
        the core merges whole segments.  For encoding one large document on
        several threads."""
        cdef Py_ssize_t n, m, i, c = -1, e, j = 0, nw = 0
        cdef const char *src = PyUnicode_AsUTF8AndSize(text, &n)
        cdef int32_t nb, b
        cdef list out = []
        cdef int64_t last = 0, at
        cdef int64_t *wanted
        if not self.chunked or parts < 2 or n == 0:
            return out
        wanted = <int64_t *>malloc(parts * sizeof(int64_t))
        if wanted == NULL:
            raise MemoryError()
        cdef Workspace *w = self.acquire()
        try:
            m = self.escape(src, n, prefix, w)
            if m < 0:
                self._check(<int>m, w, text)
            nb = self.find_bounds(w, <int32_t>m)
            if nb < 0:
                raise MemoryError()
            # The boundary at or after each share (bounds are ascending; the
            # last one is the end).
            b = 0
            for j in range(1, parts):
                at = m * j // parts
                while b < nb - 1 and w.bounds[b] < at:
                    b += 1
                if b < nb - 1 and w.bounds[b] > last:
                    last = w.bounds[b]
                    wanted[nw] = last
                    nw += 1
            # Escaped byte offsets -> character offsets of `text`.
            e = 3 if prefix else 0
            j = 0
            for i in range(n):
                if (<uint8_t>src[i] & 0xC0) != 0x80:
                    c += 1
                    if j < nw and e == wanted[j]:
                        out.append(c)
                        j += 1
                e += 3 if (src[i] == c' ' and self.escape_spaces) else 1
            return out
        finally:
            free(wanted)
            self.release(w)

    cdef bint safe_boundary(self, const char *text, int32_t i, int32_t m) noexcept nogil:
        """No piece that contains "x▁" can lie across position i."""
        cdef const char *v = self.violator_bytes
        cdef int32_t j, start, length
        for j in range(self.n_violations):
            start = i - self.violation[j][2]
            length = self.violation[j][1]
            if start >= 0 and start + length <= m and memcmp(text + start, v + self.violation[j][0], length) == 0:
                return False
        return True

    cdef int32_t find_bounds(self, Workspace *w, int32_t m) noexcept nogil:
        """The chunk boundaries of w.text[0:m] into w.bounds, ending with m:
        the safe positions before a "▁" that follows other text and, with
        cut_chars, between two other characters no buildable piece holds
        side by side and on both sides of an isolated byte.  Returns their
        number, or -1 when out of memory."""
        cdef const char *text = w.text
        cdef int32_t i = 0, nb = 0, prev = -1, prev_len = 0, length
        cdef bint prev_marker = True, cut, cut_next = False
        cdef bint cut_chars = self.cut_chars
        cdef uint64_t isolated = self.isolated
        cdef const uint64_t *held = self.ascii_held
        cdef uint8_t u
        # At most one boundary per character, but most text has far fewer:
        # the list grows as needed.
        if grow_int32(&w.bounds, &w.bounds_cap, <size_t>(m // 4 + 16)) != OK:
            return -1
        while i < m:
            if nb + 2 > <int64_t>w.bounds_cap and grow_int32(&w.bounds, &w.bounds_cap, <size_t>nb + 2) != OK:
                return -1
            if i + 3 <= m and text[i] == MARKER[0] and text[i + 1] == MARKER[1] and text[i + 2] == MARKER[2]:
                if not prev_marker and (cut_next or self.n_violations == 0 or self.safe_boundary(text, i, m)):
                    w.bounds[nb] = i
                    nb += 1
                prev_marker = True
                cut_next = False
                prev = -1
                i += 3
            else:
                # (Without cut_chars, byte by byte: only markers matter.)
                length = 1
                u = <uint8_t>text[i]
                if cut_chars and u >= 0x80:
                    length = min(utf8_len(u), m - i)
                cut = isolated_byte(isolated, u)
                if (cut or cut_next) and i > 0:
                    w.bounds[nb] = i
                    nb += 1
                elif cut_chars and prev >= 0:
                    # (Two characters of one byte are ASCII: the text is valid UTF-8.)
                    if self.cut_between(text + prev, prev_len, length) if spm_charpairs_wanted(prev_len, length) \
                            else not spm_ascii_pair_held(held, <uint8_t>text[prev], u):
                        w.bounds[nb] = i
                        nb += 1
                cut_next = cut
                prev_marker = False
                prev = i
                prev_len = length
                i += length
        w.bounds[nb] = m
        return nb + 1

    cdef inline bint cut_between(self, const char *pair, int32_t left, int32_t right) noexcept nogil:
        """No buildable piece holds the characters pair[0:left] and
        pair[left:left+right] side by side."""
        return not spm_charpairs_has(self.char_pairs, spm_head8(pair, <size_t>(left + right), 1))

    cdef int run(self, Workspace *w, int32_t m) noexcept nogil:
        """Merges w.text[0:m]: whole, or chunk by chunk at the boundaries
        before a "▁" that follows other text, reusing cached chunks."""
        cdef const char *text = w.text
        cdef int32_t begin, end, nb, b
        cdef const spm_cache_entry *hit
        cdef uint64_t h = 0, next_h = 0
        cdef size_t mark
        cdef bint use_cache, next_cached, single, prev_unknown
        cdef const int32_t *cached
        cdef int32_t k
        cdef uint64_t key, memo
        cdef int rc
        if not self.chunked or m < 8 or w.alpha > 0.0:
            # (Sampling merges whole segments, as sentencepiece does, and
            # never caches.)
            if self.pairs != NULL:
                return self.merge_pairs(w, 0, m)
            return self.merge(w, 0, m)
        nb = w.ready_bounds if w.ready_bounds >= 0 else self.find_bounds(w, m)
        if nb < 0:
            return ERR_NOMEM
        begin = 0
        # Each chunk's hash is taken one chunk ahead and its slot prefetched,
        # so that the cache miss overlaps the chunk before.
        next_cached = self.cache_ready and cacheable_chunk(text, 0, w.bounds[0])
        if next_cached:
            next_h = spm_hash_bytes(text, <size_t>w.bounds[0])
        for b in range(nb):
            end = w.bounds[b]
            # One character is looked up faster than the cache is: chunks cut
            # between CJK characters are mostly single.
            single = utf8_len(<uint8_t>text[begin]) >= end - begin
            use_cache = next_cached
            h = next_h
            next_cached = self.cache_ready and b + 1 < nb and cacheable_chunk(text, end, w.bounds[b + 1])
            if next_cached:
                next_h = spm_hash_bytes(text + end, <size_t>(w.bounds[b + 1] - end))
                spm_cache_prefetch(&self.cache, next_h)
            if use_cache:
                hit = spm_cache_get(&self.cache, text + begin, <size_t>(end - begin), h)
                if hit != NULL:
                    rc = self.spans_of_hit(w, spm_cache_ids(hit), hit.ids_len, begin, end) \
                        if w.want_spans else OK
                    if rc == ERR_NOMEM:
                        return rc
                    if rc == OK:
                        if grow_int32(&w.ids, &w.ids_cap, w.ids_len + hit.ids_len) != OK:
                            return ERR_NOMEM
                        cached = spm_cache_ids(hit)
                        for k in range(hit.ids_len):  # (a few ids: no memcpy call)
                            w.ids[w.ids_len + k] = cached[k]
                        w.ids_len += hit.ids_len
                        begin = end
                        continue
                    use_cache = False  # (merged below for its spans; already cached)
            if single and w.char_ids != NULL and not w.want_spans and text[begin] != 0:
                # A character seen before: its id from the workspace's memo
                # (emit_piece's fast case, without the call).
                memo = char_memo_entry(w, text + begin, end - begin, &key)[0]
                if (memo >> 32) == key and <int32_t>(<uint32_t>memo) >= 0:
                    if ws_push_id(w, <int32_t>(<uint32_t>memo)) != OK:
                        return ERR_NOMEM
                    begin = end
                    continue
            mark = w.ids_len
            if self.pairs != NULL:
                rc = self.merge_pairs(w, begin, end)
            elif single:
                prev_unknown = False
                rc = self.emit_piece(w, begin, end - begin, &prev_unknown)
            else:
                rc = self.merge(w, begin, end)
            if rc != OK:
                return rc
            if use_cache:
                spm_cache_put(&self.cache, &w.cache_writer, text + begin, <size_t>(end - begin), h,
                              w.ids + mark, w.ids_len - mark)
            begin = end
        return OK

    cdef int spans_of_hit(self, Workspace *w, const int32_t *ids, int32_t n, int32_t begin,
                          int32_t end) noexcept nogil:
        """Appends the spans of cached ids for text[begin:end]: each piece
        spans its own bytes, back to back.  Returns 1 (nothing appended)
        when that does not hold -- a byte or unknown piece, whose span the
        merger gives differently -- so the chunk is merged instead."""
        cdef int32_t i, at = begin, t
        for i in range(n):
            t = self.types[ids[i]]
            # (The unknown id by name too: a vocabulary may type it NORMAL.)
            if t == TYPE_BYTE or t == TYPE_UNKNOWN or ids[i] == self.unk_id:
                return 1
            at += self.table.offsets[ids[i] + 1] - self.table.offsets[ids[i]]
        if at != end:
            return 1
        if grow_int32(&w.spans, &w.spans_cap, 2 * (w.ids_len + <size_t>n)) != OK:
            return ERR_NOMEM
        at = begin
        for i in range(n):
            w.spans[2 * (w.ids_len + i)] = at
            at += self.table.offsets[ids[i] + 1] - self.table.offsets[ids[i]]
            w.spans[2 * (w.ids_len + i) + 1] = at
        return OK

    cdef int merge_small(self, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
        """SPM-BPE over a short w.text[begin:m] (at most SMALL_BYTES): the
        symbols in arrays, linked in order, the best pair found by a scan
        from the left (so ties go to the leftmost, as in the heap), the
        merged ids kept.  A merge unlinks the right symbol: shifting the
        arrays down instead became five memmove calls per merge."""
        cdef int32_t start[SMALL_BYTES]
        cdef int32_t size[SMALL_BYTES]
        cdef int32_t tid[SMALL_BYTES]       # id of a merged symbol, -1 for a character
        cdef int32_t pair_id[SMALL_BYTES]   # the piece symbol i + the next would make, or -1
        cdef float pair_score[SMALL_BYTES]
        cdef int32_t after[SMALL_BYTES]     # the next live symbol, -1 at the end
        cdef int32_t before[SMALL_BYTES]    # the previous live symbol, -1 at the start
        cdef const char *text = w.text
        cdef int32_t count = 0, offset = begin, length, i, j, best
        cdef bint prev_unknown = False
        cdef int rc
        while offset < m:
            length = utf8_len(<uint8_t>text[offset])
            if length > m - offset:
                length = m - offset
            start[count] = offset
            size[count] = length
            tid[count] = -1
            before[count] = count - 1
            after[count] = count + 1
            count += 1
            offset += length
        if count == 0:
            return OK
        after[count - 1] = -1
        pair_id[count - 1] = -1
        for i in range(count - 1):
            pair_id[i] = self.mergeable(w, text + start[i], size[i] + size[i + 1], &pair_score[i])
        while True:
            best = -1
            i = 0
            while i >= 0:
                if pair_id[i] >= 0 and (best < 0 or pair_score[i] > pair_score[best]):
                    best = i
                i = after[i]
            if best < 0:
                break
            # Symbol best absorbs the next one.
            j = after[best]
            size[best] += size[j]
            tid[best] = pair_id[best]
            after[best] = after[j]
            if after[j] >= 0:
                before[after[j]] = best
            i = before[best]
            if i >= 0:
                pair_id[i] = self.mergeable(w, text + start[i], size[i] + size[best], &pair_score[i])
            j = after[best]
            if j >= 0:
                pair_id[best] = self.mergeable(w, text + start[best], size[best] + size[j], &pair_score[best])
            else:
                pair_id[best] = -1
        i = 0
        while i >= 0:
            if tid[i] >= 0:
                prev_unknown = False
                rc = self.push(w, tid[i], start[i], start[i] + size[i])
            else:
                rc = self.emit_piece(w, start[i], size[i], &prev_unknown)
            if rc != OK:
                return rc
            i = after[i]
        return OK

    cdef int32_t mergeable(self, Workspace *w, const char *s, int32_t length, float *score) noexcept nogil:
        """The id of the piece s[0:length] when the merger may build it (its
        score in score[0]), else -1: the vocabulary table's answer, through
        the workspace's memo for candidates of up to 8 bytes."""
        cdef const spm_vocab_slot *slot
        cdef uint64_t head
        cdef PairMemo *e
        if length > 8 or w.memo == NULL:
            if length <= 8:
                w.memo = <PairMemo *>calloc(MEMO_SIZE, sizeof(PairMemo))
            slot = spm_vocab_mergeable(self.vocab, s, <size_t>length)
            if slot == NULL:
                return -1
            score[0] = slot.score
            return slot.id & SPM_ID_MASK
        head = spm_head8(s, <size_t>length, 1)  # (the text buffer has slack past its end)
        e = &w.memo[((head * <uint64_t>0x9E3779B97F4A7C15) >> 52) & (MEMO_SIZE - 1)]
        if e.length == length and e.head == head:
            score[0] = e.score
            return e.id
        slot = spm_vocab_mergeable(self.vocab, s, <size_t>length)
        e.head = head
        e.length = length
        if slot == NULL:
            e.id = -1
            return -1
        e.id = slot.id & SPM_ID_MASK
        e.score = slot.score
        score[0] = slot.score
        return e.id

    cdef int merge(self, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
        """SPM-BPE over w.text[begin:m]."""
        if self.small_merges and m - begin <= SMALL_BYTES and w.alpha <= 0.0:
            return self.merge_small(w, begin, m)
        cdef Symbol *sym = w.symbols
        cdef const char *text = w.text
        cdef int32_t count = 0
        cdef int32_t offset = begin
        cdef int32_t length, i, left, right, nxt, token_id
        cdef spm_bigram top
        cdef bint prev_unknown = False
        cdef int rc

        # One symbol per UTF-8 character, linked in order.
        while offset < m:
            length = utf8_len(<uint8_t>text[offset])
            if length > m - offset:
                length = <int32_t>(m - offset)
            count = add_symbol(sym, count, offset, length)
            offset += length
        if count == 0:
            return OK
        sym[count - 1].next = -1

        w.heap.len = 0
        if spm_heap_reserve(&w.heap, <size_t>count) != 0:
            return ERR_NOMEM
        while w.split_touched_len:
            w.split_touched_len -= 1
            w.split_left[w.split_touched[w.split_touched_len]] = 0
        for i in range(1, count):
            if self.push_pair(w, i - 1, i) != OK:
                return ERR_NOMEM

        # Best-scoring pair first; stale entries (a side already absorbed or
        # grown) are skipped rather than removed, as both references do.
        while spm_heap_pop(&w.heap, &top) == 0:
            left = top.left
            right = top.right
            if sym[left].n == 0 or sym[right].n == 0 or sym[left].n + sym[right].n != top.size:
                continue
            if skip_merge(w):
                continue
            sym[left].n += sym[right].n
            sym[right].n = 0
            nxt = sym[right].next
            sym[left].next = nxt
            if nxt >= 0:
                sym[nxt].prev = left
            if self.push_pair(w, sym[left].prev, left) != OK:
                return ERR_NOMEM
            if self.push_pair(w, left, nxt) != OK:
                return ERR_NOMEM

        i = 0
        while i >= 0:
            rc = self.emit_piece(w, sym[i].start, sym[i].n, &prev_unknown)
            if rc != OK:
                return rc
            i = sym[i].next
        return OK

    cdef int merge_pairs(self, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
        """HuggingFace tokenizers' BPE (Word::merge_all) over w.text[begin:m].

        A symbol's `start` holds its id.  The agenda is ordered by rank, then
        position; an entry is stale unless the pair now at its position
        still joins into the same id (tokenizers' own test)."""
        cdef Symbol *sym = w.symbols
        cdef const char *text = w.text
        cdef int32_t count = 0, offset = begin, length, token_id, j
        cdef int32_t unk_len = 0
        cdef int32_t pos, nxt, prv
        cdef const spm_pair_slot *rule
        cdef spm_bigram top
        if self.ignore_merges and m > begin:
            token_id = spm_vocab_find(self.vocab, text + begin, <size_t>(m - begin))
            if token_id >= 0:
                return self.push(w, token_id, begin, m)
        while offset < m:
            length = utf8_len(<uint8_t>text[offset])
            if length > m - offset:
                length = <int32_t>(m - offset)
            token_id = spm_vocab_find(self.vocab, text + offset, <size_t>length)
            if token_id >= 0:
                if unk_len:
                    count = add_symbol(sym, count, self.unk_id, unk_len)
                    unk_len = 0
                count = add_symbol(sym, count, token_id, length)
            elif self.byte_fallback:
                if unk_len:
                    count = add_symbol(sym, count, self.unk_id, unk_len)
                    unk_len = 0
                for j in range(length):
                    count = add_symbol(sym, count, self.byte_ids[<uint8_t>text[offset + j]], 1)
            elif self.unk_id >= 0:
                if unk_len and not self.fuse_unknown:
                    count = add_symbol(sym, count, self.unk_id, unk_len)
                    unk_len = 0
                unk_len += length
            # else: tokenizers drops a character it can neither look up nor
            # spell in bytes, and so does this.
            offset += length
        if unk_len:
            count = add_symbol(sym, count, self.unk_id, unk_len)
        if count == 0:
            return OK
        sym[count - 1].next = -1

        w.heap.len = 0
        if spm_heap_reserve(&w.heap, <size_t>count) != 0:
            return ERR_NOMEM
        for j in range(count - 1):
            if self.push_rule(w, j) != OK:
                return ERR_NOMEM
        while spm_heap_pop(&w.heap, &top) == 0:
            pos = top.left
            if sym[pos].n == 0 or sym[pos].next == -1:
                continue
            nxt = sym[pos].next
            rule = spm_pairs_find(self.pairs, sym[pos].start, sym[nxt].start)
            if rule == NULL or rule.merged != top.size:
                continue
            if skip_merge(w):
                continue
            sym[pos].start = rule.merged
            sym[pos].n += sym[nxt].n
            sym[nxt].n = 0
            sym[pos].next = sym[nxt].next
            if sym[pos].next >= 0:
                sym[sym[pos].next].prev = pos
            prv = sym[pos].prev
            if prv >= 0 and self.push_rule(w, prv) != OK:
                return ERR_NOMEM
            if self.push_rule(w, pos) != OK:
                return ERR_NOMEM
        j = 0
        offset = begin
        while j >= 0:
            if self.push(w, sym[j].start, offset, offset + sym[j].n) != OK:
                return ERR_NOMEM
            offset += sym[j].n
            j = sym[j].next
        return OK

    cdef int push_rule(self, Workspace *w, int32_t left) noexcept nogil:
        """Queues the rule joining symbol `left` with its next one, if any.
        Ranks become scores (-rank) so the heap's order is tokenizers'."""
        cdef Symbol *sym = w.symbols
        cdef int32_t right = sym[left].next
        cdef const spm_pair_slot *rule
        cdef spm_bigram b
        if right < 0:
            return OK
        rule = spm_pairs_find(self.pairs, sym[left].start, sym[right].start)
        if rule == NULL:
            return OK
        b.score = -<float>rule.rank
        b.left = left
        b.right = right
        b.size = rule.merged
        if spm_heap_push(&w.heap, b) != 0:
            return ERR_NOMEM
        return OK

    cdef int push_pair(self, Workspace *w, int32_t left, int32_t right) noexcept nogil:
        """Queues the merge of two adjacent symbols when the result is a
        piece the merger may build."""
        cdef Symbol *sym = w.symbols
        cdef spm_bigram b
        cdef int32_t token_id
        if left < 0 or right < 0:
            return OK
        b.size = sym[left].n + sym[right].n
        token_id = self.mergeable(w, w.text + sym[left].start, b.size, &b.score)
        if token_id < 0:
            return OK
        b.left = left
        b.right = right
        if spm_heap_push(&w.heap, b) != 0:
            return ERR_NOMEM
        if self.any_resplit and self.flags[token_id] & FLAG_RESPLIT:
            # sentencepiece records the halves when it queues the pair (the
            # last queued pair for a piece wins), and splits an UNUSED piece
            # back into them on output.
            return self.remember_split(w, token_id, sym[left].n)
        return OK

    cdef int remember_split(self, Workspace *w, int32_t token_id, int32_t left_n) noexcept nogil:
        if w.split_left == NULL:
            w.split_left = <int32_t *>calloc(self.n_pieces, sizeof(int32_t))
            if w.split_left == NULL:
                return ERR_NOMEM
        if w.split_left[token_id] == 0:
            if grow_int32(&w.split_touched, &w.split_touched_cap, w.split_touched_len + 1) != OK:
                return ERR_NOMEM
            w.split_touched[w.split_touched_len] = token_id
            w.split_touched_len += 1
        w.split_left[token_id] = left_n
        return OK

    cdef int push(self, Workspace *w, int32_t token_id, int32_t start, int32_t end) noexcept nogil:
        """Appends an id and, when spans are wanted, the bytes of the
        escaped segment it stands for."""
        if w.want_spans:
            if grow_int32(&w.spans, &w.spans_cap, 2 * (w.ids_len + 1)) != OK:
                return ERR_NOMEM
            w.spans[2 * w.ids_len] = start
            w.spans[2 * w.ids_len + 1] = end
        return ws_push_id(w, token_id)

    cdef int emit_piece(self, Workspace *w, int32_t start, int32_t n,
                        bint *prev_unknown) noexcept nogil:
        """Appends the id(s) of the final symbol text[start:start+n]."""
        cdef int32_t token_id
        cdef int32_t j, left_n
        cdef int rc
        cdef uint64_t key = 0
        cdef uint64_t *entry = NULL
        if n <= 4 and n == utf8_len(<uint8_t>w.text[start]) and w.text[start] != 0:
            # One character (its key is never 0, the empty entry): memoized.
            if w.char_ids == NULL:
                w.char_ids = <uint64_t *>calloc(CHAR_MEMO_SIZE, sizeof(uint64_t))
            if w.char_ids != NULL:
                entry = char_memo_entry(w, w.text + start, n, &key)
        if entry != NULL and (entry[0] >> 32) == key:
            token_id = <int32_t>(<uint32_t>entry[0])
        else:
            token_id = spm_vocab_find(self.vocab, w.text + start, <size_t>n)
            if entry != NULL:
                entry[0] = (key << 32) | <uint32_t>token_id
        if token_id >= 0:
            if w.split_left != NULL and (self.flags[token_id] & FLAG_RESPLIT):
                left_n = w.split_left[token_id]
                if 0 < left_n < n:
                    rc = self.emit_piece(w, start, left_n, prev_unknown)
                    if rc != OK:
                        return rc
                    return self.emit_piece(w, start + left_n, n - left_n, prev_unknown)
            prev_unknown[0] = False
            return self.push(w, token_id, start, start + n)
        # Only a single character reaches here: every merge builds a piece.
        # Its UTF-8 bytes as <0xNN> pieces with byte fallback (each spanning
        # the whole character), else <unk>.
        if self.byte_fallback:
            prev_unknown[0] = False
            for j in range(n):
                if self.push(w, self.byte_ids[<uint8_t>w.text[start + j]], start, start + n) != OK:
                    return ERR_NOMEM
            return OK
        if self.unk_id < 0:
            w.bad_start = start
            w.bad_len = n
            return ERR_UNENCODABLE
        # sentencepiece merges a run of unknown pieces into one <unk>.
        if self.collapse_unknown and prev_unknown[0]:
            if w.want_spans:
                w.spans[2 * w.ids_len - 1] = start + n
            return OK
        prev_unknown[0] = True
        return self.push(w, self.unk_id, start, start + n)


# ---------------------------------------------------------------- decoding
#
# How each reference renders ids as text (spmbpe/_decoding.py chooses the
# rules per reference; the fields below are those rules' encoding, in order):
#   control, unknown, unused, user_defined: RENDER_* for pieces of that type;
#   strip: which leading space comes off (STRIP_*), with strip_count;
#   byte_runs: how <0xNN> runs that are not valid UTF-8 become text (BYTES_*);
#   marker_in_special: U+2581 in rendered control/unknown/user-defined text
#   becomes a space too (tokenizers' Replace decoder runs on every token).
cdef enum:
    RENDER_TEXT = 0        # the piece as spelled (U+2581 kept, but see marker_in_special)
    RENDER_NOTHING = 1
    RENDER_SURFACE = 2     # the reference's unknown surface (sentencepiece: " \u2047 ")
    RENDER_NORMAL = 3      # as a NORMAL piece: U+2581 as a space, stripped as one
cdef enum:
    STRIP_NONE = 0
    STRIP_FIRST_ID = 1        # llama.cpp detokenize: the first id, rendered or not, loses one space
    STRIP_FIRST_RENDERED = 2  # the first piece rendered loses one leading space
    STRIP_WHILE_EMPTY = 3     # sentencepiece: a leading U+2581 of the pieces decoded while the text is empty
    STRIP_OUTPUT = 4          # tokenizers' Strip decoder: up to strip_count spaces off the whole text
cdef enum:
    BYTES_RAW = 0          # the bytes as they are; the caller decodes them (errors=)
    BYTES_EACH = 1         # sentencepiece: each byte of an invalid sequence is U+FFFD
    BYTES_RUN = 2          # tokenizers' ByteFallback: a run that is not valid UTF-8 is U+FFFD per byte
cdef enum:
    RULES_SIZE = 9

cdef struct DecodeRules:
    uint8_t control
    uint8_t unknown
    uint8_t unused
    uint8_t user_defined
    uint8_t strip
    uint8_t strip_count
    uint8_t byte_runs
    uint8_t marker_in_special
    uint8_t remove_extra_whitespaces   # sentencepiece: keep stripping while the text is empty

cdef const char *REPLACEMENT = b"\xef\xbf\xbd"  # U+FFFD in UTF-8


cdef inline Py_ssize_t utf8_sequence(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """Length of the valid UTF-8 character at `s` (n bytes available): > 0
    valid, 0 a valid but incomplete prefix, -1 invalid (RFC 3629: no
    overlong forms, surrogates or code points past U+10FFFF)."""
    cdef uint8_t c = s[0]
    cdef Py_ssize_t need, i
    cdef uint8_t lo = 0x80, hi = 0xBF
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        need = 2
    elif 0xE0 <= c <= 0xEF:
        need = 3
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif 0xF0 <= c <= 0xF4:
        need = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return -1
    for i in range(1, need):
        if i >= n:
            return 0
        if not (lo <= s[i] <= hi):
            return -1
        lo = 0x80
        hi = 0xBF
    return need


cdef class IdDecoder:
    """Renders ids as text by one reference's rules (DecodeRules), keeping
    what a streaming decoder needs between calls: whether the leading space
    is still to strip, and a byte run whose text is not settled yet.
    ``feed(ids)`` returns the bytes settled so far, ``finish()`` the rest.
    """
    cdef SpmCore core
    cdef DecodeRules rules
    cdef const uint8_t[::1] skip
    cdef bint skipping
    cdef bytes surface
    # state
    cdef bint first
    cdef bint bos_ws
    cdef bint bos_ws_seen
    cdef bint text_empty
    cdef int strip_left
    cdef uint8_t *run
    cdef Py_ssize_t run_len, run_cap, run_valid
    cdef bint run_bad
    cdef char *out
    cdef Py_ssize_t out_len, out_cap

    def __cinit__(self, SpmCore core not None, const uint8_t[::1] rules not None, skip, bytes surface not None):
        if rules.shape[0] != RULES_SIZE:
            raise ValueError("decode rules have the wrong size")
        self.core = core
        memcpy(&self.rules, &rules[0], RULES_SIZE)
        self.skipping = skip is not None
        if self.skipping:
            self.skip = skip
            if self.skip.shape[0] < core.n_pieces:
                raise ValueError("the skip table is shorter than the vocabulary")
        self.surface = surface
        self.run = NULL
        self.out = NULL
        self.reset()

    def __dealloc__(self):
        free(self.run)
        free(self.out)

    cpdef reset(self):
        """A fresh sequence: the next id is a first one."""
        self.first = True
        self.bos_ws = True
        self.bos_ws_seen = False
        self.text_empty = True
        self.strip_left = self.rules.strip_count if self.rules.strip == STRIP_OUTPUT else 0
        self.run_len = 0
        self.run_valid = 0
        self.run_bad = False
        self.out_len = 0

    cdef int reserve(self, Py_ssize_t more) except -1:
        cdef Py_ssize_t want = self.out_len + more
        cdef char *grown
        if want > self.out_cap:
            want = want * 2 if want > 64 else 128
            grown = <char *>realloc(self.out, want)
            if grown == NULL:
                raise MemoryError()
            self.out = grown
            self.out_cap = want
        return 0

    cdef int emit(self, const char *s, Py_ssize_t n) except -1:
        # tokenizers' Strip decoder takes spaces off the text as a whole.
        while self.strip_left > 0 and n > 0 and s[0] == c' ':
            s += 1
            n -= 1
            self.strip_left -= 1
        if n > 0:
            self.strip_left = 0
            self.text_empty = False
            self.reserve(n)
            memcpy(self.out + self.out_len, s, n)
            self.out_len += n
        return 0

    cdef int emit_piece(self, const char *s, Py_ssize_t n, bint unescape, bint strip) except -1:
        """A piece's text, U+2581 as a space when `unescape`, one leading
        space (or U+2581) off when `strip`."""
        cdef Py_ssize_t i = 0, start
        if strip and n > 0:
            if s[0] == c' ':
                i = 1
            elif unescape and n >= 3 and memcmp(s, MARKER, 3) == 0:
                i = 3
        if not unescape:
            return self.emit(s + i, n - i)
        start = i
        while i < n:
            if n - i >= 3 and memcmp(s + i, MARKER, 3) == 0:
                self.emit(s + start, i - start)
                self.emit(b" ", 1)
                i += 3
                start = i
            else:
                i += 1
        return self.emit(s + start, n - start)

    cdef int settle_run(self, bint final) except -1:
        """Turns the pending byte run into text as far as it is settled
        (all of it when `final`: the run has ended)."""
        cdef Py_ssize_t i = 0, k
        if self.run_len == 0:
            if final:
                self.run_bad = False
            return 0
        if self.rules.byte_runs == BYTES_EACH:
            # sentencepiece decodes the run character by character; a byte
            # that starts no valid character is U+FFFD on its own.
            while i < self.run_len:
                k = utf8_sequence(self.run + i, self.run_len - i)
                if k > 0:
                    self.emit(<const char *>self.run + i, k)
                    i += k
                elif k == 0 and not final:
                    break
                else:
                    self.emit(REPLACEMENT, 3)
                    i += 1
            memmove(self.run, self.run + i, self.run_len - i)
            self.run_len -= i
            return 0
        # BYTES_RUN: tokenizers' ByteFallback: the whole run is its text when
        # it is valid UTF-8, else every byte of it is U+FFFD. run_valid: the
        # run's prefix already checked to be whole, valid characters.
        i = self.run_valid
        while not self.run_bad and i < self.run_len:
            k = utf8_sequence(self.run + i, self.run_len - i)
            if k > 0:
                i += k
            elif k == 0 and not final:
                break
            else:
                self.run_bad = True
        self.run_valid = i
        if self.run_bad:
            for k in range(self.run_len):
                self.emit(REPLACEMENT, 3)
            self.run_len = 0
            self.run_valid = 0
        elif final:
            self.emit(<const char *>self.run, self.run_len)
            self.run_len = 0
            self.run_valid = 0
        if final:
            self.run_bad = False
        return 0

    cdef int push_byte(self, uint8_t b) except -1:
        cdef uint8_t *grown
        cdef Py_ssize_t want
        if self.rules.byte_runs == BYTES_RAW:
            if self.first and (self.rules.strip == STRIP_FIRST_ID or self.rules.strip == STRIP_FIRST_RENDERED):
                self.first = False
                if b == 0x20:
                    return 0
            self.first = False
            return self.emit(<const char *>&b, 1)
        self.first = False
        if self.run_len == self.run_cap:
            want = self.run_cap * 2 if self.run_cap else 16
            grown = <uint8_t *>realloc(self.run, want)
            if grown == NULL:
                raise MemoryError()
            self.run = grown
            self.run_cap = want
        self.run[self.run_len] = b
        self.run_len += 1
        return self.settle_run(False)

    cdef int render(self, Py_ssize_t token_id) except -1:
        cdef SpmCore core = self.core
        cdef const char *arena = PyBytes_AS_STRING(core.table.arena)
        cdef int64_t a = core.table.offsets[token_id]
        cdef int64_t e = core.table.offsets[token_id + 1]
        cdef uint8_t kind = core.types[token_id]
        cdef uint8_t how
        cdef int hi, lo
        cdef bint strip
        if self.skipping and self.skip[token_id]:
            if self.rules.strip == STRIP_FIRST_ID:
                self.first = False
            return 0
        if kind == TYPE_BYTE and e - a == 6 and memcmp(arena + a, b"<0x", 3) == 0 and arena[a + 5] == c'>':
            hi = hex_value(arena[a + 3])
            lo = hex_value(arena[a + 4])
            if hi >= 0 and lo >= 0:
                return self.push_byte(<uint8_t>(hi * 16 + lo))
        # Any other piece ends a byte run.
        self.settle_run(True)
        if kind == TYPE_CONTROL:
            how = self.rules.control
        elif kind == TYPE_UNKNOWN:
            how = self.rules.unknown
        elif kind == TYPE_USER_DEFINED:
            how = self.rules.user_defined
        elif kind == TYPE_UNUSED:
            how = self.rules.unused
        else:
            how = RENDER_NORMAL
        if self.rules.strip == STRIP_WHILE_EMPTY:
            return self.render_sentencepiece(how, arena + a, e - a)
        if how == RENDER_NOTHING:
            if self.rules.strip == STRIP_FIRST_ID:
                self.first = False
            return 0
        if how == RENDER_SURFACE:
            self.first = False
            return self.emit(PyBytes_AS_STRING(self.surface), PyBytes_GET_SIZE(self.surface))
        strip = self.first and (self.rules.strip == STRIP_FIRST_ID or self.rules.strip == STRIP_FIRST_RENDERED)
        self.first = False
        if how == RENDER_NORMAL:
            return self.emit_piece(arena + a, e - a, True, strip)
        return self.emit_piece(arena + a, e - a, self.rules.marker_in_special, strip)

    cdef int render_sentencepiece(self, uint8_t how, const char *s, Py_ssize_t n) except -1:
        # sentencepiece's DecodeSentencePiece: while nothing has been
        # decoded, the leading U+2581 of a piece comes off (once; again and
        # again with remove_extra_whitespaces); control pieces are nothing,
        # unknown ones its unk_surface.
        cdef bint stripped = False
        if self.bos_ws_seen or not self.text_empty:
            self.bos_ws = False
        if how == RENDER_NOTHING:
            self.bos_ws_seen = False
            return 0
        if how == RENDER_SURFACE:
            self.bos_ws_seen = False
            return self.emit(PyBytes_AS_STRING(self.surface), PyBytes_GET_SIZE(self.surface))
        if how == RENDER_TEXT:
            self.bos_ws_seen = False
            return self.emit_piece(s, n, self.rules.marker_in_special, False)
        if self.bos_ws and n >= 3 and memcmp(s, MARKER, 3) == 0:
            s += 3
            n -= 3
            stripped = not self.rules.remove_extra_whitespaces
        self.bos_ws_seen = stripped
        return self.emit_piece(s, n, True, False)

    cdef bytes take(self):
        cdef bytes data = PyBytes_FromStringAndSize(self.out, self.out_len)
        self.out_len = 0
        return data

    def feed(self, ids):
        """The bytes that `ids` settle (a byte run may wait for its end)."""
        cdef int32_t n = self.core.n_pieces
        for item in ids:
            self.render(_as_id(item, n))
        return self.take()

    def finish(self):
        """The rest (a pending byte run), then a fresh sequence."""
        self.settle_run(True)
        data = self.take()
        self.reset()
        return data


def decode_ids(SpmCore core not None, ids, const uint8_t[::1] rules not None, skip, bytes surface not None):
    """The bytes of `ids` rendered by `rules` (one whole sequence)."""
    cdef IdDecoder decoder = IdDecoder(core, rules, skip, surface)
    cdef bytes head = decoder.feed(ids)
    cdef bytes tail = decoder.finish()
    return head + tail if tail else head

# The decode rules' values, for spmbpe/_decoding.py (the one place that
# chooses them per reference).
DECODE_CONSTANTS = {
    "RENDER_TEXT": RENDER_TEXT, "RENDER_NOTHING": RENDER_NOTHING,
    "RENDER_SURFACE": RENDER_SURFACE, "RENDER_NORMAL": RENDER_NORMAL,
    "STRIP_NONE": STRIP_NONE, "STRIP_FIRST_ID": STRIP_FIRST_ID,
    "STRIP_FIRST_RENDERED": STRIP_FIRST_RENDERED, "STRIP_WHILE_EMPTY": STRIP_WHILE_EMPTY,
    "STRIP_OUTPUT": STRIP_OUTPUT,
    "BYTES_RAW": BYTES_RAW, "BYTES_EACH": BYTES_EACH, "BYTES_RUN": BYTES_RUN,
    "RULES_SIZE": RULES_SIZE,
}


cdef str _part_text(list batch, Py_ssize_t index):
    """The text of the index-th part of a batch (for an error message)."""
    cdef list parts
    for entry in batch:
        if type(entry) is str:
            if not entry:
                continue
            if index == 0:
                return entry
            index -= 1
            continue
        parts = entry
        if index < len(parts):
            part = parts[index]
            return part[0] if type(part) is tuple and type(part[0]) is str else ""
        index -= len(parts)
    return ""


@cython.auto_pickle(False)
cdef class TokenizerBase:
    """The compiled base of SpmTokenizer (spmbpe/tokenizer.py).

    It holds ``encode_ordinary`` so that the per-line call reaches the merge
    without running Python code: a Python method in between took about a
    third of the time of encoding a short line with a warm cache.
    """

    def _set_direct(self, SpmCore plain_core, SpmCore ordinary_core, bint prefix):
        """The core to hand a str straight to when it is one segment to
        merge (nothing to split out or normalize), else None: `plain_core`
        for special="all", `ordinary_core` for special="none"; `prefix`:
        with the dummy prefix."""
        self.plain_core = plain_core
        self.ordinary_core = ordinary_core
        self.direct_prefix = prefix

    cdef list direct_ids(self, SpmCore core, str text):
        """The ids of `text` as one segment, or None when it holds a lone
        surrogate (the planned path raises the error that names it)."""
        if PyUnicode_GET_LENGTH(text) == 0:
            return []
        try:
            return core.encode_text(text, self.direct_prefix)
        except UnicodeEncodeError:
            return None

    # (Annotations for introspection only: the text is checked below, to
    # give the planned path's errors.)
    @cython.annotation_typing(False)
    def encode(self, text: str, *, special: Union[str, Collection[str]] = "all",
               add_special_tokens: bool = False, enable_sampling: bool = False, alpha: float = 0.1,
               seed: Optional[int] = None) -> List[int]:
        """Token ids of `text`.

        `special`: ``"all"`` matches every special (control, unknown, special
        added) token spelled in the text; ``"none"`` treats them as plain
        text (user-defined pieces are still split out, as llama.cpp and
        sentencepiece do); a collection of token texts allows those and
        raises DisallowedSpecialError for any other one in the text.
        `add_special_tokens`: add BOS/EOS as the vocabulary says
        (``add_bos``/``add_eos``); ``encode`` never adds them otherwise.
        `enable_sampling`: BPE-dropout (subword regularization), as
        sentencepiece's ``encode(..., enable_sampling=True, alpha=...)``:
        each merge about to be made is skipped with probability `alpha`;
        `seed` makes the draw reproducible (default: a fresh random seed).

        >>> tok.encode("Hello world")                            # doctest: +SKIP
        [15043, 3186]
        """
        cdef SpmCore core = None
        cdef list ids
        if type(text) is str and type(special) is str and not enable_sampling:
            if special == "all":
                core = self.plain_core
            elif special == "none":
                core = self.ordinary_core
            if core is not None:
                ids = self.direct_ids(core, <str>text)
                if ids is not None:
                    if add_special_tokens:
                        self._add_boundary_tokens(ids)
                    return ids
        return self._encode_planned(text, special, add_special_tokens, enable_sampling, alpha, seed)

    @cython.annotation_typing(False)
    def encode_ordinary(self, text: str) -> List[int]:
        """``encode(text, special="none")``: special tokens are plain text."""
        cdef list ids
        if self.ordinary_core is not None and type(text) is str:
            ids = self.direct_ids(self.ordinary_core, <str>text)
            if ids is not None:
                return ids
        return self._encode_planned(text, "none", False, False, 0.0, None)


cdef class BatchJob:
    """One encode_batch call shared by threads.

    The texts are gathered once and cut into units of about equal UTF-8
    size.  The calling thread runs `lead`; helper threads run `work`.  Each
    takes a workspace and then the next unit not yet taken until none is
    left, merging without the GIL: a thread that starts late or meets slower
    text takes fewer units, and none waits for the GIL between units.  A
    finished unit's ids are copied out of the workspace, so that `lead`
    builds its Python lists (which needs the GIL, and is the one part no
    other thread can do) between its own units and while it waits, instead
    of after everything.  `close` gives the workspaces back.  (Groups run
    as separate calls each woke a thread and took the GIL twice, and the
    lists were built while the other threads had nothing left to merge.)
    """

    def __cinit__(self):
        self.items = NULL
        self.counts = NULL
        self.first_item = NULL
        self.unit_end = NULL
        self.ends = NULL
        self.unit_ids = NULL
        self.unit_done = NULL
        self.seed_ptr = NULL
        self.n_workers = 0
        self.n_units = 0
        self.next_unit = 0
        self.running = 0
        self.failed = 0
        self.closed = 0
        self.started = 0

    def __init__(self, SpmCore core not None):
        """An empty job: helpers may be started on it (they wait for
        `start`), so that waking them overlaps gathering the texts."""
        self.core = core

    def start(self, list batch, Py_ssize_t units, double alpha=0.0, seeds=None, bint prefix=True):
        """Gives the job its texts: `batch` as for encode_parts_batch, cut
        into about `units` units; with `alpha` > 0, BPE-dropout with text
        t's generator seeded by seeds[t] (array('Q'))."""
        cdef const uint64_t[::1] seed_view = seeds if seeds is not None else _NO_SEEDS
        cdef Py_ssize_t n_parts, t, k, total = 0, share, filled = 0
        if self.batch is not None or self.closed:
            raise RuntimeError("a BatchJob takes one batch")
        self.batch = batch
        self.n_texts = len(batch)
        self.alpha = alpha
        if alpha > 0.0:
            if seed_view.shape[0] < self.n_texts:
                raise ValueError("sampling needs one seed per text")
            self.seeds = seeds
            self.seed_ptr = &seed_view[0] if seed_view.shape[0] else NULL
        n_parts = _count_parts(batch)
        self.items = <BatchPart *>malloc((n_parts + 1) * sizeof(BatchPart))
        self.counts = <int32_t *>malloc((self.n_texts + 1) * sizeof(int32_t))
        self.first_item = <Py_ssize_t *>malloc((self.n_texts + 1) * sizeof(Py_ssize_t))
        self.ends = <size_t *>malloc((self.n_texts + 1) * sizeof(size_t))
        self.unit_end = <Py_ssize_t *>malloc((self.n_texts + 1) * sizeof(Py_ssize_t))
        if self.items == NULL or self.counts == NULL or self.first_item == NULL or self.ends == NULL \
                or self.unit_end == NULL:
            raise MemoryError()
        self.core.gather(batch, self.items, self.counts, prefix)
        # Units of consecutive texts, each about total / units bytes.
        k = 0
        for t in range(self.n_texts):
            self.first_item[t] = k
            k += self.counts[t]
        self.first_item[self.n_texts] = k
        # (The parts gathered: n_parts also counted a part for each empty
        # text, which has none.)
        for k in range(self.first_item[self.n_texts]):
            total += _part_size(&self.items[k])
        share = max(1, total // max(units, 1))
        for t in range(self.n_texts):
            for k in range(self.first_item[t], self.first_item[t + 1]):
                filled += _part_size(&self.items[k])
            if filled >= share or t + 1 == self.n_texts:
                self.unit_end[self.n_units] = t + 1
                self.n_units += 1
                filled = 0
        self.unit_ids = <int32_t **>calloc(self.n_units + 1, sizeof(int32_t *))
        self.unit_done = <uint32_t *>calloc(self.n_units + 1, sizeof(uint32_t))
        if self.unit_ids == NULL or self.unit_done == NULL:
            raise MemoryError()
        spm_store_release_u32(&self.started, 1)

    cdef Workspace *join(self) except? NULL:
        """A workspace for one more worker, or NULL when the job takes no
        more (finished, or as many workers as it holds)."""
        cdef Workspace *w
        if not spm_load_acquire_u32(&self.started) and not spm_load_acquire_u32(&self.closed):
            # (A helper woken before `start`: the caller gathers the texts
            # with the GIL, so wait without it.)
            with nogil:
                while not spm_load_acquire_u32(&self.started) and not spm_load_acquire_u32(&self.closed):
                    spm_yield()
        if self.closed or self.n_workers >= 64 or not self.started:
            return NULL
        w = self.core.acquire()
        w.alpha = self.alpha
        self.workers[self.n_workers] = w
        self.n_workers += 1
        spm_fetch_add_u32(&self.running, 1)
        return w

    def work(self):
        """A helper thread's part: merges units until none is left."""
        cdef Workspace *w = self.join()
        if w == NULL:
            return
        with nogil:
            while self.run_unit(w):
                pass
            # (Release: the leader reads this worker's units once running is 0.)
            spm_sub_release_u32(&self.running, 1)

    cdef bint run_unit(self, Workspace *w) noexcept nogil:
        """Merges the next unit not yet taken into its own buffer; False when
        none is left or a text failed."""
        cdef uint32_t u
        cdef Py_ssize_t lo, hi, failed = -1
        cdef int32_t *ids
        if spm_load_u32(&self.failed):
            return False
        u = spm_fetch_add_u32(&self.next_unit, 1)
        if u >= self.n_units:
            return False
        lo = self.unit_end[u - 1] if u else 0
        hi = self.unit_end[u]
        w.ids_len = 0
        if self.core.encode_items(w, self.items + self.first_item[lo], self.counts + lo, hi - lo,
                                  self.ends + lo, &failed,
                                  self.seed_ptr + lo if self.seed_ptr != NULL else NULL) != OK:
            spm_store_u32(&self.failed, 1)
            return False
        ids = <int32_t *>malloc((w.ids_len + 1) * sizeof(int32_t))
        if ids == NULL:
            spm_store_u32(&self.failed, 1)
            return False
        memcpy(ids, w.ids, w.ids_len * sizeof(int32_t))
        self.unit_ids[u] = ids
        spm_store_release_u32(&self.unit_done[u], 1)
        return True

    def lead(self, bint flat=False):
        """The calling thread's part, and the result: merges units like
        `work`, and builds the lists of every finished unit between its own
        units and while the helpers finish theirs.  Returns what
        encode_parts_batch would, or None when a text failed
        (encode_parts_batch then raises its error)."""
        cdef Workspace *w = self.join()
        cdef list out = None if flat else PyList_New(self.n_texts)
        cdef Py_ssize_t built = 0
        cdef uint8_t *listed = <uint8_t *>calloc(self.n_units + 1, 1)
        cdef bint more = w != NULL
        if listed == NULL:
            if w != NULL:
                spm_sub_release_u32(&self.running, 1)
            raise MemoryError()
        try:
            try:
                while more:
                    if not flat:
                        built += self.list_units(out, listed)
                    with nogil:
                        more = self.run_unit(w)
            finally:
                if w != NULL:
                    spm_sub_release_u32(&self.running, 1)
            # The helpers' last units.
            spm_store_release_u32(&self.closed, 1)
            while spm_load_acquire_u32(&self.running):
                if not flat and built < self.n_units:
                    built += self.list_units(out, listed)
                with nogil:
                    spm_yield()
            if spm_load_u32(&self.failed) or spm_load_u32(&self.next_unit) < self.n_units:
                return None
            if flat:
                return self.flat_ids()
            self.list_units(out, listed)
            return out
        finally:
            free(listed)

    cdef Py_ssize_t list_units(self, list out, uint8_t *listed) except -1:
        """Puts the lists of the texts of every finished unit not yet listed
        into `out`; returns how many units it listed."""
        cdef Py_ssize_t u, t, lo, done = 0
        cdef size_t mark
        for u in range(self.n_units):
            if listed[u] or not spm_load_acquire_u32(&self.unit_done[u]):
                continue
            lo = self.unit_end[u - 1] if u else 0
            mark = 0
            for t in range(lo, self.unit_end[u]):
                item = self.core.id_list(self.unit_ids[u] + mark, self.ends[t] - mark)
                Py_INCREF(item)
                PyList_SET_ITEM(out, t, item)
                mark = self.ends[t]
            listed[u] = 1
            done += 1
        return done

    cdef tuple flat_ids(self):
        """encode_parts_batch's flat result: (ids as uint32 in a bytearray,
        array('q') of each text's end)."""
        cdef Py_ssize_t u, t, lo
        cdef size_t total = 0, at = 0, n
        cdef char *dst
        cdef int64_t[::1] ends_view
        for u in range(self.n_units):
            total += self.ends[self.unit_end[u] - 1]
        ids_out = PyByteArray_FromStringAndSize(NULL, total * sizeof(int32_t))
        ends_out = array("q", bytes(8 * self.n_texts))
        ends_view = ends_out
        dst = PyByteArray_AS_STRING(ids_out)
        for u in range(self.n_units):
            lo = self.unit_end[u - 1] if u else 0
            n = self.ends[self.unit_end[u] - 1]
            memcpy(dst + at * sizeof(int32_t), self.unit_ids[u], n * sizeof(int32_t))
            for t in range(lo, self.unit_end[u]):
                ends_view[t] = at + self.ends[t]
            at += n
        return ids_out, ends_out

    def close(self):
        """Waits for the helpers and gives the workspaces back."""
        self.give_back()

    cdef void give_back(self):
        spm_store_release_u32(&self.closed, 1)
        if spm_load_acquire_u32(&self.running):
            with nogil:
                while spm_load_acquire_u32(&self.running):
                    spm_yield()
        while self.n_workers:
            self.n_workers -= 1
            self.core.release(self.workers[self.n_workers])

    def __dealloc__(self):
        # (A helper holds a reference while it runs, so none is running.)
        cdef Py_ssize_t u
        if self.core is not None:
            self.give_back()
        if self.unit_ids != NULL:
            for u in range(self.n_units):
                free(self.unit_ids[u])
        free(self.items)
        free(self.counts)
        free(self.first_item)
        free(self.unit_end)
        free(self.ends)
        free(self.unit_ids)
        free(self.unit_done)


cdef inline Py_ssize_t _part_size(const BatchPart *part) noexcept nogil:
    """A part's share of the work: its UTF-8 bytes, or 1 for a token id."""
    return part.n if part.token_id < 0 else 1


cdef inline int _check_part(object part, bint with_offsets) except -1:
    """A plan part the core can read (its tuple items are read unchecked),
    else a TypeError: a token id, (token_id, start, end), or (text, prefix[,
    skip, ...]); `with_offsets`: (token_id, start, end) or (text, prefix,
    skip, origin, lead[, align])."""
    if type(part) is tuple:
        if len(<tuple>part) >= 5 or (len(<tuple>part) >= 3 and type((<tuple>part)[0]) is not str):
            return 0
        if not with_offsets and len(<tuple>part) >= 2 and type((<tuple>part)[0]) is str:
            return 0
    elif isinstance(part, int) and not with_offsets:
        return 0
    if with_offsets:
        raise TypeError(f"a part with offsets is (token_id, start, end) or (text, prefix, skip, origin, "
                        f"lead[, align]), not {part!r}")
    raise TypeError(f"a plan part is a token id, (token_id, start, end) or (text, prefix[, skip, ...]), "
                    f"not {part!r}")


cdef Py_ssize_t _count_parts(list batch) except -1:
    """How many parts the texts of an encode_parts_batch batch have."""
    cdef Py_ssize_t n_parts = 0
    cdef object entry
    for entry in batch:
        if type(entry) is list:
            n_parts += len(<list>entry)
        elif isinstance(entry, str):
            n_parts += 1
        else:
            raise TypeError(f"text must be str, not {type(entry).__name__}")
    return n_parts


cdef inline Py_ssize_t _as_id(object item, int32_t n) except -1:
    cdef Py_ssize_t token_id
    try:
        token_id = item
    except TypeError:
        raise TypeError(f"token ids must be integers, not {type(item).__name__}") from None
    except OverflowError:
        raise InvalidTokenIdError(item, n) from None
    if token_id < 0 or token_id >= n:
        raise InvalidTokenIdError(item, n)
    return token_id


# SpmCore.flags when no piece is resplit (never read then).
_NO_FLAGS = b"\0"

# encode_parts_batch's seeds when there are none.
_NO_SEEDS = array("Q")


def _offsets_of(list chunks):
    """Prefix sums of the byte lengths of `chunks` (len(chunks) + 1 values),
    as array('q')."""
    out = array("q", bytes(8 * (len(chunks) + 1)))
    cdef int64_t[::1] offsets = out
    cdef Py_ssize_t i
    cdef int64_t total = 0
    cdef bytes chunk
    for i in range(len(chunks)):
        chunk = chunks[i]
        offsets[i] = total
        total += PyBytes_GET_SIZE(chunk)
    offsets[len(chunks)] = total
    return out
