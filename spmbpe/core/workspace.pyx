# One encoding thread's scratch memory (declared in core/workspace.pxd):
# set up, grown and freed.

cdef inline void ws_init(Workspace *w) noexcept nogil:
    """An empty workspace: every field zero (no buffer, nothing wanted, an
    empty heap and cache writer, as spm_heap_init and
    spm_cache_writer_init make them)."""
    memset(w, 0, sizeof(Workspace))


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


cdef inline void ws_free_symbols(Workspace *w) noexcept nogil:
    free(w.sym_id)
    free(w.sym_start)
    free(w.sym_end)
    free(w.sym_char)
    free(w.sym_prev)
    free(w.sym_next)
    free(w.sym_gen)
    w.sym_id = w.sym_start = w.sym_end = w.sym_prev = w.sym_next = NULL
    w.sym_char = NULL
    w.sym_gen = NULL
    w.symbols_cap = 0


cdef inline void ws_free(Workspace *w) noexcept nogil:
    ws_free_symbols(w)
    spm_heap_free(&w.heap)
    free(w.utf8)
    free(w.scratch)
    free(w.ids)
    free(w.spans)
    free(w.split_left)
    free(w.split_right)
    free(w.split_touched)
    free(w.bounds)
    free(w.seen)
    ws_init(w)


cdef void ws_trim(Workspace *w) noexcept nogil:
    """Frees the buffers grown past what a pooled workspace keeps
    (_KEEP_TEXT_BYTES, _KEEP_IDS)."""
    if w.utf8_cap > _KEEP_TEXT_BYTES:
        free(w.utf8)
        w.utf8 = NULL
        w.utf8_cap = 0
    if w.scratch_cap > _KEEP_TEXT_BYTES:
        free(w.scratch)
        w.scratch = NULL
        w.scratch_cap = 0
    if w.symbols_cap > _KEEP_TEXT_BYTES // 8:
        ws_free_symbols(w)
        spm_heap_free(&w.heap)
    if w.ids_cap > _KEEP_IDS:
        free(w.ids)
        free(w.spans)
        w.ids = NULL
        w.ids_cap = 0
        w.spans = NULL
        w.spans_cap = 0


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


cdef inline int ws_ids_room(Workspace *w, size_t more) noexcept nogil:
    """Room for `more` ids past w.ids_len (and IDS_SLACK), their spans too
    when they are wanted."""
    cdef size_t need = w.ids_len + more + IDS_SLACK
    if need > w.ids_cap and grow_int32(&w.ids, &w.ids_cap, need) != OK:
        return ERR_NOMEM
    if w.want_spans and grow_int32(&w.spans, &w.spans_cap, 2 * need) != OK:
        return ERR_NOMEM
    return OK


cdef inline int ws_symbols_room(Workspace *w, size_t count) noexcept nogil:
    """Room for `count` symbols."""
    cdef size_t size
    if count <= w.symbols_cap:
        return OK
    size = w.symbols_cap * 2 if w.symbols_cap else 256
    while size < count:
        size *= 2
    ws_free_symbols(w)
    w.sym_id = <int32_t *>malloc(size * sizeof(int32_t))
    w.sym_start = <int32_t *>malloc(size * sizeof(int32_t))
    w.sym_end = <int32_t *>malloc(size * sizeof(int32_t))
    w.sym_char = <uint8_t *>malloc(size)
    w.sym_prev = <int32_t *>malloc(size * sizeof(int32_t))
    w.sym_next = <int32_t *>malloc(size * sizeof(int32_t))
    w.sym_gen = <uint32_t *>malloc(size * sizeof(uint32_t))
    if w.sym_id == NULL or w.sym_start == NULL or w.sym_end == NULL or w.sym_char == NULL \
            or w.sym_prev == NULL or w.sym_next == NULL or w.sym_gen == NULL:
        ws_free_symbols(w)
        return ERR_NOMEM
    w.symbols_cap = size
    return OK


cdef inline Py_ssize_t ws_utf8_of(Workspace *w, int kind, bint ascii, const void *data, size_t start,
                                  size_t end, const char **src) noexcept nogil:
    """The UTF-8 of characters [start, end) of a str's data (`kind` bytes
    each) in src[0]: an ASCII str's own data, else converted into w.utf8.
    Returns its length, or ERR_NOMEM, or ERR_SURROGATE when one of them is
    a surrogate."""
    cdef size_t need = 4 * (end - start) + 8
    cdef char *grown
    cdef Py_ssize_t m
    if ascii:
        src[0] = <const char *>data + start
        return <Py_ssize_t>(end - start)
    if need > w.utf8_cap:
        grown = <char *>realloc(w.utf8, need)
        if grown == NULL:
            return ERR_NOMEM
        w.utf8 = grown
        w.utf8_cap = need
    m = spm_ucs_to_utf8(kind, data, start, end, w.utf8)
    src[0] = w.utf8
    return m if m >= 0 else ERR_SURROGATE
