# Escaping, chunk boundaries and the rules behind them, and the chunk loop
# (core/chunking.pyx).

cdef Py_ssize_t escape(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                       bint prefix) noexcept nogil
cdef int32_t find_bounds(const CoreTables *t, Workspace *w, int32_t m) noexcept nogil
cdef int run(const CoreTables *t, Workspace *w, int32_t m) noexcept nogil
cdef int encode_segment(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                        bint prefix) noexcept nogil
