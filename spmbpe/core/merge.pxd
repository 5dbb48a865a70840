# The merges over one chunk or segment (core/merge.pyx).

cdef int merge(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil
cdef int merge_small(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil
cdef int merge_pairs(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil
cdef int emit_piece(const CoreTables *t, Workspace *w, int32_t start, int32_t n,
                    bint *prev_unknown) noexcept nogil
