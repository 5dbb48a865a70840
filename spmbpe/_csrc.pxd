# Declarations of the C data structures in csrc/ (one place, as uvloop and
# datrie declare their C libraries).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "spm_types.h" nogil:
    enum:
        SPM_TYPE_NORMAL
        SPM_TYPE_UNKNOWN
        SPM_TYPE_CONTROL
        SPM_TYPE_USER_DEFINED
        SPM_TYPE_UNUSED
        SPM_TYPE_BYTE
    enum:
        SPM_FLAG_MERGEABLE
        SPM_FLAG_RESPLIT


cdef extern from "spm_bytes.h" nogil:
    uint64_t spm_head8(const char *s, size_t length, int padded)
    int spm_bytes_equal_wide(const char *a, const char *b, size_t n)
    int spm_utf8_len(unsigned char lead)
    int spm_ascii_after_marker(const char *s, size_t n, int padded)
    size_t spm_utf8_valid_prefix(const char *s, size_t n)
    size_t spm_count_byte(const char *s, size_t n, unsigned char c)
    int spm_json_plain8(const char *s)
    uint64_t spm_load8(const char *s, size_t p, size_t n)
    uint64_t spm_low_bytes(uint64_t k, size_t length)
    uint64_t spm_bytes_eq(uint64_t word, uint8_t c)
    int spm_first_byte(uint64_t flags)
    int32_t spm_least_in(const int32_t *keys, uint32_t mask)
    int lowest_bit "spm_lowest_bit"(uint64_t x)
    int highest_bit "spm_highest_bit"(uint64_t x)
    uint64_t spm_bytes_before(uint64_t flags, int k)


cdef extern from "spm_pages.h" nogil:
    void spm_prefault_write(void *p, size_t n, size_t block)


cdef extern from "spm_ucs.h" nogil:
    Py_ssize_t spm_ucs_to_utf8(int kind, const void *data, size_t start, size_t end, char *out)
    size_t spm_ucs_utf8_size(int kind, const void *data, size_t n)
    size_t spm_ucs_space_after_ascii(int kind, const void *data, size_t start, size_t n)


cdef extern from "spm_vocab.h" nogil:
    ctypedef struct spm_vocab:
        int32_t n
        int32_t first_duplicate
        uint32_t cap

    enum:
        SPM_ID_MASK

    spm_vocab *spm_vocab_new(int32_t n, const char *arena, const int32_t *offsets)
    void spm_vocab_free(spm_vocab *v)
    int32_t spm_vocab_find(const spm_vocab *v, const char *s, size_t length)
    ctypedef struct spm_vocab_key:
        const char *s
        size_t len
    void spm_vocab_key_of(const spm_vocab *v, const char *s, size_t length, int padded, spm_vocab_key *k)
    int32_t spm_vocab_find_key(const spm_vocab *v, const spm_vocab_key *k)


cdef extern from "spm_heap.h" nogil:
    ctypedef struct spm_bigram:
        uint64_t key
        int32_t merged
        uint32_t right_gen

    uint64_t spm_bigram_key(int32_t rank, int32_t left)

    ctypedef struct spm_heap:
        size_t len

    void spm_heap_init(spm_heap *h)
    void spm_heap_free(spm_heap *h)
    int spm_heap_reserve(spm_heap *h, size_t cap)
    int spm_heap_push(spm_heap *h, spm_bigram b)
    int spm_heap_pop(spm_heap *h, spm_bigram *out)


cdef extern from "spm_pairs.h" nogil:
    ctypedef struct spm_pairs:
        uint64_t mask
        size_t count

    spm_pairs *spm_pairs_new(size_t n, const int32_t *left, const int32_t *right,
                             const int32_t *merged, const int32_t *rank)
    void spm_pairs_free(spm_pairs *p)
    int32_t spm_pairs_rank(const spm_pairs *p, int32_t left, int32_t right, int32_t *merged)
    int spm_pairs_slot(const spm_pairs *p, uint64_t i, int32_t *left, int32_t *right, int32_t *merged,
                       int32_t *rank)


cdef extern from "spm_cache.h" nogil:
    ctypedef struct spm_cache_entry:
        int ids_len

    ctypedef struct spm_cache_table:
        uint32_t mask
        uint32_t used

    ctypedef struct spm_cache:
        spm_cache_table *table
        size_t data_len
        size_t data_cap
        uint32_t full
        uint32_t offset_bits

    uint32_t SPM_CACHE_MAX_SLOTS
    int32_t SPM_CACHE_MAX_KEY
    size_t SPM_CACHE_MAX_DATA
    size_t SPM_CACHE_BLOCK

    ctypedef struct spm_chunk_key:
        uint64_t h

    size_t spm_cache_words(const spm_cache_view *v, const char *s, size_t n, size_t i, int lead, int32_t *out,
                           size_t *count, uint64_t *lookups, int *missed, uint64_t *missed_h)
    void spm_cache_key_of(spm_chunk_key *k, const char *s, size_t n, size_t avail, int lead)
    void spm_cache_key_hashed(spm_chunk_key *k, const char *s, size_t n, size_t avail, int lead, uint64_t h)
    int spm_cache_init(spm_cache *c, uint32_t max_slots, size_t data_cap)
    void spm_cache_free(spm_cache *c)
    void spm_cache_clear(spm_cache *c)
    void spm_cache_quiesce(spm_cache *c)
    ctypedef struct spm_cache_view:
        pass

    void spm_cache_view_of(const spm_cache *c, spm_cache_view *v)
    const spm_cache_entry *spm_cache_view_get(const spm_cache_view *v, const spm_chunk_key *k)
    const spm_cache_entry *spm_cache_get(const spm_cache *c, const spm_chunk_key *k)
    const int32_t *spm_cache_ids(const spm_cache_entry *e)
    void spm_cache_mark(const spm_cache_entry *e)
    uint32_t spm_cache_sweep(spm_cache *c)
    ctypedef struct spm_cache_writer:
        pass

    void spm_cache_writer_init(spm_cache_writer *wr)
    void spm_cache_flush(spm_cache *c, spm_cache_writer *wr)
    uint64_t spm_cache_full_load(uint64_t slots)
    int spm_cache_mostly_full(const spm_cache *c)
    void spm_cache_put(spm_cache *c, spm_cache_writer *wr, const spm_chunk_key *k, const int32_t *ids,
                       size_t n)


cdef extern from "spm_chars.h" nogil:
    ctypedef struct spm_chars:
        uint32_t mask
        uint32_t count

    uint32_t spm_char_key(uint64_t word, int length)
    int32_t spm_chars_find(const spm_chars *c, uint32_t key, int32_t missing)
    spm_chars *spm_chars_new()
    int spm_chars_set(spm_chars *c, uint32_t key, int32_t id)
    void spm_chars_free(spm_chars *c)


cdef extern from "spm_charpairs.h" nogil:
    ctypedef struct spm_charpairs:
        uint64_t mask
        size_t count

    int spm_charpairs_has(const spm_charpairs *p, uint64_t key)
    spm_charpairs *spm_charpairs_new()
    int spm_charpairs_wanted(int a, int b)
    int64_t spm_piece_scan(spm_charpairs *p, const char *arena, int64_t arena_len, int64_t a, int64_t e,
                           int64_t *at, int64_t max)
    enum: SPM_ASCII_PAIRS
    uint64_t spm_ascii_scan(uint8_t *seen, const char *arena, int64_t a, int64_t e)
    void spm_ascii_pack(uint64_t *held, const uint8_t *seen)
    int spm_ascii_pair_held(const uint64_t *held, unsigned a, unsigned b)
    void spm_charpairs_free(spm_charpairs *p)


cdef extern from "spm_atomic.h" nogil:
    void spm_yield()
    uint32_t spm_load_u32(const uint32_t *p)
    uint32_t spm_load_acquire_u32(const uint32_t *p)
    void spm_store_u32(uint32_t *p, uint32_t v)
    void spm_store_release_u32(uint32_t *p, uint32_t v)
    uint32_t spm_fetch_add_u32(uint32_t *p, uint32_t v)
    void spm_sub_release_u32(uint32_t *p, uint32_t v)
