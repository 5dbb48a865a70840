# What the encode kernel reads (core/encode.pyx): built once when a core is
# made (core/tables.pyx), read-only to every kernel (each takes a
# `const CoreTables *`).  The token types and flags are csrc/spm_types.h's.

# A character that is no piece and in no piece a merge can build: its symbol
# never pairs, and it is written out as bytes or the unknown id.
cdef enum:
    NO_SYMBOL = -1

# The rank of a pair of symbols that do not merge (after every other).
cdef enum:
    NO_RANK = 0x7FFFFFFF

# The rows of CoreTables.ascii_pairs: the ASCII characters, then "▁"; a
# symbol that is none of them has NO_CHAR.
cdef enum:
    MARKER_CHAR = 128
    ASCII_CHARS = 129
    NO_CHAR = 255


# The merge of two symbols that are characters of ASCII or "▁": most of a
# merge's first lookups in English and code, by index, not hashed.
ctypedef struct spm_ascii_pair:
    int32_t merged
    int32_t rank


# Where a span may be cut into chunks that merge to the ids of the whole
# (derive_chunk_rules, core/tables.pyx; the invariant: docs/architecture.md).
ctypedef struct ChunkRules:
    bint chunked                  # no merge crosses the point before a "▁" that follows other text,
                                  # unless one of the few pieces holding "x▁" lies across it there
    int32_t n_violations
    int32_t violation[64][3]      # (offset in violator_bytes, length, marker offset in it)
    const char *violator_bytes    # the pieces that do hold one (SpmCore keeps them alive)
    bint escape_spaces            # a space is "▁" (escape_whitespaces)
    bint cut_chars                # chunks are also cut between characters no buildable piece
                                  # holds side by side (not when a run of unknown characters is one id)
    spm_charpairs *char_pairs     # pairs of characters (one not ASCII) inside buildable pieces (owned)
    uint64_t isolated             # bit c: byte c (< 0x40) is never merged with a neighbour
    uint64_t ascii_held[256]      # bit a * 128 + b: a buildable piece holds ASCII "ab"
    uint64_t ascii_cut[256]       # bit a * 128 + b: fine_cut cuts between ASCII a and b (neither a "▁"):
                                  # a or b isolated, or "ab" not held (fine_chunks' table)


ctypedef struct CoreTables:
    const spm_vocab *vocab        # piece bytes -> id (marked with what merges may build)
    const char *arena             # the pieces, back to back
    const int32_t *offsets        # piece i is arena[offsets[i]:offsets[i + 1]]
    const uint8_t *flags          # SPM_FLAG_* of each id (read only when any_resplit)
    const uint8_t *types          # SPM_TYPE_* of each id
    int32_t n_pieces
    # What each character starts as: a symbol id.  A piece's id, or for a
    # character in buildable pieces that is no piece itself, a "virtual" id
    # from n_pieces on; NO_SYMBOL for any other.
    int32_t ascii_sym[128]        # ASCII bytes (the space: the marker's, when spaces are escaped)
    int32_t space_sym             # the space's own, when it is not escaped
    int32_t marker_sym            # "▁"
    uint8_t ascii_char[128]       # an ASCII byte's row of ascii_pairs (the space: "▁"'s, when escaped)
    spm_chars *chars              # other characters (owned)
    # The merges: (left symbol, right symbol) -> (piece, rank); lower ranks
    # merge first, the leftmost on ties.
    spm_pairs *pairs              # (owned)
    spm_ascii_pair *ascii_pairs   # [a * ASCII_CHARS + b]: the pair of rows a and b (owned)
    bint ranked                   # tokenizers' BPE: characters become pieces, bytes or the
                                  # unknown id before merging, and the rules are the file's
    spm_cache *cache              # chunk -> ids, shared by all threads, or NULL
    int32_t unk_id                # -1 when the vocabulary has none
    int32_t byte_ids[256]         # the <0xNN> pieces, with byte_fallback
    bint byte_fallback            # all 256 <0xNN> pieces exist
    bint collapse_unknown         # consecutive unknown characters -> one unk (sentencepiece)
    bint any_resplit              # some piece has SPM_FLAG_RESPLIT
    bint small_merges             # chunks of a few symbols merge by a linear scan
    bint fuse_unknown             # tokenizers' fuse_unk
    bint ignore_merges            # tokenizers' ignore_merges
    Py_ssize_t max_segment        # longest span taken, in UTF-8 bytes (MAX_SEGMENT_BYTES)
    ChunkRules rules
