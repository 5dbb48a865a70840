# What the kernels read: filled by SpmCore when it is built, read-only to
# every kernel (each takes a `const CoreTables *`).  The token types and
# flags are csrc/spm_types.h's.

# ChunkRules.ascii_cut: the row of the first byte of a segment without a prefix.
cdef enum:
    ASCII_START = 128
    OTHER_CHAR = 129      # (escape: the character before is not ASCII)


# Where a segment may be cut into chunks that merge to the ids of the whole
# (core/chunking.pyx derives them from the vocabulary).
ctypedef struct ChunkRules:
    bint chunked                  # merges never cross a safe "x▁" boundary
    bint escape_spaces            # spaces become "▁" (escape_whitespaces)
    bint cut_chars                # char_pairs is used (chunked, and no unknown run is fused)
    int32_t n_violations
    int32_t violation[64][3]      # (offset in violator_bytes, length, marker offset in it)
    const char *violator_bytes    # the pieces that do cross one (SpmCore keeps them alive)
    spm_charpairs *char_pairs     # pairs of characters (one not ASCII) inside buildable
                                  # pieces: chunks are also cut between any other two (owned)
    uint64_t isolated             # bit c: byte c (< 0x40) is never merged with a neighbour,
                                  # so chunks are cut on both sides of it (with cut_chars)
    uint64_t ascii_held[256]      # bit a * 128 + b: a buildable piece holds ASCII "ab";
                                  # chunks are cut between other ASCII pairs (with cut_chars)
    uint8_t ascii_cut[(ASCII_START + 1) * 128]  # [p * 128 + b]: 1 when escape cuts before ASCII
                                  # byte b after byte p (row ASCII_START: the first byte)


ctypedef struct CoreTables:
    const spm_vocab *vocab        # piece bytes -> id, marked with the merge scores
    const char *arena             # the PieceTable's pieces, back to back
    const int32_t *offsets        # piece i is arena[offsets[i]:offsets[i + 1]]
    const uint8_t *flags          # SPM_FLAG_* of each id (read only when any_resplit)
    const uint8_t *types          # SPM_TYPE_* of each id
    spm_pairs *pairs              # HF tokenizers' ranked merges (owned), or NULL
    spm_cache *cache              # chunk -> ids, shared by all threads, or NULL
    int32_t n_pieces
    int32_t unk_id                # -1 when the vocabulary has none
    int32_t byte_ids[256]         # the <0xNN> pieces, with byte_fallback
    int32_t ascii_ids[128]        # each ASCII character's piece, or -1
    bint byte_fallback            # all 256 <0xNN> pieces exist
    bint collapse_unknown         # consecutive unknown characters -> one unk
    bint any_resplit              # some piece has SPM_FLAG_RESPLIT
    bint small_merges             # short chunks merge by linear scan (merge_small)
    bint fuse_unknown             # tokenizers' fuse_unk
    bint ignore_merges            # tokenizers' ignore_merges
    Py_ssize_t max_segment        # longest segment taken, in UTF-8 bytes (MAX_SEGMENT_BYTES)
    ChunkRules rules
