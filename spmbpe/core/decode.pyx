# Ids back to bytes (declared in core/decode.pxd).

cdef inline int hex_value(char c) noexcept nogil:
    if c'0' <= c <= c'9':
        return c - c'0'
    if c'A' <= c <= c'F':
        return c - c'A' + 10
    if c'a' <= c <= c'f':
        return c - c'a' + 10
    return -1


cdef int byte_piece_value(const char *s, Py_ssize_t n) noexcept nogil:
    """The byte a piece s[0:n] spelled ``<0xNN>`` stands for (two hex
    digits, either case, as llama.cpp's strtol reads them), else -1."""
    cdef int hi, lo
    if n != 6 or memcmp(s, b"<0x", 3) != 0 or s[5] != c'>':
        return -1
    hi = hex_value(s[3])
    lo = hex_value(s[4])
    if hi < 0 or lo < 0:
        return -1
    return hi * 16 + lo


def byte_piece(bytes piece):
    """The byte the piece ``<0xNN>`` (UTF-8) stands for, else -1."""
    return byte_piece_value(PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))


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


cdef bytes decode_ids(const CoreTables *t, object ids, const uint8_t[::1] skip, bint strip_prefix):
    """The bytes of `ids`, each id rendered as llama.cpp's token_to_piece
    and sentencepiece's decoder do: a BYTE piece ``<0xNN>`` as its byte;
    CONTROL, UNKNOWN and USER_DEFINED pieces as spelled; every other
    piece with U+2581 as a space.

    Ids whose `skip` byte is nonzero are left out (`skip` None: none
    are).  With `strip_prefix`, one leading space of the first rendered
    piece is removed: the dummy prefix the encoder added.  (Rendered on
    the fly rather than from a table: a second copy of the vocabulary
    would cost memory.)
    """
    cdef const char *arena = t.arena
    cdef const int32_t *offsets = t.offsets
    cdef const uint8_t *kinds = t.types
    cdef char *buf = NULL
    cdef char *grown
    cdef size_t length = 0, cap = 0, want
    cdef int64_t a, e
    cdef Py_ssize_t token_id
    cdef bint first = True
    cdef uint8_t kind
    cdef int value
    cdef bint skipping = skip is not None
    try:
        for item in ids:
            token_id = _as_id(item, t.n_pieces)
            if skipping and skip[token_id]:
                continue
            a = offsets[token_id]
            e = offsets[token_id + 1]
            want = length + <size_t>(e - a)
            if want > cap:
                cap = want * 2 if want > 64 else 128
                grown = <char *>realloc(buf, cap)
                if grown == NULL:
                    raise MemoryError()
                buf = grown
            kind = kinds[token_id]
            if kind == SPM_TYPE_BYTE:
                value = byte_piece_value(arena + a, e - a)
                if value >= 0:
                    if first:
                        first = False
                        if strip_prefix and value == 0x20:
                            continue
                    buf[length] = <char>value
                    length += 1
                    continue
            if kind == SPM_TYPE_CONTROL or kind == SPM_TYPE_UNKNOWN or kind == SPM_TYPE_USER_DEFINED:
                if first:
                    first = False
                    if strip_prefix and e > a and arena[a] == c' ':
                        a += 1
                memcpy(buf + length, arena + a, e - a)
                length += e - a
                continue
            if first:
                first = False
                if strip_prefix and e > a:
                    if arena[a] == c' ':
                        a += 1
                    elif e - a >= 3 and memcmp(arena + a, MARKER, 3) == 0:
                        a += 3
            while a < e:
                if e - a >= 3 and memcmp(arena + a, MARKER, 3) == 0:
                    buf[length] = c' '
                    length += 1
                    a += 3
                else:
                    buf[length] = arena[a]
                    length += 1
                    a += 1
        return PyBytes_FromStringAndSize(buf, length)
    finally:
        free(buf)
