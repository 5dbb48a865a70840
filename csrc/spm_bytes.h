/* spm_bytes: short byte strings as integers, for the hot lookups.
 *
 * A piece, character or pair of at most 8 bytes is compared as the uint64
 * holding its bytes, zero padded.  Reading 8 bytes at once and masking is
 * the fast way, but the mask keeps the first bytes only on a little-endian
 * machine; elsewhere the bytes are copied one length at a time.  Both give
 * the same value for the same bytes on one machine, which is all the tables
 * need (they are built in the process that reads them).
 */
#ifndef SPM_BYTES_H
#define SPM_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_M_X64) || \
    defined(_M_IX86) || defined(_M_ARM64)
#define SPM_LITTLE_ENDIAN 1
#else
#define SPM_LITTLE_ENDIAN 0
#endif

/* The first min(len, 8) bytes of s, zero padded.  With `padded`, s may be
 * read 8 bytes past its start whatever len is (the caller's buffer has
 * slack). */
static inline uint64_t spm_head8(const char *s, size_t len, int padded) {
    uint64_t k = 0;
#if SPM_LITTLE_ENDIAN
    if (padded) {
        memcpy(&k, s, 8);
        if (len < 8) k &= (((uint64_t)1) << (8 * len)) - 1;
        return k;
    }
#else
    (void)padded;
#endif
    memcpy(&k, s, len < 8 ? len : 8);
    return k;
}

/* The bytes s[p:min(p + 8, n)], zero padded, read without touching a byte
 * outside s[0:n]: the kernel reads text where it lies (a str's own
 * storage, a block of a file), with no slack past its end.  Past the last
 * 8 bytes, the word that ends the text is read and shifted down. */
static inline uint64_t spm_load8(const char *s, size_t p, size_t n) {
    uint64_t k = 0;
    if (p + 8 <= n) {
        memcpy(&k, s + p, 8);
        return k;
    }
    if (p >= n) return 0;
#if SPM_LITTLE_ENDIAN
    if (n >= 8) {
        memcpy(&k, s + n - 8, 8);
        return k >> (8 * (p + 8 - n));
    }
#endif
    memcpy(&k, s + p, n - p);
    return k;
}

/* Flags of the bytes of a word (spm_load8) that equal `c`: the top bit of
 * each such byte's lane.  Only the first flagged byte in memory order is
 * exact (a borrow can flag the bytes after it): read it with
 * spm_first_byte. */
static inline uint64_t spm_bytes_eq(uint64_t word, uint8_t c) {
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t y = word ^ (ones * c);
    return (y - ones) & ~y & (ones * 0x80);
}

/* The offset, in memory order, of the first byte flagged in `flags`
 * (non-zero; spm_bytes_eq). */
static inline int spm_first_byte(uint64_t flags) {
#if SPM_LITTLE_ENDIAN && (defined(__GNUC__) || defined(__clang__))
    return __builtin_ctzll(flags) >> 3;
#elif SPM_LITTLE_ENDIAN
    int k = 0;
    while (!((flags >> (8 * k)) & 0x80)) k++;
    return k;
#else
    unsigned char b[8];
    int k = 0;
    memcpy(b, &flags, 8);
    while (!(b[k] & 0x80)) k++;
    return k;
#endif
}

/* The flags of `flags` for the bytes before offset k (memory order). */
static inline uint64_t spm_bytes_before(uint64_t flags, int k) {
    if (k >= 8) return flags;
#if SPM_LITTLE_ENDIAN
    return flags & ((((uint64_t)1) << (8 * k)) - 1);
#else
    unsigned char b[8];
    memcpy(b, &flags, 8);
    memset(b + k, 0, (size_t)(8 - k));
    memcpy(&flags, b, 8);
    return flags;
#endif
}

/* The index of the lowest set bit of x, or -1 when x is 0. */
static inline int spm_lowest_bit(uint64_t x) {
    if (x == 0) return -1;
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    while (!((x >> k) & 1)) k++;
    return k;
#endif
}

/* The index of the highest set bit of x, or -1 when x is 0. */
static inline int spm_highest_bit(uint64_t x) {
    if (x == 0) return -1;
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll(x);
#else
    int k = 63;
    while (!((x >> k) & 1)) k--;
    return k;
#endif
}

/* The least of keys[i] for each bit i set in `mask` (not 0): the pairs
 * that merge, among a chunk's few symbols (a loop over the set bits only,
 * which the compiler leaves scalar: the keys were just stored, and a
 * vector load of them would wait for those stores). */
static inline int32_t spm_least_in(const int32_t *keys, uint32_t mask) {
    int32_t least = keys[spm_lowest_bit(mask)];
    mask &= mask - 1;
    while (mask) {
        int32_t k = keys[spm_lowest_bit(mask)];
        least = k < least ? k : least;
        mask &= mask - 1;
    }
    return least;
}

/* The low `len` bytes (at most 8) of a word read by spm_load8 or spm_head8. */
static inline uint64_t spm_low_bytes(uint64_t k, size_t len) {
#if SPM_LITTLE_ENDIAN
    return len >= 8 ? k : k & ((((uint64_t)1) << (8 * len)) - 1);
#else
    /* (Big-endian: the loads above copy `len` bytes, the rest zero, only
     * when they end the text; mask by copying again.) */
    uint64_t out = 0;
    memcpy(&out, &k, len < 8 ? len : 8);
    return out;
#endif
}

/* Length of the UTF-8 character led by `lead`, by its high bits as
 * llama.cpp's utf8_len does (a stray continuation byte counts 1); the text
 * comes from a Python str or a checked vocabulary, so it is valid UTF-8. */
static inline int spm_utf8_len(uint8_t lead) {
    if (lead < 0xC0) return 1;
    if (lead < 0xE0) return 2;
    return lead < 0xF0 ? 3 : 4;
}

/* Whether s[0:n] is ASCII after an optional leading "\xe2\x96\x81" (U+2581,
 * the space marker): most pieces of a vocabulary, which the load-time scans
 * can then pass over without looking at each character.  `padded`: as for
 * spm_head8, 8 bytes may be read from any position in s[0:n] (the tail is
 * then one masked word, not a byte loop whose length varies per piece). */
static inline int spm_ascii_after_marker(const char *s, size_t n, int padded) {
    if (n >= 3 && (uint8_t)s[0] == 0xE2 && (uint8_t)s[1] == 0x96 && (uint8_t)s[2] == 0x81) {
        s += 3;
        n -= 3;
    }
    while (n >= 8) {
        uint64_t x;
        memcpy(&x, s, 8);
        if (x & 0x8080808080808080ULL) return 0;
        s += 8;
        n -= 8;
    }
    return n == 0 || !(spm_head8(s, n, padded) & 0x8080808080808080ULL);
}

/* Whether a[0:n] == b[0:n], inline: chunks and pieces are short, and a
 * call to memcmp costs more than comparing them. */
static inline int spm_bytes_equal(const char *a, const char *b, size_t n) {
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        if (x != y) return 0;
        a += 4;
        b += 4;
        n -= 4;
    }
    while (n--) {
        if (*a++ != *b++) return 0;
    }
    return 1;
}

/* spm_bytes_equal where 8 bytes may be read at any offset below n in both
 * (the escaped text's slack; a chunk cache entry, whose key is followed by
 * its ids): the tail is one masked word, not a 4-byte step and a byte loop
 * whose branches follow each chunk's length. */
static inline int spm_bytes_equal_wide(const char *a, const char *b, size_t n) {
#if SPM_LITTLE_ENDIAN
    uint64_t x, y;
    size_t whole = (n - 1) & ~(size_t)7; /* the words before the last (n > 0) */
    if (n == 0) return 1;
    if (whole && !spm_bytes_equal(a, b, whole)) return 0;
    memcpy(&x, a + whole, 8);
    memcpy(&y, b + whole, 8);
    return ((x ^ y) & (~(uint64_t)0 >> (64 - 8 * (n - whole)))) == 0;
#else
    return spm_bytes_equal(a, b, n);
#endif
}

/* Copies n bytes, inline: the entries the chunk cache stores are a few
 * bytes of key and ids, and a call to memcpy (which GCC makes of a copy loop
 * too) costs more than copying them. */
static inline void spm_copy_small(char *dst, const char *src, size_t n) {
    while (n >= 8) {
        memcpy(dst, src, 8);
        dst += 8;
        src += 8;
        n -= 8;
    }
    if (n >= 4) {
        memcpy(dst, src, 4);
        dst += 4;
        src += 4;
        n -= 4;
    }
    while (n--) *dst++ = *src++;
}

/* How many of the 8 bytes at s come before the first one that ends a plain
 * run of a JSON string: '"', '\\' or a control character (below 0x20, which
 * a strict parser refuses); 8 when none does.  A JSON reader (the command
 * line's JSONL fields, a tokenizer.json's vocabulary and merge rules) takes
 * a string's plain bytes 8 at a time, not one test and branch per byte.
 * (Of each word's tests, only the lowest byte flagged is exact: a borrow
 * can flag the bytes above it.) */
static inline int spm_json_plain8(const char *s) {
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t w, quote, backslash, stops;
    memcpy(&w, s, 8);
    quote = w ^ (ones * 0x22);
    backslash = w ^ (ones * 0x5C);
    stops = (((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((w - ones * 0x20) & ~w)) &
            (ones * 0x80);
    if (!stops) return 8;
#if SPM_LITTLE_ENDIAN && (defined(__GNUC__) || defined(__clang__))
    return __builtin_ctzll(stops) >> 3;
#else
    for (int k = 0; k < 8; k++) {
        uint8_t c = (uint8_t)s[k];
        if (c == 0x22 || c == 0x5C || c < 0x20) return k;
    }
    return 8;
#endif
}

/* UTF-8 as Python's strict decoder takes it, as a DFA: stray continuation
 * bytes, C0/C1 and F5..FF leads, overlong forms, surrogates (ED A0..BF),
 * code points past U+10FFFF and sequences cut short fail.  Each byte's
 * transitions are one word (a "shift DFA"): state k is the number 6k, and
 * the row of byte b holds, 6 bits at offset 6k, the state that b leads to
 * from state k, so a step is one load and one shift, with no branch on the
 * byte.  States: 0 between characters, 1 a fault (which it never leaves),
 * 2 one continuation byte to go, 3 two, 4 after E0 (A0..BF next), 5 after
 * ED (80..9F next), 6 three to go, 7 after F0 (90..BF next), 8 after F4
 * (80..8F next). */
#define SPM_UTF8_T(from, to) ((uint64_t)(6 * (to)) << (6 * (from)))
#define SPM_UTF8_ROW(s0, s2, s3, s4, s5, s6, s7, s8)                                                        \
    (SPM_UTF8_T(0, s0) | SPM_UTF8_T(1, 1) | SPM_UTF8_T(2, s2) | SPM_UTF8_T(3, s3) | SPM_UTF8_T(4, s4) |    \
     SPM_UTF8_T(5, s5) | SPM_UTF8_T(6, s6) | SPM_UTF8_T(7, s7) | SPM_UTF8_T(8, s8))
#define SPM_UTF8_LEAD(to) SPM_UTF8_ROW(to, 1, 1, 1, 1, 1, 1, 1)
#define SPM_UTF8_ASCII SPM_UTF8_LEAD(0)
#define SPM_UTF8_BAD SPM_UTF8_LEAD(1)
#define SPM_UTF8_80_8F SPM_UTF8_ROW(1, 0, 2, 1, 2, 3, 1, 3)
#define SPM_UTF8_90_9F SPM_UTF8_ROW(1, 0, 2, 1, 2, 3, 3, 1)
#define SPM_UTF8_A0_BF SPM_UTF8_ROW(1, 0, 2, 2, 1, 3, 3, 1)
#define SPM_UTF8_X2(r) r, r
#define SPM_UTF8_X4(r) SPM_UTF8_X2(r), SPM_UTF8_X2(r)
#define SPM_UTF8_X8(r) SPM_UTF8_X4(r), SPM_UTF8_X4(r)
#define SPM_UTF8_X16(r) SPM_UTF8_X8(r), SPM_UTF8_X8(r)

static const uint64_t SPM_UTF8_ROWS[256] = {
    SPM_UTF8_X16(SPM_UTF8_ASCII), SPM_UTF8_X16(SPM_UTF8_ASCII), SPM_UTF8_X16(SPM_UTF8_ASCII),
    SPM_UTF8_X16(SPM_UTF8_ASCII), SPM_UTF8_X16(SPM_UTF8_ASCII), SPM_UTF8_X16(SPM_UTF8_ASCII),
    SPM_UTF8_X16(SPM_UTF8_ASCII), SPM_UTF8_X16(SPM_UTF8_ASCII),                  /* 00..7F */
    SPM_UTF8_X16(SPM_UTF8_80_8F), SPM_UTF8_X16(SPM_UTF8_90_9F),                   /* 80..9F */
    SPM_UTF8_X16(SPM_UTF8_A0_BF), SPM_UTF8_X16(SPM_UTF8_A0_BF),                   /* A0..BF */
    SPM_UTF8_X2(SPM_UTF8_BAD),                                                    /* C0, C1 */
    SPM_UTF8_X16(SPM_UTF8_LEAD(2)), SPM_UTF8_X8(SPM_UTF8_LEAD(2)),
    SPM_UTF8_X4(SPM_UTF8_LEAD(2)), SPM_UTF8_X2(SPM_UTF8_LEAD(2)),                 /* C2..DF */
    SPM_UTF8_LEAD(4),                                                             /* E0 */
    SPM_UTF8_X8(SPM_UTF8_LEAD(3)), SPM_UTF8_X4(SPM_UTF8_LEAD(3)),                 /* E1..EC */
    SPM_UTF8_LEAD(5),                                                             /* ED */
    SPM_UTF8_X2(SPM_UTF8_LEAD(3)),                                                /* EE, EF */
    SPM_UTF8_LEAD(7),                                                             /* F0 */
    SPM_UTF8_X2(SPM_UTF8_LEAD(6)), SPM_UTF8_LEAD(6),                              /* F1..F3 */
    SPM_UTF8_LEAD(8),                                                             /* F4 */
    SPM_UTF8_X8(SPM_UTF8_BAD), SPM_UTF8_X2(SPM_UTF8_BAD), SPM_UTF8_BAD,           /* F5..FF */
};

/* Where the first fault of s[i:n] starts (i between characters): the DFA
 * byte by byte, keeping where the character it is in began -- where
 * Python's decoder puts its error's start -- and n when there is none. */
static inline size_t spm_utf8_fault_from(const uint8_t *s, size_t i, size_t n) {
    size_t start = i;
    uint64_t state = 0;
    for (; i < n; i++) {
        if ((state & 63) == 0) start = i;
        state = SPM_UTF8_ROWS[s[i]] >> (state & 63);
        if ((state & 63) == 6) return start;
    }
    return (state & 63) == 0 ? n : start;
}

/* Bytes the DFA reads before it looks for a run of ASCII again (a shorter
 * block's branches cost as much as the DFA's steps on non-Latin text). */
#define SPM_UTF8_BLOCK 64

/* How many bytes of text[0:n] are `c`.  Eight bytes a step: each byte that is
 * `c` becomes a 1 in its lane of a word, the lanes are summed for up to 255
 * steps (no lane can then overflow), and the lanes added up. */
static inline size_t spm_count_byte(const char *text, size_t n, unsigned char c) {
    const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7F7F7F7F7F7F7F7FULL;
    const uint64_t pattern = ones * c, pairs = 0x00FF00FF00FF00FFULL;
    size_t count = 0, i = 0;
    while (n - i >= 8) {
        uint64_t lanes = 0;
        size_t steps = (n - i) / 8;
        if (steps > 255) steps = 255;
        for (size_t k = 0; k < steps; k++, i += 8) {
            uint64_t x, nonzero;
            memcpy(&x, text + i, 8);
            x ^= pattern;                          /* the bytes that were `c` are 0 */
            nonzero = ((x & low7) + low7) | x;     /* a lane's top bit: its byte is not 0 */
            lanes += (~nonzero >> 7) & ones;
        }
        /* Pairs of lanes (each at most 510), then the four pairs' sum in
         * the top 16 bits. */
        lanes = (lanes & pairs) + ((lanes >> 8) & pairs);
        count += (size_t)((lanes * 0x0001000100010001ULL) >> 48);
    }
    for (; i < n; i++) count += (unsigned char)text[i] == c;
    return count;
}

/* How many bytes of s[0:n] are valid UTF-8 from the start: n when all are,
 * else the offset of the first byte of the first invalid sequence -- where
 * Python's strict decoder (bytes.decode("utf-8")) puts its error's start.
 * Text read as bytes (the command line's input) is checked by this before
 * the kernels, which take valid UTF-8, read it.  ASCII goes 8 bytes at a
 * time, other text through the DFA a block at a time (a block ends where a
 * character does); a block where it meets a fault is read again byte by
 * byte (spm_utf8_fault_from), which says where the fault starts.  (A branch
 * per byte, or a test for ASCII every 8 bytes, is mispredicted on Russian
 * and Japanese text.  The ASCII steps are a loop of their own so that
 * their speed does not depend on where a build places the code.) */
static inline size_t spm_utf8_valid_prefix(const char *text, size_t n) {
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0;
    while (i < n) {
        while (n - i >= 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (x & 0x8080808080808080ULL) break;
            i += 8;
        }
        size_t j = i, stop = n - i > SPM_UTF8_BLOCK ? i + SPM_UTF8_BLOCK : n;
        uint64_t state = 0;
        while (j < stop) state = SPM_UTF8_ROWS[s[j++]] >> (state & 63);
        while (j < n && (state & 63) >= 12) state = SPM_UTF8_ROWS[s[j++]] >> (state & 63);
        if ((state & 63) != 0) return spm_utf8_fault_from(s, i, n);
        i = j;
    }
    return n;
}

#endif
