/* spm_charpairs: the two-character sequences found inside the pieces a merge
 * may build.
 *
 * A merge joins two adjacent symbols into a piece that covers both, so no
 * merge can ever cross the point between characters a and b unless some
 * buildable piece contains "ab".  Most vocabularies hold few pieces with
 * CJK, kana or Hangul pairs, so Chinese and Japanese text, which has no
 * spaces to chunk at, can still be cut almost everywhere into chunks that
 * merge on their own -- with exactly the ids of the whole.
 *
 * Only pairs with a character of 2 or more UTF-8 bytes, neither of them
 * U+2581, are kept here (the boundaries before "▁" have their own rule, and
 * pairs of ASCII characters are bits of a table of their own:
 * spm_ascii_scan); Cyrillic and Greek words are cut too.  A key is the pair's UTF-8 bytes (at most 8) packed by
 * spm_head8, zero padded: UTF-8 is prefix-free and the pair has a byte of
 * 0x80 or more, so keys are distinct and never 0, the empty slot.
 * Read-only after construction.
 */
#ifndef SPM_CHARPAIRS_H
#define SPM_CHARPAIRS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spm_bytes.h"

/* A filter of 32768 bits, one set per key's hash, answers most lookups:
 * in CJK text nearly every adjacent pair is absent, and probing the table
 * for an absent key would be most of the cost of finding the cuts. */
#define SPM_CHARPAIRS_FILTER_LOG2 15
#define SPM_CHARPAIRS_FILTER_WORDS ((1u << SPM_CHARPAIRS_FILTER_LOG2) / 64)

typedef struct {
    uint64_t *keys; /* 0 = free */
    uint64_t mask;
    size_t count;
    uint64_t filter[SPM_CHARPAIRS_FILTER_WORDS];
} spm_charpairs;

/* Whether the pair of characters of byte lengths a and b is one that is
 * kept (and looked up): either has 2 or more bytes. */
static inline int spm_charpairs_wanted(int a, int b) { return a >= 2 || b >= 2; }

static inline size_t spm_charpairs_slot(const spm_charpairs *p, uint64_t key) {
    return (size_t)(((key * 0x9E3779B97F4A7C15ULL) >> 17) & p->mask);
}

static inline unsigned spm_charpairs_bit(uint64_t key) {
    return (unsigned)((key * 0xC2B2AE3D27D4EB4FULL) >> (64 - SPM_CHARPAIRS_FILTER_LOG2));
}

static inline int spm_charpairs_has(const spm_charpairs *p, uint64_t key) {
    unsigned bit = spm_charpairs_bit(key);
    if (!((p->filter[bit >> 6] >> (bit & 63)) & 1)) return 0;
    size_t i = spm_charpairs_slot(p, key);
    for (;;) {
        uint64_t k = p->keys[i];
        if (k == key) return 1;
        if (k == 0) return 0;
        i = (i + 1) & p->mask;
    }
}

static inline int spm_charpairs_is_marker(const char *s, int n) {
    return n == 3 && (uint8_t)s[0] == 0xE2 && (uint8_t)s[1] == 0x96 && (uint8_t)s[2] == 0x81;
}

/* Adds key (when absent), doubling the table when half full; -1 when out
 * of memory. */
static inline int spm_charpairs_add(spm_charpairs *p, uint64_t key) {
    size_t s = spm_charpairs_slot(p, key);
    while (p->keys[s] != 0 && p->keys[s] != key) s = (s + 1) & p->mask;
    if (p->keys[s] == key) return 0;
    if (2 * (p->count + 1) > p->mask + 1) {
        size_t cap = 2 * (p->mask + 1), j;
        uint64_t *old = p->keys, old_mask = p->mask;
        p->keys = (uint64_t *)calloc(cap, sizeof(uint64_t));
        if (p->keys == NULL) {
            p->keys = old;
            return -1;
        }
        p->mask = cap - 1;
        for (j = 0; j <= old_mask; j++) {
            if (old[j] == 0) continue;
            s = spm_charpairs_slot(p, old[j]);
            while (p->keys[s] != 0) s = (s + 1) & p->mask;
            p->keys[s] = old[j];
        }
        free(old);
        s = spm_charpairs_slot(p, key);
        while (p->keys[s] != 0) s = (s + 1) & p->mask;
    }
    p->keys[s] = key;
    p->count++;
    p->filter[spm_charpairs_bit(key) >> 6] |= (uint64_t)1 << (spm_charpairs_bit(key) & 63);
    return 0;
}

/* Scans the piece arena[a:e] (of an arena of arena_len bytes): adds its
 * wanted pairs to p (unless NULL) and writes to at[0:max] the offsets, from
 * a, of each "▁" that follows another character (the boundaries before "▁"
 * the piece could cross).  Returns the number of such markers (which may
 * exceed max), or -1 when out of memory. */
static inline int64_t spm_piece_scan(spm_charpairs *p, const char *arena, int64_t arena_len, int64_t a,
                                     int64_t e, int64_t *at, int64_t max) {
    int64_t k = a, prev = -1, crossing = 0;
    int prev_len = 0;
    /* (A leading marker crosses nothing, and pairs of ASCII characters are
     * not kept.) */
    if (spm_ascii_after_marker(arena + a, (size_t)(e - a), e + 8 <= arena_len)) return 0;
    while (k < e) {
        uint8_t lead = (uint8_t)arena[k];
        int len;
        if (lead >= 0x80 && e - k >= 3 && spm_charpairs_is_marker(arena + k, 3)) {
            if (prev >= 0) {
                if (crossing < max) at[crossing] = k - a;
                crossing++;
            }
            prev = -1;
            k += 3;
            continue;
        }
        len = spm_utf8_len(lead);
        if (len > e - k) len = (int)(e - k);
        if (p != NULL && prev >= 0 && spm_charpairs_wanted(prev_len, len) &&
            spm_charpairs_add(p, spm_head8(arena + prev, (size_t)(prev_len + len), 0)) != 0)
            return -1;
        prev = k;
        prev_len = len;
        k += len;
    }
    return crossing;
}

/* Marks in `seen` (SPM_ASCII_PAIRS + 1 bytes: byte a * 128 + b, then one
 * that takes the stores of other pairs) each pair of ASCII bytes side by
 * side in arena[a:e], and returns the bytes below 0x40 it holds (bit c for
 * byte c).  Over the pieces a merge may build, this says where ASCII text
 * can be cut too: no merge crosses the point between a and b unless such a
 * piece holds "ab" (punctuation beside letters, mostly), and a byte that no
 * piece of two or more bytes holds (digits and newlines in Llama's and
 * Mistral's vocabularies) is never merged at all.  (Byte stores, not bits:
 * a bit per store would wait for the last store to the same word.)
 * spm_ascii_pack turns `seen` into the bit table spm_ascii_pair_held reads. */
#define SPM_ASCII_PAIRS (128 * 128)

static inline uint64_t spm_ascii_scan(uint8_t *seen, const char *arena, int64_t a, int64_t e) {
    uint64_t low = 0;
    unsigned prev = 0x80; /* (not ASCII) */
    for (int64_t k = a; k < e; k++) {
        unsigned c = (uint8_t)arena[k];
        low |= (uint64_t)(c < 0x40) << (c & 63);
        seen[(prev | c) < 0x80 ? (prev << 7 | c) : SPM_ASCII_PAIRS] = 1;
        prev = c;
    }
    return low;
}

/* ORs `seen` (see spm_ascii_scan) into the bit table `held` (256 words). */
static inline void spm_ascii_pack(uint64_t *held, const uint8_t *seen) {
    for (unsigned key = 0; key < SPM_ASCII_PAIRS; key++)
        held[key >> 6] |= (uint64_t)(seen[key] != 0) << (key & 63);
}

/* Whether some scanned piece holds ASCII bytes a and b side by side. */
static inline int spm_ascii_pair_held(const uint64_t *held, unsigned a, unsigned b) {
    unsigned key = a << 7 | b;
    return (int)((held[key >> 6] >> (key & 63)) & 1);
}

static inline spm_charpairs *spm_charpairs_new(void) {
    spm_charpairs *p = (spm_charpairs *)malloc(sizeof(spm_charpairs));
    if (p == NULL) return NULL;
    p->keys = (uint64_t *)calloc(64, sizeof(uint64_t));
    if (p->keys == NULL) {
        free(p);
        return NULL;
    }
    p->mask = 63;
    p->count = 0;
    memset(p->filter, 0, sizeof(p->filter));
    return p;
}

static inline void spm_charpairs_free(spm_charpairs *p) {
    if (p != NULL) {
        free(p->keys);
        free(p);
    }
}

#endif
