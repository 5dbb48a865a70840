/* spm_heap: the merge agenda, a binary max-heap of candidate merges.
 *
 * Order: highest score first; on equal scores the lower left symbol index
 * first.  That is the comparator of both llama.cpp (llm_bigram_spm) and
 * sentencepiece (bpe_model.cc SymbolPair), so ties resolve left to right.
 * Stale entries are not removed; the merger skips them when popped.
 */
#ifndef SPM_HEAP_H
#define SPM_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float score;   /* merge rank of the merged piece: higher merges first */
    int32_t left;  /* symbol index of the left half */
    int32_t right; /* symbol index of the right half */
    int32_t size;  /* byte length of the merged text, to detect staleness */
} spm_bigram;

typedef struct {
    spm_bigram *items;
    size_t len;
    size_t cap;
} spm_heap;

static inline int spm_bigram_before(const spm_bigram *a, const spm_bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
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
        if (!spm_bigram_before(&b, &it[parent])) break;
        it[i] = it[parent];
        i = parent;
    }
    it[i] = b;
    return 0;
}

/* Removes the best entry into *out; 0 on success, -1 when empty. */
static inline int spm_heap_pop(spm_heap *h, spm_bigram *out) {
    if (h->len == 0) return -1;
    spm_bigram *it = h->items;
    *out = it[0];
    spm_bigram last = it[--h->len];
    size_t n = h->len, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && spm_bigram_before(&it[c + 1], &it[c])) c++;
        if (!spm_bigram_before(&it[c], &last)) break;
        it[i] = it[c];
        i = c;
    }
    if (n) it[i] = last;
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_HEAP_H */
