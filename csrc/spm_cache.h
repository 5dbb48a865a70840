/* spm_cache: chunk text -> ids, one table shared by every thread encoding
 * with a tokenizer (so that a word is merged once, not once per thread).
 *
 * When no piece can span the boundary before a "▁" that follows other text,
 * the merge of each chunk between such boundaries does not depend on its
 * neighbours, so a chunk seen before (a word, mostly) can reuse its ids.
 *
 * Insert-only and lock-free while threads encode:
 *  - An entry (hash, lengths, key bytes, ids) is written into the data arena,
 *    in a block the inserting thread took with an atomic add, then published by a
 *    compare-and-swap of one 32-bit slot word: the entry's offset in the low
 *    offset_bits bits and the top bits of the hash's upper half in the rest
 *    (a tag that rejects most other keys without reading the entry; 32-bit
 *    slots keep the table near the CPU).  A reader that loads the word
 *    (acquire) sees the whole entry.  Two threads inserting the same key
 *    find each other's entry.
 *  - The table doubles when half full (spm_cache_at_limit): the thread that takes the growth
 *    lock copies the slots into a new table and publishes it.  Threads still
 *    reading the old table keep a valid table (it is retired, not freed);
 *    an insert that lands in it is merely lost, which costs a merge later.
 *  - Bounded: when the table at its largest size is three quarters full
 *    or the arena is full, inserts stop until the owner sweeps the cache
 *    (spm_cache_sweep), when no thread uses it (the tokenizer counts its
 *    calls in flight, under the GIL): the entries found since the last
 *    sweep stay, packed at the arena's start, and the rest make room for
 *    new chunks.  A hit marks its entry (SPM_CACHE_SEEN), so a chunk seen
 *    once is not kept over one that recurs, and a corpus whose text changes
 *    (another language, code after prose) keeps what serves it.
 *    spm_cache_quiesce, also when no thread uses the cache, frees the
 *    tables growth retired.
 */
#ifndef SPM_CACHE_H
#define SPM_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spm_atomic.h"
#include "spm_bytes.h"

/* One cached chunk, in the data arena: this header, the key's bytes padded
 * with zeros to 8 (a key compares a word at a time with the text's words,
 * masked to its length), then the ids.  A key is a chunk's text as it lies
 * in the input, spaces as spaces: a chunk that starts with "▁" (a space, a
 * "▁", or the dummy prefix) keeps it as SPM_CACHE_LEAD instead of among its
 * bytes, so that " word", "▁word" and a text's first "word" with the dummy
 * prefix are one entry. */
typedef struct {
    uint32_t hash_lo;  /* lower hash bits, for rehashing when the table grows; atomic */
    uint16_t key_len;  /* bytes | SPM_CACHE_LEAD; 0: no entry (the end of a writer's block) */
    uint16_t ids_len;
} spm_cache_entry;

#define SPM_CACHE_LEAD 0x8000u

/* A chunk to look up or insert: its bytes, read only within s[0:avail],
 * and its code (what an entry's key_len holds) and hash. */
typedef struct {
    const char *s;
    size_t len;
    size_t avail;
    uint32_t code;
    uint64_t h;
} spm_chunk_key;

/* hash_lo's top bit, which no table's mask reaches (2^24 slots at most):
 * the entry was found since the last sweep (spm_cache_mark). */
#define SPM_CACHE_SEEN 0x80000000u

/* The counters inserts write sit on cache lines of their own, away from
 * what every lookup reads. */
#define SPM_CACHE_LINE 64

typedef struct spm_cache_table {
    struct spm_cache_table *retired;  /* the next older replaced table */
    uint32_t mask;                    /* slots - 1 (a power of two) */
    char pad_[SPM_CACHE_LINE - sizeof(void *) - sizeof(uint32_t)];
    uint32_t used;                    /* atomic */
    char pad_used_[SPM_CACHE_LINE - sizeof(uint32_t)];
    uint32_t slots[];                 /* 0: empty; else tag << offset_bits | (offset / 4 + 1) */
} spm_cache_table;

typedef struct {
    spm_cache_table *table;    /* atomic: where lookups and inserts go */
    char *data;                /* the entries, 4-aligned */
    size_t data_cap;
    uint32_t max_slots;
    uint32_t full;             /* atomic flag: an insert found no room */
    uint32_t offset_bits;      /* a slot's low bits: an entry's offset / 4 + 1 (spm_cache_init) */
    char pad_[SPM_CACHE_LINE - 2 * sizeof(void *) - sizeof(size_t) - 3 * sizeof(uint32_t)];
    size_t data_len;           /* atomic; runs past data_cap once the arena is full */
    size_t packed_len;         /* entries packed back to back by the last sweep; blocks follow */
    uint32_t growing;          /* try-lock of the growth */
    spm_cache_table *retired;  /* tables replaced by growth, freed at quiescence */
    uint64_t generation;       /* counts the clears (writers' blocks are then void) */
} spm_cache;

/* One thread's side of inserting: a block of the arena it fills alone, and
 * inserts not yet added to the table's count.  Taking arena bytes and
 * counting entries a block and SPM_CACHE_PENDING at a time keeps the two
 * shared counters from moving between the cores on every insert. */
typedef struct {
    size_t at, end;            /* the free part of this thread's block */
    uint32_t pending;          /* entries inserted, not yet in table->used */
    uint64_t generation;       /* the cache's generation the block belongs to */
} spm_cache_writer;

#define SPM_CACHE_BLOCK 4096u
#define SPM_CACHE_PENDING 16u

/* The hash of a key: its bytes s[0:n] (read only within s[0:avail],
 * spm_load8) and its code (n | SPM_CACHE_LEAD when it leads with "▁").
 * Most chunks are one or two words, each multiplied on its own (the
 * products are independent), the code in the top bits. */
static inline uint64_t spm_hash_mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 29;
    return h;
}

/* One word of a key longer than 16 bytes into its hash. */
static inline uint64_t spm_hash_step(uint64_t h, uint64_t k) {
    k *= 0x87C37B91114253D5ULL;
    k ^= k >> 31;
    return (h ^ k) * 0x4CF5AD432745937FULL;
}

/* spm_hash_text of a key of at most 16 bytes given as its two words, zero
 * padded (b is 0 for a key of 8 bytes or fewer). */
static inline uint64_t spm_hash_words(uint64_t a, uint64_t b, uint32_t code) {
    uint64_t h = (a ^ ((uint64_t)code << 47)) * 0x87C37B91114253D5ULL;
    h ^= b * 0x4CF5AD432745937FULL;
    return spm_hash_mix(h);
}

static inline uint64_t spm_hash_text(const char *s, size_t n, size_t avail, uint32_t code) {
    uint64_t h;
    if (n <= 16) {
        uint64_t a = spm_low_bytes(spm_load8(s, 0, avail), n < 8 ? n : 8);
        uint64_t b = n > 8 ? spm_low_bytes(spm_load8(s, 8, avail), n - 8) : 0;
        return spm_hash_words(a, b, code);
    } else {
        size_t p = 0;
        h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)code * 0xFF51AFD7ED558CCDULL);
        while (p < n) {
            h = spm_hash_step(h, spm_low_bytes(spm_load8(s, p, avail), n - p));
            p += 8;
        }
    }
    return spm_hash_mix(h);
}

/* Fills k for the key s[0:n] (`lead`: it leads with "▁") whose hash h
 * (spm_hash_text's of its code) is known. */
static inline void spm_cache_key_hashed(spm_chunk_key *k, const char *s, size_t n, size_t avail, int lead,
                                        uint64_t h) {
    k->s = s;
    k->len = n;
    k->avail = avail;
    k->code = (uint32_t)n | (lead ? SPM_CACHE_LEAD : 0u);
    k->h = h;
}

/* Fills k for the key s[0:n], hashing it. */
static inline void spm_cache_key_of(spm_chunk_key *k, const char *s, size_t n, size_t avail, int lead) {
    uint32_t code = (uint32_t)n | (lead ? SPM_CACHE_LEAD : 0u);
    spm_cache_key_hashed(k, s, n, avail, lead, spm_hash_text(s, n, avail, code));
}

#define SPM_CACHE_MIN_SLOTS (1u << 10)
#define SPM_CACHE_MAX_SLOTS (1u << 17)
#define SPM_CACHE_MAX_DATA (3u << 21)  /* 64 bytes a chunk (an entry is about 40 on real text) */
#define SPM_CACHE_MAX_KEY 256
#define SPM_CACHE_SLACK 16

static inline const char *spm_cache_key(const spm_cache_entry *e) {
    return (const char *)(e + 1);
}

static inline size_t spm_cache_key_bytes(const spm_cache_entry *e) {
    return e->key_len & ~SPM_CACHE_LEAD;
}

static inline const int32_t *spm_cache_ids(const spm_cache_entry *e) {
    return (const int32_t *)(spm_cache_key(e) + ((spm_cache_key_bytes(e) + 7u) & ~(size_t)7u));
}

/* A slot word's low `offset_bits` bits: the mask of its entry's offset. */
static inline uint32_t spm_cache_offset_mask(uint32_t offset_bits) {
    return (uint32_t)(((uint64_t)1 << offset_bits) - 1);
}

/* The entry slot word `word` points to in the arena `data`. */
static inline const spm_cache_entry *spm_cache_entry_in(const char *data, uint32_t offset_mask, uint32_t word) {
    return (const spm_cache_entry *)(data + ((size_t)(word & offset_mask) - 1) * 4);
}

/* The tag a slot holds for hash h: the upper bits of its upper half, as
 * many as the offset leaves. */
static inline uint32_t spm_cache_tag(const spm_cache *c, uint64_t h) {
    return (uint32_t)(h >> 32) >> c->offset_bits;
}

static inline spm_cache_table *spm_cache_table_new(uint32_t slots) {
    spm_cache_table *t = (spm_cache_table *)calloc(1, sizeof(spm_cache_table) + (size_t)slots * sizeof(uint32_t));
    if (t) t->mask = slots - 1;
    return t;
}

static inline void spm_cache_free_retired(spm_cache *c) {
    while (c->retired) {
        spm_cache_table *next = c->retired->retired;
        free(c->retired);
        c->retired = next;
    }
}

/* 0 on success, -1 when out of memory.  `max_slots` (a power of two, at
 * least SPM_CACHE_MIN_SLOTS) and `data_cap` bound the cache. */
static inline int spm_cache_init(spm_cache *c, uint32_t max_slots, size_t data_cap) {
    c->table = spm_cache_table_new(SPM_CACHE_MIN_SLOTS);
    /* (Pages of the arena become resident only as entries fill them.  A
     * hit's ids are read four at a time: 16 bytes of room past the end.) */
    c->data = (char *)malloc(data_cap + SPM_CACHE_SLACK);
    if (!c->table || !c->data) {
        free(c->table);
        free(c->data);
        c->table = NULL;
        c->data = NULL;
        return -1;
    }
    c->retired = NULL;
    c->generation = 1;
    /* Enough low bits for the offset of any entry (offset / 4 + 1 <=
     * data_cap / 4), and the rest of the word for the tag. */
    c->offset_bits = 1;
    while (c->offset_bits < 31 && ((size_t)1 << c->offset_bits) <= data_cap / 4) c->offset_bits++;
    c->data_len = 0;
    c->packed_len = 0;
    c->data_cap = data_cap;
    c->max_slots = max_slots;
    c->full = 0;
    c->growing = 0;
    return 0;
}

static inline void spm_cache_free(spm_cache *c) {
    spm_cache_free_retired(c);
    free(c->table);
    free(c->data);
    c->table = NULL;
    c->data = NULL;
}

/* Empties the cache.  Only when no other thread uses it. */
static inline void spm_cache_clear(spm_cache *c) {
    spm_cache_free_retired(c);
    memset(c->table->slots, 0, sizeof(uint32_t) * ((size_t)c->table->mask + 1));
    c->table->used = 0;
    c->data_len = 0;
    c->packed_len = 0;
    c->full = 0;
    c->generation++;
}

static inline void spm_cache_writer_init(spm_cache_writer *wr) {
    wr->at = wr->end = 0;
    wr->pending = 0;
    wr->generation = 0;
}

/* Adds the writer's pending inserts to the count of the current table. */
static inline void spm_cache_flush(spm_cache *c, spm_cache_writer *wr) {
    if (wr->pending && wr->generation == c->generation) {
        spm_cache_table *t = (spm_cache_table *)spm_load_acquire_ptr((void *const *)&c->table);
        spm_fetch_add_u32(&t->used, wr->pending);
    }
    wr->pending = 0;
}

/* Called when no other thread uses the cache: frees the retired tables. */
static inline void spm_cache_quiesce(spm_cache *c) {
    spm_cache_free_retired(c);
}

/* Whether the entry's key is k's bytes: the entry's words are read whole
 * (its key is followed by its ids, or the arena's slack), k's within its
 * bounds. */
static inline int spm_cache_entry_is(const spm_cache_entry *e, const spm_chunk_key *k) {
    const char *a = spm_cache_key(e);
    if (e->key_len != k->code) return 0;
    for (size_t p = 0; p < k->len; p += 8) {
        uint64_t x;
        memcpy(&x, a + p, 8);
        if (x != spm_low_bytes(spm_load8(k->s, p, k->avail), k->len - p)) return 0;
    }
    return 1;
}

/* Whether the slot word `word` (non-zero), whose hash's tag must be `tag`,
 * holds the key k, in the arena `data` whose offsets take the low
 * `offset_bits` bits of a word. */
static inline int spm_cache_word_holds(const char *data, uint32_t offset_bits, uint32_t offset_mask, uint32_t word,
                                       uint32_t tag, const spm_chunk_key *k) {
    if ((word >> offset_bits) != tag) return 0;
    return spm_cache_entry_is(spm_cache_entry_in(data, offset_mask, word), k);
}

/* One call's view of the cache for its lookups: the table as it was when
 * the call began, and what a lookup needs from the cache, in locals (not
 * loaded again at every lookup).  A table replaced by growth during the
 * call stays valid (retired, not freed, until no thread encodes); a chunk
 * inserted into its successor is merely not seen, which costs a merge. */
typedef struct {
    const uint32_t *slots;
    const char *data;          /* the arena */
    uint32_t mask;
    uint32_t offset_bits;
    uint32_t offset_mask;
} spm_cache_view;

static inline void spm_cache_view_of(const spm_cache *c, spm_cache_view *v) {
    const spm_cache_table *t = (const spm_cache_table *)spm_load_acquire_ptr((void *const *)&c->table);
    v->slots = t->slots;
    v->data = c->data;
    v->mask = t->mask;
    v->offset_bits = c->offset_bits;
    v->offset_mask = spm_cache_offset_mask(c->offset_bits);
}

/* The entry of the key k in the view's table, or NULL. */
static inline const spm_cache_entry *spm_cache_view_get(const spm_cache_view *v, const spm_chunk_key *k) {
    uint32_t tag = (uint32_t)(k->h >> 32) >> v->offset_bits;
    uint32_t i = (uint32_t)k->h & v->mask;
    for (uint32_t probes = 0; probes <= v->mask; probes++) {
        uint32_t word = spm_load_acquire_u32(&v->slots[i]);
        if (word == 0) return NULL;
        if (spm_cache_word_holds(v->data, v->offset_bits, v->offset_mask, word, tag, k))
            return spm_cache_entry_in(v->data, v->offset_mask, word);
        i = (i + 1) & v->mask;
    }
    return NULL;
}

/* The entry of a key given as its nw words (its bytes zero padded, as
 * spm_hash_text reads them), of hash h, in the view's table, or NULL: the
 * kernel's warm path, which has the words loaded. */
static inline const spm_cache_entry *spm_cache_view_get_key(const spm_cache_view *v, const uint64_t *key,
                                                            size_t nw, uint32_t code, uint64_t h) {
    uint32_t tag = (uint32_t)(h >> 32) >> v->offset_bits;
    uint32_t i = (uint32_t)h & v->mask;
    for (uint32_t probes = 0; probes <= v->mask; probes++) {
        uint32_t word = spm_load_acquire_u32(&v->slots[i]);
        if (word == 0) return NULL;
        if ((word >> v->offset_bits) == tag) {
            const spm_cache_entry *e = spm_cache_entry_in(v->data, v->offset_mask, word);
            if (e->key_len == code) {
                const char *stored = spm_cache_key(e);
                size_t j = 0;
                for (; j < nw; j++) {
                    uint64_t x;
                    memcpy(&x, stored + 8 * j, 8);
                    if (x != key[j]) break;
                }
                if (j == nw) return e;
            }
        }
        i = (i + 1) & v->mask;
    }
    return NULL;
}

/* The entry of the key k in the current table, or NULL. */
static inline const spm_cache_entry *spm_cache_get(const spm_cache *c, const spm_chunk_key *k) {
    spm_cache_view v;
    spm_cache_view_of(c, &v);
    return spm_cache_view_get(&v, k);
}

/* The chunks the largest table, of `slots` slots (a power of two, at least
 * SPM_CACHE_MIN_SLOTS), holds: three quarters of them (more chunks kept,
 * without spreading the frequent ones over twice the memory). */
static inline uint64_t spm_cache_full_load(uint64_t slots) { return slots / 4 * 3; }

/* Whether a table holding `used` chunks takes no more: below its largest
 * size it doubles at half full, which keeps probes short while memory is
 * cheap to add; at its largest it fills to spm_cache_full_load. */
static inline int spm_cache_at_limit(const spm_cache *c, const spm_cache_table *t, uint32_t used) {
    uint64_t slots = (uint64_t)t->mask + 1;
    if (slots < c->max_slots) return (uint64_t)used * 2 >= slots;
    return used >= spm_cache_full_load(slots);
}

/* The table to insert into after `t` reached its limit (spm_cache_at_limit): a doubled one (grown
 * here or by another thread), or NULL to skip this insert (another thread
 * is growing it, or it is at its largest, which marks the cache full). */
static inline spm_cache_table *spm_cache_grow(spm_cache *c, spm_cache_table *t) {
    if (t->mask + 1 >= c->max_slots) {
        spm_store_u32(&c->full, 1);
        return NULL;
    }
    if (!spm_try_lock(&c->growing)) return NULL;
    spm_cache_table *now = (spm_cache_table *)spm_load_acquire_ptr((void *const *)&c->table);
    if (now != t) {
        spm_unlock(&c->growing);
        return now;
    }
    spm_cache_table *grown = spm_cache_table_new((t->mask + 1) * 2);
    if (!grown) {
        spm_unlock(&c->growing);
        return NULL;
    }
    uint32_t used = 0, offset_mask = spm_cache_offset_mask(c->offset_bits);
    for (uint32_t k = 0; k <= t->mask; k++) {
        uint32_t word = spm_load_acquire_u32(&t->slots[k]);
        if (word == 0) continue;
        uint32_t i = spm_load_u32(&spm_cache_entry_in(c->data, offset_mask, word)->hash_lo) & grown->mask;
        while (grown->slots[i]) i = (i + 1) & grown->mask;
        grown->slots[i] = word;
        used++;
    }
    grown->used = used;
    t->retired = c->retired;
    c->retired = t;
    spm_store_release_ptr((void **)&c->table, grown);
    spm_unlock(&c->growing);
    return grown;
}

/* Whether the cache holds three quarters of what it may hold (of
 * spm_cache_full_load(max_slots)): from then on the encode kernel no longer
 * caches a whole word made of several finer chunks, so that the finer
 * chunks, which every word is made of, keep room. */
static inline int spm_cache_mostly_full(const spm_cache *c) {
    const spm_cache_table *t = (const spm_cache_table *)spm_load_acquire_ptr((void *const *)&c->table);
    return spm_load_u32(&t->used) >= spm_cache_full_load(spm_cache_full_load(c->max_slots));
}

/* Stores k -> ids[0:n] unless the key is present, through this thread's
 * writer.  Not storing (no room, a race) only means the chunk is merged
 * again next time. */
static inline void spm_cache_put(spm_cache *c, spm_cache_writer *wr, const spm_chunk_key *k, const int32_t *ids,
                                 size_t n) {
    size_t len = k->len;
    uint64_t h = k->h;
    if (k->code == 0 || len > SPM_CACHE_MAX_KEY || n > SPM_CACHE_MAX_KEY || spm_load_u32(&c->full)) return;
    if (wr->generation != c->generation) {
        /* (The cache was emptied since this writer's last insert.) */
        spm_cache_writer_init(wr);
        wr->generation = c->generation;
    }
    spm_cache_table *t = (spm_cache_table *)spm_load_acquire_ptr((void *const *)&c->table);
    if (spm_cache_at_limit(c, t, spm_load_u32(&t->used) + wr->pending)) {
        spm_cache_flush(c, wr);
        t = spm_cache_grow(c, t);
        if (!t) return;
    }
    size_t padded = (len + 7u) & ~(size_t)7u;
    size_t size = sizeof(spm_cache_entry) + padded + n * sizeof(int32_t);
    if (wr->end - wr->at < size) {
        size_t block = size > SPM_CACHE_BLOCK ? size : SPM_CACHE_BLOCK;
        size_t start = spm_fetch_add_size(&c->data_len, block);
        if (start + block > c->data_cap) {
            spm_store_u32(&c->full, 1);
            return;
        }
        wr->at = start;
        wr->end = start + block;
    }
    size_t off = wr->at;
    wr->at += size;
    spm_cache_entry *e = (spm_cache_entry *)(c->data + off);
    e->hash_lo = (uint32_t)h & ~SPM_CACHE_SEEN;
    e->key_len = (uint16_t)k->code;
    e->ids_len = (uint16_t)n;
    for (size_t p = 0; p < len; p += 8) {
        /* (Whole words, as lookups read them: the last one's bytes past
         * the key are zero, the padding.) */
        uint64_t x = spm_low_bytes(spm_load8(k->s, p, k->avail), len - p);
        memcpy((char *)(e + 1) + p, &x, 8);
    }
    spm_copy_small((char *)(e + 1) + padded, (const char *)ids, n * sizeof(int32_t));
    if (wr->end - wr->at >= sizeof(spm_cache_entry))
        memset(c->data + wr->at, 0, sizeof(spm_cache_entry));  /* (where a sweep stops reading the block) */
    uint32_t tag = spm_cache_tag(c, h);
    uint32_t word = (tag << c->offset_bits) | (uint32_t)(off / 4 + 1);
    uint32_t i = (uint32_t)h & t->mask;
    for (uint32_t probes = 0; probes <= t->mask; probes++) {
        uint32_t seen = spm_load_acquire_u32(&t->slots[i]);
        if (seen == 0) {
            if (spm_cas_u32(&t->slots[i], &seen, word)) {
                if (++wr->pending >= SPM_CACHE_PENDING) spm_cache_flush(c, wr);
                return;
            }
            /* (Another thread took this slot: `seen` is its word.) */
        }
        if (spm_cache_word_holds(c->data, c->offset_bits, spm_cache_offset_mask(c->offset_bits), seen, tag, k))
            return;
        i = (i + 1) & t->mask;
    }
}

/* Marks a found entry as serving (SPM_CACHE_SEEN), once between sweeps:
 * the entry's line is already loaded, and the store moves it between the
 * cores at most once a sweep. */
static inline void spm_cache_mark(const spm_cache_entry *e) {
    uint32_t *word = (uint32_t *)&e->hash_lo;
    if (!(spm_load_u32(word) & SPM_CACHE_SEEN)) spm_or_u32(word, SPM_CACHE_SEEN);
}

static inline size_t spm_cache_entry_size(const spm_cache_entry *e) {
    return sizeof(spm_cache_entry) + ((spm_cache_key_bytes(e) + 7u) & ~(size_t)7u) + e->ids_len * sizeof(int32_t);
}

/* Keeps the entry at data + at (`size` bytes) if it was found since the last
 * sweep: moved down to data + *to, unmarked, and put in the emptied table
 * `t`.  Returns 1 if kept. */
static inline int spm_cache_keep(spm_cache *c, spm_cache_table *t, size_t at, size_t size, size_t *to) {
    spm_cache_entry *e = (spm_cache_entry *)(c->data + at);
    if (!(e->hash_lo & SPM_CACHE_SEEN)) return 0;
    if (*to != at) memmove(c->data + *to, e, size);
    e = (spm_cache_entry *)(c->data + *to);
    e->hash_lo &= ~SPM_CACHE_SEEN;
    /* (The slot's tag is the hash's upper half, which the entry does not
     * hold: the key is hashed again.) */
    uint64_t h = spm_hash_text(spm_cache_key(e), spm_cache_key_bytes(e), spm_cache_key_bytes(e), e->key_len);
    uint32_t i = (uint32_t)h & t->mask;
    while (t->slots[i]) i = (i + 1) & t->mask;
    t->slots[i] = (spm_cache_tag(c, h) << c->offset_bits) | (uint32_t)(*to / 4 + 1);
    *to += size;
    return 1;
}

/* Keeps the entries found since the last sweep and drops the rest, making
 * room for new chunks; returns how many stay.  Only when no other thread
 * uses the cache.  The arena is read in order: the entries the last sweep
 * packed, then each writer's block of SPM_CACHE_BLOCK bytes (every entry
 * is smaller) up to an entry of key_len 0 or its end.  An entry that was
 * never published (a lost race, an insert into a retired table) was never
 * found through the table, except an insert into a retired table a late
 * reader found: kept, a duplicate that is harmless and goes at a sweep
 * where it is not found. */
static inline uint32_t spm_cache_sweep(spm_cache *c) {
    spm_cache_free_retired(c);
    spm_cache_table *t = c->table;
    memset(t->slots, 0, sizeof(uint32_t) * ((size_t)t->mask + 1));
    size_t filled = c->data_len < c->data_cap ? c->data_len : c->data_cap;
    size_t to = 0, at = 0;
    uint32_t kept = 0;
    while (at < c->packed_len) {
        size_t size = spm_cache_entry_size((const spm_cache_entry *)(c->data + at));
        kept += spm_cache_keep(c, t, at, size, &to);
        at += size;
    }
    size_t block = (c->packed_len + SPM_CACHE_BLOCK - 1) / SPM_CACHE_BLOCK * SPM_CACHE_BLOCK;
    for (; block + SPM_CACHE_BLOCK <= filled; block += SPM_CACHE_BLOCK) {
        for (at = block; at + sizeof(spm_cache_entry) <= block + SPM_CACHE_BLOCK;) {
            const spm_cache_entry *e = (const spm_cache_entry *)(c->data + at);
            if (e->key_len == 0) break;
            size_t size = spm_cache_entry_size(e);
            kept += spm_cache_keep(c, t, at, size, &to);
            at += size;
        }
    }
    t->used = kept;
    c->packed_len = to;
    c->data_len = (to + SPM_CACHE_BLOCK - 1) / SPM_CACHE_BLOCK * SPM_CACHE_BLOCK;
    c->full = 0;
    c->generation++;  /* (the writers' blocks are gone) */
    return kept;
}

/* The warm path of the encode kernel (spmbpe/core/encode.pyx,
 * encode_words): from s[i], while each chunk is ASCII, starts with its
 * "▁" (a space; the first, the dummy prefix when `lead`), has a key of at
 * most SPM_WORDS_KEY bytes after that "▁" and is in the cache, its ids are
 * copied to out + *count.  Returns where the first other chunk starts (n
 * when none), for the kernel to take its general way.  The bytes of
 * s[0:n] are read only within it; `lookups` counts the chunks looked up.
 * The key's words are read once, for the scan, the hash and the compare.
 * When it stops at a chunk it looked up and missed, *missed is set to 1
 * and *missed_h to the hash of that chunk's key (spm_hash_text's, so that
 * the kernel neither hashes nor looks it up again), else *missed to 0. */
#define SPM_WORDS_KEY 32

static inline size_t spm_cache_words(const spm_cache_view *v, const char *s, size_t n, size_t i, int lead,
                                     int32_t *out, size_t *count, uint64_t *lookups, int *missed,
                                     uint64_t *missed_h) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL, spaces = ones * 0x20;
    size_t k = *count;
    uint64_t found = 0;
    *missed = 0;
    while (i < n) {
        size_t body = i + (lead ? 0 : 1), p, len, nw;
        uint64_t key[SPM_WORDS_KEY / 8], h;
        uint32_t code;
        const spm_cache_entry *e;
        if (!lead && s[i] != ' ') break;
        /* Past the spaces that open it (indentation), to the next space;
         * out at a byte of another character or a key too long. */
        p = body;
        if (p < n && s[p] == ' ') {
            while (p + 8 <= n) {
                uint64_t word, y;
                memcpy(&word, s + p, 8);
                y = word ^ spaces;
                if (y != 0) {
                    /* (The first byte that is not a space: y's lowest non-zero one.) */
                    p += (size_t)spm_first_byte((((y & ~high) + ~high) | y) & high);
                    break;
                }
                p += 8;
            }
            while (p < n && s[p] == ' ') p++;
        }
        for (;;) {
            if (p + 8 <= n) {
                uint64_t word, y, stops;
                memcpy(&word, s + p, 8);
                y = word ^ spaces;
                stops = ((y - ones) & ~y & high) | (word & high);
                if (!stops) {
                    p += 8;
                    if (p - body > SPM_WORDS_KEY) break;
                    continue;
                }
                p += (size_t)spm_first_byte(stops);
            } else {
                while (p < n && s[p] != ' ' && (uint8_t)s[p] < 0x80) p++;
            }
            break;
        }
        len = p - body;
        if ((p < n && s[p] != ' ') || len > SPM_WORDS_KEY) break;
        code = (uint32_t)len | SPM_CACHE_LEAD;
        if (len <= 16) {
            if (body + 16 <= n) {
                memcpy(&key[0], s + body, 8);
                memcpy(&key[1], s + body + 8, 8);
            } else {
                key[0] = spm_load8(s, body, n);
                key[1] = spm_load8(s, body + 8, n);
            }
            if (len <= 8) {
                key[0] = spm_low_bytes(key[0], len);
                key[1] = 0;
                nw = 1;
            } else {
                key[1] = spm_low_bytes(key[1], len - 8);
                nw = 2;
            }
            h = spm_hash_words(key[0], key[1], code);
        } else {
            nw = (len + 7) / 8;
            h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)code * 0xFF51AFD7ED558CCDULL);
            for (size_t j = 0; j < nw; j++) {
                key[j] = spm_low_bytes(spm_load8(s, body + 8 * j, n), len - 8 * j);
                h = spm_hash_step(h, key[j]);
            }
            h = spm_hash_mix(h);
        }
        found++;
        e = spm_cache_view_get_key(v, key, nw, code, h);
        if (e == NULL) {
            *missed = 1;
            *missed_h = h;
            break;
        }
        spm_cache_mark(e);
        {
            const int32_t *ids = spm_cache_ids(e);
            uint32_t m = e->ids_len;
            if (m <= 4) {
                memcpy(out + k, ids, 4 * sizeof(int32_t));
            } else {
                for (uint32_t j = 0; j < m; j++) out[k + j] = ids[j];
            }
            k += m;
        }
        lead = 0;
        i = p;
    }
    *count = k;
    *lookups += found;
    return i;
}

#endif /* SPM_CACHE_H */
