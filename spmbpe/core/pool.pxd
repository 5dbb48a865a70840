# The workspace pool and the chunk cache's policy (core/pool.pyx): one per
# SpmCore, which owns it (pool_free in its __dealloc__).

ctypedef struct WorkPool:
    Workspace **idle              # idle workspaces, reused across calls
    int idle_len
    int active                    # workspaces acquired and not yet released (GIL held)
    spm_cache cache               # CoreTables.cache once cache_ready (when chunked)
    bint cache_ready
    bint clear_pending            # the cache is to be cleared when no thread encodes
    bint cache_off                # cache_capacity 0: chunks are merged every time
    uint32_t cache_slots          # the cache's bounds (pool_set_capacity, _testing.limit_cache)
    size_t cache_bytes
    uint64_t full_lookups         # cache lookups since it filled (pool_sweep_if_due)

# (For spmbpe._testing.clear_cache.)
cdef void pool_clear_cache(WorkPool *p) noexcept
