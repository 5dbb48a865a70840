# Declarations of csrc/spm_normalizer.h and of the Normalizer extension type,
# so that other Cython modules can `from spmbpe._normalizer cimport Normalizer`
# and call the C normalizer on `Normalizer._nz` without the GIL.


cdef extern from "spm_normalizer.h" nogil:
    ctypedef struct spm_normalizer:
        pass

    ctypedef struct spm_norm_buf:
        char *data
        size_t len
        size_t cap
        size_t *align
        size_t align_len

    enum:
        SPM_NORM_OK
        SPM_NORM_ENOMEM
        SPM_NORM_EOVERFLOW
        SPM_NORM_ADD_DUMMY_PREFIX
        SPM_NORM_REMOVE_EXTRA_WHITESPACES
        SPM_NORM_ESCAPE_WHITESPACES
        SPM_NORM_TREAT_WHITESPACE_AS_SUFFIX

    int spm_normalizer_new(const unsigned char *charsmap, size_t charsmap_len,
                           unsigned flags, const char *const *symbols,
                           const size_t *symbol_lens, size_t n_symbols,
                           spm_normalizer **out, size_t *err_offset)
    void spm_normalizer_free(spm_normalizer *nz)
    const char *spm_normalizer_strerror(int code)
    unsigned spm_normalizer_flags(const spm_normalizer *nz)
    int spm_normalizer_has_charsmap(const spm_normalizer *nz)
    int spm_normalizer_is_identity(const spm_normalizer *nz)

    void spm_norm_buf_init(spm_norm_buf *buf)
    void spm_norm_buf_free(spm_norm_buf *buf)
    int spm_normalizer_normalize(const spm_normalizer *nz, const char *input,
                                 size_t n, spm_norm_buf *out, int want_align)
    size_t spm_norm_char_alignment(const char *input, size_t in_len,
                                   const char *out, size_t out_len,
                                   const size_t *byte_align, size_t *char_align)
    size_t spm_norm_count_chars(const char *s, size_t n)


cdef class Normalizer:
    cdef spm_normalizer *_nz
    cdef bytes _charsmap
    cdef tuple _symbols
    cdef bint _identity
