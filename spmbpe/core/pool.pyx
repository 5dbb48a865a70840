# The workspace pool and the chunk cache's policy (declared in
# core/pool.pxd).  Every function runs with the GIL held, which makes the
# pool and the count of active workspaces thread-safe: when none is active,
# no thread reads the shared cache, so that is when the cache is made,
# cleared or swept.

cdef void pool_init(WorkPool *p) noexcept:
    memset(p, 0, sizeof(WorkPool))
    p.cache_slots = SPM_CACHE_MAX_SLOTS
    p.cache_bytes = SPM_CACHE_MAX_DATA


cdef void pool_free(WorkPool *p, CoreTables *t) noexcept:
    """Frees the idle workspaces and the cache (none is active)."""
    if p.idle != NULL:
        while p.idle_len:
            p.idle_len -= 1
            ws_free(p.idle[p.idle_len])
            free(p.idle[p.idle_len])
        free(p.idle)
        p.idle = NULL
    t.cache = NULL
    if p.cache_ready:
        spm_cache_free(&p.cache)
        p.cache_ready = False


cdef void pool_sweep_if_due(WorkPool *p) noexcept:
    """A full cache is swept (spm_cache_sweep: the chunks found since the
    last sweep stay, the rest make room) once calls that started with it
    full have made as many lookups as its table has slots: a chunk must
    recur within that many to stay.  No thread is encoding."""
    if not p.cache.full or p.full_lookups < <uint64_t>p.cache.table.mask + 1:
        return
    spm_cache_sweep(&p.cache)
    p.full_lookups = 0


cdef void pool_sweep_between_blocks(WorkPool *p, Workspace *w) noexcept:
    """pool_sweep_if_due between two blocks of one long text (`w`, the
    caller's workspace, between merges), when no other thread encodes: none
    can start while the GIL is held, so none reads the cache while it is
    swept.  (Decided only when a call starts, a document kept, for all its
    length, a cache its first part filled.)"""
    if p.active != 1 or not p.cache_ready:
        return
    spm_cache_flush(&p.cache, &w.cache_writer)
    if w.cache_was_full:
        p.full_lookups += w.cache_lookups
    w.cache_lookups = 0
    spm_cache_quiesce(&p.cache)
    pool_sweep_if_due(p)
    w.cache_was_full = spm_load_u32(&p.cache.full)


cdef void pool_clear_cache(WorkPool *p) noexcept:
    """Drops every cached chunk: now when no thread is encoding, else when
    the last one is done (they may be reading the cache)."""
    if p.active == 0 and p.cache_ready:
        spm_cache_clear(&p.cache)
        p.full_lookups = 0
    else:
        p.clear_pending = True


cdef void pool_ready_cache(WorkPool *p, CoreTables *t) noexcept:
    """When no workspace is active: makes the cache on first use, or clears
    it as asked, or sweeps it when due."""
    if not p.cache_ready:
        # (Without memory for it, chunks are merged every time.)
        p.cache_ready = spm_cache_init(&p.cache, p.cache_slots, p.cache_bytes) == 0
        t.cache = &p.cache if p.cache_ready else NULL
    elif p.clear_pending:
        spm_cache_clear(&p.cache)
        p.full_lookups = 0
    else:
        spm_cache_quiesce(&p.cache)
        pool_sweep_if_due(p)
    p.clear_pending = False


cdef Workspace *pool_acquire(WorkPool *p, CoreTables *t) except NULL:
    """An idle workspace, or a new one."""
    cdef Workspace *w
    if p.active == 0 and t.rules.chunked and not p.cache_off:
        pool_ready_cache(p, t)
    if p.idle_len:
        p.idle_len -= 1
        w = p.idle[p.idle_len]
    else:
        w = <Workspace *>malloc(sizeof(Workspace))
        if w == NULL:
            raise MemoryError()
        ws_init(w)
    w.ids_len = 0
    w.want_spans = False
    w.alpha = 0.0
    w.cache_was_full = p.cache_ready and spm_load_u32(&p.cache.full)
    p.active += 1
    return w


cdef void pool_release(WorkPool *p, Workspace *w) noexcept:
    """Back to the pool.  Buffers grown for one very large text are freed
    first (a pooled workspace would otherwise keep its scratch memory, many
    times that text's size, for the tokenizer's lifetime)."""
    p.active -= 1
    if p.cache_ready:
        spm_cache_flush(&p.cache, &w.cache_writer)
        if w.cache_was_full:
            p.full_lookups += w.cache_lookups
    w.cache_lookups = 0
    ws_trim(w)
    if p.idle == NULL:
        p.idle = <Workspace **>calloc(_POOL_SIZE, sizeof(Workspace *))
    if p.idle != NULL and p.idle_len < _POOL_SIZE:
        p.idle[p.idle_len] = w
        p.idle_len += 1
    else:
        ws_free(w)
        free(w)


cdef int pool_set_capacity(WorkPool *p, CoreTables *t, Py_ssize_t chunks) except -1:
    """Bounds the chunk cache to about `chunks` chunks (0: no cache): three
    quarters of a power of two of table slots (a full table's load,
    spm_cache_full_load), at least 768, and 64 bytes of entries per chunk.
    What it held is dropped.  Not while a thread encodes."""
    cdef uint64_t slots = 1024
    cdef int k
    if chunks < 0 or chunks > _MAX_CACHE_CHUNKS:
        raise ValueError(f"cache_capacity must be from 0 to {_MAX_CACHE_CHUNKS}, not {chunks}")
    if p.active:
        raise RuntimeError("the cache capacity cannot change while this tokenizer is encoding")
    while spm_cache_full_load(slots) < <uint64_t>chunks:
        slots *= 2
    if p.cache_ready:
        t.cache = NULL
        spm_cache_free(&p.cache)
        p.cache_ready = False
        # (Every workspace is idle, in the pool: their blocks of the freed
        # arena must not be written into the next one.)
        for k in range(p.idle_len):
            spm_cache_writer_init(&p.idle[k].cache_writer)
    p.full_lookups = 0
    p.clear_pending = False
    p.cache_off = chunks == 0
    p.cache_slots = <uint32_t>slots
    p.cache_bytes = max(<size_t>chunks * 64, <size_t>SPM_CACHE_BLOCK)
    return 0
