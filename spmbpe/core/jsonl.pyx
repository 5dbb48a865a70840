# The text fields of JSONL lines, for the command line's reader
# (spmbpe/_cli_read.py): each line one JSON object, each wanted field a JSON
# string, decoded here in one pass over the block (json.loads, line by
# line, cost more than encoding the text).
#
# Only the plain case is read here, a strict subset of what json.loads reads,
# read as json.loads reads it: a line of JSON whitespace is no document; any
# other line is an object (objects, arrays, strings, numbers, true, false and
# null inside, at most 64 deep), with every wanted field a string without a
# lone surrogate.  For anything else -- an error, NaN or Infinity, a field that
# is not a string, a lone surrogate, a line blank only by Unicode's
# whitespace -- the line is handed back as it is, and the reader takes
# json.loads's way for it, which gives its document or its error.

cdef enum:
    _JSON_DEPTH = 64

cdef inline Py_ssize_t _json_ws(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    # JSON's whitespace (a JSONL line holds no "\n"; a whole document may).
    while i < n and (s[i] == 32 or s[i] == 10 or s[i] == 9 or s[i] == 13):
        i += 1
    return i


cdef inline int _hex4(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The value of the 4 hex digits at s[i], or -1."""
    cdef int v = 0, k, c
    if i + 4 > n:
        return -1
    for k in range(4):
        c = s[i + k]
        if 48 <= c <= 57:
            v = v * 16 + c - 48
        elif 97 <= c <= 102:
            v = v * 16 + c - 87
        elif 65 <= c <= 70:
            v = v * 16 + c - 55
        else:
            return -1
    return v


cdef inline Py_ssize_t _put_utf8(uint8_t *o, Py_ssize_t at, uint32_t cp) noexcept nogil:
    if cp < 0x80:
        o[at] = <uint8_t>cp
        return at + 1
    if cp < 0x800:
        o[at] = <uint8_t>(0xC0 | (cp >> 6))
        o[at + 1] = <uint8_t>(0x80 | (cp & 0x3F))
        return at + 2
    if cp < 0x10000:
        o[at] = <uint8_t>(0xE0 | (cp >> 12))
        o[at + 1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
        o[at + 2] = <uint8_t>(0x80 | (cp & 0x3F))
        return at + 3
    o[at] = <uint8_t>(0xF0 | (cp >> 18))
    o[at + 1] = <uint8_t>(0x80 | ((cp >> 12) & 0x3F))
    o[at + 2] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
    o[at + 3] = <uint8_t>(0x80 | (cp & 0x3F))
    return at + 4


cdef Py_ssize_t _json_string(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t *o,
                             Py_ssize_t *o_len) noexcept nogil:
    """The JSON string at s[i] (a '"'): the position after it, or -1 (not
    plain).  With `o`, its UTF-8 decoded there (o_len: how many bytes; the
    decoded text is never longer than the string's source, but it is
    written 8 bytes at a time: `o` has room for as many bytes as s[i:n])."""
    cdef Py_ssize_t at = 0
    cdef int c, u, u2, plain
    i += 1
    while i < n:
        if i + 8 <= n:
            # The plain bytes 8 at a time, up to the next '"', '\\' or
            # control character.
            plain = spm_json_plain8(<const char *>s + i)
            if o != NULL:
                memcpy(o + at, s + i, 8)
                at += plain
            i += plain
            if plain == 8:
                continue
        c = s[i]
        if c == 34:  # '"'
            if o != NULL:
                o_len[0] = at
            return i + 1
        if c < 0x20:
            return -1  # a control character: json.loads (strict) refuses it
        if c != 92:  # not '\\': the byte itself (the block is valid UTF-8)
            if o != NULL:
                o[at] = <uint8_t>c
                at += 1
            i += 1
            continue
        if i + 1 >= n:
            return -1
        c = s[i + 1]
        if c == 117:  # 'u'
            u = _hex4(s, i + 2, n)
            if u < 0:
                return -1
            i += 6
            if 0xD800 <= u <= 0xDBFF:
                # A pair makes one character; a lone half is not plain.
                if i + 1 < n and s[i] == 92 and s[i + 1] == 117:
                    u2 = _hex4(s, i + 2, n)
                    if 0xDC00 <= u2 <= 0xDFFF:
                        u = 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00)
                        i += 6
                    else:
                        return -1
                else:
                    return -1
            elif 0xDC00 <= u <= 0xDFFF:
                return -1
            if o != NULL:
                at = _put_utf8(o, at, <uint32_t>u)
            continue
        if c == 34 or c == 92 or c == 47:  # " \ /
            u = c
        elif c == 98:  # b
            u = 8
        elif c == 102:  # f
            u = 12
        elif c == 110:  # n
            u = 10
        elif c == 114:  # r
            u = 13
        elif c == 116:  # t
            u = 9
        else:
            return -1
        if o != NULL:
            o[at] = <uint8_t>u
            at += 1
        i += 2
    return -1


cdef inline Py_ssize_t _json_digits(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and 48 <= s[i] <= 57:
        i += 1
    return i


cdef Py_ssize_t _json_number(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The position after the JSON number at s[i], or -1."""
    cdef Py_ssize_t start
    if i < n and s[i] == 45:  # '-'
        i += 1
    if i >= n or not (48 <= s[i] <= 57):
        return -1  # (-Infinity too: not plain)
    i = i + 1 if s[i] == 48 else _json_digits(s, i, n)
    if i < n and s[i] == 46:  # '.'
        start = i + 1
        i = _json_digits(s, start, n)
        if i == start:
            return -1
    if i < n and (s[i] == 101 or s[i] == 69):  # e E
        start = i + 1
        if start < n and (s[start] == 43 or s[start] == 45):
            start += 1
        i = _json_digits(s, start, n)
        if i == start:
            return -1
    return i


cdef inline bint _json_word(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, const char *word,
                            Py_ssize_t length) noexcept nogil:
    return i + length <= n and memcmp(s + i, word, <size_t>length) == 0


cdef inline Py_ssize_t _json_key(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t *key,
                                  Py_ssize_t *key_len) noexcept nogil:
    """The member name at s[i] (decoded into `key` unless NULL) and the ':'
    after it: the position of the member's value, or -1."""
    if i >= n or s[i] != 34:  # '"'
        return -1
    i = _json_string(s, i, n, key, key_len)
    if i < 0:
        return -1
    i = _json_ws(s, i, n)
    if i >= n or s[i] != 58:  # ':'
        return -1
    return _json_ws(s, i + 1, n)


cdef inline Py_ssize_t _json_next(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int close,
                                  bint *more) noexcept nogil:
    """After a member or an element that ends at s[i]: the position of the
    next one after a ',' (more[0] set), or the position after the `close`
    that ends the object or array (more[0] cleared); -1 for anything else."""
    i = _json_ws(s, i, n)
    if i < n and s[i] == 44:  # ','
        more[0] = True
        return _json_ws(s, i + 1, n)
    if i < n and s[i] == close:
        more[0] = False
        return i + 1
    return -1


cdef Py_ssize_t _json_value(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int depth) noexcept nogil:
    """The position after the JSON value at s[i] (checked, not kept), or -1."""
    cdef int c
    cdef bint more
    if i >= n:
        return -1
    c = s[i]
    if c == 34:
        return _json_string(s, i, n, NULL, NULL)
    if c == 123 or c == 91:  # { [
        if depth >= _JSON_DEPTH:
            return -1
        i = _json_ws(s, i + 1, n)
        if i < n and s[i] == c + 2:  # } ]
            return i + 1
        more = True
        while more:
            if c == 123:
                i = _json_key(s, i, n, NULL, NULL)
                if i < 0:
                    return -1
            i = _json_value(s, i, n, depth + 1)
            if i < 0:
                return -1
            i = _json_next(s, i, n, c + 2, &more)
            if i < 0:
                return -1
        return i
    if c == 116:
        return i + 4 if _json_word(s, i, n, b"true", 4) else -1
    if c == 102:
        return i + 5 if _json_word(s, i, n, b"false", 5) else -1
    if c == 110:
        return i + 4 if _json_word(s, i, n, b"null", 4) else -1
    return _json_number(s, i, n)


cdef struct _Fields:
    # The wanted fields' names (UTF-8), and where a line's values go: field
    # k's decoded text at values + k * stride, its length in lengths[k]
    # (-1: absent, or not a string).
    Py_ssize_t n
    const char **names
    Py_ssize_t *name_lens
    uint8_t *key
    uint8_t *values
    Py_ssize_t stride
    Py_ssize_t *lengths


cdef int _plain_line(const uint8_t *s, Py_ssize_t i, Py_ssize_t end, _Fields *f) noexcept nogil:
    """The line s[i:end]: 1 when it is the plain case, with each field's
    text decoded where `f` says; 0 when it is JSON whitespace (no
    document); -1 when it is anything else."""
    cdef Py_ssize_t k, key_len
    cdef bint more = True
    i = _json_ws(s, i, end)
    if i == end:
        return 0
    if s[i] != 123:  # '{'
        return -1
    for k in range(f.n):
        f.lengths[k] = -1
    i = _json_ws(s, i + 1, end)
    if i < end and s[i] == 125:  # '}': no field at all
        return -1
    while more:
        i = _json_key(s, i, end, f.key, &key_len)
        if i < 0:
            return -1
        k = 0
        while k < f.n and not (key_len == f.name_lens[k] and memcmp(f.key, f.names[k], <size_t>key_len) == 0):
            k += 1
        if k < f.n and i < end and s[i] == 34:
            i = _json_string(s, i, end, f.values + k * f.stride, &f.lengths[k])
            if i < 0:
                return -1
        else:
            i = _json_value(s, i, end, 1)
            if i < 0:
                return -1
            if k < f.n:
                f.lengths[k] = -1  # a field that is not a string (unless a later one is)
        i = _json_next(s, i, end, 125, &more)
        if i < 0:
            return -1
    if _json_ws(s, i, end) != end:
        return -1  # extra data
    for k in range(f.n):
        if f.lengths[k] < 0:
            return -1
    return 1


cdef class _FieldScratch:
    """A _Fields for `fields` (a list of bytes) over blocks of up to `n`
    bytes, and the memory it points into (a decoded string is never longer
    than its source)."""
    cdef _Fields f
    cdef list names
    cdef object memory

    def __cinit__(self, list fields, Py_ssize_t n):
        cdef Py_ssize_t k, nf = len(fields)
        self.names = [bytes(name) for name in fields]
        self.memory = PyByteArray_FromStringAndSize(NULL, (nf + 1) * n + 1)
        self.f.n = nf
        self.f.names = <const char **>malloc(max(nf, 1) * sizeof(char *))
        self.f.name_lens = <Py_ssize_t *>malloc(max(nf, 1) * 2 * sizeof(Py_ssize_t))
        if self.f.names == NULL or self.f.name_lens == NULL:
            raise MemoryError()
        self.f.lengths = self.f.name_lens + max(nf, 1)
        for k in range(nf):
            self.f.names[k] = PyBytes_AS_STRING(self.names[k])
            self.f.name_lens[k] = PyBytes_GET_SIZE(self.names[k])
        self.f.key = <uint8_t *>PyByteArray_AS_STRING(self.memory)
        self.f.values = self.f.key + n
        self.f.stride = n

    def __dealloc__(self):
        free(self.f.names)
        free(self.f.name_lens)


def jsonl_fields(const unsigned char[::1] block, list fields, int64_t first_line):
    """The `fields` (UTF-8 bytes) of the JSONL lines of `block` (valid
    UTF-8, each line ending with "\\n"): (a list of strs per field, the
    number of each document's line, counted from `first_line` for the
    block's first, the lines that are not the plain case).
    A line that is not plain is a document here, with None in every
    column; the third list holds (its position among the documents, its
    text), in order, for json.loads to read."""
    cdef Py_ssize_t n = block.shape[0], start = 0, end, k, line = 0, nf = len(fields)
    cdef const uint8_t *s
    cdef const char *at
    cdef int got
    cdef _FieldScratch scratch
    cdef list columns = [[] for _ in range(nf)]
    cdef list lines = []
    cdef list refused = []
    if n == 0:
        return columns, lines, refused
    s = &block[0]
    scratch = _FieldScratch(fields, n)
    while start < n:
        at = <const char *>memchr(s + start, 10, <size_t>(n - start))
        end = (at - <const char *>s) if at != NULL else n
        got = _plain_line(s, start, end, &scratch.f)
        if got < 0:
            refused.append((len(lines), PyUnicode_DecodeUTF8(<const char *>s + start, end - start, NULL)))
            for k in range(nf):
                (<list>columns[k]).append(None)
        elif got > 0:
            for k in range(nf):
                (<list>columns[k]).append(PyUnicode_DecodeUTF8(
                    <const char *>scratch.f.values + k * scratch.f.stride, scratch.f.lengths[k], NULL))
        if got != 0:
            lines.append(first_line + line)
        start = end + 1
        line += 1
    return columns, lines, refused


def jsonl_field_lines(const unsigned char[::1] block, list fields, int64_t first_line):
    """jsonl_fields without a str per document, for the command line's
    line blocks: (for each field, its texts each followed by "\\n" in one
    bytearray, the number of each document's line as array('q'), counted
    from `first_line` for the block's first), or None when a line is
    not the plain case or a text holds a "\\n" or "\\r" (the block then
    goes jsonl_fields' way)."""
    cdef Py_ssize_t n = block.shape[0], start = 0, end, k, line = 0, nf = len(fields), length
    cdef const uint8_t *s
    cdef const uint8_t *text
    cdef const char *at
    cdef int got
    cdef _FieldScratch scratch
    cdef carray.array lines = array("q")
    cdef Py_ssize_t count = 0
    cdef list outs = [PyByteArray_FromStringAndSize(NULL, n) for _ in range(nf)]
    cdef Py_ssize_t *used
    if n == 0:
        return [bytearray() for _ in range(nf)], lines
    s = &block[0]
    scratch = _FieldScratch(fields, n)
    used = <Py_ssize_t *>calloc(max(nf, 1), sizeof(Py_ssize_t))
    if used == NULL:
        raise MemoryError()
    try:
        while start < n:
            at = <const char *>memchr(s + start, 10, <size_t>(n - start))
            end = (at - <const char *>s) if at != NULL else n
            got = _plain_line(s, start, end, &scratch.f)
            if got < 0:
                return None
            if got > 0:
                for k in range(nf):
                    text = scratch.f.values + k * scratch.f.stride
                    length = scratch.f.lengths[k]
                    if memchr(text, 10, <size_t>length) != NULL or memchr(text, 13, <size_t>length) != NULL:
                        return None
                    # (A text and its "\n" are shorter than its line: the
                    # bytearray of the block's size has room.)
                    memcpy(PyByteArray_AS_STRING(outs[k]) + used[k], text, <size_t>length)
                    PyByteArray_AS_STRING(outs[k])[used[k] + length] = 10
                    used[k] += length + 1
                carray.resize_smart(lines, count + 1)  # (grows by more than one)
                lines.data.as_longlongs[count] = first_line + line
                count += 1
            start = end + 1
            line += 1
        for k in range(nf):
            PyByteArray_Resize(outs[k], used[k])
    finally:
        free(used)
    return outs, lines
