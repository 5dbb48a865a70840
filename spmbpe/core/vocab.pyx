# The vocabulary table (PieceTable) and the scans that read a model file's
# pieces into one (declared in core/vocab.pxd).

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
        cdef const char *arena = PyBytes_AS_STRING(self.arena)
        return [PyUnicode_DecodeUTF8(arena + self.offsets[i], self.offsets[i + 1] - self.offsets[i], NULL)
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


def id_order_ranks(Py_ssize_t n):
    """The merge rank of each of n pieces merged in id order, lower id
    first (-id, as array('f')): a vocabulary without scores, such as a
    tokenizer.json's, without a list of Python floats."""
    if n < 0:
        raise ValueError("n must not be negative")
    out = array("f", bytes(4 * n))
    cdef float[::1] view = out
    cdef Py_ssize_t i
    for i in range(n):
        view[i] = -<float>i
    return out


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
    """Strict UTF-8, as Python's decoder accepts it (spm_utf8_valid_prefix);
    most pieces are ASCII, checked a word at a time.  `padded`: 8 bytes may
    be read past s + n (spm_head8)."""
    if spm_ascii_after_marker(<const char *>s, <size_t>n, padded):
        return True
    return spm_utf8_valid_prefix(<const char *>s, <size_t>n) == <size_t>n


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


cdef carray.array _INT32_ARRAY = array("i")
cdef carray.array _INT64_ARRAY = array("q")
cdef carray.array _FLOAT_ARRAY = array("f")


def scan_model_pieces(const uint8_t[::1] buf, Py_ssize_t pos, int64_t base):
    """Reads consecutive ModelProto `pieces` entries in the common layout from
    buf[pos:]: key 0x0A, one-byte length, then the piece string (0x0A,
    one-byte length), the score (0x15, a float32) and optionally the type
    (0x18, 1..6), in that order -- what every sentencepiece serializer writes.  Stops at the first entry in any other
    shape, which the caller parses with the general reader.

    Returns (arena, offsets, scores, types, end, bad, bad_at): the piece
    bytes back to back; an array('q') of count + 1 offsets, `base` then each
    piece's end plus `base`; an array('f') of the scores as the file's 4
    little-endian bytes (the caller swaps them on a big-endian machine); one
    type byte per piece; where the scan stopped; and the index in this run
    of the first piece that is not valid UTF-8 and where its string starts
    in buf, or -1 and -1.  This is the `.model`
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
            if buf[pe + 5] != 0x18 or t < SPM_TYPE_NORMAL or t > SPM_TYPE_BYTE:
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
    cdef Py_ssize_t i, bad = -1, bad_at = -1
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
                bad, bad_at = i, ps
        at += sl
        o[i + 1] = base + at
        memcpy(&sc[i], &buf[pe + 1], 4)
        ty[i] = <char>(buf[pe + 6] if end == pe + 7 else SPM_TYPE_NORMAL)
        p = end
    return arena, offsets, scores, types, p, bad, bad_at


def utf8_pieces(bytes arena, const int64_t[::1] offsets):
    """The text of each piece arena[offsets[i]:offsets[i + 1]], as
    ``.decode("utf-8")`` gives it (UnicodeDecodeError the same), without a
    bytes object per piece."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, size = PyBytes_GET_SIZE(arena)
    cdef const char *data = PyBytes_AS_STRING(arena)
    if n < 0:
        raise ValueError("offsets hold at least the end")
    for i in range(n):
        if offsets[i] < 0 or offsets[i] > offsets[i + 1] or offsets[i + 1] > size:
            raise ValueError(f"offsets[{i}:{i + 2}] is not a stretch of the arena")
    return [PyUnicode_DecodeUTF8(data + offsets[i], offsets[i + 1] - offsets[i], NULL) for i in range(n)]


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
