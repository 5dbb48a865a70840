/* spm_vocab: the vocabulary as a C hash table, UTF-8 piece bytes -> id.
 *
 * Pieces live in one arena that the caller owns and keeps alive (the table
 * points into it); the table is open addressing with linear probing over
 * slots that hold an id and a 32-bit tag of the hash, so a miss rarely
 * touches the arena.  A duplicated piece maps to its lowest id, as
 * sentencepiece's vocab construction does.  Read-only after construction:
 * safe to share between threads.
 */
#ifndef SPM_VOCAB_H
#define SPM_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t tag; /* upper bits of the hash, to skip most arena compares */
    int32_t id;   /* -1: empty slot */
} spm_vocab_slot;

typedef struct {
    const char *arena;       /* all pieces, back to back (not owned) */
    const int64_t *offsets;  /* n + 1 offsets into arena (not owned) */
    int32_t n;               /* number of ids */
    int32_t duplicates;      /* ids whose piece an earlier id already has */
    int32_t first_duplicate; /* the first such id, or -1 */
    spm_vocab_slot *slots;
    uint32_t cap;            /* slots: 1.5 per id, not a power of two */
} spm_vocab;

/* Hash of a byte string (not cryptographic; stable within a process). */
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

/* Builds a table over n pieces: piece i is arena[offsets[i] : offsets[i+1]].
 * arena and offsets must outlive the table.  Returns NULL when out of memory
 * or n < 1. */
spm_vocab *spm_vocab_new(int32_t n, const char *arena, const int64_t *offsets);
void spm_vocab_free(spm_vocab *v);

/* The lowest id whose piece is exactly s[0:len], or -1. */
/* Where the probe for hash h starts: h scaled to [0, cap) (Lemire's
 * multiply-shift, which works for any capacity). */
static inline uint32_t spm_vocab_home(uint64_t h, uint32_t cap) {
    return (uint32_t)(((h & 0xFFFFFFFFu) * (uint64_t)cap) >> 32);
}

static inline int32_t spm_vocab_find(const spm_vocab *v, const char *s, size_t len) {
    uint64_t h = spm_hash_bytes(s, len);
    uint32_t tag = (uint32_t)(h >> 32);
    uint32_t i = spm_vocab_home(h, v->cap);
    for (;;) {
        const spm_vocab_slot *slot = &v->slots[i];
        if (slot->id < 0) return -1;
        if (slot->tag == tag) {
            int64_t a = v->offsets[slot->id];
            int64_t b = v->offsets[slot->id + 1];
            if ((size_t)(b - a) == len && memcmp(v->arena + a, s, len) == 0)
                return slot->id;
        }
        if (++i == v->cap) i = 0;
    }
}

static inline const char *spm_vocab_piece(const spm_vocab *v, int32_t id, size_t *len) {
    int64_t a = v->offsets[id];
    *len = (size_t)(v->offsets[id + 1] - a);
    return v->arena + a;
}

#ifdef __cplusplus
}
#endif

#endif /* SPM_VOCAB_H */
