#include "spm_merges.h"

#include <stdlib.h>

spm_merges *spm_merges_new(int32_t n, const char *arena, const int64_t *offsets,
                           const float *scores, const unsigned char *selected) {
    spm_merges *m = (spm_merges *)calloc(1, sizeof(spm_merges));
    if (!m) return NULL;
    size_t count = 0;
    for (int32_t id = 0; id < n; id++) count += selected[id] != 0;
    /* Load factor 2/3: probe chains stay short (about 2 slots for a hit, 5
     * for a miss, in adjacent memory). */
    uint64_t cap = (uint64_t)count + count / 2 + 16;
    if (cap > UINT32_MAX) {
        free(m);
        return NULL;
    }
    m->slots = (spm_merge_slot *)malloc(sizeof(spm_merge_slot) * cap);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    m->arena = arena;
    m->offsets = offsets;
    m->cap = (uint32_t)cap;
    m->count = count;
    for (uint64_t i = 0; i < cap; i++) m->slots[i].id = -1;
    for (int32_t id = 0; id < n; id++) {
        if (!selected[id]) continue;
        const char *s = arena + offsets[id];
        size_t len = (size_t)(offsets[id + 1] - offsets[id]);
        uint64_t head = spm_merge_head(s, len, 0);
        uint32_t i = spm_merge_home(spm_merge_hash(head, s, len), m->cap);
        while (m->slots[i].id >= 0)
            if (++i == m->cap) i = 0;
        spm_merge_slot *slot = &m->slots[i];
        slot->head = head;
        slot->score = scores[id];
        slot->id = id;
    }
    return m;
}

void spm_merges_free(spm_merges *m) {
    if (!m) return;
    free(m->slots);
    free(m);
}
