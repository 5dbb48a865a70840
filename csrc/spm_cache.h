/* spm_cache: chunk text -> ids, for one encoding thread.
 *
 * When no piece can span the boundary before a "▁" that follows other text,
 * the merge of each chunk between such boundaries does not depend on its
 * neighbours, so a chunk seen before (a word, mostly) can reuse its ids.
 *
 * Layout, for the hit path (most chunks of real text): a slot of 16 bytes
 * (hash tag, lengths, offset) and one entry in the data arena holding the
 * key's bytes then its ids, so a hit reads two places.  The table starts
 * small and doubles as it fills, so the slots of common words stay close
 * together in the CPU cache and a short text costs little memory.  Bounded:
 * at SPM_CACHE_MAX_SLOTS slots, or when the arena is full, everything is
 * dropped and filling starts again.  Not shared between threads (each
 * workspace has one).
 */
#ifndef SPM_CACHE_H
#define SPM_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spm_bytes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t tag;      /* upper hash bits */
    uint32_t off;      /* entry in data: key bytes, padding to 4, ids */
    uint16_t key_len;  /* 0: empty slot (chunks are never empty) */
    uint16_t ids_len;
    uint32_t hash_lo;  /* lower hash bits, for rehashing when the table grows */
} spm_cache_slot;

typedef struct {
    spm_cache_slot *slots;
    uint32_t mask;     /* slots - 1 (a power of two) */
    uint32_t used;
    char *data;
    size_t data_len, data_cap;
} spm_cache;

/* The hash of a chunk (its key). */
static inline uint64_t spm_hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0xFF51AFD7ED558CCDULL);
    while (n >= 8) {
        uint64_t k;
        memcpy(&k, s, 8);
        k *= 0x87C37B91114253D5ULL;
        k ^= k >> 31;
        h = (h ^ k) * 0x4CF5AD432745937FULL;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t k = 0;
        memcpy(&k, s, n);
        k *= 0x87C37B91114253D5ULL;
        k ^= k >> 31;
        h = (h ^ k) * 0x4CF5AD432745937FULL;
    }
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 29;
    return h;
}

#define SPM_CACHE_MIN_SLOTS (1u << 10)
#define SPM_CACHE_MAX_SLOTS (1u << 17)
#define SPM_CACHE_MIN_DATA (1u << 14)
#define SPM_CACHE_MAX_DATA (1u << 22)
#define SPM_CACHE_MAX_KEY 256

static inline const int32_t *spm_cache_ids(const spm_cache *c, const spm_cache_slot *s) {
    return (const int32_t *)(c->data + s->off + ((s->key_len + 3u) & ~3u));
}

static inline void spm_cache_clear(spm_cache *c) {
    memset(c->slots, 0, sizeof(spm_cache_slot) * ((size_t)c->mask + 1));
    c->used = 0;
    c->data_len = 0;
}

/* 0 on success, -1 when out of memory. */
static inline int spm_cache_init(spm_cache *c) {
    c->slots = (spm_cache_slot *)calloc(SPM_CACHE_MIN_SLOTS, sizeof(spm_cache_slot));
    c->data = (char *)malloc(SPM_CACHE_MIN_DATA);
    if (!c->slots || !c->data) {
        free(c->slots);
        free(c->data);
        c->slots = NULL;
        c->data = NULL;
        return -1;
    }
    c->mask = SPM_CACHE_MIN_SLOTS - 1;
    c->used = 0;
    c->data_len = 0;
    c->data_cap = SPM_CACHE_MIN_DATA;
    return 0;
}

static inline void spm_cache_free(spm_cache *c) {
    free(c->slots);
    free(c->data);
    c->slots = NULL;
    c->data = NULL;
}

/* The slot holding key[0:len] (hash h), or NULL. */
static inline const spm_cache_slot *spm_cache_get(const spm_cache *c, const char *key, size_t len, uint64_t h) {
    uint32_t tag = (uint32_t)(h >> 32);
    uint32_t i = (uint32_t)h & c->mask;
    for (;;) {
        const spm_cache_slot *s = &c->slots[i];
        if (s->key_len == 0) return NULL;
        if (s->tag == tag && s->key_len == len && spm_bytes_equal(c->data + s->off, key, len)) return s;
        i = (i + 1) & c->mask;
    }
}

/* Doubles the table (rehashing); 0 on success, -1 when out of memory. */
static inline int spm_cache_grow(spm_cache *c) {
    uint32_t cap = (c->mask + 1) * 2;
    spm_cache_slot *slots = (spm_cache_slot *)calloc(cap, sizeof(spm_cache_slot));
    if (!slots) return -1;
    for (uint32_t k = 0; k <= c->mask; k++) {
        spm_cache_slot *s = &c->slots[k];
        if (s->key_len == 0) continue;
        uint32_t i = s->hash_lo & (cap - 1);
        while (slots[i].key_len) i = (i + 1) & (cap - 1);
        slots[i] = *s;
    }
    free(c->slots);
    c->slots = slots;
    c->mask = cap - 1;
    return 0;
}

/* Stores key -> ids[0:n] (the key must not be present).  Out of memory only
 * means the entry is not kept. */
static inline void spm_cache_put(spm_cache *c, const char *key, size_t len, uint64_t h, const int32_t *ids, size_t n) {
    if (len == 0 || len > SPM_CACHE_MAX_KEY || n > SPM_CACHE_MAX_KEY) return;
    size_t entry = ((len + 3u) & ~(size_t)3u) + n * sizeof(int32_t);
    if ((c->used + 1) * 2 > c->mask + 1) {
        if (c->mask + 1 >= SPM_CACHE_MAX_SLOTS || spm_cache_grow(c) != 0) spm_cache_clear(c);
    }
    if (c->data_len + entry > c->data_cap) {
        size_t cap = c->data_cap * 2;
        while (cap < c->data_len + entry) cap *= 2;
        char *data = cap <= SPM_CACHE_MAX_DATA ? (char *)realloc(c->data, cap) : NULL;
        if (data) {
            c->data = data;
            c->data_cap = cap;
        } else {
            spm_cache_clear(c);
        }
    }
    uint32_t i = (uint32_t)h & c->mask;
    while (c->slots[i].key_len) i = (i + 1) & c->mask;
    spm_cache_slot *s = &c->slots[i];
    s->tag = (uint32_t)(h >> 32);
    s->hash_lo = (uint32_t)h;
    s->off = (uint32_t)c->data_len;
    s->key_len = (uint16_t)len;
    s->ids_len = (uint16_t)n;
    memcpy(c->data + c->data_len, key, len);
    memcpy(c->data + c->data_len + ((len + 3u) & ~(size_t)3u), ids, n * sizeof(int32_t));
    c->data_len += entry;
    c->used++;
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_CACHE_H */
