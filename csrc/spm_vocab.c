#include "spm_vocab.h"

#include <stdlib.h>

spm_vocab *spm_vocab_new(int32_t n, const char *arena, const int64_t *offsets) {
    if (n < 1) return NULL;
    spm_vocab *v = (spm_vocab *)calloc(1, sizeof(spm_vocab));
    if (!v) return NULL;

    size_t arena_len = (size_t)offsets[n];
    v->n = n;
    v->arena = (char *)malloc(arena_len ? arena_len : 1);
    v->offsets = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n + 1));
    /* Load factor at most 1/2 keeps probe chains short. */
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap <<= 1;
    v->slots = (spm_vocab_slot *)malloc(sizeof(spm_vocab_slot) * cap);
    if (!v->arena || !v->offsets || !v->slots) {
        spm_vocab_free(v);
        return NULL;
    }
    if (arena_len) memcpy(v->arena, arena, arena_len);
    memcpy(v->offsets, offsets, sizeof(int64_t) * ((size_t)n + 1));
    v->mask = cap - 1;
    for (uint64_t i = 0; i < cap; i++) {
        v->slots[i].id = -1;
        v->slots[i].tag = 0;
    }

    for (int32_t id = 0; id < n; id++) {
        const char *s = v->arena + v->offsets[id];
        size_t len = (size_t)(v->offsets[id + 1] - v->offsets[id]);
        /* First id wins: a duplicated piece keeps its lowest id. */
        if (spm_vocab_find(v, s, len) >= 0) continue;
        uint64_t h = spm_hash_bytes(s, len);
        uint64_t i = h & v->mask;
        while (v->slots[i].id >= 0) i = (i + 1) & v->mask;
        v->slots[i].id = id;
        v->slots[i].tag = (uint32_t)(h >> 32);
    }
    return v;
}

void spm_vocab_free(spm_vocab *v) {
    if (!v) return;
    free(v->arena);
    free(v->offsets);
    free(v->slots);
    free(v);
}
