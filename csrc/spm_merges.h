/* spm_merges: the pieces a merge may build, keyed by their UTF-8 bytes, with
 * each piece's id and score stored in its slot.
 *
 * The merge loop asks "is left+right a piece, and at what score?" for every
 * adjacent pair, many times per word.  The general vocabulary table
 * (spm_vocab) answers with an id, after which the id's offsets, arena bytes,
 * flags and score each cost a separate memory access.  Here one slot holds
 * the first 8 bytes of the piece, its id and score in 16 bytes, so a lookup
 * that misses (most do) touches one or two slots, and a hit one more load
 * (the length, from the offsets).  The table is 1.5 slots per piece: a power
 * of two would take up to twice that, and memory is a target (3x the file).
 */
#ifndef SPM_MERGES_H
#define SPM_MERGES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t head;  /* the first min(len, 8) bytes, zero padded */
    float score;
    int32_t id;     /* -1: empty slot */
} spm_merge_slot;

typedef struct {
    const char *arena;       /* the pieces (not owned) */
    const int64_t *offsets;  /* n + 1 offsets into arena (not owned) */
    spm_merge_slot *slots;
    uint32_t cap;            /* slots; not a power of two (see spm_merge_home) */
    size_t count;
} spm_merges;

/* The first min(len, 8) bytes of s, zero padded.  With `padded`, s may be read
 * 8 bytes past its start whatever len is (the caller's buffer has slack). */
static inline uint64_t spm_merge_head(const char *s, size_t len, int padded) {
    uint64_t k = 0;
    if (padded) {
        memcpy(&k, s, 8);
        if (len < 8) k &= (((uint64_t)1) << (8 * len)) - 1;
    } else {
        memcpy(&k, s, len < 8 ? len : 8);
    }
    return k;
}

static inline uint64_t spm_merge_hash(uint64_t head, const char *s, size_t len) {
    uint64_t h = (head ^ ((uint64_t)len << 56)) * 0x9E3779B97F4A7C15ULL;
    for (size_t i = 8; i < len; i += 8) {
        uint64_t k = 0;
        memcpy(&k, s + i, len - i < 8 ? len - i : 8);
        h = (h ^ (h >> 29) ^ k) * 0xBF58476D1CE4E5B9ULL;
    }
    h ^= h >> 32;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 29;
    return h;
}

/* An index over `count` ids: those with selected[id] nonzero.  NULL when out
 * of memory.  The caller passes each piece text once (the lowest id). */
spm_merges *spm_merges_new(int32_t n, const char *arena, const int64_t *offsets,
                           const float *scores, const unsigned char *selected);
void spm_merges_free(spm_merges *m);

/* Where the probe for hash h starts: h scaled to [0, cap) (Lemire's
 * multiply-shift, which works for any capacity). */
static inline uint32_t spm_merge_home(uint64_t h, uint32_t cap) {
    return (uint32_t)(((h >> 32) * (uint64_t)cap) >> 32);
}

/* The slot of the piece s[0:len], or NULL.  `padded`: see spm_merge_head. */
static inline const spm_merge_slot *spm_merges_find(const spm_merges *m, const char *s, size_t len,
                                                    int padded) {
    uint64_t head = spm_merge_head(s, len, padded);
    uint32_t i = spm_merge_home(spm_merge_hash(head, s, len), m->cap);
    for (;;) {
        const spm_merge_slot *slot = &m->slots[i];
        if (slot->id < 0) return NULL;
        if (slot->head == head) {
            int64_t a = m->offsets[slot->id];
            if ((size_t)(m->offsets[slot->id + 1] - a) == len &&
                (len <= 8 || memcmp(m->arena + a + 8, s + 8, len - 8) == 0))
                return slot;
        }
        if (++i == m->cap) i = 0;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_MERGES_H */
