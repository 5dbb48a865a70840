# One encoding thread's scratch memory (declared in core/workspace.pxd):
# set up, grown, freed, and the small per-thread memos.

cdef inline void ws_init(Workspace *w) noexcept nogil:
    w.text = NULL
    w.text_cap = 0
    w.symbols = NULL
    w.symbols_cap = 0
    spm_heap_init(&w.heap)
    w.utf8 = NULL
    w.utf8_cap = 0
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
    w.cache_lookups = 0
    w.cache_was_full = False


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
    free(w.utf8)
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


cdef inline Py_ssize_t ws_utf8_of(Workspace *w, int kind, bint ascii, const void *data, size_t start,
                                  size_t end, const char **src) noexcept nogil:
    """The UTF-8 of characters [start, end) of a str's data (`kind` bytes
    each) in src[0]: an ASCII str's own data, else converted into w.utf8.
    Returns its length, or ERR_NOMEM, or ERR_SURROGATE when one of them is
    a surrogate."""
    cdef size_t need = 4 * (end - start) + TEXT_SLACK
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


cdef inline bint alloc_char_memo(Workspace *w) noexcept nogil:
    w.char_ids = <uint64_t *>calloc(CHAR_MEMO_SIZE, sizeof(uint64_t))
    return w.char_ids != NULL


cdef inline int32_t char_id(const CoreTables *t, Workspace *w, const char *s, int32_t n) noexcept nogil:
    """The id of the one character s[0:n] (at most 4 bytes; s has the
    escaped text's slack), or -1 when the vocabulary has no such piece:
    an ASCII one from t.ascii_ids (punctuation and digits are a quarter
    of English chunks), any other through the workspace's character memo
    (allocated on first use), since most characters recur and the
    vocabulary table is too large for the CPU's nearest caches."""
    cdef uint64_t key
    cdef uint64_t *entry
    cdef int32_t token_id
    if n == 1 and <uint8_t>s[0] < 0x80:
        return t.ascii_ids[<uint8_t>s[0]]
    if w.char_ids == NULL and not alloc_char_memo(w):
        return spm_vocab_find_padded(t.vocab, s, <size_t>n)
    entry = char_memo_entry(w, s, n, &key)
    if (entry[0] >> 32) == key:
        return <int32_t>(<uint32_t>entry[0])
    token_id = spm_vocab_find_padded(t.vocab, s, <size_t>n)
    entry[0] = (key << 32) | <uint32_t>token_id
    return token_id
