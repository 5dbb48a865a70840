# The batch scheduler: BatchJob (declared in core/batch.pxd) and the split
# of a batch into groups (batch_slices).

cdef inline Py_ssize_t share_of(Py_ssize_t total, Py_ssize_t parts, Py_ssize_t min_share) noexcept:
    """A batch_slices group's share of `total` characters: total / parts
    rounded up, at least min_share."""
    return max(min_share, -(-total // max(parts, 1)))


cdef Py_ssize_t batch_share(list texts, Py_ssize_t parts, Py_ssize_t min_share, Py_ssize_t *longest,
                            Py_ssize_t *total, Py_ssize_t *last) except -1:
    """The share of a batch_slices group: total / parts characters, at least
    min_share; the longest text, the total and the last text's length on
    the way (one pass)."""
    cdef Py_ssize_t i, length = 0
    longest[0] = total[0] = 0
    for i in range(len(texts)):
        length = len(<object>texts[i])
        total[0] += length
        if length > longest[0]:
            longest[0] = length
    last[0] = length
    return share_of(total[0], parts, min_share)


def batch_slices(list texts, Py_ssize_t parts, Py_ssize_t min_share, Py_ssize_t max_items):
    """encode_batch's split of `texts` into consecutive groups of about
    total / parts characters each (at least min_share, at most max_items
    texts): (share, longest, stops), stops[k] being where group k ends and
    longest the length of the longest text.  A C loop: the Python one took
    a millisecond per 10,000 texts while the threads waited."""
    cdef Py_ssize_t n = len(texts), i, total, longest, last, share, filled = 0, start = 0
    cdef list stops = []
    share = batch_share(texts, parts, min_share, &longest, &total, &last)
    for i in range(n):
        filled += len(<object>texts[i])
        if filled >= share or i + 1 - start >= max_items:
            stops.append(i + 1)
            start = i + 1
            filled = 0
    if start < n:
        stops.append(n)
    return share, longest, stops


def batch_shape(list texts, Py_ssize_t parts, Py_ssize_t min_share, Py_ssize_t max_items):
    """(share, longest, several) of batch_slices(texts, parts,
    min_share, max_items) in one pass, without the stops: `several` says
    whether its split has two groups or more (a batch that needs no
    planning is one job whatever its groups: reading every text's length
    twice took a tenth of a two-thread batch of short lines)."""
    cdef Py_ssize_t n = len(texts), total, longest, last, share
    share = batch_share(texts, parts, min_share, &longest, &total, &last)
    # (The split closes a group before the last text exactly when the texts
    # before it fill a share, or hold max_items.)
    return share, longest, n > max_items or (n > 1 and total - last >= share)


def read_buffer(Py_ssize_t n):
    """A bytearray of n bytes to read into, not zeroed first (bytearray(n)
    writes every page before the read does: a page fault per 4 KiB even
    where the read ends early).  Its caller cuts it to what was read."""
    if n < 0:
        raise ValueError("a negative size")
    return PyByteArray_FromStringAndSize(NULL, n)


def count_newlines(const unsigned char[::1] data):
    """How many "\\n" bytes `data` holds: what bytes.count(b"\\n") says
    (CPython 3.11's count reads a byte at a time, and the command line's
    reader counted every block twice), eight bytes a step."""
    cdef Py_ssize_t n = data.shape[0]
    cdef size_t count
    if n == 0:
        return 0
    with nogil:
        count = spm_count_byte(<const char *>&data[0], <size_t>n, b"\n")
    return count


def utf8_valid_prefix(const unsigned char[::1] data):
    """How many bytes of `data` are valid UTF-8 from the start (len(data)
    when all are, else where bytes.decode("utf-8") reports its error)."""
    if data.shape[0] == 0:
        return 0
    return spm_utf8_valid_prefix(<const char *>&data[0], <size_t>data.shape[0])


cdef class BatchJob:
    """One encode_batch call shared by threads.

    The texts are gathered once and cut into units of about equal UTF-8
    size.  The calling thread runs `lead`; helper threads run `work`.  Each
    takes a workspace and then the next unit not yet taken until none is
    left, merging without the GIL: a thread that starts late or meets slower
    text takes fewer units, and none waits for the GIL between units.  A
    finished unit's ids are copied out of the workspace, so that `lead`
    builds its Python lists (which needs the GIL, and is the one part no
    other thread can do) between its own units and while it waits, instead
    of after everything.  `close` gives the workspaces back.  (Groups run
    as separate calls each woke a thread and took the GIL twice, and the
    lists were built while the other threads had nothing left to merge.)
    """

    def __cinit__(self):
        self.items = NULL
        self.line_data = NULL
        self.unit_line_ends = NULL
        self.unit_lines = NULL
        self.strs = NULL
        self.str_ids_bound = 0
        self.counts = NULL
        self.first_item = NULL
        self.unit_end = NULL
        self.ends = NULL
        self.unit_ids = NULL
        self.unit_done = NULL
        self.unit_collected = NULL
        self.collected = 0
        self.flat_at = 0
        self.seed_ptr = NULL
        self.n_workers = 0
        self.n_units = 0
        self.next_unit = 0
        self.running = 0
        self.failed = 0
        self.closed = 0
        self.started = 0

    def __init__(self, SpmCore core not None):
        """An empty job: helpers may be started on it (they wait for
        `start`), so that waking them overlaps gathering the texts."""
        self.core = core

    def start(self, list batch, Py_ssize_t units, double alpha=0.0, seeds=None, int prefix=PREFIX_ALWAYS,
              Py_ssize_t cut_parts=0, Py_ssize_t min_share=0):
        """Gives the job its texts: `batch` as for encode_parts_batch, cut
        into about `units` units; with `alpha` > 0, BPE-dropout with text
        t's generator seeded by seeds[t] (array('Q')).  True once started.

        With `cut_parts`, the job refuses the batch (False, holding nothing)
        when a text is not a str or is longer than two shares of the batch
        (batch_slices' share: its characters / cut_parts, at least
        min_share), which the caller then cuts for the threads
        (_batch_groups): the texts' lengths are read as they are taken, in
        the one pass over the batch that the job needs anyway, not in a pass
        of their own before it (each pass over a large batch reads every
        str's header from memory, serially, while the helpers wait)."""
        cdef const uint64_t[::1] seed_view = seeds if seeds is not None else _NO_SEEDS
        cdef Py_ssize_t n_parts, total = 0, longest = 0
        if self.batch is not None or self.closed:
            raise RuntimeError("a BatchJob takes one batch")
        self.batch = batch
        self.n_texts = len(batch)
        self.alpha = alpha
        if alpha > 0.0:
            if seed_view.shape[0] < self.n_texts:
                raise ValueError("sampling needs one seed per text")
            self.seeds = seeds
            self.seed_ptr = &seed_view[0] if seed_view.shape[0] else NULL
        if alpha == 0.0 and self.take_strs(batch, prefix, &total, &longest):
            # (_batch._cuts_long_texts' rule, on the share batch_slices gives.)
            if cut_parts > 0 and longest > 2 * share_of(total, cut_parts, min_share):
                self.drop_strs(self.n_texts)
                self.batch = None
                return False
            self.cut_units(units)
            return True
        if cut_parts > 0:
            self.batch = None
            return False
        n_parts = _count_parts(batch)
        self.allocate(n_parts)
        gather(&self.core.t, batch, self.items, n_parts, self.counts, prefix)
        self.cut_units(units)
        return True

    def start_lines(self, block, Py_ssize_t units, int prefix=PREFIX_ALWAYS):
        """Gives the job its texts as the lines of `block`, UTF-8 bytes (or a
        bytearray, held unresizable while the job lasts): each
        line ends with "\\n" (the last may lack it), a "\\r" before the "\\n"
        is left out (as the command line reads text files), and each line is
        one text part with the dummy prefix by the PREFIX_* rule `prefix`.
        No str is made for a line (the command line's input is read as
        bytes: a str per line cost more than merging a short one), nor any
        record per line: the block is cut into about `units` units of whole
        lines, and each worker finds the lines of its units, checks their
        bytes to be UTF-8 and merges them (encode_lines).  (Lines found,
        checked and recorded here, 80 bytes each, took the leader an eighth
        of a two-thread block while the helpers waited.)  Only a flat result
        (lead(True)); a block that is not UTF-8 makes lead raise ValueError
        naming the byte."""
        if self.batch is not None or self.closed:
            raise RuntimeError("a BatchJob takes one batch")
        self.batch = []
        self.lines = block  # (keeps the lines' bytes alive, and their place)
        self.line_bytes = self.lines.shape[0]
        # (Any non-NULL pointer marks the lines mode, an empty block's too.)
        self.line_data = <const char *>&self.lines[0] if self.line_bytes else MARKER
        self.alpha = 0.0
        self.prefix_rule = prefix
        self.cut_lines(units)

    cdef int cut_lines(self, Py_ssize_t units) except -1:
        """start_lines' units: about len(block) / units bytes each, every
        one but the last ending just after a "\\n"."""
        cdef const char *s = self.line_data
        cdef Py_ssize_t n = self.line_bytes, u, target, cut = 0
        cdef const char *at
        units = max(1, min(units, n // 4096 + 1))
        self.unit_end = <Py_ssize_t *>malloc((units + 1) * sizeof(Py_ssize_t))
        if self.unit_end == NULL:
            raise MemoryError()
        for u in range(1, units):
            target = n * u // units
            if target < cut:
                continue
            at = <const char *>memchr(s + target, b"\n", <size_t>(n - target))
            if at == NULL or at - s + 1 >= n:
                break
            cut = at - s + 1
            self.unit_end[self.n_units] = cut
            self.n_units += 1
        if n:
            self.unit_end[self.n_units] = n
            self.n_units += 1
        self.unit_line_ends = <size_t **>calloc(self.n_units + 1, sizeof(size_t *))
        self.unit_lines = <Py_ssize_t *>calloc(self.n_units + 1, sizeof(Py_ssize_t))
        if self.unit_line_ends == NULL or self.unit_lines == NULL:
            raise MemoryError()
        return self.unit_arrays()

    cdef int allocate(self, Py_ssize_t n_parts) except -1:
        """The arrays for n_texts texts of n_parts parts in all."""
        cdef Py_ssize_t n = self.n_texts
        self.items = <PlanPart *>malloc((n_parts + 1) * sizeof(PlanPart))
        self.counts = <int32_t *>malloc((n + 1) * sizeof(int32_t))
        self.first_item = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        self.ends = <size_t *>malloc((n + 1) * sizeof(size_t))
        self.unit_end = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        if self.items == NULL or self.counts == NULL or self.first_item == NULL or self.ends == NULL \
                or self.unit_end == NULL:
            raise MemoryError()
        return 0

    cdef bint take_strs(self, list batch, int prefix, Py_ssize_t *total, Py_ssize_t *longest) except -1:
        """Takes the texts of `batch` as they are when every one is a str:
        a reference to each (nothing another thread does to the list can
        free one while the threads read it), and its size in ends until the
        units are cut; their characters in all and the most in one into
        `total` and `longest`.  The threads read each str as CPython stores it
        (encode_strs): no PlanPart per text (80 bytes, new pages that cost
        more than the gathering) and no UTF-8 copy left on the caller's
        texts.  False, holding nothing, when a text is not a str."""
        cdef Py_ssize_t i, n = self.n_texts, length
        cdef int kind
        cdef PyObject *text
        self.strs = <PyObject **>malloc((n + 1) * sizeof(PyObject *))
        self.ends = <size_t *>malloc((n + 1) * sizeof(size_t))
        self.unit_end = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        if self.strs == NULL or self.ends == NULL or self.unit_end == NULL:
            self.drop_strs(0)
            raise MemoryError()
        for i in range(n):
            text = PyList_GET_ITEM(batch, i)
            if Py_TYPE(text) is not &PyUnicode_Type:
                self.drop_strs(i)
                return False
            try:
                length = PyUnicode_GetLength(<object>text)
            except BaseException:
                self.drop_strs(i)
                raise
            kind = str_kind(text)
            self.ends[i] = <size_t>(length * kind)
            total[0] += length
            if length > longest[0]:
                longest[0] = length
            # (The most UTF-8 bytes it can have, and so ids.)
            self.str_ids_bound += 1 + <size_t>length * (1 if str_is_ascii(text) else kind + 1 if kind < 4 else 4)
            Py_INCREF(<object>text)
            self.strs[i] = text
        self.prefix_rule = prefix
        return True

    cdef void drop_strs(self, Py_ssize_t n):
        """Gives back the first n texts taken by take_strs (those not given
        back with their unit), and its arrays."""
        cdef Py_ssize_t i
        for i in range(n):
            Py_XDECREF(self.strs[i])
        free(self.strs)
        free(self.ends)
        free(self.unit_end)
        self.strs = NULL
        self.ends = NULL
        self.unit_end = NULL
        self.str_ids_bound = 0

    cdef Py_ssize_t text_size(self, Py_ssize_t t) noexcept:
        """Text t's share of the work: its parts' UTF-8 bytes (a token
        counts 1), or a str's characters times their bytes each."""
        cdef Py_ssize_t k, size = 0
        if self.strs != NULL:
            return <Py_ssize_t>self.ends[t]
        for k in range(self.first_item[t], self.first_item[t + 1]):
            size += _part_size(&self.items[k])
        return size

    cdef int cut_units(self, Py_ssize_t units) except -1:
        """Cuts the gathered texts into about `units` units of consecutive
        texts, each about total / units bytes, and lets the workers in."""
        cdef Py_ssize_t t, k, total = 0, share, filled = 0
        if self.strs == NULL:
            k = 0
            for t in range(self.n_texts):
                self.first_item[t] = k
                k += self.counts[t]
            self.first_item[self.n_texts] = k
        for t in range(self.n_texts):
            total += self.text_size(t)
        # Units of consecutive texts, each about total / units bytes.
        share = max(1, total // max(units, 1))
        for t in range(self.n_texts):
            filled += self.text_size(t)
            if filled >= share or t + 1 == self.n_texts:
                self.unit_end[self.n_units] = t + 1
                self.n_units += 1
                filled = 0
        return self.unit_arrays()

    cdef int unit_arrays(self) except -1:
        """Each unit's result slots, once the n_units units are cut; then
        lets the workers in."""
        self.unit_ids = <int32_t **>calloc(self.n_units + 1, sizeof(int32_t *))
        self.unit_done = <uint32_t *>calloc(self.n_units + 1, sizeof(uint32_t))
        self.unit_collected = <uint8_t *>calloc(self.n_units + 1, 1)
        if self.unit_ids == NULL or self.unit_done == NULL or self.unit_collected == NULL:
            raise MemoryError()
        spm_store_release_u32(&self.started, 1)
        return 0

    cdef Workspace *join(self) except? NULL:
        """A workspace for one more worker, or NULL when the job takes no
        more (finished, or as many workers as it holds)."""
        cdef Workspace *w
        if not spm_load_acquire_u32(&self.started) and not spm_load_acquire_u32(&self.closed):
            # (A helper woken before `start`: the caller gathers the texts
            # with the GIL, so wait without it.)
            with nogil:
                while not spm_load_acquire_u32(&self.started) and not spm_load_acquire_u32(&self.closed):
                    spm_yield()
        if self.closed or self.n_workers >= 64 or not self.started:
            return NULL
        w = self.core.acquire()
        w.alpha = self.alpha
        self.workers[self.n_workers] = w
        self.n_workers += 1
        spm_fetch_add_u32(&self.running, 1)
        return w

    def work(self):
        """A helper thread's part: merges units until none is left."""
        cdef Workspace *w = self.join()
        if w == NULL:
            return
        with nogil:
            while self.run_unit(w):
                pass
            # (Release: the leader reads this worker's units once running is 0.)
            spm_sub_release_u32(&self.running, 1)

    cdef bint run_unit(self, Workspace *w) noexcept nogil:
        """Merges the next unit not yet taken into its own buffer; False when
        none is left or a text failed."""
        cdef uint32_t u
        cdef Py_ssize_t lo, hi, failed = -1
        cdef int32_t *ids
        cdef int rc
        if spm_load_u32(&self.failed):
            return False
        u = spm_fetch_add_u32(&self.next_unit, 1)
        if u >= self.n_units:
            return False
        lo = self.unit_end[u - 1] if u else 0
        hi = self.unit_end[u]
        w.ids_len = 0
        if self.line_data != NULL:
            rc = encode_lines(&self.core.t, w, self.line_data + lo, hi - lo,
                              self.prefix_rule, &self.unit_line_ends[u], &self.unit_lines[u])
        elif self.strs != NULL:
            rc = encode_strs(&self.core.t, w, self.strs + lo, hi - lo, self.ends + lo, &failed, self.prefix_rule)
        else:
            rc = encode_items(&self.core.t, w, self.items + self.first_item[lo], self.counts + lo, hi - lo,
                              self.ends + lo, &failed,
                              self.seed_ptr + lo if self.seed_ptr != NULL else NULL)
        if rc != OK:
            spm_store_u32(&self.failed, 1)
            return False
        ids = <int32_t *>malloc((w.ids_len + 1) * sizeof(int32_t))
        if ids == NULL:
            spm_store_u32(&self.failed, 1)
            return False
        if w.ids_len:
            # (A unit of empty texts has no ids, and a workspace that gave
            # back its buffer has none: memcpy from NULL is undefined even
            # for no bytes.)
            memcpy(ids, w.ids, w.ids_len * sizeof(int32_t))
        self.unit_ids[u] = ids
        spm_store_release_u32(&self.unit_done[u], 1)
        return True

    def lead(self, bint flat=False):
        """The calling thread's part, and the result: merges units like
        `work`, and collects every finished unit (its lists, or its ids into
        the flat result) between its own units and while the helpers finish
        theirs.  Returns what encode_parts_batch would, or None when a text
        failed (encode_parts_batch then raises its error)."""
        cdef Workspace *w
        cdef list out = None
        cdef bint more
        cdef Py_ssize_t valid
        if self.line_data != NULL and not flat:
            raise ValueError("the lines of a block give a flat result")
        w = self.join()
        more = w != NULL
        try:
            if flat:
                self.flat_begin()
            else:
                out = PyList_New(self.n_texts)
            while more:
                self.collect(out, flat)
                with nogil:
                    more = self.run_unit(w)
        finally:
            if w != NULL:
                spm_sub_release_u32(&self.running, 1)
        # The helpers' last units.
        spm_store_release_u32(&self.closed, 1)
        while spm_load_acquire_u32(&self.running):
            if self.collected < self.n_units:
                self.collect(out, flat)
            with nogil:
                spm_yield()
        if spm_load_u32(&self.failed) or spm_load_u32(&self.next_unit) < self.n_units:
            if self.line_data != NULL:
                valid = <Py_ssize_t>spm_utf8_valid_prefix(self.line_data, <size_t>self.line_bytes)
                if valid < self.line_bytes:
                    raise ValueError(f"the block is not UTF-8: invalid byte {valid}")
            return None
        self.collect(out, flat)
        if flat:
            # (The room left over is given back.)
            PyByteArray_Resize(self.flat_ids, <Py_ssize_t>(self.flat_at * sizeof(int32_t)))
            if self.line_data != NULL:
                PyByteArray_Resize(self.flat_offsets, (self.n_texts + 1) * sizeof(int64_t))
            return self.flat_ids, self.flat_offsets
        return out

    cdef int collect(self, list out, bint flat) except -1:
        """Collects every finished unit not yet collected: its lists into
        `out`, or (with `flat`) its ids into the flat result, which takes
        them in order.  A collected unit's buffer is freed at once, so that
        the next units' buffers reuse its memory instead of new pages (each
        new 4 KiB page is a page fault: they cost a third of a NumPy batch)."""
        cdef Py_ssize_t u, t, lo
        cdef size_t mark, n
        cdef int64_t *offsets
        for u in range(self.collected, self.n_units):
            if self.unit_collected[u]:
                continue
            if not spm_load_acquire_u32(&self.unit_done[u]):
                if flat:
                    break  # (in order)
                continue
            if self.line_data != NULL:
                self.collect_lines(u)
                continue
            lo = self.unit_end[u - 1] if u else 0
            if flat:
                n = self.ends[self.unit_end[u] - 1]
                self.flat_put_ids(u, n)
                offsets = <int64_t *>PyByteArray_AS_STRING(self.flat_offsets)
                for t in range(lo, self.unit_end[u]):
                    offsets[t + 1] = <int64_t>(self.flat_at + self.ends[t])
                self.flat_at += n
            else:
                mark = 0
                for t in range(lo, self.unit_end[u]):
                    item = self.core.id_list(self.unit_ids[u] + mark, self.ends[t] - mark)
                    Py_INCREF(item)
                    PyList_SET_ITEM(out, t, item)
                    mark = self.ends[t]
            self.unit_collected_free(u)
        while self.collected < self.n_units and self.unit_collected[self.collected]:
            self.collected += 1
        return 0

    cdef int collect_lines(self, Py_ssize_t u) except -1:
        """collect's part for unit u of a block's lines: its ids after the
        flat result's, and its lines' offsets after the texts' so far (the
        offsets grow as the lines are counted)."""
        cdef Py_ssize_t lines = self.unit_lines[u], t
        cdef size_t n = self.unit_line_ends[u][lines - 1] if lines else 0
        cdef const size_t *ends = self.unit_line_ends[u]
        cdef int64_t *offsets
        self.flat_put_ids(u, n)
        self.flat_room(self.flat_offsets, <size_t>(self.n_texts + lines + 1) * sizeof(int64_t))
        offsets = (<int64_t *>PyByteArray_AS_STRING(self.flat_offsets)) + self.n_texts + 1
        for t in range(lines):
            offsets[t] = <int64_t>(self.flat_at + ends[t])
        self.flat_at += n
        self.n_texts += lines
        self.unit_collected_free(u)
        return 0

    cdef void unit_collected_free(self, Py_ssize_t u) noexcept:
        """Marks unit u collected and frees its buffers (the next units'
        buffers then reuse that memory instead of new pages: each new 4 KiB
        page is a page fault, and they cost a third of a NumPy batch), and
        gives back its texts, which no thread reads any more: while the
        helpers merge, not all at the end while they wait (the GIL is held)."""
        cdef Py_ssize_t t
        if self.strs != NULL:
            for t in range(self.unit_end[u - 1] if u else 0, self.unit_end[u]):
                Py_XDECREF(self.strs[t])
                self.strs[t] = NULL
        free(self.unit_ids[u])
        self.unit_ids[u] = NULL
        if self.unit_line_ends != NULL:
            free(self.unit_line_ends[u])
            self.unit_line_ends[u] = NULL
        self.unit_collected[u] = 1

    cdef int flat_put_ids(self, Py_ssize_t u, size_t n) except -1:
        """Copies unit u's n ids after the flat result's (flat_at is the
        caller's to advance, once it has their offsets)."""
        cdef char *at
        self.flat_room(self.flat_ids, (self.flat_at + n) * sizeof(int32_t))
        if n:
            # (A large flat result is new memory: a unit's pages are
            # faulted in by one call, not one fault per 1,024 ids.)
            at = PyByteArray_AS_STRING(self.flat_ids) + self.flat_at * sizeof(int32_t)
            spm_prefault_write(at, n * sizeof(int32_t), <size_t>PyByteArray_GET_SIZE(self.flat_ids))
            memcpy(at, self.unit_ids[u], n * sizeof(int32_t))
        return 0

    cdef int flat_room(self, object buffer, size_t need) except -1:
        """Grows a flat result's bytearray to hold `need` bytes (twice its
        size at least: a large one grows in place, by remapping)."""
        cdef size_t cap = <size_t>PyByteArray_GET_SIZE(buffer)
        if need > cap:
            PyByteArray_Resize(buffer, <Py_ssize_t>max(need, 2 * cap))
        return 0

    cdef int flat_begin(self) except -1:
        """The flat result before any unit is collected: a buffer for the
        ids sized for the most the texts can give (a text part at most one
        per UTF-8 byte and one for its dummy prefix, a token one), of which
        only the pages written are ever touched, and the offsets of each
        text's ids, from 0."""
        cdef Py_ssize_t k
        cdef size_t bound = self.str_ids_bound
        cdef Py_ssize_t offsets = self.n_texts + 1
        if self.line_data != NULL:
            # (A line of k bytes gives at most k + 1 ids, and takes k + 1
            # with its line end; the lines are counted as the units are
            # collected: the offsets start at one line per 32 bytes and grow.)
            bound = <size_t>self.line_bytes + 1
            offsets = self.line_bytes // 32 + 2
            self.n_texts = 0
        elif self.strs == NULL:
            for k in range(self.first_item[self.n_texts]):
                bound += 1 + (<size_t>self.items[k].n if self.items[k].kind == PART_TEXT else 0)
        self.flat_ids = PyByteArray_FromStringAndSize(NULL, <Py_ssize_t>(bound * sizeof(int32_t)))
        self.flat_offsets = PyByteArray_FromStringAndSize(NULL, offsets * sizeof(int64_t))
        (<int64_t *>PyByteArray_AS_STRING(self.flat_offsets))[0] = 0
        self.flat_at = 0
        return 0

    def close(self):
        """Waits for the helpers and gives the workspaces back."""
        self.give_back()

    cdef void give_back(self):
        spm_store_release_u32(&self.closed, 1)
        if spm_load_acquire_u32(&self.running):
            with nogil:
                while spm_load_acquire_u32(&self.running):
                    spm_yield()
        while self.n_workers:
            self.n_workers -= 1
            self.core.release(self.workers[self.n_workers])

    def __dealloc__(self):
        # (A helper holds a reference while it runs, so none is running.)
        cdef Py_ssize_t u
        if self.core is not None:
            self.give_back()
        if self.unit_ids != NULL:
            for u in range(self.n_units):
                free(self.unit_ids[u])
        if self.unit_line_ends != NULL:
            for u in range(self.n_units):
                free(self.unit_line_ends[u])
        free(self.unit_line_ends)
        free(self.unit_lines)
        if self.strs != NULL:
            self.drop_strs(self.n_texts)
        free(self.items)
        free(self.counts)
        free(self.first_item)
        free(self.unit_end)
        free(self.ends)
        free(self.unit_ids)
        free(self.unit_done)
        free(self.unit_collected)
