/* spm_pairs: the merges, keyed by the pair of symbols they join.
 *
 * (left symbol, right symbol) -> (rank, merged piece): the table every merge
 * looks its candidates up in, so that a merge never hashes text.
 * HuggingFace tokenizers' BPE ranks *pairs* (its merges list: rank = place
 * in the list); sentencepiece ranks *pieces* by score, and the pairs are
 * derived at load from every way a buildable piece splits into two symbols
 * (spm_pairs_new_ranked, with each pair's rank the rank of its piece's
 * score).  Open addressing with linear probing; a pair listed twice keeps
 * its last rank, as tokenizers' HashMap built from the list does.
 * Read-only after construction.
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
    int32_t rank;   /* position in the merges list: lower merges first */
    int32_t merged; /* id of the joined piece */
} spm_pair_slot;

typedef struct {
    spm_pair_slot *slots;
    uint64_t mask;
    size_t count;
} spm_pairs;

#define SPM_PAIRS_EMPTY UINT64_MAX

static inline uint64_t spm_pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
}

static inline uint64_t spm_pair_hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDULL;
    key ^= key >> 33;
    key *= 0xC4CEB9FE1A85EC53ULL;
    key ^= key >> 33;
    return key;
}

/* n rules: rule i joins left[i] and right[i] into merged[i] with rank i.
 * Returns NULL when out of memory. */
spm_pairs *spm_pairs_new(size_t n, const int32_t *left, const int32_t *right, const int32_t *merged);
/* The same with rule i's rank rank[i] (rank NULL: i). */
spm_pairs *spm_pairs_new_ranked(size_t n, const int32_t *left, const int32_t *right, const int32_t *merged,
                                const int32_t *rank);
void spm_pairs_free(spm_pairs *p);

/* The rule for (left, right), or NULL. */
static inline const spm_pair_slot *spm_pairs_find(const spm_pairs *p, int32_t left, int32_t right) {
    uint64_t key = spm_pair_key(left, right);
    uint64_t i = spm_pair_hash(key) & p->mask;
    for (;;) {
        const spm_pair_slot *slot = &p->slots[i];
        if (slot->key == key) return slot;
        if (slot->key == SPM_PAIRS_EMPTY) return NULL;
        i = (i + 1) & p->mask;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_PAIRS_H */
