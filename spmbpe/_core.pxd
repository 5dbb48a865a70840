# C-level API of the compiled core, one .pxd per concern (each core/X.pxd
# describes itself), as uvloop's loop.pxd includes handles/*.pxd;
# spmbpe/_core.pyx includes the matching .pyx files: one extension, one C
# file, so the kernels call each other as static C functions.
cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from spmbpe._csrc cimport (
    SPM_FLAG_MERGEABLE,
    SPM_FLAG_RESPLIT,
    spm_cache,
    spm_cache_writer,
    spm_chars,
    spm_charpairs,
    spm_heap,
    spm_pairs,
    spm_vocab,
)

include "core/workspace.pxd"
include "core/tables.pxd"
include "core/vocab.pxd"
include "core/encode.pxd"
include "core/plan.pxd"
include "core/scan.pxd"
include "core/pool.pxd"
include "core/spmcore.pxd"
include "core/batch.pxd"
include "core/direct.pxd"
