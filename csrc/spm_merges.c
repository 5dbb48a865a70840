#include "spm_merges.h"

#include <stdlib.h>

spm_merges *spm_merges_new(int32_t n, const char *arena, const int64_t *offsets,
                           const float *scores, const unsigned char *selected) {
    spm_merges *m = (spm_merges *)calloc(1, sizeof(spm_merges));
    if (!m) return NULL;
    size_t count = 0;
    for (int32_t id = 0; id < n; id++) count += selected[id] != 0;
    /* Load factor at most 1/2 keeps probe chains short. */
    uint64_t cap = 16;
    while (cap < (uint64_t)count * 2) cap <<= 1;
    m->slots = (spm_merge_slot *)malloc(sizeof(spm_merge_slot) * cap);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    m->arena = arena;
    m->offsets = offsets;
    m->mask = cap - 1;
    m->count = count;
    for (uint64_t i = 0; i < cap; i++) m->slots[i].id = -1;
    for (int32_t id = 0; id < n; id++) {
        if (!selected[id]) continue;
        const char *s = arena + offsets[id];
        size_t len = (size_t)(offsets[id + 1] - offsets[id]);
        uint64_t head = spm_merge_head(s, len, 0);
        uint64_t h = spm_merge_hash(head, s, len);
        uint64_t i = h & m->mask;
        while (m->slots[i].id >= 0) i = (i + 1) & m->mask;
        spm_merge_slot *slot = &m->slots[i];
        slot->head = head;
        slot->score = scores[id];
        slot->id = id;
        slot->len = (uint32_t)len;
        slot->tag = (uint32_t)(h >> 32);
    }
    return m;
}

void spm_merges_free(spm_merges *m) {
    if (!m) return;
    free(m->slots);
    free(m);
}
