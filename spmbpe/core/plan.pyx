# The typed plan (Plan, declared in core/plan.pxd) and the kernels that read
# it: planners fill a Plan through its typed methods, which check each part
# once; the core reads the C array of parts, without the GIL, as is
# (encode_plan, encode_plan_offsets), or copied into one array for a batch
# (gather, encode_items).

@cython.auto_pickle(False)
@cython.freelist(16)
cdef class Plan:
    """A planned text: the parts the core encodes, in order.

    A planner fills it; SpmCore.encode_parts, encode_parts_offsets and
    encode_parts_batch read it.  Two kinds of part: a token (add_token),
    emitted as is, and a text, ``add_text(text, prefix, skip=0, origin=0,
    lead=0, alignment=None)``: a segment to escape (spaces as "▁", the dummy
    prefix when `prefix`) and merge, leaving out its first `skip` ids;
    ``text[lead:]`` is the original text from character `origin` on (its
    first `lead` characters are synthetic: a prefix or HF's unk token put
    in front, zero-width for offsets).  For normalized text,
    ``alignment[k]`` is the original offset of character k (and
    ``alignment[len(text)]`` of the end), replacing origin and lead.

    Each part is checked when added (TypeError or ValueError naming what is
    wrong), so the core reads the parts unchecked; only a token id's range,
    which depends on the vocabulary, is checked by the core (once per plan,
    by the largest id).
    """

    def __cinit__(self):
        self.items = self.first_parts
        self.n = 0
        self.cap = PLAN_INLINE
        self.n_texts = 0
        self.max_token = -1
        self.n_bytes = 0
        self.n_chars = 0
        self.readers = 0

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.n):
            Py_XDECREF(self.items[i].text)
            Py_XDECREF(self.items[i].align)
        if self.items != self.first_parts:
            free(self.items)
        self.items = NULL
        self.n = 0

    cdef int reserve(self, Py_ssize_t need) except -1:
        """Room for `need` parts, grown geometrically (a plan is filled one
        part at a time)."""
        cdef Py_ssize_t cap = self.cap
        cdef PlanPart *grown
        if need <= self.cap:
            return 0
        if need > INT32_MAX:
            # (gather counts a text's parts in an int32.)
            raise ValueError(f"a plan of more than {INT32_MAX} parts")
        while cap < need:
            cap *= 2
        if self.items == self.first_parts:
            grown = <PlanPart *>malloc(cap * sizeof(PlanPart))
            if grown != NULL:
                memcpy(grown, self.first_parts, self.n * sizeof(PlanPart))
        else:
            grown = <PlanPart *>realloc(self.items, cap * sizeof(PlanPart))
        if grown == NULL:
            raise MemoryError()
        self.items = grown
        self.cap = cap
        return 0

    cdef PlanPart *push(self) except NULL:
        """A new last part, to fill (after every check: a part is never left
        half filled)."""
        if self.readers:
            # (The core reads the parts without the GIL: none may change.)
            raise RuntimeError("a Plan cannot change while the core reads it")
        self.reserve(self.n + 1)
        self.n += 1
        return &self.items[self.n - 1]

    cdef str text_of(self, Py_ssize_t index):
        """The text of part `index`, or "" for a token (for an error
        message)."""
        if 0 <= index < self.n and self.items[index].text != NULL:
            return <str>self.items[index].text
        return ""

    @cython.binding(False)
    def add_token(self, token_id, Py_ssize_t start=0, Py_ssize_t end=0):
        """Appends a token: `token_id` emitted as is, spanning characters
        start to end of the original text."""
        cdef PlanPart *part
        cdef int overflow = 0
        cdef long long value
        if not isinstance(token_id, int):
            raise TypeError(f"a token id must be an int, not {type(token_id).__name__}")
        # (A C compare, not Python's; an id beyond a long long is refused too.)
        value = PyLong_AsLongLongAndOverflow(token_id, &overflow)
        if overflow or not 0 <= value <= INT32_MAX:
            raise ValueError(f"token id {token_id} is not a piece id")
        if start < 0 or end < 0:
            raise ValueError(f"a token's span must not be negative, not ({start}, {end})")
        part = self.push()
        part.kind = PART_TOKEN
        part.token_id = <int32_t>value
        part.start = start
        part.end = end
        part.src = NULL
        part.n = 0
        part.origin = part.lead = 0
        part.text = part.align = NULL
        part.skip = 0
        part.prefix = False
        if part.token_id > self.max_token:
            self.max_token = part.token_id

    @cython.binding(False)
    def add_text(self, text, bint prefix, Py_ssize_t skip=0, Py_ssize_t origin=0, Py_ssize_t lead=0,
                 alignment=None):
        """Appends a text segment (see the class's docstring).  Its UTF-8 is
        taken now (a lone surrogate raises UnicodeEncodeError here), and
        kept alive by the plan."""
        self.push_text(text, prefix, skip, origin, lead, alignment)

    cdef int push_text(self, object text, bint prefix, Py_ssize_t skip, Py_ssize_t origin, Py_ssize_t lead,
                       object alignment) except -1:
        """add_text (and of_text), without a Python call."""
        cdef PlanPart *part
        cdef Py_ssize_t n, chars
        cdef const char *src
        cdef object item
        cdef list copied = None
        if not isinstance(text, str):
            raise TypeError(f"a plan's text must be str, not {type(text).__name__}")
        if not 0 <= skip <= INT32_MAX:
            raise ValueError(f"skip must be from 0 to {INT32_MAX}, not {skip}")
        if origin < 0 or lead < 0:
            raise ValueError(f"origin and lead must not be negative, not {origin} and {lead}")
        chars = PyUnicode_GET_LENGTH(text)
        if alignment is not None:
            # encode_plan_offsets indexes it by character, unchecked: a
            # copy is checked (the caller's list may change later).
            if type(alignment) is not list:
                raise TypeError(f"an alignment must be a list, not {type(alignment).__name__}")
            copied = list(alignment)
            if len(copied) != chars + 1:
                raise ValueError(f"an alignment must have len(text) + 1 = {chars + 1} offsets, "
                                 f"not {len(copied)}")
            for item in copied:
                if not isinstance(item, int):
                    raise TypeError(f"an alignment must hold ints, not {type(item).__name__}")
        src = PyUnicode_AsUTF8AndSize(text, &n)
        part = self.push()
        part.kind = PART_TEXT
        part.token_id = -1
        part.src = src
        part.n = n
        part.prefix = prefix
        part.skip = <int32_t>skip
        part.origin = origin
        part.lead = lead
        part.start = part.end = 0
        Py_INCREF(text)
        part.text = <PyObject *>text
        if copied is not None:
            Py_INCREF(copied)
            part.align = <PyObject *>copied
        else:
            part.align = NULL
        self.n_texts += 1
        self.n_bytes += n
        self.n_chars += chars
        return 0

    @staticmethod
    @cython.binding(False)
    def of_text(text, bint prefix, Py_ssize_t skip=0, Py_ssize_t origin=0, Py_ssize_t lead=0):
        """A plan of one text part: ``Plan()`` then ``add_text(text, prefix,
        skip, origin, lead)`` in one call (the plan of most texts, made on
        every planned encode call)."""
        cdef Plan plan = Plan.__new__(Plan)
        plan.push_text(text, prefix, skip, origin, lead, None)
        return plan

    def extend(self, Plan other not None):
        """Appends the parts of `other`."""
        cdef Py_ssize_t i, k = other.n, base = self.n
        if self.readers:
            raise RuntimeError("a Plan cannot change while the core reads it")
        self.reserve(base + k)
        # (other may be self: reserve has moved both; the copy does not
        # overlap its source.)
        memcpy(self.items + base, other.items, k * sizeof(PlanPart))
        for i in range(base, base + k):
            # The copies' references are this plan's own.
            Py_XINCREF(self.items[i].text)
            Py_XINCREF(self.items[i].align)
        self.n = base + k
        self.n_texts += other.n_texts
        if other.max_token > self.max_token:
            self.max_token = other.max_token
        self.n_bytes += other.n_bytes
        self.n_chars += other.n_chars

    def set_skip(self, Py_ssize_t index, Py_ssize_t skip):
        """Leaves out the first `skip` ids of text part `index` (its own
        skip replaced)."""
        if not 0 <= index < self.n:
            raise IndexError(f"part index {index} out of range for a plan of {self.n} parts")
        if self.items[index].kind != PART_TEXT:
            raise ValueError(f"part {index} is a token, not a text")
        if not 0 <= skip <= INT32_MAX:
            raise ValueError(f"skip must be from 0 to {INT32_MAX}, not {skip}")
        if self.readers:
            raise RuntimeError("a Plan cannot change while the core reads it")
        self.items[index].skip = <int32_t>skip

    def is_text(self, Py_ssize_t index):
        """Whether part `index` is a text (else a token)."""
        if not 0 <= index < self.n:
            raise IndexError(f"part index {index} out of range for a plan of {self.n} parts")
        return self.items[index].kind == PART_TEXT

    @property
    def size(self):
        """Its share of a batch's work: the characters of its texts, plus
        one for each token."""
        return self.n_chars + self.n - self.n_texts

    def __len__(self):
        return self.n

    def parts(self):
        """The parts as tuples: (token_id, start, end) for a token, (text,
        prefix, skip, origin, lead[, alignment]) for a text."""
        cdef list out = []
        cdef Py_ssize_t i
        cdef const PlanPart *part
        for i in range(self.n):
            part = &self.items[i]
            if part.kind == PART_TOKEN:
                out.append((part.token_id, part.start, part.end))
            elif part.align != NULL:
                # (A copy: the plan's own alignment must not change.)
                out.append((<str>part.text, bool(part.prefix), part.skip, part.origin, part.lead,
                            list(<list>part.align)))
            else:
                out.append((<str>part.text, bool(part.prefix), part.skip, part.origin, part.lead))
        return out

    def __repr__(self):
        return f"Plan({self.parts()!r})"


cdef Py_ssize_t _count_parts(list batch) except -1:
    """How many parts the texts of an encode_parts_batch batch have."""
    cdef Py_ssize_t n_parts = 0
    cdef object entry
    for entry in batch:
        if type(entry) is Plan:
            n_parts += (<Plan>entry).n
        elif isinstance(entry, str):
            n_parts += 1
        else:
            raise TypeError(f"a batch text must be str or a Plan, not {type(entry).__name__}")
    return n_parts


cdef str _part_text(list batch, Py_ssize_t index):
    """The text of the index-th part of a batch (for an error message)."""
    for entry in batch:
        if type(entry) is Plan:
            if index < (<Plan>entry).n:
                return (<Plan>entry).text_of(index)
            index -= (<Plan>entry).n
            continue
        if not entry:
            continue  # (an empty str has no part)
        if index == 0:
            return entry
        index -= 1
    return ""


cdef inline Py_ssize_t _part_size(const PlanPart *part) noexcept nogil:
    """A part's share of the work: its UTF-8 bytes, or 1 for a token."""
    return part.n if part.kind == PART_TEXT else 1


cdef int check_tokens(const CoreTables *t, Plan plan) except -1:
    """A ValueError naming the first token id of `plan` that is not a piece
    of the core: the kernels emit the ids unchecked.  (The largest id
    answers for all of them.)"""
    cdef Py_ssize_t i
    if plan.max_token < t.n_pieces:
        return 0
    for i in range(plan.n):
        if plan.items[i].kind == PART_TOKEN and plan.items[i].token_id >= t.n_pieces:
            raise ValueError(f"token id {plan.items[i].token_id} is not a piece id")
    return 0


cdef inline bint takes_prefix(int rule, const char *s, Py_ssize_t n) noexcept nogil:
    """Whether a one-segment text s[:n] gets the dummy prefix under a
    PREFIX_* rule (Metaspace adds none before " " or "▁")."""
    if rule == PREFIX_UNLESS_SPACE:
        return not ((n >= 1 and s[0] == b" ") or (n >= 3 and memcmp(s, MARKER, 3) == 0))
    return rule == PREFIX_ALWAYS


cdef inline bint takes_prefix_char(int rule, Py_UCS4 first) noexcept nogil:
    """takes_prefix of a non-empty text by its first character."""
    if rule == PREFIX_UNLESS_SPACE:
        return first != 0x20 and first != 0x2581
    return rule == PREFIX_ALWAYS


cdef inline void text_part(PlanPart *part, const char *src, Py_ssize_t n, bint prefix,
                           PyObject *text) noexcept nogil:
    """A batch's text part: src[0:n], whole, with or without the dummy
    prefix (`text`: its str, borrowed, or NULL)."""
    part.kind = PART_TEXT
    part.src = src
    part.n = n
    part.prefix = prefix
    part.skip = 0
    part.token_id = -1
    part.start = part.end = part.origin = part.lead = 0
    part.text = text
    part.align = NULL


cdef int gather(const CoreTables *t, list batch, PlanPart *items, Py_ssize_t n_items,
                int32_t *counts, int prefix) except -1:
    """The parts of every text of `batch` (see encode_parts_batch) into
    items (n_items = _count_parts(batch) of them) and how many each text
    has into counts: a Plan's parts are copied, a str is one text part
    with the dummy prefix as the PREFIX_* rule `prefix` says.
    The UTF-8 they point to belongs to the strs `batch` holds (a Plan's own
    or the batch's), which `batch` keeps alive."""
    cdef Py_ssize_t i = 0, j, n
    cdef const char *src
    cdef Plan plan
    cdef object entry
    for j in range(len(batch)):
        entry = batch[j]
        if type(entry) is Plan:
            plan = <Plan>entry
            check_tokens(t, plan)
            if plan.n > INT32_MAX:
                raise ValueError(f"a text of {plan.n} parts; at most {INT32_MAX}")
            if i + plan.n > n_items:
                raise RuntimeError("the batch changed while it was gathered")
            memcpy(items + i, plan.items, plan.n * sizeof(PlanPart))
            counts[j] = <int32_t>plan.n
            i += plan.n
            continue
        src = PyUnicode_AsUTF8AndSize(entry, &n)
        counts[j] = 1 if n else 0
        if n:
            if i >= n_items:
                raise RuntimeError("the batch changed while it was gathered")
            # (The str borrowed, as are the copied parts' references: the
            # batch keeps them alive, and nothing releases them.)
            text_part(&items[i], src, n, takes_prefix(prefix, src, n), <PyObject *>entry)
            i += 1
    return 0


cdef int encode_str(const CoreTables *t, Workspace *w, PyObject *text, int prefix) noexcept nogil:
    """Appends the ids of a str that is one segment, read as CPython stores
    it (the GIL is not needed: the caller holds a reference to it, and a
    str does not change), with the dummy prefix by the PREFIX_* rule
    `prefix`.  An ASCII str is its own UTF-8; any other is converted into
    the workspace, not asked for the UTF-8 copy CPython would keep on it.
    ERR_SURROGATE when it holds one."""
    cdef Py_ssize_t n = str_length(text), m
    cdef int kind
    cdef const void *data
    cdef const char *src
    cdef bint with_prefix
    if n == 0:
        return OK
    kind = str_kind(text)
    data = str_data(text)
    with_prefix = takes_prefix_char(prefix, str_read(kind, data, 0))
    m = ws_utf8_of(w, kind, str_is_ascii(text), data, 0, <size_t>n, &src)
    if m < 0:
        return <int>m
    return encode_span(t, w, src, m, with_prefix)


cdef int encode_strs(const CoreTables *t, Workspace *w, PyObject **texts, Py_ssize_t n_texts,
                     size_t *ends, Py_ssize_t *failed, int prefix) noexcept nogil:
    """encode_items for n_texts strs, each one segment (encode_str): text
    j's ids end at ends[j]; on an error, the index of the text in
    failed[0]."""
    cdef Py_ssize_t j
    cdef int rc
    for j in range(n_texts):
        rc = encode_str(t, w, texts[j], prefix)
        if rc != OK:
            failed[0] = j
            return rc
        ends[j] = w.ids_len
    return OK


cdef int encode_lines(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t n, int prefix,
                      size_t **line_ends, Py_ssize_t *n_lines) noexcept nogil:
    """Merges each line of s[0:n] (UTF-8 bytes; BatchJob.start_lines) as
    one segment with the dummy prefix by the PREFIX_* rule `prefix`, into
    w.ids: a line ends at a "\\n" (a "\\r" before it left out) or at n; an
    empty line gives no ids.  Line j's ids end at (*line_ends)[j] (a buffer
    this allocates, the caller frees), *n_lines of them.  The bytes are
    checked to be UTF-8 first (ERR_NOT_UTF8): the merge reads a character's
    continuation bytes by its lead byte."""
    cdef Py_ssize_t begin = 0, end, after, k = 0, cap
    cdef const char *at
    cdef size_t *ends
    cdef size_t *grown
    cdef int rc
    line_ends[0] = NULL
    n_lines[0] = 0
    if <Py_ssize_t>spm_utf8_valid_prefix(s, <size_t>n) < n:
        return ERR_NOT_UTF8
    # (About one line per 32 bytes of text; grown when there are more.)
    cap = n // 32 + 8
    ends = <size_t *>malloc(<size_t>cap * sizeof(size_t))
    if ends == NULL:
        return ERR_NOMEM
    while begin < n:
        at = <const char *>memchr(s + begin, b"\n", <size_t>(n - begin))
        end = n if at == NULL else at - s
        after = n if at == NULL else end + 1
        if at != NULL and end > begin and s[end - 1] == b"\r":
            end -= 1
        if end > begin:
            rc = encode_span(t, w, s + begin, end - begin, takes_prefix(prefix, s + begin, end - begin))
            if rc != OK:
                free(ends)
                return rc
        if k == cap:
            cap *= 2
            grown = <size_t *>realloc(ends, <size_t>cap * sizeof(size_t))
            if grown == NULL:
                free(ends)
                return ERR_NOMEM
            ends = grown
        ends[k] = w.ids_len
        k += 1
        begin = after
    line_ends[0] = ends
    n_lines[0] = k
    return OK


cdef int encode_run(const CoreTables *t, Workspace *w, const PlanPart *items, Py_ssize_t n_items,
                    Py_ssize_t *failed) noexcept nogil:
    """Appends the ids of n_items parts to w.ids: a token's id as is, a
    text merged without its first `skip` ids (when it gave that many:
    HF's "<unk>" trick).  On an error, the index of the part that failed in
    failed[0]."""
    cdef Py_ssize_t k
    cdef size_t mark, produced, skip
    cdef int rc
    for k in range(n_items):
        if items[k].kind == PART_TOKEN:
            if ws_ids_room(w, 1) != OK:
                failed[0] = k
                return ERR_NOMEM
            put_id(w, items[k].token_id, 0, 0)
            continue
        mark = w.ids_len
        rc = encode_span(t, w, items[k].src, items[k].n, items[k].prefix)
        if rc != OK:
            failed[0] = k
            return rc
        skip = <size_t>items[k].skip
        produced = w.ids_len - mark
        if skip and produced >= skip:
            memmove(w.ids + mark, w.ids + mark + skip, (produced - skip) * sizeof(int32_t))
            w.ids_len -= skip
    return OK


cdef int encode_items(const CoreTables *t, Workspace *w, const PlanPart *items,
                      const int32_t *counts, Py_ssize_t n_texts, size_t *ends, Py_ssize_t *failed,
                      const uint64_t *seeds) noexcept nogil:
    """Merges n_texts gathered texts (counts[j] parts each) into w.ids,
    text j's ids ending at ends[j]; on an error, the index of the part that
    failed in failed[0].  seeds: text j's BPE-dropout seed, or NULL."""
    cdef Py_ssize_t j, i = 0
    cdef int rc
    for j in range(n_texts):
        if seeds != NULL:
            w.rng = seeds[j]
        rc = encode_run(t, w, items + i, counts[j], failed)
        if rc != OK:
            failed[0] += i
            return rc
        i += counts[j]
        ends[j] = w.ids_len
    return OK


cdef int encode_plan(const CoreTables *t, Workspace *w, Plan plan) except -1:
    """Appends the ids of a plan (see SpmCore.encode_parts) to w.ids,
    releasing the GIL once for the whole plan when it is long (the release
    and re-acquisition cost more than merging a short text)."""
    cdef Py_ssize_t failed = -1
    cdef int rc
    check_tokens(t, plan)
    if plan.n_bytes > _NOGIL_BYTES:
        # (The array must not move meanwhile: Plan's methods refuse to
        # change it while readers is set.)
        plan.readers += 1
        try:
            with nogil:
                rc = encode_run(t, w, plan.items, plan.n, &failed)
        finally:
            plan.readers -= 1
    else:
        rc = encode_run(t, w, plan.items, plan.n, &failed)
    if rc != OK:
        check_rc(rc, t, w, plan.text_of(failed))
    return 0


cdef int check_rc(int rc, const CoreTables *t, Workspace *w, str text) except -1:
    """Raises the error a kernel's result code `rc` stands for (`text`: the
    segment it was merging), or returns 0 for OK."""
    cdef bytes bad
    if rc == OK:
        return 0
    if rc == ERR_NOMEM:
        raise MemoryError("out of memory while merging")
    if rc == ERR_TOO_LONG:
        raise ValueError(
            f"a text segment of {len(text.encode('utf-8', 'surrogatepass'))} UTF-8 bytes "
            f"is longer than the {t.max_segment} bytes one merge can take"
        )
    bad = PyBytes_FromStringAndSize(w.bad, w.bad_len)
    shown = bad.decode("utf-8", "replace").replace("\u2581", " ")
    raise ValueError(
        f"cannot encode the character {shown!r}: it is not in the vocabulary, "
        f"and the vocabulary has neither the 256 <0xNN> byte pieces nor an unknown piece"
    )

cdef tuple encode_plan_offsets(const CoreTables *t, Workspace *wp, Plan plan):
    """SpmCore.encode_parts_offsets with the workspace wp: (ids, starts,
    ends).  (The workspace is copied to a local and back: the loop below
    reads its fields often.)"""
    cdef Workspace w = wp[0]
    cdef list ids = [], starts = [], ends = []
    cdef list align
    cdef const PlanPart *part
    cdef Py_ssize_t n, i, j, k, origin, lead, skip, produced
    cdef const char *src
    cdef int rc
    cdef bint prefix
    cdef size_t mark
    cdef int32_t *char_of = NULL
    cdef int32_t s0, e0, c0, c1
    check_tokens(t, plan)
    w.want_spans = True
    # (The parts are read with the GIL released: the array must not move.)
    plan.readers += 1
    try:
        for j in range(plan.n):
            part = &plan.items[j]
            if part.kind == PART_TOKEN:
                ids.append(part.token_id)
                starts.append(part.start)
                ends.append(part.end)
                continue
            src = part.src
            n = part.n
            prefix = part.prefix
            skip = part.skip
            origin = part.origin
            lead = part.lead
            align = <list>part.align if part.align != NULL else None
            mark = w.ids_len
            with nogil:
                rc = encode_span(t, &w, src, n, prefix)
            check_rc(rc, t, &w, <str>part.text)
            produced = w.ids_len - mark
            if produced == 0:
                continue
            # The character each byte of the span belongs to (a span ends
            # where the text does: the index past its last character).
            free(char_of)
            char_of = <int32_t *>malloc((n + 1) * sizeof(int32_t))
            if char_of == NULL:
                raise MemoryError()
            k = -1
            for i in range(n):
                if (<uint8_t>src[i] & 0xC0) != 0x80:
                    k += 1
                char_of[i] = <int32_t>k
            char_of[n] = <int32_t>(k + 1)
            first = mark + (skip if produced >= skip else 0)
            for i in range(first, w.ids_len):
                s0 = w.spans[2 * i]
                e0 = w.spans[2 * i + 1]
                # (The dummy prefix's "▁" alone spans nothing.)
                c0 = char_of[s0]
                c1 = char_of[e0 - 1] + 1 if e0 > s0 else c0
                ids.append(w.ids[i])
                if align is not None:
                    # (Its length, len(text) + 1, was checked by add_text.)
                    starts.append(align[c0])
                    ends.append(align[c1])
                else:
                    starts.append(origin + max(0, c0 - lead))
                    ends.append(origin + max(0, c1 - lead))
        return ids, starts, ends
    finally:
        plan.readers -= 1
        free(char_of)
        w.want_spans = False
        wp[0] = w



# encode_parts_batch's seeds when there are none.
_NO_SEEDS = array("Q")
