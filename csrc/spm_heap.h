/* spm_heap: the merge agenda, a binary min-heap of candidate merges.
 *
 * Order: the lower rank first; on equal ranks the lower left symbol index
 * first -- one comparison of `key`.  That is the order of sentencepiece's
 * SymbolPair agenda (bpe_model.cc: higher score, then lower left), of
 * llama.cpp's llm_bigram_spm and of tokenizers' Word::merge_all (lower
 * rank, then lower position): ties resolve left to right.  Stale entries
 * are not removed; the merger skips them when popped, as all three do.
 */
#ifndef SPM_HEAP_H
#define SPM_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t key;       /* (uint64)rank << 32 | left symbol index */
    int32_t merged;     /* the piece the pair makes */
    uint32_t right_gen; /* the right symbol's generation when queued: stale once it changed */
} spm_bigram;

typedef struct {
    spm_bigram *items;
    size_t len;
    size_t cap;
} spm_heap;

static inline uint64_t spm_bigram_key(int32_t rank, int32_t left) {
    return ((uint64_t)(uint32_t)rank << 32) | (uint32_t)left;
}

static inline void spm_heap_init(spm_heap *h) {
    h->items = NULL;
    h->len = 0;
    h->cap = 0;
}

static inline void spm_heap_free(spm_heap *h) {
    free(h->items);
    spm_heap_init(h);
}

/* Makes room for at least cap items; 0 on success, -1 when out of memory. */
static inline int spm_heap_reserve(spm_heap *h, size_t cap) {
    if (cap <= h->cap) return 0;
    size_t want = h->cap ? h->cap : 64;
    while (want < cap) want *= 2;
    spm_bigram *items = (spm_bigram *)realloc(h->items, want * sizeof(spm_bigram));
    if (!items) return -1;
    h->items = items;
    h->cap = want;
    return 0;
}

/* 0 on success, -1 when out of memory. */
static inline int spm_heap_push(spm_heap *h, spm_bigram b) {
    if (h->len == h->cap && spm_heap_reserve(h, h->len + 1) < 0) return -1;
    size_t i = h->len++;
    spm_bigram *it = h->items;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (b.key >= it[parent].key) break;
        it[i] = it[parent];
        i = parent;
    }
    it[i] = b;
    return 0;
}

/* Removes the first entry into *out; 0 on success, -1 when empty. */
static inline int spm_heap_pop(spm_heap *h, spm_bigram *out) {
    if (h->len == 0) return -1;
    spm_bigram *it = h->items;
    *out = it[0];
    spm_bigram last = it[--h->len];
    size_t n = h->len, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && it[c + 1].key < it[c].key) c++;
        if (it[c].key >= last.key) break;
        it[i] = it[c];
        i = c;
    }
    if (n) it[i] = last;
    return 0;
}

#endif /* SPM_HEAP_H */
