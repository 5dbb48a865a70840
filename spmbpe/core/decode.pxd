# Ids back to bytes (core/decode.pyx).

cdef int byte_piece_value(const char *s, Py_ssize_t n) noexcept nogil
