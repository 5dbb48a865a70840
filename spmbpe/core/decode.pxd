# Ids back to bytes (core/decode.pyx).

cdef int byte_piece_value(const char *s, Py_ssize_t n) noexcept nogil
cdef bytes decode_ids(const CoreTables *t, object ids, const uint8_t[::1] skip, bint strip_prefix)
