#include "spm_vocab.h"

#include <stdlib.h>

#define SPM_VOCAB_AHEAD 16

#if defined(__GNUC__) || defined(__clang__)
#define SPM_PREFETCH_WRITE(p) __builtin_prefetch((p), 1)
#else
#define SPM_PREFETCH_WRITE(p) ((void)(p))
#endif

/* Hashes piece id into the ring and prefetches its home slot and tag. */
static inline void spm_vocab_hash_piece(const spm_vocab *v, int32_t id, uint64_t *ring_h, uint64_t *ring_head) {
    const char *s = v->arena + v->offsets[id];
    size_t len = (size_t)(v->offsets[id + 1] - v->offsets[id]);
    /* (8 bytes read at once where the arena goes on that far: copying a
     * piece's bytes one length at a time stalls the load that follows.) */
    int padded = (int64_t)v->offsets[id] + (int64_t)len + 8 <= (int64_t)v->offsets[v->n];
    uint64_t head = spm_head8(s, len, padded);
    uint64_t h = spm_vocab_hash(head, s, len, padded);
    uint32_t home = spm_vocab_home(h, v->cap);
    SPM_PREFETCH_WRITE(&v->slots[home]);
    SPM_PREFETCH_WRITE(&v->tags[home]);
    ring_h[id % SPM_VOCAB_AHEAD] = h;
    ring_head[id % SPM_VOCAB_AHEAD] = head;
}

spm_vocab *spm_vocab_new(int32_t n, const char *arena, const int32_t *offsets) {
    if (n < 1 || n > SPM_ID_MASK) return NULL;
    spm_vocab *v = (spm_vocab *)calloc(1, sizeof(spm_vocab));
    if (!v) return NULL;
    v->n = n;
    v->arena = arena;
    v->offsets = offsets;
    v->first_duplicate = -1;
    /* Load factor 4/5: a probe reads the tag bytes (spm_vocab.h) until its
     * tag or an empty one, so longer chains cost little, and the slots are
     * most of the tokenizer's memory. */
    uint64_t cap = (uint64_t)n + (uint64_t)n / 4 + 16;
    v->slots = (spm_vocab_slot *)malloc(sizeof(spm_vocab_slot) * cap);
    v->tags = (uint8_t *)calloc(cap, 1);
    if (!v->slots || !v->tags) {
        free(v->slots);
        free(v->tags);
        free(v);
        return NULL;
    }
    v->cap = (uint32_t)cap;
    /* A slot is empty while its tag is 0 (a slot is written only when a
     * piece lands there).  Each piece's hash is computed SPM_VOCAB_AHEAD
     * pieces early and its home slot prefetched, so the misses overlap. */
    uint64_t ring_h[SPM_VOCAB_AHEAD], ring_head[SPM_VOCAB_AHEAD];
    for (int32_t id = 0; id < n && id < SPM_VOCAB_AHEAD; id++) spm_vocab_hash_piece(v, id, ring_h, ring_head);
    for (int32_t id = 0; id < n; id++) {
        const char *s = arena + offsets[id];
        size_t len = (size_t)(offsets[id + 1] - offsets[id]);
        uint64_t head = ring_head[id % SPM_VOCAB_AHEAD];
        uint64_t h = ring_h[id % SPM_VOCAB_AHEAD];
        if (id + SPM_VOCAB_AHEAD < n) spm_vocab_hash_piece(v, id + SPM_VOCAB_AHEAD, ring_h, ring_head);
        if (len >= 1 && len <= 8 && s[len - 1] == 0) v->nul_tails = 1;
        uint32_t i = spm_vocab_home(h, v->cap);
        uint8_t tag = spm_vocab_tag(h);
        int duplicate = 0;
        while (v->tags[i]) {
            int32_t other = v->slots[i].id;
            if (v->tags[i] == tag && v->slots[i].head == head &&
                (size_t)(offsets[other + 1] - offsets[other]) == len &&
                memcmp(arena + offsets[other], s, len) == 0) {
                duplicate = 1;
                break;
            }
            if (++i == v->cap) i = 0;
        }
        if (duplicate) {
            /* First id wins: a duplicated piece keeps its lowest id. */
            if (v->first_duplicate < 0) v->first_duplicate = id;
            continue;
        }
        v->slots[i].id = id;
        v->slots[i].head = head;
        v->tags[i] = tag;
    }
    return v;
}

void spm_vocab_free(spm_vocab *v) {
    if (!v) return;
    free(v->slots);
    free(v->tags);
    free(v);
}
