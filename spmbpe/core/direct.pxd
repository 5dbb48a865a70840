# The compiled base of spmbpe.tokenizer.SpmTokenizer: the per-call path from
# a text to its ids (core/direct.pyx).

cdef class TokenizerBase:
    cdef SpmCore core                 # the merger every text ends in
    cdef object planner               # the reference's Planner (spmbpe/planners.py)
    cdef SpmCore direct_core          # core when a text may skip the planner, else None
    cdef int prefix_mode              # PREFIX_* of such a text
    cdef AddedScan scan
    cdef PieceTable scan_table        # keeps scan.texts alive
    cdef bytes scan_kinds             # keeps scan.kinds alive
    cdef object bos_added             # the id add_special_tokens puts first, or None
    cdef object eos_added             # ... and last

    cdef int build_scan(self, object tokens) except -1
    cdef int direct_mask(self, object special)
    cdef int one_segment(self, str text, int mask, bint *prefix) except -1
    cdef list direct_ids(self, str text, int mask)
    cdef list encode_planned(self, object text, object special, bint add_special_tokens,
                             bint enable_sampling, object alpha, object seed)
