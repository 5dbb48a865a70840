# C-level API of the compiled core, assembled from one .pxd per concern (as
# uvloop's loop.pxd includes handles/*.pxd); spmbpe/_core.pyx includes the
# matching .pyx files.  One extension, one C file: the kernels call each other
# as static C functions, as they did when this was one file.
#
#   core/workspace.pxd   one encoding thread's scratch memory (Workspace)
#   core/tables.pxd      what the kernels read (CoreTables, ChunkRules)
#   core/vocab.pxd       the vocabulary table (PieceTable)
#   core/encode.pxd      the encode kernel: a span of UTF-8 to ids
#   core/plan.pxd        Plan: the typed plan planners fill, its parts (PlanPart)
#   core/scan.pxd        AddedScan: whether a text holds an added token
#   core/pool.pxd        WorkPool: idle workspaces and the chunk cache's policy
#   core/spmcore.pxd     SpmCore: owns the tables and the pool; the encoding entry points
#   core/batch.pxd       BatchJob: one encode_batch shared by threads
#   core/decode.pxd      ids back to bytes
#   core/direct.pxd      TokenizerBase: the per-line path
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
include "core/decode.pxd"
include "core/direct.pxd"
