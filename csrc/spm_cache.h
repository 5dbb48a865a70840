/* spm_cache: chunk text -> ids, for one encoding thread.
 *
 * When no piece can span the boundary before a "▁" that follows other text,
 * the merge of each chunk between such boundaries does not depend on its
 * neighbours, so a chunk seen before (a word, mostly) can reuse its ids.
 * Bounded: when the table or its arenas are full, everything is dropped and
 * filling starts again.  Not shared between threads (each workspace has one).
 */
#ifndef SPM_CACHE_H
#define SPM_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t hash;
    int64_t key_off;  /* into keys */
    int32_t key_len;  /* -1: empty slot */
    int32_t ids_len;
    int64_t ids_off;  /* into ids */
} spm_cache_slot;

typedef struct {
    spm_cache_slot *slots;
    uint64_t mask;
    size_t used;
    char *keys;
    size_t keys_len, keys_cap;
    int32_t *ids;
    size_t ids_len, ids_cap;
} spm_cache;

#define SPM_CACHE_SLOTS (1u << 16)
#define SPM_CACHE_KEY_BYTES (1u << 20)
#define SPM_CACHE_IDS (1u << 18)
#define SPM_CACHE_MAX_KEY 256

static inline void spm_cache_clear(spm_cache *c) {
    for (uint64_t i = 0; i <= c->mask; i++) c->slots[i].key_len = -1;
    c->used = 0;
    c->keys_len = 0;
    c->ids_len = 0;
}

/* 0 on success, -1 when out of memory. */
static inline int spm_cache_init(spm_cache *c) {
    c->slots = (spm_cache_slot *)malloc(sizeof(spm_cache_slot) * SPM_CACHE_SLOTS);
    c->keys = (char *)malloc(SPM_CACHE_KEY_BYTES);
    c->ids = (int32_t *)malloc(sizeof(int32_t) * SPM_CACHE_IDS);
    if (!c->slots || !c->keys || !c->ids) {
        free(c->slots);
        free(c->keys);
        free(c->ids);
        c->slots = NULL;
        c->keys = NULL;
        c->ids = NULL;
        return -1;
    }
    c->mask = SPM_CACHE_SLOTS - 1;
    c->keys_cap = SPM_CACHE_KEY_BYTES;
    c->ids_cap = SPM_CACHE_IDS;
    spm_cache_clear(c);
    return 0;
}

static inline void spm_cache_free(spm_cache *c) {
    free(c->slots);
    free(c->keys);
    free(c->ids);
    c->slots = NULL;
    c->keys = NULL;
    c->ids = NULL;
}

/* The slot holding key[0:len] (hash h), or NULL. */
static inline const spm_cache_slot *spm_cache_get(const spm_cache *c, const char *key, size_t len, uint64_t h) {
    uint64_t i = h & c->mask;
    for (;;) {
        const spm_cache_slot *s = &c->slots[i];
        if (s->key_len < 0) return NULL;
        if (s->hash == h && (size_t)s->key_len == len && memcmp(c->keys + s->key_off, key, len) == 0) return s;
        i = (i + 1) & c->mask;
    }
}

/* Stores key -> ids[0:n] (the key must not be present). */
static inline void spm_cache_put(spm_cache *c, const char *key, size_t len, uint64_t h, const int32_t *ids, size_t n) {
    if (len > SPM_CACHE_MAX_KEY || n > SPM_CACHE_MAX_KEY) return;
    if (c->used * 2 >= SPM_CACHE_SLOTS || c->keys_len + len > c->keys_cap || c->ids_len + n > c->ids_cap)
        spm_cache_clear(c);
    uint64_t i = h & c->mask;
    while (c->slots[i].key_len >= 0) i = (i + 1) & c->mask;
    spm_cache_slot *s = &c->slots[i];
    s->hash = h;
    s->key_off = (int64_t)c->keys_len;
    s->key_len = (int32_t)len;
    s->ids_off = (int64_t)c->ids_len;
    s->ids_len = (int32_t)n;
    memcpy(c->keys + c->keys_len, key, len);
    c->keys_len += len;
    memcpy(c->ids + c->ids_len, ids, n * sizeof(int32_t));
    c->ids_len += n;
    c->used++;
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_CACHE_H */
