# The bytes of the command line's outputs (spmbpe/_arrays.py, spmbpe/_cli_encode.py):
# array outputs' ids and document indexes as the training tools' files hold
# them, little-endian on any host, and the text outputs' lines of decimal ids;
# and encode_batch's flat result, joined from its groups' results.  Made here
# rather than with NumPy, so that encoding text needs no NumPy (its import
# and its string formatting cost more than the encoding).
#
# Ids come in as native uint32 (the core's output, or a NumPy array),
# offsets as native int64: n + 1 starts of n documents.  Each result is a
# new bytearray (but ids_le's of ids already little-endian).

cdef bint _LITTLE_ENDIAN_HOST = sys.byteorder == "little"


cdef inline void _put_le16(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>v
    p[1] = <uint8_t>(v >> 8)


cdef inline void _put_le32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>v
    p[1] = <uint8_t>(v >> 8)
    p[2] = <uint8_t>(v >> 16)
    p[3] = <uint8_t>(v >> 24)


cdef inline void _put_le64(uint8_t *p, uint64_t v) noexcept nogil:
    _put_le32(p, <uint32_t>v)
    _put_le32(p + 4, <uint32_t>(v >> 32))


cdef inline uint32_t _get_le32(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef Py_ssize_t _documents(const int64_t[::1] offsets) except -1:
    """How many documents `offsets` (each one's start, then the end) delimit."""
    if offsets.shape[0] < 1:
        raise ValueError("offsets hold at least the end")
    return offsets.shape[0] - 1


cdef int _check_stretches(Py_ssize_t n_ids, const int64_t[::1] offsets, Py_ssize_t n) except -1:
    """Whether each document's offsets are a stretch of the `n_ids` ids
    (ValueError naming the first that is not)."""
    cdef Py_ssize_t i
    for i in range(n):
        if offsets[i] < 0 or offsets[i] > offsets[i + 1] or offsets[i + 1] > n_ids:
            raise ValueError(f"offsets[{i}:{i + 2}] is not a stretch of the ids")
    return 0


cdef object _new_out(Py_ssize_t n, Py_ssize_t itemsize):
    """A new bytearray for `n` items of `itemsize` bytes."""
    return PyByteArray_FromStringAndSize(NULL, n * itemsize)


cdef inline uint8_t *_out(object buf) noexcept:
    return <uint8_t *>PyByteArray_AS_STRING(buf)


def ids_le(object ids, int itemsize, uint32_t limit):
    """`ids` as little-endian integers of `itemsize` bytes (2 or 4).  An id
    above `limit` (what the output's dtype holds) raises OverflowError
    with that id.  4-byte ids on a little-endian host are already that:
    their own bytes come back (a memoryview), not a copy."""
    cdef const uint32_t[::1] view = ids
    cdef Py_ssize_t n = view.shape[0], i, bad = -1
    cdef uint8_t *o
    cdef bint as_they_are = itemsize == 4 and _LITTLE_ENDIAN_HOST
    if itemsize != 2 and itemsize != 4:
        raise ValueError(f"itemsize must be 2 or 4, not {itemsize}")
    if as_they_are:
        with nogil:
            for i in range(n):
                if view[i] > limit:
                    bad = i
                    break
        if bad >= 0:
            raise OverflowError(view[bad])
        return memoryview(ids).cast("B")
    buf = _new_out(n, itemsize)
    o = _out(buf)
    with nogil:
        for i in range(n):
            if view[i] > limit:
                bad = i
                break
            if itemsize == 2:
                _put_le16(o + 2 * i, view[i])
            else:
                _put_le32(o + 4 * i, view[i])
    if bad >= 0:
        raise OverflowError(view[bad])
    return buf


def lengths_le32(const int64_t[::1] offsets):
    """Each document's length in ids, offsets[i + 1] - offsets[i], as
    little-endian int32 (Megatron's .idx).  A length past 2^31 - 1 raises
    OverflowError with that length."""
    cdef Py_ssize_t n = _documents(offsets), i, bad = -1
    cdef int64_t length
    cdef uint8_t *o
    buf = _new_out(n, 4)
    o = _out(buf)
    with nogil:
        for i in range(n):
            length = offsets[i + 1] - offsets[i]
            if length < 0 or length > INT32_MAX:
                bad = i
                break
            _put_le32(o + 4 * i, <uint32_t>length)
    if bad >= 0:
        raise OverflowError(offsets[bad + 1] - offsets[bad])
    return buf


def ends_le64(const int64_t[::1] offsets, int64_t base):
    """offsets[1:] - offsets[0] + base as little-endian 64-bit integers:
    where each document ends, counted from `base` (a .npy output's next
    start, datatrove's end of document)."""
    cdef Py_ssize_t n = _documents(offsets), i
    cdef int64_t shift
    cdef uint8_t *o
    buf = _new_out(n, 8)
    o = _out(buf)
    shift = base - offsets[0]
    with nogil:
        for i in range(n):
            _put_le64(o + 8 * i, <uint64_t>(offsets[i + 1] + shift))
    return buf


def megatron_pointers(const uint8_t[::1] lengths, int itemsize, int64_t pointer):
    """(each sequence's byte offset in the .bin, as little-endian int64,
    the offset after the last): the sequences' lengths are little-endian
    int32 (what lengths_le32 wrote) and the first starts at `pointer`."""
    cdef Py_ssize_t n = lengths.shape[0] // 4, i
    cdef uint8_t *o
    if lengths.shape[0] % 4:
        raise ValueError("a whole number of int32 lengths")
    buf = _new_out(n, 8)
    o = _out(buf)
    with nogil:
        for i in range(n):
            _put_le64(o + 8 * i, <uint64_t>pointer)
            pointer += <int64_t>_get_le32(&lengths[4 * i]) * itemsize
    return buf, pointer


def counting_le64(int64_t start, Py_ssize_t n):
    """start, start + 1, ..., start + n - 1 as little-endian int64
    (Megatron's document index)."""
    cdef Py_ssize_t i
    cdef uint8_t *o
    if n < 0:
        raise ValueError(f"n must be at least 0, not {n}")
    buf = _new_out(n, 8)
    o = _out(buf)
    with nogil:
        for i in range(n):
            _put_le64(o + 8 * i, <uint64_t>(start + i))
    return buf


def ids_around(const uint32_t[::1] ids, const int64_t[::1] offsets, int64_t bos, int64_t eos):
    """(ids, offsets) of the documents with `bos` before and `eos` after
    each (-1: none), native uint32 and native int64 as the input: what
    encode(add_special_tokens=True) adds to each."""
    cdef Py_ssize_t n = _documents(offsets), i, k, at = 0
    cdef int extra = (bos >= 0) + (eos >= 0)
    cdef uint32_t *o
    cdef int64_t *starts
    out_offsets = _new_out(n + 1, 8)
    _check_stretches(ids.shape[0], offsets, n)
    total = (offsets[n] - offsets[0] if n else 0) + n * extra
    out = _new_out(total, 4)
    o = <uint32_t *>PyByteArray_AS_STRING(out)
    starts = <int64_t *>PyByteArray_AS_STRING(out_offsets)
    with nogil:
        for i in range(n):
            starts[i] = at
            if bos >= 0:
                o[at] = <uint32_t>bos
                at += 1
            for k in range(offsets[i], offsets[i + 1]):
                o[at] = ids[k]
                at += 1
            if eos >= 0:
                o[at] = <uint32_t>eos
                at += 1
        starts[n] = at
    return out, out_offsets


def join_flat(list results, owners, Py_ssize_t n_texts, int64_t bos, int64_t eos):
    """encode_batch's flat result, (ids, offsets) as native uint32 and int64
    bytearrays, from its groups' results -- (ids, offsets) each, the same
    kinds -- with `bos` before and `eos` after each text (-1: none).
    `owners`: for each group, the text of each of its units (None: every
    unit a whole text, in order); a text's units come in order (a text cut
    for the threads), and a text may have none (it gives no ids)."""
    cdef Py_ssize_t n_results = len(results), g, u, units, t = 0, n_ids
    cdef int extra = (bos >= 0) + (eos >= 0)
    cdef const uint8_t[::1] ids_bytes
    cdef const uint8_t[::1] offsets_bytes
    cdef const int64_t *offs
    cdef int64_t *starts
    cdef int64_t *cursor
    cdef int64_t length
    cdef uint32_t *o
    cdef list owned
    if n_texts < 0:
        raise ValueError(f"n_texts must be at least 0, not {n_texts}")
    if n_results == 1 and owners is None and extra == 0:
        # One job's result as it is (a copy into new pages is a page fault
        # per page, for nothing).
        return results[0]
    if owners is not None and len(owners) != n_results:
        raise ValueError(f"{len(owners)} owner lists for {n_results} results")
    out_offsets = _new_out(n_texts + 1, 8)
    starts = <int64_t *>PyByteArray_AS_STRING(out_offsets)
    _text_starts(results, owners, n_texts, extra, starts)
    out = _new_out(starts[n_texts], 4)
    o = <uint32_t *>PyByteArray_AS_STRING(out)
    cursor = <int64_t *>malloc(max(n_texts, 1) * sizeof(int64_t))
    if cursor == NULL:
        raise MemoryError()
    try:
        for t in range(n_texts):
            cursor[t] = starts[t]
            if bos >= 0:
                o[cursor[t]] = <uint32_t>bos
                cursor[t] += 1
            if eos >= 0:
                o[starts[t + 1] - 1] = <uint32_t>eos
        t = 0
        for g in range(n_results):
            ids_bytes, offsets_bytes = results[g]
            units, n_ids = _result_units(ids_bytes, offsets_bytes)
            offs = <const int64_t *>&offsets_bytes[0]
            owned = None if owners is None else <list>owners[g]
            for u in range(units):
                if owned is not None:
                    t = owned[u]
                length = offs[u + 1] - offs[u]
                if length:
                    memcpy(o + cursor[t], &ids_bytes[4 * offs[u]], <size_t>length * 4)
                    cursor[t] += length
                if owned is None:
                    t += 1
    finally:
        free(cursor)
    return out, out_offsets


cdef int _text_starts(list results, owners, Py_ssize_t n_texts, int extra, int64_t *starts) except -1:
    """join_flat's offsets: where each text's ids start in the joined
    result (n_texts + 1 of them, from 0), `extra` ids added to each text;
    the results and their owners checked on the way."""
    cdef Py_ssize_t g, u, units, t = 0, n_ids
    cdef const uint8_t[::1] ids_bytes
    cdef const uint8_t[::1] offsets_bytes
    cdef const int64_t *offs
    cdef list owned
    memset(starts, 0, (n_texts + 1) * sizeof(int64_t))
    # Each text's length, in starts[t + 1] (a text's units may be in
    # several groups).
    for g in range(len(results)):
        ids_bytes, offsets_bytes = results[g]
        units, n_ids = _result_units(ids_bytes, offsets_bytes)
        offs = <const int64_t *>&offsets_bytes[0]
        owned = None if owners is None else <list?>owners[g]
        if owned is not None and len(owned) != units:
            raise ValueError(f"result {g} has {units} units, its owners {len(owned)}")
        for u in range(units):
            if owned is not None:
                t = owned[u]
            if not 0 <= t < n_texts:
                raise ValueError(f"result {g} unit {u} belongs to text {t} of {n_texts}")
            starts[t + 1] += offs[u + 1] - offs[u]
            if owned is None:
                t += 1
    if owners is None and t != n_texts:
        raise ValueError(f"{t} units for {n_texts} texts")
    for t in range(n_texts):
        starts[t + 1] += starts[t] + extra
    return 0


cdef tuple _result_units(const uint8_t[::1] ids_bytes, const uint8_t[::1] offsets_bytes):
    """(units, ids) of one group's flat result: its native int64 offsets
    must be a stretch of its native uint32 ids each."""
    cdef Py_ssize_t n_ids, units, u
    cdef const int64_t *offs
    if ids_bytes.shape[0] % 4 or offsets_bytes.shape[0] % 8 or offsets_bytes.shape[0] < 8:
        raise ValueError("a result is whole uint32 ids and int64 offsets, at least the end")
    n_ids = ids_bytes.shape[0] // 4
    units = offsets_bytes.shape[0] // 8 - 1
    offs = <const int64_t *>&offsets_bytes[0]
    for u in range(units):
        if offs[u] < 0 or offs[u] > offs[u + 1] or offs[u + 1] > n_ids:
            raise ValueError(f"offsets[{u}:{u + 2}] of a result is not a stretch of its ids")
    return units, n_ids


cdef inline Py_ssize_t _put_decimal(uint8_t *p, uint32_t v) noexcept nogil:
    """v's decimal digits at p; how many."""
    cdef uint8_t digits[10]
    cdef Py_ssize_t n = 0, k
    while True:
        digits[n] = <uint8_t>(48 + v % 10)
        n += 1
        v //= 10
        if v == 0:
            break
    for k in range(n):
        p[k] = digits[n - 1 - k]
    return n


def format_ids(const uint32_t[::1] ids, const int64_t[::1] offsets, bint jsonl):
    """The documents' ids as ASCII text, a line each: decimal ids separated
    by a space (the txt output, ``" ".join``), or as a JSON array without
    spaces (jsonl, ``"[1,2]"``)."""
    cdef Py_ssize_t n = _documents(offsets), i, k, at = 0, total
    cdef uint8_t *o
    cdef uint8_t sep = b"," if jsonl else b" "
    _check_stretches(ids.shape[0], offsets, n)
    total = offsets[n] - offsets[0] if n else 0
    buf = _new_out(total * 11 + n * 3, 1)  # 10 digits and a separator an id, [ ] and a newline a document
    o = _out(buf)
    with nogil:
        for i in range(n):
            if jsonl:
                o[at] = b"["
                at += 1
            for k in range(offsets[i], offsets[i + 1]):
                if k > offsets[i]:
                    o[at] = sep
                    at += 1
                at += _put_decimal(o + at, ids[k])
            if jsonl:
                o[at] = b"]"
                at += 1
            o[at] = b"\n"
            at += 1
    PyByteArray_Resize(buf, at)
    return buf
