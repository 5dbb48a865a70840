/* spm_chars: each character's symbol, the id a merge starts from.
 *
 * A character is keyed by its UTF-8 bytes packed into a uint32 (never 0:
 * only characters of two or more bytes are kept; ASCII has a table of its
 * own), so finding a character's symbol needs no decoding and no hashing of
 * text: one multiply and a probe of a table of a few thousand slots, which
 * stays near the CPU.  Read-only after construction.
 */
#ifndef SPM_CHARS_H
#define SPM_CHARS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spm_bytes.h"

typedef struct {
    uint32_t key; /* the character's UTF-8, packed (spm_char_key); 0 = free */
    int32_t id;   /* its symbol */
} spm_char_slot;

typedef struct {
    spm_char_slot *slots;
    uint32_t mask;
    uint32_t count;
} spm_chars;

/* A character of `len` bytes (2 to 4) from the word `word` holding its
 * bytes from its first (spm_load8). */
static inline uint32_t spm_char_key(uint64_t word, int len) {
    uint32_t k;
    uint64_t low = spm_low_bytes(word, (size_t)len);
    memcpy(&k, &low, 4); /* (the character's bytes, as they lie in memory) */
    return k;
}

static inline uint32_t spm_chars_home(const spm_chars *c, uint32_t key) {
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 40) & c->mask;
}

/* The symbol of the character `key`, or `missing`. */
static inline int32_t spm_chars_find(const spm_chars *c, uint32_t key, int32_t missing) {
    uint32_t i = spm_chars_home(c, key);
    for (;;) {
        uint32_t k = c->slots[i].key;
        if (k == key) return c->slots[i].id;
        if (k == 0) return missing;
        i = (i + 1) & c->mask;
    }
}

/* An empty table; spm_chars_set grows it. */
static inline spm_chars *spm_chars_new(void) {
    spm_chars *c = (spm_chars *)malloc(sizeof(spm_chars));
    if (c == NULL) return NULL;
    c->slots = (spm_char_slot *)calloc(64, sizeof(spm_char_slot));
    if (c->slots == NULL) {
        free(c);
        return NULL;
    }
    c->mask = 63;
    c->count = 0;
    return c;
}

/* Doubles the table, keeping its characters.  Returns -1 when out of
 * memory (the table is then unchanged). */
static inline int spm_chars_grow(spm_chars *c) {
    spm_chars grown = {NULL, 2 * c->mask + 1, c->count};
    uint32_t i, j;
    if (grown.mask < c->mask) return -1;
    grown.slots = (spm_char_slot *)calloc((size_t)grown.mask + 1, sizeof(spm_char_slot));
    if (grown.slots == NULL) return -1;
    for (i = 0; i <= c->mask; i++) {
        if (c->slots[i].key == 0) continue;
        j = spm_chars_home(&grown, c->slots[i].key);
        while (grown.slots[j].key != 0) j = (j + 1) & grown.mask;
        grown.slots[j] = c->slots[i];
    }
    free(c->slots);
    *c = grown;
    return 0;
}

/* Sets the symbol of `key` (not 0), growing the table to keep it at most
 * half full.  Returns -1 when out of memory. */
static inline int spm_chars_set(spm_chars *c, uint32_t key, int32_t id) {
    uint32_t i = spm_chars_home(c, key);
    while (c->slots[i].key != 0 && c->slots[i].key != key) i = (i + 1) & c->mask;
    if (c->slots[i].key == 0) {
        if (2 * ((uint64_t)c->count + 1) > (uint64_t)c->mask + 1) {
            if (spm_chars_grow(c) != 0) return -1;
            i = spm_chars_home(c, key);
            while (c->slots[i].key != 0) i = (i + 1) & c->mask;
        }
        c->count++;
    }
    c->slots[i].key = key;
    c->slots[i].id = id;
    return 0;
}

static inline void spm_chars_free(spm_chars *c) {
    if (c != NULL) {
        free(c->slots);
        free(c);
    }
}

#endif /* SPM_CHARS_H */
