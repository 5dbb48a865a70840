# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled SentencePiece-BPE merger and vocabulary table.

`PieceTable` is the vocabulary as a C hash table from piece bytes to id.
`SpmCore` adds the merge tables and the decode table, and encodes *spans*:
stretches of text between added tokens, read as they are (a space stands
for U+2581, the dummy prefix optional), cut into chunks and merged
best-scoring pair first (core/encode.pyx), with the GIL released.  Policy
(added tokens, where the dummy prefix goes, BOS/EOS) is the Python layer's;
this module knows nothing of it.

One extension assembled from one file per concern (spmbpe/_core.pxd).
"""

import sys
from array import array

cimport cython
cimport cpython.array as carray

from cpython.bytearray cimport (
    PyByteArray_AS_STRING,
    PyByteArray_FromStringAndSize,
    PyByteArray_GET_SIZE,
    PyByteArray_Resize,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF, Py_XINCREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memchr, memcmp, memcpy, memmove, memset

from spmbpe._csrc cimport (
    SPM_TYPE_BYTE,
    SPM_TYPE_CONTROL,
    SPM_TYPE_NORMAL,
    SPM_TYPE_UNKNOWN,
    SPM_TYPE_UNUSED,
    SPM_TYPE_USER_DEFINED,
    spm_fetch_add_u32,
    spm_prefault_write,
    spm_load_acquire_u32,
    spm_load_u32,
    spm_store_release_u32,
    spm_store_u32,
    spm_sub_release_u32,
    spm_yield,
    spm_cache_clear,
    spm_cache_entry,
    spm_cache_free,
    spm_cache_ids,
    spm_cache_mark,
    spm_cache_sweep,
    spm_cache_init,
    spm_cache_full_load,
    spm_cache_mostly_full,
    spm_cache_put,
    spm_cache_flush,
    spm_cache_quiesce,
    spm_cache_writer_init,
    spm_cache_view,
    spm_cache_view_get,
    spm_cache_view_of,
    spm_chunk_key,
    spm_cache_key_of,
    spm_cache_words,
    spm_cache_key_hashed,
    spm_bigram,
    spm_bigram_key,
    spm_chars,
    spm_chars_find,
    spm_chars_new,
    spm_chars_set,
    spm_chars_free,
    spm_char_key,
    spm_load8,
    spm_low_bytes,
    spm_bytes_eq,
    spm_first_byte,
    lowest_bit,
    spm_least_in,
    highest_bit,
    spm_bytes_before,
    spm_pairs_rank,
    spm_pairs_slot,
    SPM_CACHE_MAX_DATA,
    SPM_CACHE_BLOCK,
    SPM_CACHE_MAX_SLOTS,
    SPM_CACHE_MAX_KEY,
    spm_charpairs_free,
    spm_charpairs_has,
    spm_charpairs_new,
    spm_charpairs_wanted,
    spm_piece_scan,
    spm_ascii_pack,
    spm_ascii_pair_held,
    spm_ascii_scan,
    SPM_ASCII_PAIRS,
    spm_head8,
    spm_json_plain8,
    spm_ascii_after_marker,
    spm_utf8_len as utf8_len,
    spm_utf8_valid_prefix,
    spm_count_byte,
    spm_ucs_to_utf8,
    spm_ucs_utf8_size,
    spm_ucs_space_after_ascii,
    spm_pairs_free,
    spm_pairs_new,
    spm_heap_free,
    spm_heap_init,
    spm_heap_pop,
    spm_heap_push,
    spm_heap_reserve,
    spm_vocab_find,
    spm_vocab_find_key,
    spm_vocab_free,
    spm_vocab_key,
    spm_vocab_key_of,
    spm_vocab_new,
    SPM_ID_MASK,
)

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL
    # The same, NULL with the error still set (for a caller that clears it).
    const char *PyUnicode_AsUTF8AndSize_NoError "PyUnicode_AsUTF8AndSize"(object text, Py_ssize_t *size)
    void PyErr_Clear()
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    long long PyLong_AsLongLongAndOverflow(object value, int *overflow) except? -1
    # A str as CPython stores it (PEP 393), for long texts read block by
    # block (SpmCore.encode_long).
    int PyUnicode_KIND(object text)
    const void *PyUnicode_DATA(object text)
    bint PyUnicode_IS_ASCII(object text)
    Py_UCS4 PyUnicode_READ_CHAR(object text, Py_ssize_t index)
    # (A function: makes a str of the legacy kind ready, before 3.12.)
    Py_ssize_t PyUnicode_GetLength(object text) except -1
    ctypedef struct PyTypeObject:
        pass
    PyTypeObject PyUnicode_Type
    PyTypeObject *Py_TYPE(PyObject *obj)

# A batch's strs read without the GIL (BatchJob holds a reference to each).
cdef extern from "Python.h" nogil:
    Py_ssize_t str_length "PyUnicode_GET_LENGTH"(PyObject *text)
    int str_kind "PyUnicode_KIND"(PyObject *text)
    const void *str_data "PyUnicode_DATA"(PyObject *text)
    bint str_is_ascii "PyUnicode_IS_ASCII"(PyObject *text)
    Py_UCS4 str_read "PyUnicode_READ"(int kind, const void *data, Py_ssize_t index)

from spmbpe.errors import InvalidTokenIdError

# The longest segment (in UTF-8 bytes) one merge can take: every symbol index
# and byte offset of the escaped text (up to 3 bytes per input byte, plus the
# prefix) must fit in an int32.
cdef Py_ssize_t MAX_SEGMENT_BYTES_C = (INT32_MAX - 3) // 3
# Idle workspaces a core keeps (one per thread that encodes at a time).
cdef int _POOL_SIZE = 16
# Single texts shorter than this are merged without releasing the GIL (the
# release and re-acquisition cost more); batches release it once per chunk.
cdef Py_ssize_t _NOGIL_BYTES = 2048
# A pooled workspace keeps buffers up to these sizes between calls (bytes of
# escaped text; ids, with their spans); larger ones are freed when it goes
# back to the pool.  A batch's ids fill one buffer per thread: kept, they
# stayed resident after the batch (8 MB for 8 MB of text on two threads).
cdef size_t _KEEP_TEXT_BYTES = 1 << 20
cdef size_t _KEEP_IDS = 1 << 16
# SpmCore.set_cache_capacity's bound (2**24 table slots).
cdef Py_ssize_t _MAX_CACHE_CHUNKS = 1 << 23
MAX_SEGMENT_BYTES = MAX_SEGMENT_BYTES_C

# U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's whitespace marker, in UTF-8.
cdef const char *MARKER = b"\xe2\x96\x81"


# The token types and piece flags of csrc/spm_types.h, by name, for the
# Python layer to read instead of restating them: spmbpe.tokens.TokenType is
# checked against TOKEN_TYPES (tests/test_core_tables.py).
TOKEN_TYPES = {
    "NORMAL": SPM_TYPE_NORMAL,
    "UNKNOWN": SPM_TYPE_UNKNOWN,
    "CONTROL": SPM_TYPE_CONTROL,
    "USER_DEFINED": SPM_TYPE_USER_DEFINED,
    "UNUSED": SPM_TYPE_UNUSED,
    "BYTE": SPM_TYPE_BYTE,
}
PIECE_FLAGS = {"MERGEABLE": SPM_FLAG_MERGEABLE, "RESPLIT": SPM_FLAG_RESPLIT}


include "core/workspace.pyx"
include "core/vocab.pyx"
include "core/rules.pyx"
include "core/tables.pyx"
include "core/encode.pyx"
include "core/strs.pyx"
include "core/plan.pyx"
include "core/decode.pyx"
include "core/scan.pyx"
include "core/pool.pyx"
include "core/spmcore.pyx"
include "core/units.pyx"
include "core/batch.pyx"
include "core/direct.pyx"
include "core/arrays.pyx"
include "core/jsonl.pyx"
include "core/merges_json.pyx"
