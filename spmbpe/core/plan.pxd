# Plan parts read into the kernels (core/plan.pyx).

# One part of a batch, gathered with the GIL and merged without it.
ctypedef struct BatchPart:
    const char *src       # UTF-8 of a segment (token_id < 0)
    Py_ssize_t n
    bint prefix
    int32_t skip
    int64_t token_id      # a token matched in the text, or -1

cdef int check_rc(int rc, const CoreTables *t, Workspace *w, str text) except -1
