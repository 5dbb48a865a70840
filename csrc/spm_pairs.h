/* spm_pairs: the merges, keyed by the pair of symbols they join.
 *
 * (left symbol, right symbol) -> (rank, merged piece): the table every merge
 * looks its candidates up in, so that a merge never hashes text.
 * HuggingFace tokenizers' BPE ranks *pairs* (its merges list: rank = place
 * in the list); sentencepiece ranks *pieces* by score, and the pairs are
 * derived at load from every way a buildable piece splits into two symbols
 * (spm_pairs_new, with each pair's rank the rank of its piece's
 * score).  Open addressing with linear probing; a pair listed twice keeps
 * its last rank, as tokenizers' HashMap built from the list does.
 * Read-only after construction.
 *
 * A merge's lookups land anywhere in the table, so its size decides how
 * many of them wait on memory: where every id and rank fits in 16 bits
 * (vocabularies of up to 65,535 symbols), a slot is 8 bytes (`compact`),
 * else 16 (`wide`).
 */
#ifndef SPM_PAIRS_H
#define SPM_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t key;   /* (uint64)left << 32 | right; SPM_PAIRS_EMPTY when free */
    int32_t rank;   /* lower merges first */
    int32_t merged; /* id of the joined piece */
} spm_pair_slot;

typedef struct {
    spm_pair_slot *wide;  /* the slots when not compact, else NULL */
    uint64_t *compact;    /* (left << 16 | right) | (merged << 16 | rank) << 32; SPM_PAIRS_FREE when free */
    uint64_t mask;
    int shift;            /* 64 - log2(mask + 1): a key's home is its hash's top bits */
    size_t count;
} spm_pairs;

#define SPM_PAIRS_EMPTY UINT64_MAX
#define SPM_PAIRS_FREE UINT64_MAX
/* The largest id or rank a compact slot holds (0xFFFF pairs with 0xFFFF
 * would spell a free slot). */
#define SPM_PAIRS_COMPACT_MAX 0xFFFE

static inline uint64_t spm_pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
}

/* Where the probe for `key` starts: Fibonacci hashing, one multiply (the
 * merge looks a pair up at every step). */
static inline uint64_t spm_pair_home(const spm_pairs *p, uint64_t key) {
    return (key * 0x9E3779B97F4A7C15ULL) >> p->shift;
}

/* n rules: rule i joins left[i] and right[i] into merged[i] with rank
 * rank[i] (rank NULL: i).  Returns NULL when out of memory. */
spm_pairs *spm_pairs_new(size_t n, const int32_t *left, const int32_t *right, const int32_t *merged,
                         const int32_t *rank);
void spm_pairs_free(spm_pairs *p);

/* The rank of the rule for (left, right), its piece in merged[0]; -1 when
 * there is none.  Both ids >= 0. */
static inline int32_t spm_pairs_rank(const spm_pairs *p, int32_t left, int32_t right, int32_t *merged) {
    if (p->compact) {
        uint64_t key, i;
        if (left > SPM_PAIRS_COMPACT_MAX || right > SPM_PAIRS_COMPACT_MAX) return -1;
        key = ((uint64_t)left << 16) | (uint64_t)right;
        i = spm_pair_home(p, key);
        for (;;) {
            uint64_t slot = p->compact[i];
            if ((uint32_t)slot == (uint32_t)key) {
                *merged = (int32_t)(slot >> 48);
                return (int32_t)((slot >> 32) & 0xFFFF);
            }
            if (slot == SPM_PAIRS_FREE) return -1;
            i = (i + 1) & p->mask;
        }
    } else {
        uint64_t key = spm_pair_key(left, right), i = spm_pair_home(p, key);
        for (;;) {
            const spm_pair_slot *slot = &p->wide[i];
            if (slot->key == key) {
                *merged = slot->merged;
                return slot->rank;
            }
            if (slot->key == SPM_PAIRS_EMPTY) return -1;
            i = (i + 1) & p->mask;
        }
    }
}

/* Slot i (below mask + 1) of the table: 1 and its rule when it holds one,
 * else 0. */
static inline int spm_pairs_slot(const spm_pairs *p, uint64_t i, int32_t *left, int32_t *right, int32_t *merged,
                                 int32_t *rank) {
    if (p->compact) {
        uint64_t slot = p->compact[i];
        if (slot == SPM_PAIRS_FREE) return 0;
        *left = (int32_t)((slot >> 16) & 0xFFFF);
        *right = (int32_t)(slot & 0xFFFF);
        *merged = (int32_t)(slot >> 48);
        *rank = (int32_t)((slot >> 32) & 0xFFFF);
        return 1;
    }
    if (p->wide[i].key == SPM_PAIRS_EMPTY) return 0;
    *left = (int32_t)(p->wide[i].key >> 32);
    *right = (int32_t)(p->wide[i].key & 0xFFFFFFFFu);
    *merged = p->wide[i].merged;
    *rank = p->wide[i].rank;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_PAIRS_H */
