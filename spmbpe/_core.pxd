# C-level layout of the compiled core: the vocabulary table, the merge
# workspace and the merger.
cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from spmbpe._csrc cimport spm_cache, spm_cache_writer, spm_charpairs, spm_heap, spm_pairs, spm_vocab


# Per-id flags (SpmCore.flags).
cdef enum:
    FLAG_MERGEABLE = 1   # the merger may build this piece from two symbols
    FLAG_RESPLIT = 2     # an UNUSED piece: split again into the halves that built it

# SpmCore.ascii_cuts: the row of the first byte of a segment without a prefix.
cdef enum:
    ASCII_START = 128


# A recent lookup of a short candidate piece (spm_vocab_mergeable), kept per
# workspace: common pairs ("th", "▁t", ...) recur in every word, and the
# vocabulary table is too large for the CPU's nearest caches.
ctypedef struct PairMemo:
    uint64_t head         # the candidate's bytes, zero padded (at most 8)
    float score
    int32_t id            # the mergeable piece, or -1: none
    int32_t length        # 0: empty entry


ctypedef struct Symbol:
    int32_t prev      # index of the previous live symbol, -1 at the start
    int32_t next      # index of the next live symbol, -1 at the end
    int32_t start     # byte offset in the escaped segment
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
    # Resplitting (sentencepiece's rev_merge): for a FLAG_RESPLIT piece id,
    # the byte length of the left half of the last pair queued to build it.
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
    char pad_tail[64]


# One part of a batch, gathered with the GIL and merged without it.
ctypedef struct BatchPart:
    const char *src       # UTF-8 of a segment (token_id < 0)
    Py_ssize_t n
    bint prefix
    int32_t skip
    int64_t token_id      # a token matched in the text, or -1


cdef class PieceTable:
    cdef spm_vocab *vocab
    cdef readonly bytes arena          # every piece's UTF-8, back to back
    cdef int32_t *offsets              # n + 1 offsets into arena (owned; 32 bits halve them)
    cdef readonly int32_t size
    cdef int64_t utf8_bad              # first_invalid_utf8's answer; -2 before
    cdef readonly int32_t first_empty  # the first id whose piece is empty, or -1


@cython.final
cdef class SpmCore:
    cdef readonly PieceTable table
    cdef spm_vocab *vocab              # table.vocab, marked with this core's scores,
                                      # or a private copy when another core marked it
    cdef const float[::1] scores
    cdef const uint8_t[::1] flags
    cdef int32_t n_pieces
    cdef int32_t unk_id               # -1 when the vocabulary has none
    cdef int32_t byte_ids[256]
    cdef readonly bint byte_fallback   # all 256 <0xNN> pieces exist
    cdef bint collapse_unknown        # consecutive unknown characters -> one unk
    cdef bint any_resplit             # some piece has FLAG_RESPLIT
    cdef spm_pairs *pairs             # HF tokenizers' ranked merges, or NULL
    cdef bint own_vocab               # vocab is a private copy (the table's was taken)
    cdef bint small_merges            # short chunks merge by linear scan (merge_small)
    cdef bint fuse_unknown            # tokenizers' fuse_unk
    cdef bint ignore_merges           # tokenizers' ignore_merges
    cdef readonly bint chunked        # merges never cross a safe "x▁" boundary
    cdef readonly bint escape_spaces  # spaces become "▁" (escape_whitespaces)
    cdef bytes violators              # pieces that do cross one (few), back to back
    cdef const char *violator_bytes   # their bytes (violators keeps them alive)
    cdef int32_t n_violations
    cdef int32_t violation[64][3]     # (offset in violators, length, marker offset in it)
    cdef spm_charpairs *char_pairs    # pairs of characters (one not ASCII) inside buildable
                                      # pieces: chunks are also cut between any other two
    cdef readonly bint cut_chars      # char_pairs is used (chunked, and no unknown run is fused)
    cdef uint64_t isolated            # bit c: byte c (< 0x40) is never merged with a neighbour,
                                      # so chunks are cut on both sides of it (with cut_chars)
    cdef uint64_t ascii_held[256]     # bit a * 128 + b: a buildable piece holds ASCII "ab";
                                      # chunks are cut between other ASCII pairs (with cut_chars)
    cdef uint64_t ascii_cuts[2 * (ASCII_START + 1)]  # bit (p * 128 + b): escape cuts before ASCII
                                      # byte b after byte p (row ASCII_START: the first byte)
    cdef Workspace **pool             # idle workspaces, reused across calls
    cdef int pool_len
    cdef int active                   # workspaces acquired and not yet released (GIL held)
    cdef spm_cache cache              # chunk -> ids, shared by all threads (when chunked)
    cdef bint cache_ready
    cdef bint clear_pending           # clear_cache() was called while workspaces were active
    cdef uint32_t cache_slots         # the cache's bounds (limit_cache, for tests)
    cdef size_t cache_bytes
    cdef const uint8_t[::1] types     # TokenType of each id (decoding)
    cdef PyObject **id_objects        # each id's int, made on first use (id_list)
    cdef Py_ssize_t max_segment       # longest segment taken, in UTF-8 bytes (MAX_SEGMENT_BYTES)

    cdef int segment(self, const char *src, Py_ssize_t n, bint prefix, Workspace *w) noexcept
    cdef int encode_segment(self, const char *src, Py_ssize_t n, bint prefix,
                            Workspace *w) noexcept nogil
    cdef Py_ssize_t escape(self, const char *src, Py_ssize_t n, bint prefix,
                           Workspace *w) noexcept nogil
    cdef int32_t find_bounds(self, Workspace *w, int32_t m) noexcept nogil
    cdef int run(self, Workspace *w, int32_t m) noexcept nogil
    cdef bint safe_boundary(self, const char *text, int32_t i, int32_t m) noexcept nogil
    cdef bint cut_between(self, const char *pair, int32_t left, int32_t right) noexcept nogil
    cdef void _mark_ascii(self, uint8_t *seen, uint64_t low_bytes, const uint8_t[::1] sides)
    cdef void _build_ascii_cuts(self) noexcept
    cdef int merge(self, Workspace *w, int32_t begin, int32_t end) noexcept nogil
    cdef int merge_small(self, Workspace *w, int32_t begin, int32_t end) noexcept nogil
    cdef int spans_of_hit(self, Workspace *w, const int32_t *ids, int32_t n, int32_t begin,
                          int32_t end) noexcept nogil
    cdef int32_t mergeable(self, Workspace *w, const char *s, int32_t length, float *score) noexcept nogil
    cdef int merge_pairs(self, Workspace *w, int32_t begin, int32_t end) noexcept nogil
    cdef Workspace *acquire(self) except NULL
    cdef void release(self, Workspace *w)
    cdef int push_rule(self, Workspace *w, int32_t left) noexcept nogil
    cdef int push_pair(self, Workspace *w, int32_t left, int32_t right) noexcept nogil
    cdef int emit_piece(self, Workspace *w, int32_t start, int32_t n,
                        bint *prev_unknown) noexcept nogil
    cdef int remember_split(self, Workspace *w, int32_t token_id, int32_t left_n) noexcept nogil
    cdef _encode_parts(self, list parts, Workspace *w)
    cdef int gather(self, list batch, BatchPart *items, int32_t *counts, bint prefix) except -1
    cdef int encode_items(self, Workspace *w, const BatchPart *items, const int32_t *counts,
                          Py_ssize_t n_texts, size_t *ends, Py_ssize_t *failed,
                          const uint64_t *seeds) noexcept nogil
    cdef int push(self, Workspace *w, int32_t token_id, int32_t start, int32_t end) noexcept nogil
    cdef _check(self, int rc, Workspace *w, str text)
    cdef list id_list(self, const int32_t *ids, size_t n)
    cdef list encode_text(self, str text, bint prefix)


# The compiled base of spmbpe.tokenizer.SpmTokenizer: its per-line method.
cdef class TokenizerBase:
    # The core when a str is one segment (nothing to split out or normalize)
    # with special="all", and with special="none"; else None.
    cdef readonly SpmCore plain_core
    cdef readonly SpmCore ordinary_core
    cdef bint direct_prefix           # with the dummy prefix

    cdef list direct_ids(self, SpmCore core, str text)


# One encode_batch call shared by threads (SpmCore.encode_parts_batch's work,
# cut into units that the threads take in turn).
cdef class BatchJob:
    cdef SpmCore core
    cdef list batch                   # the texts: keeps the gathered UTF-8 alive
    cdef object seeds                 # keeps seed_ptr alive
    cdef const uint64_t *seed_ptr     # one generator seed per text (sampling), or NULL
    cdef double alpha
    cdef BatchPart *items
    cdef int32_t *counts              # parts of each text
    cdef Py_ssize_t *first_item       # text t's first part in items
    cdef Py_ssize_t *unit_end         # unit u holds texts [unit_end[u - 1], unit_end[u])
    cdef size_t *ends                 # end of text t's ids in its unit's ids
    cdef int32_t **unit_ids           # each finished unit's ids (owned)
    cdef uint32_t *unit_done          # atomic flags: unit_ids[u] is complete
    cdef Py_ssize_t n_texts
    cdef Py_ssize_t n_units
    cdef uint32_t next_unit           # atomic: the next unit to take
    cdef uint32_t running             # atomic: workers merging
    cdef uint32_t failed              # atomic flag: a text failed (redone serially for its error)
    cdef uint32_t started             # atomic flag: start() has gathered the texts
    cdef uint32_t closed              # atomic flag: no worker may join any more
    cdef Workspace *workers[64]
    cdef int n_workers

    cdef Workspace *join(self) except? NULL
    cdef bint run_unit(self, Workspace *w) noexcept nogil
    cdef Py_ssize_t list_units(self, list out, uint8_t *listed) except -1
    cdef tuple flat_ids(self)
    cdef void give_back(self)
