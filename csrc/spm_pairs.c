#include "spm_pairs.h"

#include <stdlib.h>

spm_pairs *spm_pairs_new(size_t n, const int32_t *left, const int32_t *right, const int32_t *merged,
                         const int32_t *rank) {
    spm_pairs *p = (spm_pairs *)calloc(1, sizeof(spm_pairs));
    uint64_t cap = 16;
    int bits = 4, compact = 1;
    if (!p) return NULL;
    while (cap < (uint64_t)n * 2) {
        cap <<= 1;
        bits++;
    }
    for (size_t r = 0; r < n && compact; r++) {
        int32_t k = rank ? rank[r] : (int32_t)r;
        compact = left[r] >= 0 && left[r] <= SPM_PAIRS_COMPACT_MAX && right[r] >= 0 &&
                  right[r] <= SPM_PAIRS_COMPACT_MAX && merged[r] >= 0 && merged[r] <= SPM_PAIRS_COMPACT_MAX &&
                  k >= 0 && k <= SPM_PAIRS_COMPACT_MAX;
    }
    p->mask = cap - 1;
    p->shift = 64 - bits;
    if (compact) {
        p->compact = (uint64_t *)malloc(sizeof(uint64_t) * cap);
        if (!p->compact) {
            free(p);
            return NULL;
        }
        for (uint64_t i = 0; i < cap; i++) p->compact[i] = SPM_PAIRS_FREE;
        for (size_t r = 0; r < n; r++) {
            uint64_t key = ((uint64_t)left[r] << 16) | (uint64_t)right[r];
            uint64_t i = spm_pair_home(p, key);
            uint64_t value = ((uint64_t)merged[r] << 16) | (uint64_t)(rank ? rank[r] : (int32_t)r);
            while (p->compact[i] != SPM_PAIRS_FREE && (uint32_t)p->compact[i] != (uint32_t)key) i = (i + 1) & p->mask;
            if (p->compact[i] == SPM_PAIRS_FREE) p->count++;
            /* A repeated pair takes its later rank (last write wins). */
            p->compact[i] = key | (value << 32);
        }
        return p;
    }
    p->wide = (spm_pair_slot *)malloc(sizeof(spm_pair_slot) * cap);
    if (!p->wide) {
        free(p);
        return NULL;
    }
    for (uint64_t i = 0; i < cap; i++) p->wide[i].key = SPM_PAIRS_EMPTY;
    for (size_t r = 0; r < n; r++) {
        uint64_t key = spm_pair_key(left[r], right[r]);
        uint64_t i = spm_pair_home(p, key);
        while (p->wide[i].key != SPM_PAIRS_EMPTY && p->wide[i].key != key) i = (i + 1) & p->mask;
        if (p->wide[i].key == SPM_PAIRS_EMPTY) p->count++;
        p->wide[i].key = key;
        p->wide[i].rank = rank ? rank[r] : (int32_t)r;
        p->wide[i].merged = merged[r];
    }
    return p;
}

void spm_pairs_free(spm_pairs *p) {
    if (!p) return;
    free(p->wide);
    free(p->compact);
    free(p);
}
