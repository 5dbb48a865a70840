/*
 * spm_normalizer: sentencepiece's text normalizer in C.  See spm_normalizer.h
 * for the format of the precompiled charsmap and the guarantees.
 *
 * The algorithm follows sentencepiece's Normalizer::Normalize and
 * Normalizer::NormalizePrefix (src/normalizer.cc):
 *
 *   prefix(p): the longest USER_DEFINED piece at p, copied verbatim; else the
 *     longest charsmap key at p, replaced by its string; else one UTF-8
 *     character copied as is; a malformed byte becomes U+FFFD (one byte
 *     consumed).
 *   1. remove_extra_whitespaces: drop prefixes whose output is exactly " ".
 *      Nothing left: empty output (and an empty norm_to_orig).
 *   2. add_dummy_prefix without treat_whitespace_as_suffix: emit a space.
 *   3. For each prefix: under remove_extra_whitespaces, drop the leading
 *      spaces of its output while the output so far ends with a space; emit
 *      the rest, each ' ' as U+2581 under escape_whitespaces.
 *   4. remove_extra_whitespaces: drop trailing spaces (U+2581 under
 *      escape_whitespaces, so a literal U+2581 at the end goes too).
 *   5. add_dummy_prefix with treat_whitespace_as_suffix: emit a space.
 *   An emitted space is U+2581 under escape_whitespaces, else ' '.
 *
 * Every output byte records the input offset of the prefix it came from
 * ("consumed" when it was emitted); trailing-space removal rewinds the final
 * offset to the first removed byte's.
 */
#include "spm_normalizer.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Darts-clone double-array units (third_party/darts_clone/darts.h).         */

#define UNIT_HAS_LEAF(u) (((u) >> 8) & 1u)
#define UNIT_VALUE(u) ((u) & 0x7FFFFFFFu)
#define UNIT_LABEL(u) ((u) & 0x800000FFu) /* MSB set: a leaf, never a byte */
#define UNIT_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))

/* The user-defined-piece trie: first-child / next-sibling lists. */
typedef struct {
    uint32_t first_child;  /* 0: none (node 0 is the root, never a child) */
    uint32_t next_sibling; /* 0: none */
    unsigned char byte;
    unsigned char terminal;
} sym_node;

struct spm_normalizer {
    unsigned flags;
    int has_charsmap;
    uint32_t *units;      /* NULL without a charsmap; n_units entries */
    uint32_t root;        /* offset of unit 0 */
    char *strings;        /* replacement strings + a final NUL */
    size_t strings_len;   /* without that final NUL */
    size_t max_repl;      /* longest replacement */

    sym_node *sym;        /* NULL without user-defined pieces */
    size_t n_sym;
    uint32_t sym_root[256]; /* root's child per byte (0: none) */
    size_t max_sym;

    size_t max_step;      /* most output bytes one prefix can produce */
    /* Fast path for ASCII: kind[b] says whether byte b < 0x80 is a whole
       prefix copied as is: always (KIND_PLAIN), unless the next byte is in
       follow[b] (KIND_PLAIN_UNLESS: the charsmap has keys b + more, but b
       alone is no key), or never (KIND_OTHER). */
    unsigned char kind[128];
    unsigned char follow[128][32];
};

#define KIND_OTHER 0
#define KIND_PLAIN 1
#define KIND_PLAIN_UNLESS 2

static const char k_replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
static const char k_space_symbol[] = "\xE2\x96\x81"; /* U+2581 */

/* ------------------------------------------------------------------------ */
/* UTF-8 as sentencepiece decodes it (string_util::DecodeUTF8): returns the   */
/* length of the valid character at p, or 0 when p starts a malformed one.    */

static inline int is_trail(unsigned char c) { return (c & 0xC0u) == 0x80u; }

static inline size_t utf8_valid_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80u) return 1;
    if (n >= 2 && (c & 0xE0u) == 0xC0u) {
        uint32_t cp = ((uint32_t)(c & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        return (is_trail(p[1]) && cp >= 0x80u) ? 2 : 0;
    }
    if (n >= 3 && (c & 0xF0u) == 0xE0u) {
        uint32_t cp = ((uint32_t)(c & 0x0Fu) << 12) |
                      ((uint32_t)(p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        return (is_trail(p[1]) && is_trail(p[2]) && cp >= 0x800u &&
                (cp < 0xD800u || cp > 0xDFFFu))
                   ? 3
                   : 0;
    }
    if (n >= 4 && (c & 0xF8u) == 0xF0u) {
        uint32_t cp = ((uint32_t)(c & 0x07u) << 18) |
                      ((uint32_t)(p[1] & 0x3Fu) << 12) |
                      ((uint32_t)(p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
        return (is_trail(p[1]) && is_trail(p[2]) && is_trail(p[3]) &&
                cp >= 0x10000u && cp <= 0x10FFFFu)
                   ? 4
                   : 0;
    }
    return 0;
}

static int utf8_all_valid(const unsigned char *p, size_t n)
{
    while (n > 0) {
        size_t m = utf8_valid_len(p, n);
        if (m == 0) return 0;
        p += m;
        n -= m;
    }
    return 1;
}

/* sentencepiece's OneCharLen: the length a lead byte announces. */
static inline size_t one_char_len(unsigned char c)
{
    static const unsigned char k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                            1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[c >> 4];
}

/* ------------------------------------------------------------------------ */
/* Errors.                                                                    */

const char *spm_normalizer_strerror(int code)
{
    switch (code) {
    case SPM_NORM_OK:
        return "success";
    case SPM_NORM_ENOMEM:
        return "out of memory";
    case SPM_NORM_EOVERFLOW:
        return "the normalized text is too large";
    case SPM_NORM_EINVAL:
        return "invalid argument";
    case SPM_NORM_EBLOB_SHORT:
        return "the precompiled charsmap is broken: 4 bytes or less";
    case SPM_NORM_EBLOB_TRIE_SIZE:
        return "the precompiled charsmap is broken: its trie size exceeds the blob";
    case SPM_NORM_EBLOB_TRIE_ALIGN:
        return "the precompiled charsmap is broken: its trie size is not a positive "
               "multiple of 1024";
    case SPM_NORM_EBLOB_UNTERMINATED:
        return "the precompiled charsmap is broken: its replacement strings do not "
               "end with a NUL";
    case SPM_NORM_EBLOB_TRIE_ROOT:
        return "the precompiled charsmap is broken: its trie root is not a valid node";
    case SPM_NORM_EBLOB_TRIE_LINK:
        return "the precompiled charsmap is broken: a trie unit points outside the trie";
    case SPM_NORM_EBLOB_TRIE_LEAF:
        return "the precompiled charsmap is broken: a trie node's leaf is not a leaf unit";
    case SPM_NORM_EBLOB_VALUE:
        return "the precompiled charsmap is broken: a trie value is outside the "
               "replacement strings";
    case SPM_NORM_EBLOB_UTF8:
        return "the precompiled charsmap is broken: a replacement string is not "
               "valid UTF-8";
    default:
        return "unknown error";
    }
}

/* ------------------------------------------------------------------------ */
/* Construction.                                                              */

static uint32_t read_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static int load_charsmap(spm_normalizer *nz, const unsigned char *blob,
                         size_t blob_len, size_t *err_offset)
{
    uint32_t trie_size, u0;
    size_t n_units, j, strings_off;

    /* Normalizer::DecodePrecompiledCharsMap (sentencepiece 0.2.3). */
    if (blob_len <= 4) {
        *err_offset = 0;
        return SPM_NORM_EBLOB_SHORT;
    }
    trie_size = read_u32le(blob);
    if ((size_t)trie_size >= blob_len - 4) {
        *err_offset = 0;
        return SPM_NORM_EBLOB_TRIE_SIZE;
    }
    /* whole blocks of 256 units: every XOR with a byte stays in its block */
    if (trie_size < 1024 || (trie_size & 0x3FFu) != 0) {
        *err_offset = 0;
        return SPM_NORM_EBLOB_TRIE_ALIGN;
    }
    strings_off = 4 + (size_t)trie_size;
    if (blob[blob_len - 1] != 0) {
        *err_offset = blob_len - 1;
        return SPM_NORM_EBLOB_UNTERMINATED;
    }

    n_units = trie_size / 4;
    nz->units = (uint32_t *)malloc(n_units * sizeof(uint32_t));
    if (nz->units == NULL) return SPM_NORM_ENOMEM;
    for (j = 0; j < n_units; j++) nz->units[j] = read_u32le(blob + 4 + 4 * j);

    nz->strings_len = blob_len - strings_off;
    nz->strings = (char *)malloc(nz->strings_len + 1);
    if (nz->strings == NULL) return SPM_NORM_ENOMEM;
    memcpy(nz->strings, blob + strings_off, nz->strings_len);
    nz->strings[nz->strings_len] = '\0';

    /*
     * Darts-clone's validate(max_value) as sentencepiece 0.2.3 runs it (the
     * rules below are what it accepts and refuses): the root is an inner node
     * without a leaf whose children lie inside the array; every other inner
     * unit (MSB clear) has its children block inside the array, and its leaf,
     * if it has one, is a leaf unit (MSB set); every leaf unit holds a value
     * below the size of the strings area.  The search goes from a unit j
     * whose label matched a byte (so its MSB is clear) to j ^ offset(j) (its
     * leaf, when has_leaf) and XORs the next byte into that, so it never
     * leaves the array.
     */
    u0 = nz->units[0];
    if (UNIT_LABEL(u0) != 0 || UNIT_HAS_LEAF(u0) || UNIT_OFFSET(u0) == 0 ||
        ((size_t)UNIT_OFFSET(u0) | 0xFFu) >= n_units) {
        *err_offset = 4;
        return SPM_NORM_EBLOB_TRIE_ROOT;
    }
    for (j = 1; j < n_units; j++) {
        uint32_t u = nz->units[j];
        if (UNIT_LABEL(u) <= 0xFFu) {
            size_t base = j ^ (size_t)UNIT_OFFSET(u);
            if ((base | 0xFFu) >= n_units) {
                *err_offset = 4 + 4 * j;
                return SPM_NORM_EBLOB_TRIE_LINK;
            }
            if (UNIT_HAS_LEAF(u) && !(nz->units[base] & 0x80000000u)) {
                *err_offset = 4 + 4 * j;
                return SPM_NORM_EBLOB_TRIE_LEAF;
            }
        } else if ((size_t)UNIT_VALUE(u) >= nz->strings_len) {
            *err_offset = 4 + 4 * j;
            return SPM_NORM_EBLOB_VALUE;
        }
    }
    nz->root = UNIT_OFFSET(u0);

    /* Stricter than sentencepiece: the replacement of every unit that can
       match must be valid UTF-8 (so the output of valid UTF-8 is valid). */
    nz->max_repl = 0;
    for (j = 0; j < n_units; j++) {
        uint32_t u = nz->units[j], v;
        size_t len;
        if (UNIT_LABEL(u) > 0xFFu || !UNIT_HAS_LEAF(u)) continue;
        v = UNIT_VALUE(nz->units[j ^ (size_t)UNIT_OFFSET(u)]);
        if ((size_t)v >= nz->strings_len) continue;
        len = strlen(nz->strings + v);
        if (!utf8_all_valid((const unsigned char *)nz->strings + v, len)) {
            *err_offset = strings_off + v;
            return SPM_NORM_EBLOB_UTF8;
        }
        if (len > nz->max_repl) nz->max_repl = len;
    }
    return SPM_NORM_OK;
}

static int load_symbols(spm_normalizer *nz, const char *const *symbols,
                        const size_t *symbol_lens, size_t n_symbols)
{
    size_t total = 1, i, cap;
    for (i = 0; i < n_symbols; i++) {
        const char *s = symbols[i];
        size_t len = symbol_lens[i];
        const char *nul = len ? (const char *)memchr(s, 0, len) : NULL;
        if (nul) len = (size_t)(nul - s);
        if (total > ((size_t)-1) - len) return SPM_NORM_ENOMEM;
        total += len;
    }
    if (total == 1) return SPM_NORM_OK; /* no non-empty symbol */
    if (total > 0xFFFFFFFEu || total > ((size_t)-1) / sizeof(sym_node))
        return SPM_NORM_ENOMEM;
    cap = total;
    nz->sym = (sym_node *)calloc(cap, sizeof(sym_node));
    if (nz->sym == NULL) return SPM_NORM_ENOMEM;
    nz->n_sym = 1; /* the root */

    for (i = 0; i < n_symbols; i++) {
        const unsigned char *s = (const unsigned char *)symbols[i];
        size_t len = symbol_lens[i], k;
        const char *nul = len ? (const char *)memchr(s, 0, len) : NULL;
        uint32_t node = 0;
        if (nul) len = (size_t)(nul - (const char *)s);
        if (len == 0) continue;
        if (len > nz->max_sym) nz->max_sym = len;
        for (k = 0; k < len; k++) {
            unsigned char c = s[k];
            uint32_t child;
            if (node == 0) {
                child = nz->sym_root[c];
            } else {
                child = nz->sym[node].first_child;
                while (child != 0 && nz->sym[child].byte != c)
                    child = nz->sym[child].next_sibling;
            }
            if (child == 0) {
                child = (uint32_t)nz->n_sym++;
                nz->sym[child].byte = c;
                if (node == 0) {
                    nz->sym_root[c] = child;
                } else {
                    nz->sym[child].next_sibling = nz->sym[node].first_child;
                    nz->sym[node].first_child = child;
                }
            }
            node = child;
        }
        nz->sym[node].terminal = 1;
    }
    return SPM_NORM_OK;
}

int spm_normalizer_new(const unsigned char *charsmap, size_t charsmap_len,
                       unsigned flags, const char *const *symbols,
                       const size_t *symbol_lens, size_t n_symbols,
                       spm_normalizer **out, size_t *err_offset)
{
    spm_normalizer *nz;
    size_t dummy_offset = 0, m;
    int rc, b;

    if (out == NULL) return SPM_NORM_EINVAL;
    *out = NULL;
    if (err_offset == NULL) err_offset = &dummy_offset;
    *err_offset = 0;
    if ((charsmap == NULL && charsmap_len != 0) ||
        (n_symbols != 0 && (symbols == NULL || symbol_lens == NULL)))
        return SPM_NORM_EINVAL;

    nz = (spm_normalizer *)calloc(1, sizeof(*nz));
    if (nz == NULL) return SPM_NORM_ENOMEM;
    nz->flags = flags & (SPM_NORM_ADD_DUMMY_PREFIX | SPM_NORM_REMOVE_EXTRA_WHITESPACES |
                         SPM_NORM_ESCAPE_WHITESPACES |
                         SPM_NORM_TREAT_WHITESPACE_AS_SUFFIX);
    if (charsmap_len != 0) {
        nz->has_charsmap = 1;
        rc = load_charsmap(nz, charsmap, charsmap_len, err_offset);
        if (rc != SPM_NORM_OK) {
            spm_normalizer_free(nz);
            return rc;
        }
    }
    rc = load_symbols(nz, symbols, symbol_lens, n_symbols);
    if (rc != SPM_NORM_OK) {
        spm_normalizer_free(nz);
        return rc;
    }

    /* One prefix emits at most max(replacement, symbol, 4-byte character)
       bytes, each ' ' among them becoming 3 bytes. */
    m = 4;
    if (nz->max_repl > m) m = nz->max_repl;
    if (nz->max_sym > m) m = nz->max_sym;
    if (m > ((size_t)-1) / 4) {
        spm_normalizer_free(nz);
        return SPM_NORM_ENOMEM;
    }
    nz->max_step = 3 * m + 3; /* + room for the suffix space */

    for (b = 0; b < 0x80; b++) {
        unsigned char kind = KIND_PLAIN;
        if (nz->sym != NULL && nz->sym_root[b] != 0) {
            kind = KIND_OTHER;
        } else if (nz->units != NULL) {
            uint32_t node = nz->root ^ (uint32_t)b, u = nz->units[node];
            if (UNIT_LABEL(u) == (uint32_t)b) { /* keys start with b */
                if (UNIT_HAS_LEAF(u)) {
                    kind = KIND_OTHER;
                } else {
                    uint32_t base = node ^ UNIT_OFFSET(u), c;
                    kind = KIND_PLAIN_UNLESS;
                    for (c = 0; c < 256; c++) {
                        if (UNIT_LABEL(nz->units[base ^ c]) == c)
                            nz->follow[b][c >> 3] |= (unsigned char)(1u << (c & 7));
                    }
                }
            }
        }
        nz->kind[b] = kind;
    }
    *out = nz;
    return SPM_NORM_OK;
}

void spm_normalizer_free(spm_normalizer *nz)
{
    if (nz == NULL) return;
    free(nz->units);
    free(nz->strings);
    free(nz->sym);
    free(nz);
}

unsigned spm_normalizer_flags(const spm_normalizer *nz) { return nz->flags; }

int spm_normalizer_has_charsmap(const spm_normalizer *nz) { return nz->has_charsmap; }

int spm_normalizer_is_identity(const spm_normalizer *nz)
{
    return !nz->has_charsmap &&
           !(nz->flags & (SPM_NORM_ADD_DUMMY_PREFIX | SPM_NORM_REMOVE_EXTRA_WHITESPACES |
                          SPM_NORM_ESCAPE_WHITESPACES));
}

/* ------------------------------------------------------------------------ */
/* NormalizePrefix.                                                           */

static inline size_t sym_longest(const spm_normalizer *nz, const unsigned char *p,
                                 size_t n)
{
    const sym_node *sym = nz->sym;
    uint32_t node = nz->sym_root[p[0]];
    size_t best = 0, i = 1;
    while (node != 0) {
        if (sym[node].terminal) best = i;
        if (i >= n) break;
        {
            unsigned char c = p[i++];
            node = sym[node].first_child;
            while (node != 0 && sym[node].byte != c) node = sym[node].next_sibling;
        }
    }
    return best;
}

/* sentencepiece looks at the first kMaxTrieResultsSize (32) matches only. */
#define MAX_TRIE_RESULTS 32

static inline size_t trie_longest(const spm_normalizer *nz, const unsigned char *p,
                                  size_t n, uint32_t *value)
{
    const uint32_t *units = nz->units;
    uint32_t node = nz->root;
    size_t best = 0, i;
    int found = 0;
    for (i = 0; i < n; i++) {
        uint32_t c = p[i], u;
        node ^= c;
        u = units[node];
        if (UNIT_LABEL(u) != c) break;
        node ^= UNIT_OFFSET(u);
        if (UNIT_HAS_LEAF(u)) {
            best = i + 1;
            *value = UNIT_VALUE(units[node]);
            if (++found == MAX_TRIE_RESULTS) break;
        }
    }
    return best;
}

/* The output of the prefix at p (n > 0 bytes left): *s / *slen; returns the
   number of input bytes it consumes (>= 1). */
static inline size_t normalize_prefix(const spm_normalizer *nz, const unsigned char *p,
                                      size_t n, const char **s, size_t *slen)
{
    size_t m;
    if (nz->sym != NULL) {
        m = sym_longest(nz, p, n);
        if (m) {
            *s = (const char *)p;
            *slen = m;
            return m;
        }
    }
    if (nz->units != NULL) {
        uint32_t v = 0;
        m = trie_longest(nz, p, n, &v);
        /* sentencepiece copies the character when the value lies outside the
           strings; validation already rules that out */
        if (m && (size_t)v < nz->strings_len) {
            *s = nz->strings + v;
            *slen = strlen(*s);
            return m;
        }
    }
    m = utf8_valid_len(p, n);
    if (m) {
        *s = (const char *)p;
        *slen = m;
        return m;
    }
    *s = k_replacement;
    *slen = 3;
    return 1;
}

/* 1 when the ASCII byte p[0] (n > 0 bytes left) is a whole prefix that
   normalize_prefix would copy as is. */
static inline int ascii_plain(const spm_normalizer *nz, const unsigned char *p, size_t n)
{
    unsigned char c = p[0], kind = nz->kind[c];
    if (kind == KIND_PLAIN) return 1;
    if (kind == KIND_PLAIN_UNLESS)
        return n == 1 || !(nz->follow[c][p[1] >> 3] & (1u << (p[1] & 7)));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Output buffer.                                                             */

void spm_norm_buf_init(spm_norm_buf *buf) { memset(buf, 0, sizeof(*buf)); }

void spm_norm_buf_free(spm_norm_buf *buf)
{
    free(buf->data);
    free(buf->align);
    memset(buf, 0, sizeof(*buf));
}

/* Makes cap >= need (and align room for cap + 1 entries when want_align). */
static int buf_reserve(spm_norm_buf *buf, size_t need, int want_align)
{
    size_t cap = buf->cap;
    if (need > cap || buf->data == NULL) {
        char *d;
        if (cap > ((size_t)-1) / 2)
            cap = need;
        else if (cap * 2 > need)
            cap = cap * 2;
        else
            cap = need;
        if (cap < 64) cap = 64;
        d = (char *)realloc(buf->data, cap);
        if (d == NULL) return SPM_NORM_ENOMEM;
        buf->data = d;
        buf->cap = cap;
    }
    if (want_align && (buf->align == NULL || buf->align_cap < buf->cap + 1)) {
        size_t *a;
        if (buf->cap + 1 > ((size_t)-1) / sizeof(size_t)) return SPM_NORM_EOVERFLOW;
        a = (size_t *)realloc(buf->align, (buf->cap + 1) * sizeof(size_t));
        if (a == NULL) return SPM_NORM_ENOMEM;
        buf->align = a;
        buf->align_cap = buf->cap + 1;
    }
    return SPM_NORM_OK;
}

/* ------------------------------------------------------------------------ */
/* Normalize.                                                                 */

/* Writes a space at o[*len] (U+2581 when `escape`), from input offset `from`. */
static inline void emit_space(char *o, size_t *al, int want_align, size_t *len, int escape, size_t from)
{
    if (escape) {
        memcpy(o + *len, k_space_symbol, 3);
        if (want_align) al[*len] = al[*len + 1] = al[*len + 2] = from;
        *len += 3;
    } else {
        o[*len] = ' ';
        if (want_align) al[*len] = from;
        *len += 1;
    }
}

#define ENSURE(extra)                                                        \
    do {                                                                     \
        if (buf->cap - len < (extra)) {                                      \
            if (len > ((size_t)-1) - (extra)) return SPM_NORM_EOVERFLOW;     \
            rc = buf_reserve(buf, len + (extra), want_align);                \
            if (rc != SPM_NORM_OK) return rc;                                \
            o = buf->data;                                                   \
            al = buf->align;                                                 \
        }                                                                    \
    } while (0)

int spm_normalizer_normalize(const spm_normalizer *nz, const char *input, size_t n,
                             spm_norm_buf *buf, int want_align)
{
    const unsigned char *p = (const unsigned char *)input;
    unsigned flags;
    int remove_extra, escape, dummy, suffix, is_prev_space, rc;
    size_t max_step, consumed = 0, len = 0, first;
    char *o;
    size_t *al;

    if (nz == NULL || buf == NULL || (input == NULL && n != 0)) return SPM_NORM_EINVAL;
    flags = nz->flags;
    remove_extra = (flags & SPM_NORM_REMOVE_EXTRA_WHITESPACES) != 0;
    escape = (flags & SPM_NORM_ESCAPE_WHITESPACES) != 0;
    dummy = (flags & SPM_NORM_ADD_DUMMY_PREFIX) != 0;
    suffix = (flags & SPM_NORM_TREAT_WHITESPACE_AS_SUFFIX) != 0;
    max_step = nz->max_step;
    buf->len = 0;
    buf->align_len = 0;
    /* Room for the first steps: usually the output is about the input's size. */
    first = n + (n >> 3);
    if (first < n || first > ((size_t)-1) - max_step) return SPM_NORM_EOVERFLOW;
    rc = buf_reserve(buf, first + max_step, want_align);
    if (rc != SPM_NORM_OK) return rc;
    o = buf->data;
    al = buf->align;

    if (n == 0) {
        if (want_align) al[0] = 0;
        return SPM_NORM_OK;
    }

    /* 1. Heading whitespace. */
    if (remove_extra) {
        while (n > 0) {
            const char *s;
            size_t slen, m = normalize_prefix(nz, p, n, &s, &slen);
            if (!(slen == 1 && s[0] == ' ')) break;
            p += m;
            n -= m;
            consumed += m;
        }
        if (n == 0) {
            if (want_align) al[0] = 0;
            return SPM_NORM_OK; /* all whitespace: empty, align_len 0 */
        }
    }

    /* 2. Dummy prefix. */
    if (dummy && !suffix) emit_space(o, al, want_align, &len, escape, consumed);

    /* 3. The text. */
    is_prev_space = remove_extra;
    while (n > 0) {
        const char *s;
        size_t slen, m, k;

        if (p[0] < 0x80 && ascii_plain(nz, p, n)) {
            if (p[0] != ' ') {
                /* A run of ASCII bytes, each a whole prefix copied as is. */
                size_t run = 1;
                while (run < n && p[run] != ' ' && p[run] < 0x80 &&
                       ascii_plain(nz, p + run, n - run))
                    run++;
                ENSURE(run + max_step);
                memcpy(o + len, p, run);
                if (want_align) {
                    for (k = 0; k < run; k++) al[len + k] = consumed + k;
                }
                len += run;
                p += run;
                n -= run;
                consumed += run;
                is_prev_space = 0;
                continue;
            }
            /* A space that is a whole prefix: dropped after a space under
               remove_extra_whitespaces, else emitted (escaped or not). */
            if (!is_prev_space) {
                ENSURE(max_step);
                emit_space(o, al, want_align, &len, escape, consumed);
            }
            is_prev_space = remove_extra;
            consumed++;
            p++;
            n--;
            continue;
        }

        ENSURE(max_step);
        m = normalize_prefix(nz, p, n, &s, &slen);
        if (is_prev_space) {
            while (slen > 0 && s[0] == ' ') {
                s++;
                slen--;
            }
        }
        if (slen > 0) {
            if (escape) {
                for (k = 0; k < slen; k++) {
                    if (s[k] == ' ') {
                        memcpy(o + len, k_space_symbol, 3);
                        if (want_align) al[len] = al[len + 1] = al[len + 2] = consumed;
                        len += 3;
                    } else {
                        o[len] = s[k];
                        if (want_align) al[len] = consumed;
                        len++;
                    }
                }
            } else {
                memcpy(o + len, s, slen);
                if (want_align) {
                    for (k = 0; k < slen; k++) al[len + k] = consumed;
                }
                len += slen;
            }
            is_prev_space = (s[slen - 1] == ' ');
        }
        consumed += m;
        p += m;
        n -= m;
        if (!remove_extra) is_prev_space = 0;
    }

    /* 4. Trailing whitespace. */
    if (remove_extra) {
        const char *space = escape ? k_space_symbol : " ";
        const size_t sl = escape ? 3 : 1;
        while (len >= sl && memcmp(o + len - sl, space, sl) == 0) {
            len -= sl;
            if (want_align) consumed = al[len];
        }
    }

    /* 5. Dummy suffix. */
    ENSURE(4);
    if (dummy && suffix) emit_space(o, al, want_align, &len, escape, consumed);

    if (want_align) al[len] = consumed;
    buf->len = len;
    buf->align_len = len + 1;
    return SPM_NORM_OK;
}

/* ------------------------------------------------------------------------ */
/* Character alignment (sentencepiece's ConvertToUnicodeAlignment).          */

size_t spm_norm_count_chars(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, chars = 0;
    while (i < n) {
        size_t m = one_char_len(p[i]);
        i += (m < n - i) ? m : n - i;
        chars++;
    }
    return chars;
}

/* A cursor over the characters of a string, as sentencepiece splits it. */
typedef struct {
    const unsigned char *s;
    size_t n;
    size_t start, end; /* the current character is s[start..end) */
    size_t index;      /* its index; n == start: the number of characters */
} char_cursor;

static void cursor_reset(char_cursor *c)
{
    size_t m;
    c->start = 0;
    c->index = 0;
    m = c->n ? one_char_len(c->s[0]) : 0;
    c->end = m < c->n ? m : c->n;
}

/* The index of the character that contains byte b (b <= n; b == n gives the
   number of characters).  Amortized O(1) for non-decreasing b. */
static size_t cursor_index(char_cursor *c, size_t b)
{
    if (b < c->start) cursor_reset(c);
    while (c->start < c->n && c->end <= b) {
        size_t m;
        c->start = c->end;
        c->index++;
        if (c->start >= c->n) break;
        m = one_char_len(c->s[c->start]);
        c->end = c->start + (m < c->n - c->start ? m : c->n - c->start);
    }
    return c->index;
}

size_t spm_norm_char_alignment(const char *input, size_t in_len, const char *out,
                               size_t out_len, const size_t *byte_align,
                               size_t *char_align)
{
    const unsigned char *op = (const unsigned char *)out;
    char_cursor in;
    size_t i = 0, k, written = 0;

    in.s = (const unsigned char *)input;
    in.n = in_len;
    cursor_reset(&in);
    while (i < out_len) {
        size_t m = one_char_len(op[i]), r = 0;
        if (m > out_len - i) m = out_len - i;
        /* every byte of the character is written; the last one wins */
        for (k = 0; k < m; k++) {
            size_t b = byte_align[i + k];
            r = cursor_index(&in, b < in_len ? b : in_len);
        }
        char_align[written++] = r;
        i += m;
    }
    {
        size_t b = byte_align[out_len];
        char_align[written++] = cursor_index(&in, b < in_len ? b : in_len);
    }
    return written;
}
