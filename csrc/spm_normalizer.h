/*
 * spm_normalizer: sentencepiece's text normalizer (src/normalizer.cc), in C.
 *
 * A normalizer is built from a NormalizerSpec's `precompiled_charsmap` blob
 * plus four flags (add_dummy_prefix, remove_extra_whitespaces,
 * escape_whitespaces from the NormalizerSpec; treat_whitespace_as_suffix from
 * the TrainerSpec) and, optionally, the model's USER_DEFINED pieces, which
 * sentencepiece copies verbatim (it installs them as the normalizer's
 * "prefix matcher").
 *
 * The blob is   <uint32 LE: trie size in bytes>
 *               <Darts-clone double array: trie size / 4 uint32 LE units>
 *               <replacement strings, each NUL-terminated>
 * A trie key is a byte string of the input; its value is the byte offset of
 * its replacement in the string area (the replacement runs to the next NUL).
 * At each input position the LONGEST key wins.
 *
 * The blob is copied and validated once, in spm_normalizer_new, with the
 * checks sentencepiece 0.2.3 makes when it loads a model (sizes; the trie
 * size a multiple of 1024 bytes; the strings NUL-terminated; Darts-clone's
 * validate(): every unit the search could follow inside the array, every leaf
 * value inside the strings) plus one of ours: every replacement a key can
 * select is valid UTF-8.  After that the search does no bounds checks and can
 * never read outside the normalizer's own memory.  Like sentencepiece, the
 * search looks at the first 32 matches of a position only.
 *
 * No global state; a normalizer is immutable after construction, so any number
 * of threads may call spm_normalizer_normalize on it at once (each with its
 * own output buffer).  Nothing here touches Python.
 */
#ifndef SPM_NORMALIZER_H
#define SPM_NORMALIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes (0 = success). */
#define SPM_NORM_OK 0
#define SPM_NORM_ENOMEM (-1)          /* allocation failed */
#define SPM_NORM_EOVERFLOW (-2)       /* output size does not fit size_t */
#define SPM_NORM_EINVAL (-3)          /* NULL argument */
/* A corrupt charsmap.  All but the last are the checks of sentencepiece 0.2.3
   (which then refuses to load the model). */
#define SPM_NORM_EBLOB_SHORT (-10)       /* non-empty blob of 4 bytes or less */
#define SPM_NORM_EBLOB_TRIE_SIZE (-11)   /* trie leaves no string area */
#define SPM_NORM_EBLOB_TRIE_ALIGN (-12)  /* trie size not a positive multiple of 1024 */
#define SPM_NORM_EBLOB_UNTERMINATED (-13) /* string area does not end with NUL */
#define SPM_NORM_EBLOB_TRIE_ROOT (-14)   /* unit 0 is not a valid root */
#define SPM_NORM_EBLOB_TRIE_LINK (-15)   /* a unit's children lie outside the trie */
#define SPM_NORM_EBLOB_TRIE_LEAF (-16)   /* a node's leaf is not a leaf unit */
#define SPM_NORM_EBLOB_VALUE (-17)       /* a leaf value lies outside the strings */
#define SPM_NORM_EBLOB_UTF8 (-18)        /* a replacement is not valid UTF-8 (ours) */

/* Flags for spm_normalizer_new. */
#define SPM_NORM_ADD_DUMMY_PREFIX 0x1u
#define SPM_NORM_REMOVE_EXTRA_WHITESPACES 0x2u
#define SPM_NORM_ESCAPE_WHITESPACES 0x4u
#define SPM_NORM_TREAT_WHITESPACE_AS_SUFFIX 0x8u

typedef struct spm_normalizer spm_normalizer;

/*
 * Builds a normalizer.  `charsmap` may be NULL/empty (no character mapping).
 * `symbols`/`symbol_lens` (count `n_symbols`, may be 0) are the model's
 * USER_DEFINED pieces (sentencepiece refuses a model with an empty piece or
 * one holding a NUL byte; here such a symbol is cut at its first NUL, and an
 * empty one is ignored).
 * On success stores the normalizer in *out and returns 0.  On failure returns
 * a negative code, *out is NULL, and if `err_offset` is not NULL it receives
 * the byte offset in the blob the error concerns.
 */
int spm_normalizer_new(const unsigned char *charsmap, size_t charsmap_len,
                       unsigned flags, const char *const *symbols,
                       const size_t *symbol_lens, size_t n_symbols,
                       spm_normalizer **out, size_t *err_offset);

void spm_normalizer_free(spm_normalizer *nz);

/* A static English description of a return code. */
const char *spm_normalizer_strerror(int code);

unsigned spm_normalizer_flags(const spm_normalizer *nz);
/* 1 when the blob was non-empty (a character mapping is applied). */
int spm_normalizer_has_charsmap(const spm_normalizer *nz);
/*
 * 1 when normalizing valid UTF-8 returns it unchanged: no charsmap, and none
 * of add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces.
 * (Malformed UTF-8 is still replaced by U+FFFD, one per bad byte.)
 */
int spm_normalizer_is_identity(const spm_normalizer *nz);

/*
 * A growable output buffer, owned by the caller and reusable across calls.
 * After a successful spm_normalizer_normalize:
 *   data[0..len)      the normalized UTF-8 (not NUL-terminated);
 *   align[0..len]     when alignment was requested: align[i] is the byte
 *                     offset in the input that output byte i came from, and
 *                     align[len] is the end (sentencepiece's norm_to_orig);
 *   align_len         len + 1, or 0 where sentencepiece returns an empty
 *                     norm_to_orig (empty input, or input that is all
 *                     whitespace under remove_extra_whitespaces); align[0] is
 *                     then 0 all the same.
 */
typedef struct {
    char *data;
    size_t len;
    size_t cap;      /* bytes allocated in data */
    size_t *align;   /* NULL until alignment is first requested */
    size_t align_cap; /* entries allocated in align (>= cap + 1 when set) */
    size_t align_len;
} spm_norm_buf;

void spm_norm_buf_init(spm_norm_buf *buf);
void spm_norm_buf_free(spm_norm_buf *buf);

/*
 * Normalizes input[0..n) (any bytes; malformed UTF-8 becomes U+FFFD, one per
 * bad byte, as in sentencepiece) into `out`.  `want_align` != 0 also fills
 * out->align.  Returns 0, or SPM_NORM_ENOMEM / SPM_NORM_EOVERFLOW (the
 * buffer's contents are then unspecified but it stays valid to free/reuse).
 */
int spm_normalizer_normalize(const spm_normalizer *nz, const char *input,
                             size_t n, spm_norm_buf *out, int want_align);

/*
 * sentencepiece's ConvertToUnicodeAlignment: turns a byte alignment (as
 * produced above, out_len + 1 entries) into a character alignment.  Characters
 * are counted as sentencepiece counts them (by lead byte, a malformed byte
 * being one character).  `char_align` must have room for (number of characters
 * in out) + 1 entries; entry k is the input character offset output character
 * k came from (the last byte of a character wins), the final entry the end.
 * Returns the number of entries written.
 */
size_t spm_norm_char_alignment(const char *input, size_t in_len,
                               const char *out, size_t out_len,
                               const size_t *byte_align, size_t *char_align);

/* Number of characters in s[0..n), counted as spm_norm_char_alignment does. */
size_t spm_norm_count_chars(const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* SPM_NORMALIZER_H */
