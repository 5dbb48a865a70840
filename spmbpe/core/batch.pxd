# BatchJob (core/batch.pyx).

# One encode_batch call shared by threads (SpmCore.encode_parts_batch's work,
# cut into units that the threads take in turn).
cdef class BatchJob:
    cdef SpmCore core
    cdef list batch                   # the texts: keeps the gathered UTF-8 alive
    cdef object seeds                 # keeps seed_ptr alive
    cdef const uint64_t *seed_ptr     # one generator seed per text (sampling), or NULL
    cdef double alpha
    cdef PlanPart *items
    cdef PyObject **strs              # or, when every text is a str, the texts themselves
                                      # (a reference each, given back as its unit is
                                      # collected: NULL then; ends holds their sizes until cut)
    cdef int prefix_rule              # their dummy prefix (PREFIX_*)
    cdef size_t str_ids_bound         # the most ids they can give
    cdef const unsigned char[::1] lines  # or (start_lines) the block whose lines are the texts
    cdef Py_ssize_t line_bytes        # ... its size
    cdef const char *line_data        # ... its bytes (NULL: not lines); unit_end then holds
                                      # byte offsets in it, and the texts are counted as
                                      # the units are collected
    cdef size_t **unit_line_ends      # each finished unit's line ends in its ids (owned)
    cdef Py_ssize_t *unit_lines       # ... and its number of lines
    cdef int32_t *counts              # parts of each text
    cdef Py_ssize_t *first_item       # text t's first part in items
    cdef Py_ssize_t *unit_end         # unit u holds texts [unit_end[u - 1], unit_end[u])
    cdef size_t *ends                 # end of text t's ids in its unit's ids
    cdef int32_t **unit_ids           # each finished unit's ids (owned)
    cdef uint32_t *unit_done          # atomic flags: unit_ids[u] is complete
    cdef uint8_t *unit_collected      # unit u's lists or ids are in the result (lead)
    cdef Py_ssize_t collected         # units 0 .. collected - 1 all are
    cdef object flat_ids              # the flat result's ids (bytearray of uint32), and
    cdef object flat_offsets          # ... each text's offset in it (bytearray of n_texts + 1 int64)
    cdef size_t flat_at               # ids in flat_ids so far
    cdef Py_ssize_t n_texts
    cdef Py_ssize_t n_units
    cdef uint32_t next_unit           # atomic: the next unit to take
    cdef uint32_t running             # atomic: workers merging
    cdef uint32_t failed              # atomic flag: a text failed (redone serially for its error)
    cdef uint32_t started             # atomic flag: start() has gathered the texts
    cdef uint32_t closed              # atomic flag: no worker may join any more
    cdef Workspace *workers[64]
    cdef int n_workers

    cdef int allocate(self, Py_ssize_t n_parts) except -1
    cdef bint take_strs(self, list batch, int prefix, Py_ssize_t *total, Py_ssize_t *longest) except -1
    cdef void drop_strs(self, Py_ssize_t n)
    cdef Py_ssize_t text_size(self, Py_ssize_t t) noexcept
    cdef int cut_units(self, Py_ssize_t units) except -1
    cdef int cut_lines(self, Py_ssize_t units) except -1
    cdef int unit_arrays(self) except -1
    cdef Workspace *join(self) except? NULL
    cdef bint run_unit(self, Workspace *w) noexcept nogil
    cdef int collect(self, list out, bint flat) except -1
    cdef int collect_lines(self, Py_ssize_t u) except -1
    cdef void unit_collected_free(self, Py_ssize_t u) noexcept
    cdef int flat_put_ids(self, Py_ssize_t u, size_t n) except -1
    cdef int flat_room(self, object buffer, size_t need) except -1
    cdef int flat_begin(self) except -1
    cdef void give_back(self)
