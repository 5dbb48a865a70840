/* The floor of a warm one-thread batch: what the hardware allows for the job of
 * spmbpe's encode_batch(lines, num_threads=1, return_numpy=True) when every
 * chunk's ids are already known.  benchmarks/floor.py builds the table, compiles
 * this file (cc -O2, no flags beyond) and checks its output against spmbpe's.
 *
 *     floor TABLE INPUT OUT_IDS OUT_STARTS REPEAT
 *
 * INPUT: the lines, each ended by '\n' (no blank line).  TABLE: "SPMFLR01", a
 * uint32 count, then per chunk a uint32 key length (bit 31: the chunk starts its
 * line), a uint32 number of ids, the key's bytes and its uint32 ids.
 *
 * Timed, REPEAT times (the best CPU time counts): fresh output pages (mmap, not
 * touched before), a scalar scan of each line for chunk starts (the line's start
 * and each space that follows a non-space), a hash of each chunk's bytes (of the
 * wyhash kind: 8-byte reads folded by 64x64->128-bit multiplies), a lookup in an
 * open-addressing table (linear probing, an 8-byte slot holding 32 bits of the
 * hash and where the chunk's record is: its ids and key side by side), the ids
 * copied out, each line's start written.
 * The chunk's line-start bit seeds the hash: a line's first chunk "word" carries
 * sentencepiece's dummy prefix ("▁word"), which a later " word" spells with its
 * own space, so both keys are in the table with the same ids, and no byte of the
 * text is rewritten (no escaped copy).
 *
 * Prints one line of JSON: best CPU and wall seconds, bytes (the lines' UTF-8,
 * line ends excluded), lines, ids, chunks and misses (chunks not in the table:
 * 0 when the driver's chunking and this one agree).  The last run's ids
 * (uint32) and line starts (uint64, lines + 1) go to OUT_IDS and OUT_STARTS.
 */
#define _DEFAULT_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* A chunk's record, 8-byte aligned in one arena so that a hit reads one place:
 * its key length (bit 31: the chunk starts its line), its number of ids, the
 * ids, then the key's bytes. */
typedef struct {
    uint32_t key_len;
    uint32_t n_ids;
    uint32_t ids[];
} Record;

typedef struct {
    uint64_t *slots; /* hash >> 32 << 32 | the record's offset in 8-byte words + 1; 0: empty */
    uint64_t mask;
    uint64_t *arena;
} Table;

static const uint64_t K0 = 0x9e3779b97f4a7c15ull, K1 = 0xd6e8feb86659fd93ull, K2 = 0xa0761d6478bd642full;

static inline uint64_t fold(uint64_t a, uint64_t b) {
#ifdef __SIZEOF_INT128__
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else /* the same product from 32-bit halves */
    uint64_t ah = a >> 32, al = (uint32_t)a, bh = b >> 32, bl = (uint32_t)b;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    uint64_t lo = (mid << 32) | (uint32_t)ll, hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return lo ^ hi;
#endif
}

static inline uint64_t read8(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint64_t read4(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static inline uint64_t hash_chunk(const uint8_t *p, size_t n, uint64_t seed) {
    uint64_t h = seed ^ (n * K0), a, b;
    if (n <= 16) {
        if (n >= 8) {
            a = read8(p);
            b = read8(p + n - 8);
        } else if (n >= 4) {
            a = read4(p);
            b = read4(p + n - 4);
        } else if (n > 0) {
            a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
            b = 0;
        } else {
            a = b = 0;
        }
    } else {
        const uint8_t *q = p;
        size_t left = n;
        do {
            h = fold(read8(q) ^ K1, read8(q + 8) ^ h);
            q += 16;
            left -= 16;
        } while (left > 16);
        a = read8(q + left - 16);
        b = read8(q + left - 8);
    }
    return fold(K1 ^ n, fold(a ^ K1, b ^ h) ^ K2);
}

/* The key's bytes against the text's, 8 at a time (a call to memcmp costs
 * more than the compare for the short keys of a text). */
static inline int same_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
    while (n >= 8) {
        if (read8(a) != read8(b)) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    if (n >= 4) return read4(a) == read4(b) && read4(a + n - 4) == read4(b + n - 4);
    while (n--) {
        if (*a++ != *b++) return 0;
    }
    return 1;
}

static inline uint64_t seed_of(int first) { return first ? K2 : 0; }

static int table_load(Table *t, const char *path, uint32_t *count) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return -1; }
    char magic[8];
    uint32_t n;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "SPMFLR01", 8) != 0 || fread(&n, 4, 1, f) != 1) {
        fprintf(stderr, "%s: not a floor table\n", path);
        fclose(f);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 12, SEEK_SET);
    uint64_t cap = 16;
    while (cap * 3 < 4ull * n) cap <<= 1; /* at most 3/4 full: a smaller table stays in cache */
    t->slots = calloc(cap, sizeof(uint64_t));
    t->mask = cap - 1;
    /* Each record: the file's bytes of it plus at most 7 of padding. */
    t->arena = malloc((size_t)size + 8ull * n + 8);
    if (!t->slots || !t->arena) { fprintf(stderr, "out of memory\n"); return -1; }
    uint64_t at = 0; /* in 8-byte words */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t head[2];
        if (fread(head, 4, 2, f) != 2) { fprintf(stderr, "%s: truncated\n", path); return -1; }
        Record *rec = (Record *)(t->arena + at);
        uint32_t len = head[0] & 0x7fffffffu;
        rec->key_len = head[0];
        rec->n_ids = head[1];
        uint8_t *key = (uint8_t *)(rec->ids + head[1]);
        if (fread(key, 1, len, f) != len || fread(rec->ids, 4, head[1], f) != head[1]) {
            fprintf(stderr, "%s: truncated\n", path);
            return -1;
        }
        uint64_t h = hash_chunk(key, len, seed_of(head[0] >> 31));
        uint64_t j = h & t->mask;
        while (t->slots[j]) j = (j + 1) & t->mask;
        t->slots[j] = (h >> 32 << 32) | (at + 1);
        at += (8 + 4ull * head[1] + len + 7) / 8;
    }
    fclose(f);
    *count = n;
    return 0;
}

static inline const Record *lookup(const Table *t, const uint8_t *p, size_t n, int first) {
    uint64_t h = hash_chunk(p, n, seed_of(first));
    uint64_t tag = h >> 32, j = h & t->mask;
    uint32_t want = (uint32_t)n | ((uint32_t)first << 31);
    for (;;) {
        uint64_t s = t->slots[j];
        if (!s) return NULL;
        if ((s >> 32) == tag) {
            const Record *rec = (const Record *)(t->arena + (uint32_t)s - 1);
            if (rec->key_len == want && same_bytes((const uint8_t *)(rec->ids + rec->n_ids), p, n)) return rec;
        }
        j = (j + 1) & t->mask;
    }
}
typedef struct {
    uint32_t *ids;
    uint64_t *starts;
    size_t n_ids, lines, chunks, misses;
} Out;

/* The timed job: every line's chunks looked up, their ids copied out. */
static void encode_all(const Table *t, const uint8_t *text, size_t len, Out *o) {
    const uint8_t *p = text, *end = text + len;
    uint32_t *ids = o->ids;
    uint64_t *starts = o->starts;
    size_t k = 0, line = 0, chunks = 0, misses = 0;
    while (p < end) {
        starts[line++] = k;
        const uint8_t *q = p;
        int first = 1;
        for (;;) {
            const uint8_t *r = q;
            while (r < end && *r == ' ') r++;
            while (r < end && *r != ' ' && *r != '\n') r++;
            if (r > q) {
                const Record *rec = lookup(t, q, (size_t)(r - q), first);
                chunks++;
                if (rec) {
                    memcpy(ids + k, rec->ids, (size_t)rec->n_ids * 4);
                    k += rec->n_ids;
                } else {
                    misses++;
                }
            }
            first = 0;
            if (r >= end || *r == '\n') {
                p = r + 1;
                break;
            }
            q = r; /* a space that follows a non-space */
        }
    }
    starts[line] = k;
    o->n_ids = k;
    o->lines = line;
    o->chunks = chunks;
    o->misses = misses;
}

static double seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *fresh(size_t bytes) {
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s TABLE INPUT OUT_IDS OUT_STARTS REPEAT\n", argv[0]);
        return 2;
    }
    int repeat = atoi(argv[5]);
    Table t;
    uint32_t entries;
    if (table_load(&t, argv[1], &entries) != 0) return 1;
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *text = malloc(len + 1);
    if (!text || fread(text, 1, len, f) != len) { fprintf(stderr, "%s: cannot read\n", argv[2]); return 1; }
    fclose(f);
    size_t newlines = 0;
    for (size_t i = 0; i < len; i++) newlines += text[i] == '\n';
    size_t lines_max = newlines + 1;
    /* At most one id per byte, and the dummy prefix's per line. */
    size_t ids_max = len + lines_max;
    double best_cpu = 1e300, best_wall = 1e300;
    Out o = {0};
    for (int r = 0; r < (repeat > 0 ? repeat : 1); r++) {
        if (o.ids) {
            munmap(o.ids, ids_max * 4);
            munmap(o.starts, (lines_max + 1) * 8);
        }
        double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
        o.ids = fresh(ids_max * 4);
        o.starts = fresh((lines_max + 1) * 8);
        if (!o.ids || !o.starts) { fprintf(stderr, "out of memory\n"); return 1; }
        encode_all(&t, text, len, &o);
        double c1 = seconds(CLOCK_PROCESS_CPUTIME_ID), w1 = seconds(CLOCK_MONOTONIC);
        if (c1 - c0 < best_cpu) best_cpu = c1 - c0;
        if (w1 - w0 < best_wall) best_wall = w1 - w0;
    }
    FILE *fi = fopen(argv[3], "wb"), *fs = fopen(argv[4], "wb");
    if (!fi || !fs || fwrite(o.ids, 4, o.n_ids, fi) != o.n_ids ||
        fwrite(o.starts, 8, o.lines + 1, fs) != o.lines + 1) {
        fprintf(stderr, "cannot write the output\n");
        return 1;
    }
    fclose(fi);
    fclose(fs);
    printf("{\"cpu_s\": %.9f, \"wall_s\": %.9f, \"bytes\": %zu, \"lines\": %zu, \"ids\": %zu, "
           "\"chunks\": %zu, \"misses\": %zu, \"entries\": %u}\n",
           best_cpu, best_wall, len - newlines, o.lines, o.n_ids, o.chunks, o.misses, entries);
    return 0;
}
