# The vocabulary table (core/vocab.pyx).

cdef class PieceTable:
    cdef spm_vocab *vocab
    cdef readonly bytes arena          # every piece's UTF-8, back to back
    cdef int32_t *offsets              # n + 1 offsets into arena (owned; 32 bits halve them)
    cdef readonly int32_t size
    cdef int64_t utf8_bad              # first_invalid_utf8's answer; -2 before
    cdef readonly int32_t first_empty  # the first id whose piece is empty, or -1
