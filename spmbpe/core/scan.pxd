# Whether a text holds an added token (core/scan.pyx).

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
