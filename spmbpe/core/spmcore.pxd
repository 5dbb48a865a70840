# SpmCore (core/spmcore.pyx): builds and owns the CoreTables and the pool of
# workspaces; its Python methods are the core's API.

@cython.final
cdef class SpmCore:
    cdef readonly PieceTable table
    cdef CoreTables t                 # what the kernels read (filled by __init__)
    cdef spm_vocab *vocab             # table.vocab
    cdef const float[::1] scores
    cdef const uint8_t[::1] flags     # (keep t.flags and t.types alive)
    cdef const uint8_t[::1] types
    cdef bytes violators              # keeps t.rules.violator_bytes alive
    cdef bytes buildable              # SPM_FLAG_MERGEABLE of each piece, as bytes
    cdef bint tables_ready            # t's symbols and pairs are built (ready_tables)
    cdef Workspace **pool             # idle workspaces, reused across calls
    cdef int pool_len
    cdef int active                   # workspaces acquired and not yet released (GIL held)
    cdef spm_cache cache              # t.cache once cache_ready (when chunked)
    cdef bint cache_ready
    cdef bint clear_pending           # the cache is to be cleared when no thread encodes
    cdef bint cache_off               # cache_capacity 0: chunks are merged every time
    cdef uint32_t cache_slots         # the cache's bounds (set_cache_capacity, _testing.limit_cache)
    cdef size_t cache_bytes
    cdef uint64_t full_lookups        # cache lookups since it filled (sweep_cache_if_due)
    cdef PyObject **id_objects        # each id's int, made on first use (id_list)

    cdef int ready_tables(self) except -1
    cdef void sweep_cache_if_due(self)
    cdef void sweep_between_blocks(self, Workspace *w)
    cdef Workspace *acquire(self) except NULL
    cdef void release(self, Workspace *w)
    cdef int make_id_objects(self) except -1
    cdef list id_list(self, const int32_t *ids, size_t n)
    cdef list encode_text(self, str text, bint prefix, const AddedScan *screen, int mask)
    cdef list encode_long(self, str text, bint prefix)
