# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sentencepiece's text normalizer (``Normalizer::Normalize``), compiled.

`Normalizer` applies a model's ``normalizer_spec``: the precompiled charsmap
(NFKC and friends, as a longest-match string-to-string table), the whitespace
rules (``remove_extra_whitespaces``, ``add_dummy_prefix``,
``escape_whitespaces``) and ``trainer_spec.treat_whitespace_as_suffix``.  The
model's USER_DEFINED pieces, which sentencepiece copies through the normalizer
untouched, can be given as ``user_defined_symbols``
(:meth:`Normalizer.from_model_proto` does that).

The work is done by csrc/spm_normalizer.c with the GIL released.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdlib cimport free, malloc

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL

cdef enum:
    TYPE_USER_DEFINED = 4  # ModelProto.SentencePiece.Type.USER_DEFINED


cdef inline object _raise_norm_error(int rc):
    if rc == SPM_NORM_ENOMEM:
        raise MemoryError("spmbpe normalizer: out of memory")
    if rc == SPM_NORM_EOVERFLOW:
        raise OverflowError("spmbpe normalizer: the normalized text is too large")
    raise RuntimeError(
        "spmbpe normalizer: " + spm_normalizer_strerror(rc).decode("ascii", "replace")
    )


cdef bytes _as_bytes(data):
    if isinstance(data, bytes):
        return <bytes>data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError("expected bytes, not " + type(data).__name__)


cdef list _size_list(const size_t *values, size_t n):
    cdef list result = PyList_New(<Py_ssize_t>n)
    cdef size_t i
    cdef object v
    for i in range(n):
        v = values[i]
        Py_INCREF(v)
        PyList_SET_ITEM(result, <Py_ssize_t>i, v)
    return result


cdef bytes _charsmap_bytes(precompiled_charsmap):
    """The Normalizer's precompiled_charsmap argument as bytes (None: none)."""
    if precompiled_charsmap is None:
        return b""
    if isinstance(precompiled_charsmap, bytes):
        return <bytes>precompiled_charsmap
    if isinstance(precompiled_charsmap, (bytearray, memoryview)):
        return bytes(precompiled_charsmap)
    raise TypeError(
        "precompiled_charsmap must be bytes, not "
        + type(precompiled_charsmap).__name__
    )


cdef list _encoded_symbols(user_defined_symbols):
    """The Normalizer's user_defined_symbols argument as UTF-8 bytes."""
    cdef list encoded = []
    if isinstance(user_defined_symbols, (str, bytes)):
        raise TypeError("user_defined_symbols must be an iterable of strings")
    for s in user_defined_symbols:
        if isinstance(s, str):
            encoded.append((<str>s).encode("utf-8"))
        elif isinstance(s, bytes):
            (<bytes>s).decode("utf-8")  # must be text
            encoded.append(s)
        else:
            raise TypeError(
                "user_defined_symbols must hold str, not " + type(s).__name__
            )
    return encoded


def _rebuild(charsmap, flags, symbols):
    """Unpickles a Normalizer."""
    return Normalizer(
        charsmap,
        add_dummy_prefix=bool(flags & 1),
        remove_extra_whitespaces=bool(flags & 2),
        escape_whitespaces=bool(flags & 4),
        treat_whitespace_as_suffix=bool(flags & 8),
        user_defined_symbols=symbols,
    )


cdef class Normalizer:
    """sentencepiece's normalizer for one ``normalizer_spec``.

    ``precompiled_charsmap`` is the spec's blob (``b""``: no character
    mapping, as for the ``identity`` rule).  The flags default to the proto
    defaults.  ``user_defined_symbols`` (str or UTF-8 bytes) are matched first,
    longest first, and copied verbatim, as sentencepiece does with a model's
    USER_DEFINED pieces.  A corrupt charsmap raises ``ValueError``.

    Instances are immutable and may be shared between threads.
    """

    def __cinit__(
        self,
        precompiled_charsmap=b"",
        *,
        bint add_dummy_prefix=True,
        bint remove_extra_whitespaces=True,
        bint escape_whitespaces=True,
        bint treat_whitespace_as_suffix=False,
        user_defined_symbols=(),
    ):
        cdef bytes blob
        cdef unsigned flags = 0
        cdef list encoded
        cdef Py_ssize_t n_sym, i
        cdef const char **sym_ptrs = NULL
        cdef size_t *sym_lens = NULL
        cdef size_t err_offset = 0
        cdef int rc
        cdef bytes b

        self._nz = NULL
        blob = _charsmap_bytes(precompiled_charsmap)
        encoded = _encoded_symbols(user_defined_symbols)
        if add_dummy_prefix:
            flags |= SPM_NORM_ADD_DUMMY_PREFIX
        if remove_extra_whitespaces:
            flags |= SPM_NORM_REMOVE_EXTRA_WHITESPACES
        if escape_whitespaces:
            flags |= SPM_NORM_ESCAPE_WHITESPACES
        if treat_whitespace_as_suffix:
            flags |= SPM_NORM_TREAT_WHITESPACE_AS_SUFFIX

        n_sym = len(encoded)
        if n_sym:
            sym_ptrs = <const char **>malloc(n_sym * sizeof(char *))
            sym_lens = <size_t *>malloc(n_sym * sizeof(size_t))
            if sym_ptrs == NULL or sym_lens == NULL:
                free(sym_ptrs)
                free(sym_lens)
                raise MemoryError()
            for i in range(n_sym):
                b = <bytes>encoded[i]
                sym_ptrs[i] = PyBytes_AS_STRING(b)
                sym_lens[i] = <size_t>PyBytes_GET_SIZE(b)
        try:
            rc = spm_normalizer_new(
                <const unsigned char *>PyBytes_AS_STRING(blob),
                <size_t>PyBytes_GET_SIZE(blob),
                flags,
                sym_ptrs,
                sym_lens,
                <size_t>n_sym,
                &self._nz,
                &err_offset,
            )
        finally:
            free(sym_ptrs)
            free(sym_lens)
        if rc == SPM_NORM_ENOMEM:
            raise MemoryError("spmbpe normalizer: out of memory")
        if rc != SPM_NORM_OK:
            raise ValueError(
                "corrupt precompiled_charsmap (%d bytes): %s (at %d)"
                % (
                    PyBytes_GET_SIZE(blob),
                    spm_normalizer_strerror(rc).decode("ascii", "replace"),
                    err_offset,
                )
            )
        self._charsmap = blob
        self._symbols = tuple(e.decode("utf-8") for e in encoded)
        self._identity = spm_normalizer_is_identity(self._nz) != 0

    def __dealloc__(self):
        if self._nz != NULL:
            spm_normalizer_free(self._nz)
            self._nz = NULL

    @classmethod
    def from_spec(cls, normalizer_spec, trainer_spec=None, user_defined_symbols=()):
        """From a NormalizerSpec (``spmbpe._spm_model`` or protobuf) and the
        TrainerSpec that holds ``treat_whitespace_as_suffix``."""
        suffix = bool(getattr(trainer_spec, "treat_whitespace_as_suffix", False))
        return cls(
            bytes(normalizer_spec.precompiled_charsmap or b""),
            add_dummy_prefix=bool(normalizer_spec.add_dummy_prefix),
            remove_extra_whitespaces=bool(normalizer_spec.remove_extra_whitespaces),
            escape_whitespaces=bool(normalizer_spec.escape_whitespaces),
            treat_whitespace_as_suffix=suffix,
            user_defined_symbols=user_defined_symbols,
        )

    @classmethod
    def from_model_proto(cls, proto):
        """The normalizer sentencepiece builds for a decoded model
        (``spmbpe._spm_model.SpmModelProto``): its ``normalizer_spec`` (or the
        defaults), ``trainer_spec.treat_whitespace_as_suffix``, and its
        USER_DEFINED pieces as protected symbols."""
        types = proto.types
        symbols = [proto.piece_bytes(i) for i in range(len(types)) if types[i] == TYPE_USER_DEFINED]
        return cls.from_spec(proto.normalizer_or_default, proto.trainer, symbols)

    # ------------------------------------------------------------ properties

    @property
    def precompiled_charsmap(self):
        return self._charsmap

    @property
    def add_dummy_prefix(self):
        return bool(spm_normalizer_flags(self._nz) & SPM_NORM_ADD_DUMMY_PREFIX)

    @property
    def remove_extra_whitespaces(self):
        return bool(spm_normalizer_flags(self._nz) & SPM_NORM_REMOVE_EXTRA_WHITESPACES)

    @property
    def escape_whitespaces(self):
        return bool(spm_normalizer_flags(self._nz) & SPM_NORM_ESCAPE_WHITESPACES)

    @property
    def treat_whitespace_as_suffix(self):
        return bool(spm_normalizer_flags(self._nz) & SPM_NORM_TREAT_WHITESPACE_AS_SUFFIX)

    @property
    def user_defined_symbols(self):
        return self._symbols

    @property
    def has_charsmap(self):
        """True when a character mapping (a non-empty charsmap) is applied."""
        return spm_normalizer_has_charsmap(self._nz) != 0

    @property
    def is_identity(self):
        """True when normalize(text) == text for every str: no charsmap and
        none of add_dummy_prefix, remove_extra_whitespaces,
        escape_whitespaces."""
        return self._identity

    def __repr__(self):
        return (
            "Normalizer(<%d-byte charsmap>, add_dummy_prefix=%r, "
            "remove_extra_whitespaces=%r, escape_whitespaces=%r, "
            "treat_whitespace_as_suffix=%r, user_defined_symbols=<%d>)"
            % (
                len(self._charsmap),
                self.add_dummy_prefix,
                self.remove_extra_whitespaces,
                self.escape_whitespaces,
                self.treat_whitespace_as_suffix,
                len(self._symbols),
            )
        )

    def __reduce__(self):
        return (_rebuild, (self._charsmap, spm_normalizer_flags(self._nz), self._symbols))

    # ------------------------------------------------------------ normalize

    def normalize(self, str text not None):
        """The normalized text, as sentencepiece's
        ``SentencePieceProcessor.normalize(text)`` gives it."""
        cdef Py_ssize_t n
        cdef const char *data
        cdef spm_norm_buf buf
        cdef int rc
        if self._identity:
            return text
        data = PyUnicode_AsUTF8AndSize(text, &n)
        spm_norm_buf_init(&buf)
        try:
            with nogil:
                rc = spm_normalizer_normalize(self._nz, data, <size_t>n, &buf, 0)
            if rc != SPM_NORM_OK:
                _raise_norm_error(rc)
            return PyUnicode_DecodeUTF8(buf.data, <Py_ssize_t>buf.len, NULL)
        finally:
            spm_norm_buf_free(&buf)

    def normalize_with_offsets(self, str text not None):
        """``(normalized, offsets)``: ``offsets[k]`` is the character offset in
        `text` that output character ``k`` came from; one more entry than the
        output has characters, the last one the end (sentencepiece's
        ``normalize(text, with_offsets=True)``)."""
        cdef Py_ssize_t n
        cdef const char *data
        cdef spm_norm_buf buf
        cdef size_t nchars = 0, written = 0
        cdef size_t *char_align = NULL
        cdef int rc
        if self._identity:
            return text, list(range(len(text) + 1))
        data = PyUnicode_AsUTF8AndSize(text, &n)
        spm_norm_buf_init(&buf)
        try:
            with nogil:
                rc = spm_normalizer_normalize(self._nz, data, <size_t>n, &buf, 1)
                if rc == SPM_NORM_OK:
                    nchars = spm_norm_count_chars(buf.data, buf.len)
                    char_align = <size_t *>malloc((nchars + 1) * sizeof(size_t))
                    if char_align == NULL:
                        rc = SPM_NORM_ENOMEM
                    else:
                        written = spm_norm_char_alignment(
                            data, <size_t>n, buf.data, buf.len, buf.align, char_align
                        )
            if rc != SPM_NORM_OK:
                _raise_norm_error(rc)
            out = PyUnicode_DecodeUTF8(buf.data, <Py_ssize_t>buf.len, NULL)
            return out, _size_list(char_align, written)
        finally:
            free(char_align)
            spm_norm_buf_free(&buf)

    def normalize_bytes(self, data):
        """Normalizes UTF-8 bytes (malformed sequences become U+FFFD, one per
        bad byte) and returns bytes, like sentencepiece given bytes."""
        return _normalized_bytes(self, data, False)

    def normalize_bytes_with_offsets(self, data):
        """``(normalized bytes, byte offsets)``: sentencepiece's
        ``norm_to_orig`` (``normalize(data, with_offsets=True)`` on bytes):
        one entry per output byte plus the end, or ``[]`` when sentencepiece
        returns none (empty input; all whitespace removed)."""
        return _normalized_bytes(self, data, True)


cdef object _normalized_bytes(Normalizer nz, data, bint offsets):
    """Normalizer.normalize_bytes, with its byte offsets when `offsets`."""
    cdef bytes raw = _as_bytes(data)
    cdef spm_norm_buf buf
    cdef int rc
    cdef const char *p = PyBytes_AS_STRING(raw)
    cdef size_t n = <size_t>PyBytes_GET_SIZE(raw)
    spm_norm_buf_init(&buf)
    try:
        with nogil:
            rc = spm_normalizer_normalize(nz._nz, p, n, &buf, offsets)
        if rc != SPM_NORM_OK:
            _raise_norm_error(rc)
        out = PyBytes_FromStringAndSize(buf.data, <Py_ssize_t>buf.len)
        return (out, _size_list(buf.align, buf.align_len)) if offsets else out
    finally:
        spm_norm_buf_free(&buf)
