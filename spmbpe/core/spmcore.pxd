# SpmCore (core/spmcore.pyx): owns the CoreTables, the pool of workspaces and
# each id's int; its Python methods are the core's API, the encoding entry
# points.

# Each id's int object, made once for all (id_ints_list).
ctypedef struct IdInts:
    PyObject **objects            # NULL until the first list of ids


@cython.final
cdef class SpmCore:
    cdef readonly PieceTable table
    cdef CoreTables t                 # what the kernels read (core/tables.pyx fills it)
    cdef const float[::1] scores
    cdef const uint8_t[::1] flags     # (keep t.flags and t.types alive)
    cdef const uint8_t[::1] types
    cdef bytes violators              # keeps t.rules.violator_bytes alive
    cdef bytes buildable              # SPM_FLAG_MERGEABLE of each piece, as bytes
    cdef bint tables_ready            # t's symbols and pairs are built (ready_tables)
    cdef WorkPool pool                # idle workspaces and the chunk cache (core/pool.pyx)
    cdef IdInts ints                  # each id's int (id_list)

    cdef int ready_tables(self) except -1
    cdef Workspace *acquire(self) except NULL
    cdef void release(self, Workspace *w)
    cdef list id_list(self, const int32_t *ids, size_t n)
    cdef list encode_text(self, str text, bint prefix, const AddedScan *screen, int mask)
    cdef list encode_long(self, str text, bint prefix)
