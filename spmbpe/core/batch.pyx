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
    longest the length of the longest text (a C loop: the threads wait
    for it)."""
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
    planning is one job whatever its groups, and reads each length once)."""
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


cdef object encode_items_serial(SpmCore core, list batch, bint flat, double alpha, seeds, int prefix):
    """SpmCore.encode_parts_batch: the parts are gathered first (UTF-8
    pointers into the texts' strs, which `batch` keeps alive), then every
    text is merged in one stretch without the GIL, so threads encoding other
    batches run meanwhile."""
    cdef const uint64_t[::1] seed_view = seeds if seeds is not None else _NO_SEEDS
    cdef Py_ssize_t n_texts = len(batch), n_parts, failed = -1
    cdef PlanPart *items = NULL
    cdef int32_t *counts = NULL
    cdef size_t *ends = NULL
    cdef int rc
    cdef Workspace *w
    if alpha > 0.0 and seed_view.shape[0] < n_texts:
        raise ValueError("sampling needs one seed per text")
    n_parts = _count_parts(batch)
    items = <PlanPart *>malloc((n_parts + 1) * sizeof(PlanPart))
    counts = <int32_t *>malloc((n_texts + 1) * sizeof(int32_t))
    ends = <size_t *>malloc((n_texts + 1) * sizeof(size_t))
    if items == NULL or counts == NULL or ends == NULL:
        free(items)
        free(counts)
        free(ends)
        raise MemoryError()
    w = core.acquire()
    w.alpha = alpha
    try:
        gather(&core.t, batch, items, n_parts, counts, prefix)
        with nogil:
            rc = encode_items(&core.t, w, items, counts, n_texts, ends, &failed,
                              &seed_view[0] if seed_view.shape[0] else NULL)
        if rc != OK:
            check_rc(rc, &core.t, w, _part_text(batch, failed))
        return serial_result(core, w, ends, n_texts, flat)
    finally:
        free(items)
        free(counts)
        free(ends)
        core.release(w)


cdef object serial_result(SpmCore core, Workspace *w, const size_t *ends, Py_ssize_t n_texts, bint flat):
    """encode_items_serial's result from the workspace's ids, text t's
    ending at ends[t]: a list per text, or (with `flat`) the ids and the
    offsets as bytearrays (no Python int per token)."""
    cdef Py_ssize_t t
    cdef size_t mark = 0
    cdef int64_t *offsets
    cdef list out = []
    if flat:
        offsets_out = PyByteArray_FromStringAndSize(NULL, (n_texts + 1) * sizeof(int64_t))
        offsets = <int64_t *>PyByteArray_AS_STRING(offsets_out)
        offsets[0] = 0
        for t in range(n_texts):
            offsets[t + 1] = <int64_t>ends[t]
        return PyByteArray_FromStringAndSize(<char *>w.ids, w.ids_len * sizeof(int32_t)), offsets_out
    for t in range(n_texts):
        out.append(core.id_list(w.ids + mark, ends[t] - mark))
        mark = ends[t]
    return out


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
    of after everything.  `close` gives the workspaces back.
    """

    def __init__(self, SpmCore core not None):
        """An empty job: helpers may be started on it (they wait for
        `start`), so that waking them overlaps gathering the texts.  (Its C
        fields start zeroed, as tp_alloc gives every extension object.)"""
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
        the one pass over the batch that the job needs anyway (each pass
        reads every str's header while the helpers wait)."""
        cdef const uint64_t[::1] seed_view = seeds if seeds is not None else _NO_SEEDS
        cdef Py_ssize_t n_parts, total = 0, longest = 0
        if self.batch is not None or self.closed:
            raise RuntimeError("a BatchJob takes one batch")
        self.batch = batch
        self.texts.n_texts = len(batch)
        self.alpha = alpha
        if alpha > 0.0:
            if seed_view.shape[0] < self.texts.n_texts:
                raise ValueError("sampling needs one seed per text")
            self.seeds = seeds
            self.seed_ptr = &seed_view[0] if seed_view.shape[0] else NULL
        if alpha == 0.0 and texts_take_strs(&self.texts, batch, prefix, &total, &longest):
            # (The rule of _cuts_long_texts in _batch.py, on the share batch_slices gives.)
            if cut_parts > 0 and longest > 2 * share_of(total, cut_parts, min_share):
                texts_free(&self.texts, self.texts.n_texts)
                self.batch = None
                return False
            texts_cut_units(&self.texts, units)
            return self.unit_arrays()
        if cut_parts > 0:
            self.batch = None
            return False
        n_parts = _count_parts(batch)
        texts_allocate(&self.texts, n_parts)
        gather(&self.core.t, batch, self.texts.items, n_parts, self.texts.counts, prefix)
        texts_cut_units(&self.texts, units)
        return self.unit_arrays()

    def start_lines(self, block, Py_ssize_t units, int prefix=PREFIX_ALWAYS):
        """Gives the job its texts as the lines of `block`, UTF-8 bytes (or a
        bytearray, held unresizable while the job lasts): each
        line ends with "\\n" (the last may lack it), a "\\r" before the "\\n"
        is left out (as the command line reads text files), and each line is
        one text part with the dummy prefix by the PREFIX_* rule `prefix`.
        No str is made for a line (a str per line costs more than merging a
        short one), nor any record per line: the block is cut into about
        `units` units of whole lines, and each worker finds the lines of its
        units, checks their bytes to be UTF-8 and merges them
        (encode_lines), so the leader does not keep the helpers waiting.
        Only a flat result (lead(True)); a block that is not UTF-8 makes
        lead raise ValueError naming the byte."""
        if self.batch is not None or self.closed:
            raise RuntimeError("a BatchJob takes one batch")
        self.batch = []
        self.lines = block  # (keeps the lines' bytes alive, and their place)
        self.texts.line_bytes = self.lines.shape[0]
        # (Any non-NULL pointer marks the lines mode, an empty block's too.)
        self.texts.line_data = <const char *>&self.lines[0] if self.texts.line_bytes else MARKER
        self.alpha = 0.0
        self.texts.prefix_rule = prefix
        texts_cut_lines(&self.texts, units)
        self.unit_line_ends = <size_t **>calloc(self.texts.n_units + 1, sizeof(size_t *))
        self.unit_lines = <Py_ssize_t *>calloc(self.texts.n_units + 1, sizeof(Py_ssize_t))
        if self.unit_line_ends == NULL or self.unit_lines == NULL:
            raise MemoryError()
        self.unit_arrays()

    cdef bint unit_arrays(self) except -1:
        """Each unit's result slots, once the n_units units are cut; then
        lets the workers in.  True."""
        self.unit_ids = <int32_t **>calloc(self.texts.n_units + 1, sizeof(int32_t *))
        self.unit_done = <uint32_t *>calloc(self.texts.n_units + 1, sizeof(uint32_t))
        self.unit_collected = <uint8_t *>calloc(self.texts.n_units + 1, 1)
        if self.unit_ids == NULL or self.unit_done == NULL or self.unit_collected == NULL:
            raise MemoryError()
        spm_store_release_u32(&self.started, 1)
        return True

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
        cdef int32_t *ids
        cdef int rc
        if spm_load_u32(&self.failed):
            return False
        u = spm_fetch_add_u32(&self.next_unit, 1)
        if u >= self.texts.n_units:
            return False
        rc = texts_encode_unit(&self.core.t, w, &self.texts, u, self.seed_ptr,
                               &self.unit_line_ends[u] if self.unit_line_ends != NULL else NULL,
                               &self.unit_lines[u] if self.unit_lines != NULL else NULL)
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
        cdef Py_ssize_t valid, n_offsets
        cdef size_t bound
        if self.texts.line_data != NULL and not flat:
            raise ValueError("the lines of a block give a flat result")
        w = self.join()
        more = w != NULL
        try:
            if flat:
                bound = texts_ids_bound(&self.texts, &n_offsets)
                self.flat = FlatIds(bound, n_offsets)
            else:
                out = PyList_New(self.texts.n_texts)
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
            if self.collected < self.texts.n_units:
                self.collect(out, flat)
            with nogil:
                spm_yield()
        if spm_load_u32(&self.failed) or spm_load_u32(&self.next_unit) < self.texts.n_units:
            if self.texts.line_data != NULL:
                valid = <Py_ssize_t>spm_utf8_valid_prefix(self.texts.line_data, <size_t>self.texts.line_bytes)
                if valid < self.texts.line_bytes:
                    raise ValueError(f"the block is not UTF-8: invalid byte {valid}")
            return None
        self.collect(out, flat)
        return self.flat.result(self.texts.n_texts) if flat else out

    cdef int collect(self, list out, bint flat) except -1:
        """Collects every finished unit not yet collected: its lists into
        `out`, or (with `flat`) its ids into the flat result, which takes
        them in order.  A collected unit's buffer is freed at once, so that
        the next units' buffers reuse its memory instead of new pages (each
        new page is a page fault)."""
        cdef Py_ssize_t u, t, lo, hi
        cdef size_t mark = 0
        for u in range(self.collected, self.texts.n_units):
            if self.unit_collected[u]:
                continue
            if not spm_load_acquire_u32(&self.unit_done[u]):
                if flat:
                    break  # (in order)
                continue
            lo = self.texts.unit_end[u - 1] if u else 0
            hi = self.texts.unit_end[u]
            if self.texts.line_data != NULL:
                # (The lines are counted as the units are collected.)
                self.flat.put_unit(self.unit_ids[u], self.unit_line_ends[u], self.texts.n_texts,
                                   self.unit_lines[u])
                self.texts.n_texts += self.unit_lines[u]
            elif flat:
                self.flat.put_unit(self.unit_ids[u], self.texts.ends + lo, lo, hi - lo)
            else:
                mark = 0
                for t in range(lo, hi):
                    item = self.core.id_list(self.unit_ids[u] + mark, self.texts.ends[t] - mark)
                    Py_INCREF(item)
                    PyList_SET_ITEM(out, t, item)
                    mark = self.texts.ends[t]
            self.unit_collected_free(u)
        while self.collected < self.texts.n_units and self.unit_collected[self.collected]:
            self.collected += 1
        return 0

    cdef void unit_collected_free(self, Py_ssize_t u) noexcept:
        """Marks unit u collected and frees its buffers, and gives back its
        texts, which no thread reads any more: while the helpers merge, not
        all at the end while they wait (the GIL is held)."""
        texts_give_back(&self.texts, u)
        free(self.unit_ids[u])
        self.unit_ids[u] = NULL
        if self.unit_line_ends != NULL:
            free(self.unit_line_ends[u])
            self.unit_line_ends[u] = NULL
        self.unit_collected[u] = 1

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
            for u in range(self.texts.n_units):
                free(self.unit_ids[u])
        if self.unit_line_ends != NULL:
            for u in range(self.texts.n_units):
                free(self.unit_line_ends[u])
        free(self.unit_line_ends)
        free(self.unit_lines)
        texts_free(&self.texts, self.texts.n_texts)
        free(self.unit_ids)
        free(self.unit_done)
        free(self.unit_collected)


cdef class FlatIds:
    """A flat result filled unit by unit, in order: the ids as native uint32
    in a bytearray sized at first for the most the texts can give (of which
    only the pages written are ever touched), and where each text's ids
    start and the last ends, native int64 in a bytearray, from 0."""

    def __cinit__(self, size_t bound, Py_ssize_t n_offsets):
        self.ids = PyByteArray_FromStringAndSize(NULL, <Py_ssize_t>(bound * sizeof(int32_t)))
        self.offsets = PyByteArray_FromStringAndSize(NULL, n_offsets * sizeof(int64_t))
        (<int64_t *>PyByteArray_AS_STRING(self.offsets))[0] = 0
        self.at = 0

    cdef int put_unit(self, const int32_t *ids, const size_t *ends, Py_ssize_t first,
                      Py_ssize_t count) except -1:
        """A unit's ids after those so far, and the offsets of its `count`
        texts from text `first` on, text first + k's ids ending at ends[k]
        in the unit's."""
        cdef size_t n = ends[count - 1] if count else 0
        cdef char *at
        cdef int64_t *offsets
        cdef Py_ssize_t k
        grow_bytearray(self.ids, (self.at + n) * sizeof(int32_t))
        if n:
            # (A large flat result is new memory: a unit's pages are
            # faulted in by one call, not one fault per page.)
            at = PyByteArray_AS_STRING(self.ids) + self.at * sizeof(int32_t)
            spm_prefault_write(at, n * sizeof(int32_t), <size_t>PyByteArray_GET_SIZE(self.ids))
            memcpy(at, ids, n * sizeof(int32_t))
        grow_bytearray(self.offsets, <size_t>(first + count + 1) * sizeof(int64_t))
        offsets = (<int64_t *>PyByteArray_AS_STRING(self.offsets)) + first + 1
        for k in range(count):
            offsets[k] = <int64_t>(self.at + ends[k])
        self.at += n
        return 0

    cdef tuple result(self, Py_ssize_t n_texts):
        """(ids, offsets) of n_texts texts, the room left over given back."""
        PyByteArray_Resize(self.ids, <Py_ssize_t>(self.at * sizeof(int32_t)))
        PyByteArray_Resize(self.offsets, (n_texts + 1) * sizeof(int64_t))
        return self.ids, self.offsets


cdef int grow_bytearray(object buffer, size_t need) except -1:
    """Grows a bytearray to hold `need` bytes (twice its size at least: a
    large one grows in place, by remapping)."""
    cdef size_t cap = <size_t>PyByteArray_GET_SIZE(buffer)
    if need > cap:
        PyByteArray_Resize(buffer, <Py_ssize_t>max(need, 2 * cap))
    return 0
