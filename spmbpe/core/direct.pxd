# The compiled base of spmbpe.tokenizer.SpmTokenizer: the per-call path from
# a text to its ids (core/direct.pyx).

# The kinds of added tokens a scan looks for (a mask).
cdef enum:
    KIND_PLAIN = 1                # special=False: split out under every policy
    KIND_SPECIAL = 2              # special=True: split out, allowed or refused by the policy


# The added-token texts that a text must not contain to be one segment: the
# pre-check that spares a text the Python planner.
ctypedef struct AddedScan:
    const spm_vocab *texts        # each token text's UTF-8 -> its index (NULL: no tokens)
    const uint8_t *kinds          # KIND_* of the tokens with the text of each index
    uint8_t first[256]            # KIND_* of the tokens whose text starts with each byte
    int16_t only[4]               # per mask: -1 no token's text starts with a byte of that
                                  # mask, else the one byte they all start with, or 256: several
    int32_t *lengths              # the distinct UTF-8 lengths of the texts, ascending (owned)
    int32_t n_lengths


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
    cdef list segment_ids(self, str text, bint prefix)
    cdef list encode_planned(self, object text, object special, bint add_special_tokens,
                             bint enable_sampling, object alpha, object seed)
