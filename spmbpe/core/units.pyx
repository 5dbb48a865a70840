# A batch's texts and their cut into units (declared in core/batch.pxd): what
# a BatchJob encodes, taken once with the GIL, then read by every thread.

cdef int texts_allocate(BatchTexts *b, Py_ssize_t n_parts) except -1:
    """The arrays for b.n_texts planned texts of n_parts parts in all."""
    cdef Py_ssize_t n = b.n_texts
    b.items = <PlanPart *>malloc((n_parts + 1) * sizeof(PlanPart))
    b.counts = <int32_t *>malloc((n + 1) * sizeof(int32_t))
    b.first_item = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    b.ends = <size_t *>malloc((n + 1) * sizeof(size_t))
    b.unit_end = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    if b.items == NULL or b.counts == NULL or b.first_item == NULL or b.ends == NULL or b.unit_end == NULL:
        raise MemoryError()
    return 0


cdef bint texts_take_strs(BatchTexts *b, list batch, int prefix, Py_ssize_t *total,
                          Py_ssize_t *longest) except -1:
    """Takes the texts of `batch` as they are when every one is a str: a
    reference to each (nothing another thread does to the list can free one
    while the threads read it), and its size in b.ends until the units are
    cut; their characters in all and the most in one into `total` and
    `longest`.  The threads read each str as CPython stores it
    (encode_strs): no PlanPart per text and no UTF-8 copy left on the
    caller's texts.
    False, holding nothing, when a text is not a str."""
    cdef Py_ssize_t i, n = b.n_texts, length
    cdef int kind
    cdef PyObject *text
    b.strs = <PyObject **>malloc((n + 1) * sizeof(PyObject *))
    b.ends = <size_t *>malloc((n + 1) * sizeof(size_t))
    b.unit_end = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    if b.strs == NULL or b.ends == NULL or b.unit_end == NULL:
        texts_free(b, 0)
        raise MemoryError()
    for i in range(n):
        text = PyList_GET_ITEM(batch, i)
        if Py_TYPE(text) is not &PyUnicode_Type:
            texts_free(b, i)
            return False
        try:
            length = PyUnicode_GetLength(<object>text)
        except BaseException:
            texts_free(b, i)
            raise
        kind = str_kind(text)
        b.ends[i] = <size_t>(length * kind)
        total[0] += length
        if length > longest[0]:
            longest[0] = length
        # (The most UTF-8 bytes it can have, and so ids.)
        b.str_ids_bound += 1 + <size_t>length * (1 if str_is_ascii(text) else kind + 1 if kind < 4 else 4)
        Py_INCREF(<object>text)
        b.strs[i] = text
    b.prefix_rule = prefix
    return True


cdef void texts_give_back(BatchTexts *b, Py_ssize_t u) noexcept:
    """Gives back the strs of unit u, which no thread reads any more."""
    cdef Py_ssize_t t
    if b.strs != NULL:
        for t in range(b.unit_end[u - 1] if u else 0, b.unit_end[u]):
            Py_XDECREF(b.strs[t])
            b.strs[t] = NULL


cdef void texts_free(BatchTexts *b, Py_ssize_t taken) noexcept:
    """Gives back, when the texts are strs, the first `taken` of them
    (texts_take_strs's; those given back with their unit are NULL), and
    every array: b then holds nothing."""
    cdef Py_ssize_t i
    if b.strs != NULL:
        for i in range(taken):
            Py_XDECREF(b.strs[i])
    free(b.strs)
    free(b.items)
    free(b.counts)
    free(b.first_item)
    free(b.unit_end)
    free(b.ends)
    b.strs = NULL
    b.items = NULL
    b.counts = NULL
    b.first_item = NULL
    b.unit_end = NULL
    b.ends = NULL
    b.str_ids_bound = 0


cdef Py_ssize_t texts_size(const BatchTexts *b, Py_ssize_t t) noexcept:
    """Text t's share of the work: its parts' UTF-8 bytes (a token counts
    1), or a str's characters times their bytes each."""
    cdef Py_ssize_t k, size = 0
    if b.strs != NULL:
        return <Py_ssize_t>b.ends[t]
    for k in range(b.first_item[t], b.first_item[t + 1]):
        size += _part_size(&b.items[k])
    return size


cdef void texts_cut_units(BatchTexts *b, Py_ssize_t units) noexcept:
    """Cuts the taken texts into about `units` units of consecutive texts,
    each about total / units bytes."""
    cdef Py_ssize_t t, k, total = 0, share, filled = 0
    if b.strs == NULL:
        k = 0
        for t in range(b.n_texts):
            b.first_item[t] = k
            k += b.counts[t]
        b.first_item[b.n_texts] = k
    for t in range(b.n_texts):
        total += texts_size(b, t)
    share = max(1, total // max(units, 1))
    for t in range(b.n_texts):
        filled += texts_size(b, t)
        if filled >= share or t + 1 == b.n_texts:
            b.unit_end[b.n_units] = t + 1
            b.n_units += 1
            filled = 0


cdef int texts_cut_lines(BatchTexts *b, Py_ssize_t units) except -1:
    """A block's units (start_lines): about len(block) / units bytes each,
    every one but the last ending just after a "\\n"."""
    cdef const char *s = b.line_data
    cdef Py_ssize_t n = b.line_bytes, u, target, cut = 0
    cdef const char *at
    units = max(1, min(units, n // 4096 + 1))
    b.unit_end = <Py_ssize_t *>malloc((units + 1) * sizeof(Py_ssize_t))
    if b.unit_end == NULL:
        raise MemoryError()
    for u in range(1, units):
        target = n * u // units
        if target < cut:
            continue
        at = <const char *>memchr(s + target, b"\n", <size_t>(n - target))
        if at == NULL or at - s + 1 >= n:
            break
        cut = at - s + 1
        b.unit_end[b.n_units] = cut
        b.n_units += 1
    if n:
        b.unit_end[b.n_units] = n
        b.n_units += 1
    return 0


cdef int texts_encode_unit(const CoreTables *t, Workspace *w, const BatchTexts *b, Py_ssize_t u,
                           const uint64_t *seeds, size_t **line_ends, Py_ssize_t *lines) noexcept nogil:
    """Encodes unit u's texts into w.ids (from w.ids_len 0): a block's
    lines (their ends into line_ends[0] and their number into lines[0]),
    strs, or planned texts (text t's generator seeded by seeds[t])."""
    cdef Py_ssize_t lo = b.unit_end[u - 1] if u else 0, hi = b.unit_end[u], failed = -1
    w.ids_len = 0
    if b.line_data != NULL:
        return encode_lines(t, w, b.line_data + lo, hi - lo, b.prefix_rule, line_ends, lines)
    if b.strs != NULL:
        return encode_strs(t, w, b.strs + lo, hi - lo, b.ends + lo, &failed, b.prefix_rule)
    return encode_items(t, w, b.items + b.first_item[lo], b.counts + lo, hi - lo, b.ends + lo, &failed,
                        seeds + lo if seeds != NULL else NULL)


cdef size_t texts_ids_bound(BatchTexts *b, Py_ssize_t *n_offsets) noexcept:
    """The most ids the texts can give (a text part at most one per UTF-8
    byte and one for its dummy prefix, a token one), and how many offsets
    to start with into n_offsets[0].  A block's lines are counted as its
    units are collected: b.n_texts is then 0, and the offsets start at one
    line per 32 bytes and grow."""
    cdef Py_ssize_t k
    cdef size_t bound = b.str_ids_bound
    n_offsets[0] = b.n_texts + 1
    if b.line_data != NULL:
        # (A line of k bytes gives at most k + 1 ids, and takes k + 1 with
        # its line end.)
        n_offsets[0] = b.line_bytes // 32 + 2
        b.n_texts = 0
        return <size_t>b.line_bytes + 1
    if b.strs == NULL:
        for k in range(b.first_item[b.n_texts]):
            bound += 1 + (<size_t>b.items[k].n if b.items[k].kind == PART_TEXT else 0)
    return bound
