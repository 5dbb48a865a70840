# The encode kernel (core/encode.pyx): a span of UTF-8 to ids.  Every way
# into the core ends in encode_span, and every id leaves through put_id.

cdef int encode_span(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                     bint prefix) noexcept nogil
cdef int put_id(Workspace *w, int32_t token_id, int32_t start, int32_t end) noexcept nogil
cdef Py_ssize_t chunk_end(const CoreTables *t, const char *s, Py_ssize_t i, Py_ssize_t n, bint prefix,
                          bint *wide, Py_ssize_t *body) noexcept nogil
