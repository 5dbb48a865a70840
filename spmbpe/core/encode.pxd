# The encode kernel (core/encode.pyx): a span of UTF-8 to ids.  Every way
# into the core ends in encode_span, and every id leaves through put_id.

cdef int encode_span(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                     bint prefix) noexcept nogil
