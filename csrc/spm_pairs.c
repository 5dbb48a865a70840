#include "spm_pairs.h"

#include <stdlib.h>

spm_pairs *spm_pairs_new(size_t n, const int32_t *left, const int32_t *right, const int32_t *merged) {
    return spm_pairs_new_ranked(n, left, right, merged, NULL);
}

spm_pairs *spm_pairs_new_ranked(size_t n, const int32_t *left, const int32_t *right, const int32_t *merged,
                                const int32_t *rank) {
    spm_pairs *p = (spm_pairs *)calloc(1, sizeof(spm_pairs));
    if (!p) return NULL;
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap <<= 1;
    p->slots = (spm_pair_slot *)malloc(sizeof(spm_pair_slot) * cap);
    if (!p->slots) {
        free(p);
        return NULL;
    }
    p->mask = cap - 1;
    for (uint64_t i = 0; i < cap; i++) p->slots[i].key = SPM_PAIRS_EMPTY;
    for (size_t r = 0; r < n; r++) {
        uint64_t key = spm_pair_key(left[r], right[r]);
        uint64_t i = spm_pair_hash(key) & p->mask;
        while (p->slots[i].key != SPM_PAIRS_EMPTY && p->slots[i].key != key) i = (i + 1) & p->mask;
        if (p->slots[i].key == SPM_PAIRS_EMPTY) p->count++;
        /* A repeated pair takes its later rank (last write wins). */
        p->slots[i].key = key;
        p->slots[i].rank = rank ? rank[r] : (int32_t)r;
        p->slots[i].merged = merged[r];
    }
    return p;
}

void spm_pairs_free(spm_pairs *p) {
    if (!p) return;
    free(p->slots);
    free(p);
}
