# A str's characters to the encode kernel, read as CPython stores them
# (PEP 393, through the documented PyUnicode_KIND/DATA/READ macros), and
# where a long text may be cut.

# A text longer than two of these is converted and encoded a block of this
# many bytes at a time (encode_str_block): no UTF-8 copy of the whole str
# is made, and CPython keeps none on it.
cdef enum:
    BLOCK_BYTES = 1 << 16


cdef inline bint blocks_apply(const CoreTables *t) noexcept nogil:
    """Whether a long text may be encoded a block at a time: each block
    ends before a space that follows an ASCII character other than a
    space, a point no merge crosses when the vocabulary is chunked."""
    return t.rules.chunked and t.rules.escape_spaces


cdef inline bint by_str_blocks(const CoreTables *t, str text) noexcept:
    """Whether a one-segment text is read from its str a block at a time
    (SpmCore.encode_long): longer than two of its blocks (str_block_end),
    in a vocabulary whose long texts may be cut.  (Most texts are short:
    the first test decides.)"""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    return n > BLOCK_BYTES // 2 and n > 2 * (BLOCK_BYTES // PyUnicode_KIND(text)) and blocks_apply(t)


cdef inline bint short_from_storage(str text) noexcept:
    """Whether a text short enough to be encoded whole is read as CPython
    stores it rather than as its UTF-8: not ASCII (an ASCII str is its own
    UTF-8).  Asked for, the UTF-8 copy would stay on the caller's str for
    its lifetime."""
    return not PyUnicode_IS_ASCII(text) and PyUnicode_GET_LENGTH(text) <= BLOCK_BYTES // 2


cdef Py_ssize_t str_block_end(int kind, const void *data, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """Where the block of a str's characters data[start:n] (`kind` bytes
    each) that starts at `start` ends: before the first space that follows
    an ASCII character other than a space, at least a block's worth of
    bytes on (BLOCK_BYTES // kind characters)."""
    cdef Py_ssize_t end = start + BLOCK_BYTES // kind
    if end >= n:
        return n
    return <Py_ssize_t>spm_ucs_space_after_ascii(kind, data, <size_t>end, <size_t>n)


cdef int encode_str_block(const CoreTables *t, Workspace *w, int kind, bint ascii, const void *data,
                          Py_ssize_t start, Py_ssize_t end, bint prefix) noexcept nogil:
    """A block of a str: its characters data[start:end] (`kind` bytes each;
    `ascii`: the str is ASCII, its data already UTF-8) encoded, the ids
    appended.  ERR_SURROGATE when the block holds a surrogate."""
    cdef const char *src
    cdef Py_ssize_t n = ws_utf8_of(w, kind, ascii, data, <size_t>start, <size_t>end, &src)
    if n < 0:
        return <int>n
    return encode_span(t, w, src, n, prefix)


cdef list find_split_points(const CoreTables *t, str text, const char *src, Py_ssize_t n, bint prefix,
                            Py_ssize_t parts):
    """SpmCore.split_points for the UTF-8 src[0:n] of `text` (chunked, n > 0,
    parts >= 2): the character offsets of the chunk boundaries at or after
    each equal share of the text -- between chunks, or within a chunk that
    the kernel cuts further (a run of Japanese)."""
    cdef Py_ssize_t i = 0, start = 0, at, c = 0, j, last = 0, cut, open_end = 0
    cdef bint wide = False
    cdef list out = []
    for j in range(1, parts):
        at = n * j // parts
        while i < n and (i < at or i == 0):
            start = i
            i = chunk_end(t, src, i, n, prefix, &wide, &open_end)
        cut = i
        if t.rules.cut_chars and (wide or i - open_end > FINE_BYTES) and start < at < i:
            cut = max(at, open_end)
            while (<uint8_t>src[cut] & 0xC0) == 0x80:
                cut += 1
            while cut < i and not fine_cut_at(t, src, start, open_end, cut, n):
                cut += char_len(src, cut, i)
        if cut >= n:
            break
        if cut > last:
            out.append(cut)
            last = cut
    # Byte offsets -> character offsets of `text`.
    if out:
        j = 0
        for i in range(n):
            if j < len(out) and out[j] == i:
                out[j] = c
                j += 1
            if (<uint8_t>src[i] & 0xC0) != 0x80:
                c += 1
    return out
