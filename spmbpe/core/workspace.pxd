# One encoding thread's scratch memory (core/workspace.pyx).

# Result codes of the kernels (nogil: no exception; SpmCore raises).
cdef enum:
    OK = 0
    ERR_NOMEM = -1
    ERR_UNENCODABLE = -2
    ERR_TOO_LONG = -3
    ERR_SURROGATE = -4    # a str's code point UTF-8 cannot hold (encode_str_block)
    ERR_NOT_UTF8 = -5     # bytes that are not UTF-8 (encode_lines)

# The ids buffer has this many more slots than its ids: a cached chunk's
# ids are copied four at a time whatever their number.
cdef enum:
    IDS_SLACK = 8


# Scratch memory for one encoding thread: reused across spans so the merge
# allocates only when a chunk is larger than any seen before.
ctypedef struct Workspace:
    char pad_head[64]     # (no cache line shared with another thread's workspace)
    # The symbols of the chunk being merged (sentencepiece's Symbol), an
    # array a field: a character, or the piece a merge made of several.
    int32_t *sym_id       # a piece, a virtual character (>= n_pieces) or NO_SYMBOL
    int32_t *sym_start    # its bytes in the span: [start, end) (the dummy prefix's "▁" has none)
    int32_t *sym_end
    uint8_t *sym_char     # a character's row in CoreTables.ascii_pairs, or NO_CHAR
    int32_t *sym_prev     # (merge_heap) the previous live symbol, -1 at the start
    int32_t *sym_next     # (merge_heap) the next live symbol, -1 at the end; -2 once absorbed
    uint32_t *sym_gen     # (merge_heap) changes whenever it grows: a queued pair with it on
                          # the right is then stale
    size_t symbols_cap
    spm_heap heap
    char *utf8            # a str's characters as UTF-8 (ws_utf8_of)
    size_t utf8_cap
    char *scratch         # a chunk with its spaces as "▁" (tokenizers' ignore_merges)
    size_t scratch_cap
    int32_t *ids          # output ids
    size_t ids_len
    size_t ids_cap
    int32_t *spans        # with want_spans: [start, end) in the span of each id
    size_t spans_cap
    bint want_spans
    char bad[4]           # the character that could not be encoded (ERR_UNENCODABLE)
    int32_t bad_len
    # Resplitting (sentencepiece's rev_merge): for a SPM_FLAG_RESPLIT piece,
    # the symbols of the last pair queued to build it (left + 1; 0 = none).
    int32_t *split_left   # one slot per piece id, allocated on first use
    int32_t *split_right
    int32_t *split_touched
    size_t split_touched_len
    size_t split_touched_cap
    # BPE-dropout (sentencepiece's enable_sampling): each merge about to be
    # made is skipped with probability `alpha` (0: never); `rng` is the state
    # of a splitmix64 generator.
    double alpha
    uint64_t rng
    int32_t *bounds       # with want_bounds: where each chunk encoded ends (spmbpe._testing)
    size_t bounds_len
    size_t bounds_cap
    bint want_bounds
    spm_cache_writer cache_writer  # this thread's side of inserting into the shared cache
    uint64_t cache_lookups         # chunks looked up in the cache since the workspace was acquired
    bint cache_was_full            # the cache was full when it was acquired (the lookups count)
    # The words encode_words has missed once (a bit per hash; encode.pyx,
    # seen_before), allocated on first use.
    uint64_t *seen
    uint32_t seen_count
    char pad_tail[64]
