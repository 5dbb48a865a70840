# The encode kernel (core/encode.pyx): a span of UTF-8 to ids.  Every way
# into the core ends in encode_span, and every id leaves through put_id.

cdef int encode_span(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                     bint prefix) noexcept nogil

# Where a chunk is cut further (fine_chunks): fine_cut_at decides one point,
# next_fine_cut finds the next (spmbpe._testing compares the two).
cdef bint fine_cut_at(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t open_end, Py_ssize_t p,
                      Py_ssize_t n) noexcept nogil
cdef Py_ssize_t next_fine_cut(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t open_end,
                              Py_ssize_t p, Py_ssize_t b, Py_ssize_t n) noexcept nogil
