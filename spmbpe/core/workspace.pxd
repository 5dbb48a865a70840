# One encoding thread's scratch memory (core/workspace.pyx).

# Result codes of the kernels (nogil: no exception; SpmCore raises).
cdef enum:
    OK = 0
    ERR_NOMEM = -1
    ERR_UNENCODABLE = -2
    ERR_TOO_LONG = -3
    ERR_SURROGATE = -4    # a str's code point UTF-8 cannot hold (encode_str_block)
    ERR_NOT_UTF8 = -5     # bytes that are not UTF-8 (encode_lines)

# Entries of a workspace's PairMemo and character memo (powers of two).
cdef enum:
    MEMO_SIZE = 4096
    CHAR_MEMO_SIZE = 4096

# The escaped text buffer has this much slack past its end, so lookups may
# read 8 bytes at any position (spm_vocab_mergeable reads 8 at a time).
cdef enum:
    TEXT_SLACK = 8


# A recent lookup of a short candidate piece (spm_vocab_mergeable), kept per
# workspace: common pairs ("th", "▁t", ...) recur in every word, and the
# vocabulary table is too large for the CPU's nearest caches.
ctypedef struct PairMemo:
    uint64_t head         # the candidate's bytes, zero padded (at most 8)
    float score
    int32_t id            # the mergeable piece, or -1: none
    int32_t length        # 0: empty entry


# sentencepiece's Symbol, in an array as a doubly linked list.
ctypedef struct Symbol:
    int32_t prev      # index of the previous live symbol, -1 at the start
    int32_t next      # index of the next live symbol, -1 at the end
    int32_t start     # byte offset in the escaped segment (ranked merges: its id)
    int32_t n         # byte length; 0 once absorbed by its left neighbour


# Scratch memory for one encoding thread: reused across segments so the merge
# loop allocates only when a segment is larger than any seen before.
ctypedef struct Workspace:
    char pad_head[64]     # (no cache line shared with another thread's workspace)
    char *text            # the escaped segment ("▁" for spaces, dummy prefix)
    size_t text_cap
    Symbol *symbols
    size_t symbols_cap
    spm_heap heap
    char *utf8            # a block of a long str as UTF-8 (encode_str_block)
    size_t utf8_cap
    int32_t *ids          # output ids
    size_t ids_len
    size_t ids_cap
    int32_t *spans        # with want_spans: [start, end) in `text` of each id
    size_t spans_cap
    bint want_spans
    int32_t *bounds       # chunk boundaries of the current segment
    size_t bounds_cap
    int32_t ready_bounds  # how many escape found (all of them), or -1: find_bounds must
    int64_t bad_start     # where an unencodable character sits in `text`
    int64_t bad_len
    # Resplitting (sentencepiece's rev_merge): for a SPM_FLAG_RESPLIT piece
    # id, the byte length of the left half of the last pair queued to build it.
    int32_t *split_left   # one slot per piece id, 0 = none; allocated on first use
    int32_t *split_touched
    size_t split_touched_len
    size_t split_touched_cap
    # BPE-dropout (sentencepiece's enable_sampling): each merge about to be
    # made is skipped with probability `alpha` (0: never); `rng` is the state
    # of a splitmix64 generator.
    double alpha
    uint64_t rng
    PairMemo *memo        # MEMO_SIZE entries, allocated on first use
    # Recent single characters looked up (emit_piece): CHAR_MEMO_SIZE
    # entries of (character's bytes << 32 | its id, or -1), 0 = empty;
    # allocated on first use.  Text without spaces is mostly one-character
    # chunks, each a lookup in a table too large for the nearest caches.
    uint64_t *char_ids
    spm_cache_writer cache_writer  # this thread's side of inserting into the shared cache
    uint64_t cache_lookups         # chunks looked up in the cache since the workspace was acquired
    bint cache_was_full            # the cache was full when it was acquired (the lookups count)
    char pad_tail[64]
