# BatchJob (core/batch.pyx) and the texts it takes (core/units.pyx).

# A batch's texts, cut into units (texts_*, core/units.pyx).
ctypedef struct BatchTexts:
    PlanPart *items               # the planned texts' parts
    PyObject **strs               # or, when every text is a str, the texts themselves
                                  # (a reference each, given back as its unit is
                                  # collected: NULL then; ends holds their sizes until cut)
    int prefix_rule               # their dummy prefix (PREFIX_*)
    size_t str_ids_bound          # the most ids they can give
    const char *line_data         # or (start_lines) the block whose lines are the texts
                                  # (NULL: not lines); unit_end then holds byte offsets
                                  # in it, and the texts are counted as the units are collected
    Py_ssize_t line_bytes         # ... its size
    int32_t *counts               # parts of each text
    Py_ssize_t *first_item        # text t's first part in items
    Py_ssize_t *unit_end          # unit u holds texts [unit_end[u - 1], unit_end[u])
    size_t *ends                  # end of text t's ids in its unit's ids
    Py_ssize_t n_texts
    Py_ssize_t n_units


# A flat result filled unit by unit (core/batch.pyx).
@cython.final
cdef class FlatIds:
    cdef object ids                   # bytearray of native uint32
    cdef object offsets               # bytearray of native int64: each text's start, from 0
    cdef size_t at                    # ids so far

    cdef int put_unit(self, const int32_t *ids, const size_t *ends, Py_ssize_t first,
                      Py_ssize_t count) except -1
    cdef tuple result(self, Py_ssize_t n_texts)


# One encode_batch call shared by threads (SpmCore.encode_parts_batch's work,
# cut into units that the threads take in turn).
cdef class BatchJob:
    cdef SpmCore core
    cdef list batch                   # the texts: keeps the gathered UTF-8 alive
    cdef object seeds                 # keeps seed_ptr alive
    cdef const uint64_t *seed_ptr     # one generator seed per text (sampling), or NULL
    cdef double alpha
    cdef BatchTexts texts
    cdef const unsigned char[::1] lines  # keeps texts.line_data alive
    cdef size_t **unit_line_ends      # each finished unit's line ends in its ids (owned)
    cdef Py_ssize_t *unit_lines       # ... and its number of lines
    cdef int32_t **unit_ids           # each finished unit's ids (owned)
    cdef uint32_t *unit_done          # atomic flags: unit_ids[u] is complete
    cdef uint8_t *unit_collected      # unit u's lists or ids are in the result (lead)
    cdef Py_ssize_t collected         # units 0 .. collected - 1 all are
    cdef FlatIds flat                 # the flat result (lead(True))
    cdef uint32_t next_unit           # atomic: the next unit to take
    cdef uint32_t running             # atomic: workers merging
    cdef uint32_t failed              # atomic flag: a text failed (redone serially for its error)
    cdef uint32_t started             # atomic flag: start() has gathered the texts
    cdef uint32_t closed              # atomic flag: no worker may join any more
    cdef Workspace *workers[64]
    cdef int n_workers

    cdef bint unit_arrays(self) except -1
    cdef Workspace *join(self) except? NULL
    cdef bint run_unit(self, Workspace *w) noexcept nogil
    cdef int collect(self, list out, bint flat) except -1
    cdef void unit_collected_free(self, Py_ssize_t u) noexcept
    cdef void give_back(self)
