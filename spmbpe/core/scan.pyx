# Whether a text holds the text of an added token of some kinds (declared in
# core/scan.pxd): a text that holds none is one segment and goes straight to
# the merge; any other is split by the reference's planner.


cdef inline bint scan_can_find(const AddedScan *scan, int mask) noexcept nogil:
    """Whether any added token of a kind in `mask` exists to be found."""
    return scan.texts != NULL and scan.only[mask & 3] >= 0


cdef inline bint scan_finds(const AddedScan *scan, const char *s, Py_ssize_t n, int mask) noexcept nogil:
    """Whether the text of an added token of a kind in `mask` occurs in
    s[:n] (a hash lookup per distinct length where the byte starts one).
    Most vocabularies' tokens of a kind all start with one byte ("<"):
    memchr finds its places, many bytes at a time."""
    cdef Py_ssize_t i = 0
    cdef int only
    cdef const char *at
    if not scan_can_find(scan, mask):
        return False
    only = scan.only[mask & 3]
    if only < 256:
        while i < n:
            at = <const char *>memchr(s + i, only, <size_t>(n - i))
            if at == NULL:
                return False
            i = at - s
            if token_at(scan, s, n, i, mask):
                return True
            i += 1
        return False
    for i in range(n):
        if scan.first[<uint8_t>s[i]] & mask and token_at(scan, s, n, i, mask):
            return True
    return False


cdef inline bint token_at(const AddedScan *scan, const char *s, Py_ssize_t n, Py_ssize_t i,
                          int mask) noexcept nogil:
    """Whether an added token of a kind in `mask` starts at s[i]."""
    cdef int32_t k, length, found
    for k in range(scan.n_lengths):
        length = scan.lengths[k]
        if length > n - i:
            break
        found = spm_vocab_find(scan.texts, s + i, <size_t>length)
        if found >= 0 and scan.kinds[found] & mask:
            return True
    return False
