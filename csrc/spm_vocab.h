/* spm_vocab: the vocabulary as an open-addressing hash table from a piece's
 * UTF-8 bytes to its id (the lowest id when a text is listed twice).
 *
 * A lookup costs one slot: a slot holds the piece's first 8 bytes and its
 * id, and a miss (most lookups) rarely reads anything else.  1.25 slots per
 * piece, not a power of two: memory is a target (at most 3x the vocabulary
 * file).
 */
#ifndef SPM_VOCAB_H
#define SPM_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "spm_bytes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most ids a table takes. */
#define SPM_ID_MASK 0x3FFFFFFF

typedef struct {
    uint64_t head;  /* the first min(len, 8) bytes, zero padded */
    int32_t id;     /* (an empty slot, tag 0, is unwritten) */
} spm_vocab_slot;

typedef struct {
    const char *arena;       /* all pieces, back to back (not owned) */
    const int32_t *offsets;  /* n + 1 offsets into arena (not owned) */
    int32_t n;               /* number of ids */
    int32_t first_duplicate; /* the first id whose piece an earlier id has, or -1 */
    int32_t nul_tails;       /* some piece of 1-8 bytes ends with a NUL byte */
    spm_vocab_slot *slots;
    /* A byte per slot from its piece's hash (0: empty), read before the
     * slot: the merger's lookups mostly miss, and a miss then reads a few
     * bytes of this array (cap bytes, near the CPU) instead of 16-byte
     * slots of a table several times larger than its second-level cache. */
    uint8_t *tags;
    uint32_t cap;
} spm_vocab;

/* The hash of the piece (head, s, len).  `padded`: see spm_head8 (a tail
 * copied one length at a time into a word and then read as the word waits
 * for those stores). */
static inline uint64_t spm_vocab_hash(uint64_t head, const char *s, size_t len, int padded) {
    uint64_t h = (head ^ ((uint64_t)len << 56)) * 0x9E3779B97F4A7C15ULL;
    for (size_t i = 8; i < len; i += 8) {
        uint64_t k = spm_head8(s + i, len - i, padded);
        h = (h ^ (h >> 29) ^ k) * 0xBF58476D1CE4E5B9ULL;
    }
    h ^= h >> 32;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 29;
    return h;
}

/* Where the probe for hash h starts: scaled to [0, cap) by Lemire's
 * multiply-shift, which works for any capacity. */
static inline uint32_t spm_vocab_home(uint64_t h, uint32_t cap) {
    return (uint32_t)(((h >> 32) * (uint64_t)cap) >> 32);
}

/* The slot's tag for hash h: never 0, which marks an empty slot. */
static inline uint8_t spm_vocab_tag(uint64_t h) {
    uint8_t tag = (uint8_t)h;
    return (uint8_t)(tag + (tag == 0));
}

/* NULL when out of memory or n >= 2**30. */
spm_vocab *spm_vocab_new(int32_t n, const char *arena, const int32_t *offsets);
void spm_vocab_free(spm_vocab *v);

/* The slot of the piece s[0:len] whose head and hash are given, or NULL. */
static inline const spm_vocab_slot *spm_vocab_probe(const spm_vocab *v, const char *s, size_t len, uint64_t head,
                                                    uint64_t h) {
    uint8_t tag = spm_vocab_tag(h);
    uint32_t i = spm_vocab_home(h, v->cap);
    for (;;) {
        uint8_t t = v->tags[i];
        if (t == 0) return NULL;
        if (t == tag) {
            const spm_vocab_slot *slot = &v->slots[i];
            if (slot->head == head) {
                int32_t id;
                /* Up to 7 bytes not ending with NUL, the zero-padded head
                 * also says the length (no piece ends with NUL either); 8
                 * bytes fill the head, which then says nothing of it. */
                if (len - 1 < 7 && !v->nul_tails && s[len - 1] != 0) return slot;
                id = slot->id;
                int32_t a = v->offsets[id];
                if ((size_t)(v->offsets[id + 1] - a) == len &&
                    (len <= 8 || spm_bytes_equal(v->arena + a + 8, s + 8, len - 8)))
                    return slot;
            }
        }
        if (++i == v->cap) i = 0;
    }
}

/* A lookup hashed ahead of its probe: a loop of many independent lookups
 * (loading a tokenizer.json's merge rules) hashes each key some lookups
 * early and starts loading its home slot and tag, so that the misses
 * overlap (as spm_vocab_new's build does for its inserts). */
typedef struct {
    const char *s;
    size_t len;
    uint64_t head, h;
} spm_vocab_key;

static inline void spm_vocab_key_of(const spm_vocab *v, const char *s, size_t len, int padded,
                                    spm_vocab_key *k) {
    k->s = s;
    k->len = len;
    k->head = spm_head8(s, len, padded);
    k->h = spm_vocab_hash(k->head, s, len, padded);
#if defined(__GNUC__) || defined(__clang__)
    uint32_t home = spm_vocab_home(k->h, v->cap);
    __builtin_prefetch(&v->tags[home]);
    __builtin_prefetch(&v->slots[home]);
#else
    (void)v;
#endif
}

/* The lowest id of the key's piece, or -1. */
static inline int32_t spm_vocab_find_key(const spm_vocab *v, const spm_vocab_key *k) {
    const spm_vocab_slot *slot = spm_vocab_probe(v, k->s, k->len, k->head, k->h);
    return slot ? slot->id : -1;
}

/* The lowest id of the piece s[0:len], or -1. */
static inline int32_t spm_vocab_find(const spm_vocab *v, const char *s, size_t len) {
    uint64_t head = spm_head8(s, len, 0);
    const spm_vocab_slot *slot = spm_vocab_probe(v, s, len, head, spm_vocab_hash(head, s, len, 0));
    return slot ? slot->id : -1;
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_VOCAB_H */
