# The compiled base of spmbpe.tokenizer.SpmTokenizer: its per-line method
# (core/direct.pyx).
cdef class TokenizerBase:
    # The core when a str is one segment (nothing to split out or normalize)
    # with special="all", and with special="none"; else None.
    cdef readonly SpmCore plain_core
    cdef readonly SpmCore ordinary_core
    cdef bint direct_prefix           # with the dummy prefix

    cdef list direct_ids(self, SpmCore core, str text)
