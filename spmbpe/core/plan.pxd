# The typed plan (core/plan.pyx): what a planner fills and the kernels read.

# What a part is.
cdef enum:
    PART_TOKEN = 0        # a token id, emitted as is
    PART_TEXT = 1         # a segment to escape and merge

# Parts a Plan holds in itself before it allocates (most plans are one text,
# or a few tokens and texts).
cdef enum:
    PLAN_INLINE = 4

# One part of a plan, checked when it was added: the kernels read these
# without the GIL.  A batch's parts are copied into one array of them.
ctypedef struct PlanPart:
    const char *src       # a text's UTF-8, kept alive by its str; NULL for a token
    Py_ssize_t n          # its bytes
    Py_ssize_t start      # a token's span in the original text
    Py_ssize_t end
    Py_ssize_t origin     # a text's first original character after `lead`
    Py_ssize_t lead       # synthetic characters it starts with (zero-width)
    PyObject *text        # a text's str, or NULL; a reference the Plan owns
    PyObject *align       # a text's alignment (a list of len(text) + 1 ints), or
                          # NULL; a reference the Plan owns
    int32_t token_id      # a token's id, or -1 for a text
    int32_t skip          # a text's leading ids to leave out
    uint8_t kind          # PART_TOKEN or PART_TEXT
    bint prefix           # a text gets the dummy prefix

# (The Plan holds its strs and alignments as references in the parts, not
# in Python lists: it then has no Python attribute, so it is not tracked by
# the cyclic GC, and a plan of a few parts allocates nothing besides itself;
# a plan is made for every planned encode call.)
@cython.final
cdef class Plan:
    cdef PlanPart *items              # n parts of cap: `first_parts` or allocated (owned)
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef Py_ssize_t n_texts           # text parts
    cdef int64_t max_token            # the largest token id added, or -1
    cdef Py_ssize_t n_bytes           # UTF-8 bytes of every text
    cdef Py_ssize_t n_chars           # characters of every text
    cdef int readers                  # core calls reading items without the GIL:
                                      # while > 0, no part may be added or changed
    cdef PlanPart first_parts[PLAN_INLINE]  # items until it needs more

    cdef int reserve(self, Py_ssize_t need) except -1
    cdef PlanPart *push(self) except NULL
    cdef int push_text(self, object text, bint prefix, Py_ssize_t skip, Py_ssize_t origin, Py_ssize_t lead,
                       object alignment) except -1
    cdef str text_of(self, Py_ssize_t index)

cdef int check_rc(int rc, const CoreTables *t, Workspace *w, str text) except -1


# How a text that is one segment gets the dummy prefix (planners.Direct): a
# batch's str items follow it (gather).  0 and 1 are False and True.
cdef enum:
    PREFIX_NEVER = 0
    PREFIX_ALWAYS = 1
    PREFIX_UNLESS_SPACE = 2       # Metaspace: not when it starts with " " or "▁"
