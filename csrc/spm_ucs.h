/* spm_ucs: UTF-8 from a Python str as CPython stores it (PEP 393: 1, 2 or
 * 4 bytes per code point), a block at a time.
 *
 * PyUnicode_AsUTF8AndSize makes a UTF-8 copy of a str that is not ASCII and
 * keeps it on the str for the str's lifetime: encoding a 40 MB document
 * left 40 MB more attached to the caller's text, and writing the copy cost
 * a tenth of the encoding (a page fault per 4 KiB).  A long text is instead
 * converted block by block into a buffer that stays in the CPU's cache.
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

/* Writes the UTF-8 of code points [start, end) to out (room for 4 bytes per
 * code point).  Returns the bytes written, or -1 - i when code point i is a
 * surrogate.  Runs of ASCII go 8 (kind 1) or 4 (kind 2) at a time. */
static inline ptrdiff_t spm_ucs_to_utf8(int kind, const void *data, size_t start, size_t end, char *out) {
    uint8_t *o = (uint8_t *)out;
    size_t i = start;
    while (i < end) {
        uint32_t c;
        if (kind == 1) {
            const uint8_t *s = (const uint8_t *)data;
            while (end - i >= 32) {
                uint64_t x[4];
                memcpy(x, s + i, 32);
                if ((x[0] | x[1] | x[2] | x[3]) & 0x8080808080808080ULL) break;
                memcpy(o, s + i, 32);
                o += 32;
                i += 32;
            }
            if (i == end) break;
            if (end - i >= 8) {
                uint64_t x;
                memcpy(&x, s + i, 8);
                if (!(x & 0x8080808080808080ULL)) {
                    memcpy(o, s + i, 8);
                    o += 8;
                    i += 8;
                    continue;
                }
            }
            c = s[i];
        } else if (kind == 2) {
            const uint16_t *s = (const uint16_t *)data;
            /* (16 at a time: the compiler packs the copy into vector
             * instructions; 4 at a time ran at a third of Python's own
             * encoder.) */
            while (end - i >= 16) {
                uint64_t x[4];
                memcpy(x, s + i, 32);
                if ((x[0] | x[1] | x[2] | x[3]) & 0xFF80FF80FF80FF80ULL) break;
                for (int k = 0; k < 16; k++) o[k] = (uint8_t)s[i + k];
                o += 16;
                i += 16;
            }
            if (i == end) break;
            if (end - i >= 4) {
                uint64_t x;
                memcpy(&x, s + i, 8);
                if (!(x & 0xFF80FF80FF80FF80ULL)) {
                    o[0] = (uint8_t)s[i];
                    o[1] = (uint8_t)s[i + 1];
                    o[2] = (uint8_t)s[i + 2];
                    o[3] = (uint8_t)s[i + 3];
                    o += 4;
                    i += 4;
                    continue;
                }
            }
            c = s[i];
        } else {
            c = ((const uint32_t *)data)[i];
        }
        if (c < 0x80) {
            *o++ = (uint8_t)c;
        } else if (c < 0x800) {
            *o++ = (uint8_t)(0xC0 | (c >> 6));
            *o++ = (uint8_t)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            if ((c & 0xF800) == 0xD800) return -1 - (ptrdiff_t)i;
            *o++ = (uint8_t)(0xE0 | (c >> 12));
            *o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            *o++ = (uint8_t)(0x80 | (c & 0x3F));
        } else {
            *o++ = (uint8_t)(0xF0 | (c >> 18));
            *o++ = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
            *o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            *o++ = (uint8_t)(0x80 | (c & 0x3F));
        }
        i++;
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
