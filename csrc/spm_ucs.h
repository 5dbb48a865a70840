/* spm_ucs: UTF-8 from a Python str as CPython stores it (PEP 393: 1, 2 or
 * 4 bytes per code point), a block at a time.
 *
 * PyUnicode_AsUTF8AndSize makes a UTF-8 copy of a str that is not ASCII and
 * keeps it on the str for the str's lifetime (as much memory again, and its
 * page faults).  A long text is instead converted block by block into a
 * buffer that stays in the CPU's cache.
 * Python's own encoder is the reference: the same bytes, and a surrogate
 * (which UTF-8 cannot hold) is an error.
 */
#ifndef SPM_UCS_H
#define SPM_UCS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Code point i of a str's data stored with `kind` bytes per code point. */
static inline uint32_t spm_ucs_at(int kind, const void *data, size_t i) {
    if (kind == 1) return ((const uint8_t *)data)[i];
    if (kind == 2) return ((const uint16_t *)data)[i];
    return ((const uint32_t *)data)[i];
}

/* Writes the UTF-8 of code point c (0x80 or more, no surrogate) at o, where
 * 4 bytes are free; returns the end.  (One 4-byte store, so that a word
 * read back soon does not wait for several.) */
static inline uint8_t *spm_utf8_put(uint8_t *o, uint32_t c) {
    uint8_t b[4];
    int n;
    if (c < 0x800) {
        b[0] = (uint8_t)(0xC0 | (c >> 6));
        b[1] = (uint8_t)(0x80 | (c & 0x3F));
        b[2] = b[3] = 0;
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (uint8_t)(0xE0 | (c >> 12));
        b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (c & 0x3F));
        b[3] = 0;
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | (c >> 18));
        b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (uint8_t)(0x80 | (c & 0x3F));
        n = 4;
    }
    memcpy(o, b, 4);
    return o + n;
}

static inline int spm_ucs_is_surrogate(uint32_t c) { return (c & 0xFFFFF800u) == 0xD800u; }

/* Writes the UTF-8 of code points [start, end) to out (room for 4 bytes per
 * code point; the bytes past the result's end are scratch).  Returns the
 * bytes written, or -1 - i when code point i is a surrogate.
 *
 * Runs of ASCII are copied 32 then 8 (kind 1) or 16 then 4 (kind 2) at a
 * time, tried only at an ASCII character (in Cyrillic or Japanese text a
 * wide read tried at every character would fail at every one).  The words
 * are read straight from the text. */
static inline ptrdiff_t spm_ucs_to_utf8(int kind, const void *data, size_t start, size_t end, char *out) {
    uint8_t *o = (uint8_t *)out;
    size_t i = start;
    if (kind == 1) {
        const uint8_t *s = (const uint8_t *)data;
        while (i < end) {
            if (s[i] >= 0x80) {
                o = spm_utf8_put(o, s[i++]);
                continue;
            }
            while (end - i >= 32) {
                uint64_t a, b, c, d;
                memcpy(&a, s + i, 8);
                memcpy(&b, s + i + 8, 8);
                memcpy(&c, s + i + 16, 8);
                memcpy(&d, s + i + 24, 8);
                if ((a | b | c | d) & 0x8080808080808080ULL) break;
                memcpy(o, s + i, 32);
                o += 32;
                i += 32;
            }
            while (end - i >= 8) {
                uint64_t a;
                memcpy(&a, s + i, 8);
                if (a & 0x8080808080808080ULL) break;
                memcpy(o, &a, 8);
                o += 8;
                i += 8;
            }
            while (i < end && s[i] < 0x80) *o++ = s[i++];
        }
    } else if (kind == 2) {
        const uint16_t *s = (const uint16_t *)data;
        while (i < end) {
            uint32_t c = s[i];
            if (c >= 0x80) {
                if (spm_ucs_is_surrogate(c)) return -1 - (ptrdiff_t)i;
                o = spm_utf8_put(o, c);
                i++;
                continue;
            }
            /* (16 at a time: the compiler packs the copy into vector
             * instructions.) */
            while (end - i >= 16) {
                uint64_t a, b, c4, d;
                memcpy(&a, s + i, 8);
                memcpy(&b, s + i + 4, 8);
                memcpy(&c4, s + i + 8, 8);
                memcpy(&d, s + i + 12, 8);
                if ((a | b | c4 | d) & 0xFF80FF80FF80FF80ULL) break;
                for (int k = 0; k < 16; k++) o[k] = (uint8_t)s[i + k];
                o += 16;
                i += 16;
            }
            while (end - i >= 4) {
                uint64_t a;
                memcpy(&a, s + i, 8);
                if (a & 0xFF80FF80FF80FF80ULL) break;
                o[0] = (uint8_t)s[i];
                o[1] = (uint8_t)s[i + 1];
                o[2] = (uint8_t)s[i + 2];
                o[3] = (uint8_t)s[i + 3];
                o += 4;
                i += 4;
            }
            while (i < end && s[i] < 0x80) *o++ = (uint8_t)s[i++];
        }
    } else {
        const uint32_t *s = (const uint32_t *)data;
        for (; i < end; i++) {
            uint32_t c = s[i];
            if (c < 0x80) {
                *o++ = (uint8_t)c;
            } else {
                if (spm_ucs_is_surrogate(c)) return -1 - (ptrdiff_t)i;
                o = spm_utf8_put(o, c);
            }
        }
    }
    return (ptrdiff_t)(o - (uint8_t *)out);
}

/* The UTF-8 length of code points [0, n) (a surrogate counted as 3). */
static inline size_t spm_ucs_utf8_size(int kind, const void *data, size_t n) {
    size_t size = 0, i;
    for (i = 0; i < n; i++) {
        uint32_t c = spm_ucs_at(kind, data, i);
        size += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    }
    return size;
}

/* The first i in [from, n) (from >= 1) where code point i is a space that
 * follows an ASCII code point other than a space; n when there is none. */
static inline size_t spm_ucs_space_after_ascii(int kind, const void *data, size_t from, size_t n) {
    size_t i;
    for (i = from; i < n; i++) {
        if (spm_ucs_at(kind, data, i) == 0x20) {
            uint32_t before = spm_ucs_at(kind, data, i - 1);
            if (before < 0x80 && before != 0x20) return i;
        }
    }
    return n;
}

#endif
