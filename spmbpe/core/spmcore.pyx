# SpmCore (declared in core/spmcore.pxd): builds the CoreTables the kernels
# read, owns what they point to, and keeps the pool of workspaces.  Test
# hooks that reach into it live in spmbpe/_testing.pyx, not here.

cdef tuple rules_of_pairs(const spm_pairs *pairs):
    """The rules of a pair table as (left, right, merged) arrays ('i') in
    rank order: one rule per pair, the ranks closed up."""
    cdef uint64_t i, cap = pairs.mask + 1
    cdef int32_t top = -1, r, a, b, m, rank
    cdef Py_ssize_t k = 0
    for i in range(cap):
        if spm_pairs_slot(pairs, i, &a, &b, &m, &rank) and rank > top:
            top = rank
    # Each rank's slot (ranks are distinct: a rule's place in the list).
    cdef int64_t *slot_of = <int64_t *>malloc(<size_t>(top + 1) * sizeof(int64_t) + 1)
    if slot_of == NULL:
        raise MemoryError()
    cdef carray.array left = carray.clone(_INT32_ARRAY, <Py_ssize_t>pairs.count, False)
    cdef carray.array right = carray.clone(_INT32_ARRAY, <Py_ssize_t>pairs.count, False)
    cdef carray.array merged = carray.clone(_INT32_ARRAY, <Py_ssize_t>pairs.count, False)
    try:
        for r in range(top + 1):
            slot_of[r] = -1
        for i in range(cap):
            if spm_pairs_slot(pairs, i, &a, &b, &m, &rank):
                slot_of[rank] = <int64_t>i
        for r in range(top + 1):
            if slot_of[r] >= 0:
                spm_pairs_slot(pairs, <uint64_t>slot_of[r], &a, &b, &m, &rank)
                left.data.as_ints[k] = a
                right.data.as_ints[k] = b
                merged.data.as_ints[k] = m
                k += 1
    finally:
        free(slot_of)
    return left, right, merged


def distinct_rules(const int32_t[::1] left, const int32_t[::1] right, const int32_t[::1] merged):
    """None when no pair of ids is listed twice in the rules (left[i],
    right[i]) -> merged[i]; else the rules the core keeps of them, as
    SpmCore.ranked_merges reads them back: one per pair, its last listing
    (the one that applies), in rank order.  (The state's canonical merges,
    spmbpe/_state.py: a dict of the 59,000 rules' pairs took 7-12 ms of
    each pickle and fingerprint of a tokenizer.json.)"""
    cdef Py_ssize_t n = left.shape[0]
    if right.shape[0] != n or merged.shape[0] != n:
        raise ValueError(f"the rules' columns differ in length ({n}, {right.shape[0]}, {merged.shape[0]})")
    cdef spm_pairs *pairs = spm_pairs_new(<size_t>n, &left[0] if n else NULL, &right[0] if n else NULL,
                                          &merged[0] if n else NULL)
    if pairs == NULL:
        raise MemoryError("cannot allocate the merge rules")
    try:
        if pairs.count == <size_t>n:
            return None
        return rules_of_pairs(pairs)
    finally:
        spm_pairs_free(pairs)


cdef class SpmCore:
    """Merge ranks, flags and decode table over a PieceTable.

    SpmCore(table, scores, flags, types, unk_id, collapse_unknown)

    scores: float32 buffer (array('f')), the merge rank of each piece.
    flags: uint8 buffer, SPM_FLAG_* bits per piece (csrc/spm_types.h).
    types: uint8 buffer, the TokenType of each piece (decides decoding).
    unk_id: the id unknown characters become without byte fallback, or -1.
    collapse_unknown: a run of unknown characters gives one unk_id.
    byte_fallback: unknown characters become their UTF-8 bytes as
    ``<0xNN>`` pieces, when all 256 exist.
    """

    def __cinit__(self):
        memset(&self.t, 0, sizeof(CoreTables))
        self.t.unk_id = -1
        self.t.max_segment = MAX_SEGMENT_BYTES_C
        self.t.rules.escape_spaces = True
        self.vocab = NULL
        self.tables_ready = False
        self.id_objects = NULL
        self.pool = NULL
        self.pool_len = 0
        self.active = 0
        self.cache_ready = False
        self.clear_pending = False
        self.cache_off = False
        self.cache_slots = SPM_CACHE_MAX_SLOTS
        self.cache_bytes = SPM_CACHE_MAX_DATA
        self.full_lookups = 0

    def __init__(self, PieceTable table not None, scores, flags, types,
                 int unk_id, bint collapse_unknown, bint byte_fallback=True):
        cdef Py_ssize_t n = table.size
        cdef int b
        cdef int32_t found
        cdef const uint8_t[::1] kinds = types
        if len(scores) != n or len(flags) != n or kinds.shape[0] != n:
            raise ValueError("scores, flags and types must have one entry per piece")
        if unk_id >= n:
            raise ValueError(f"unk_id {unk_id} is not a piece id")
        self.table = table
        self.vocab = table.vocab
        self.scores = scores
        self.flags = flags
        self.types = types
        self.t.vocab = self.vocab
        self.t.arena = PyBytes_AS_STRING(table.arena)
        self.t.offsets = table.offsets
        self.t.types = &self.types[0]
        self.t.n_pieces = <int32_t>n
        self.t.unk_id = unk_id if unk_id >= 0 else -1
        self.t.collapse_unknown = collapse_unknown
        cdef const uint8_t[::1] flag_view = flags
        self.t.any_resplit = False
        for b in range(n):
            if flag_view[b] & SPM_FLAG_RESPLIT:
                self.t.any_resplit = True
                break

        # Byte fallback is all or nothing: a partial <0xNN> set cannot encode
        # every character, so without all 256 unknown characters become <unk>.
        self.t.byte_fallback = byte_fallback
        for b in range(256 if byte_fallback else 0):
            name = f"<0x{b:02X}>".encode("ascii")
            found = spm_vocab_find(self.vocab, PyBytes_AS_STRING(name), 6)
            if found < 0:
                self.t.byte_fallback = False
                break
            self.t.byte_ids[b] = found

        buildable = bytearray(n)
        cdef uint8_t[::1] build_view = buildable
        for b in range(n):
            build_view[b] = flag_view[b] & SPM_FLAG_MERGEABLE
        self.buildable = bytes(buildable)
        self.violators = derive_chunk_rules(&self.t, self.buildable)
        # Short chunks merge by linear scan (merge_small), which picks the
        # same pairs as the heap; not for UNUSED pieces to resplit (their
        # halves depend on the heap's queue order), nor ranks past its
        # numbers (a score rank is below the vocabulary's size).
        self.t.small_merges = not self.t.any_resplit and n < SMALL_RANKS
        if not self.t.any_resplit:
            # The flags are read only to resplit UNUSED pieces.
            self.flags = _NO_FLAGS
        self.t.flags = &self.flags[0]

    cdef int ready_tables(self) except -1:
        """Builds the symbols and, for sentencepiece's and llama.cpp's merges,
        the pair table from the scores, when the first call needs them (a
        tokenizer.json's core sets its rules first: set_ranked_merges)."""
        if self.tables_ready:
            return 0
        fill_symbols(&self.t, self.buildable)
        self.t.pairs = score_pairs(&self.t, self.buildable, self.scores)
        fill_ascii_pairs(&self.t)
        self.tables_ready = True
        return 0

    cdef int make_id_objects(self) except -1:
        """Makes every id's int object, all at once (about 32 bytes an id).
        Made one by one as ids first appeared, they were scattered among
        the lists returned meanwhile, and each kept its block of Python's
        allocator from being given back: after a batch of 8 MB of text,
        30 MB more stayed resident than without them."""
        cdef int32_t i
        cdef object obj
        cdef PyObject **objects = <PyObject **>calloc(self.t.n_pieces, sizeof(PyObject *))
        if objects == NULL:
            raise MemoryError()
        try:
            for i in range(self.t.n_pieces):
                obj = i
                Py_INCREF(obj)
                objects[i] = <PyObject *>obj
        except BaseException:
            for i in range(self.t.n_pieces):
                Py_XDECREF(objects[i])
            free(objects)
            raise
        self.id_objects = objects
        return 0

    cdef list id_list(self, const int32_t *ids, size_t n):
        """A list of the ids as Python ints.  Each id's int object is made
        once and shared (allocating a fresh int per token is most of the
        cost of returning a list); the GIL is held."""
        cdef list out
        cdef size_t i
        cdef PyObject *item
        cdef PyObject **objects
        if self.id_objects == NULL:
            self.make_id_objects()
        objects = self.id_objects
        out = PyList_New(n)
        for i in range(n):
            item = objects[ids[i]]
            Py_INCREF(<object>item)
            PyList_SET_ITEM(out, i, <object>item)
        return out

    cdef list encode_long(self, str text, bint prefix):
        """encode_text of a long segment (by_str_blocks), read block by block
        from the str as CPython stores it (encode_str_block).  No UTF-8 copy
        of the text is made: CPython keeps the one PyUnicode_AsUTF8AndSize
        makes on the str for its lifetime.  None when the text holds a
        surrogate (the caller raises the planned path's error)."""
        cdef int kind = PyUnicode_KIND(text)
        cdef const void *data = PyUnicode_DATA(text)
        cdef bint ascii = PyUnicode_IS_ASCII(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0, end
        cdef bint too_long = n > self.t.max_segment
        cdef int rc
        cdef Workspace *w
        if not too_long and 4 * n > self.t.max_segment:
            too_long = spm_ucs_utf8_size(kind, data, <size_t>n) > <size_t>self.t.max_segment
        w = self.acquire()
        try:
            if too_long:
                check_rc(ERR_TOO_LONG, &self.t, w, text)
            w.ids_len = 0
            while start < n:
                with nogil:
                    end = str_block_end(kind, data, start, n)
                    rc = encode_str_block(&self.t, w, kind, ascii, data, start, end, prefix and start == 0)
                if rc == ERR_SURROGATE:
                    return None
                check_rc(rc, &self.t, w, text)
                self.sweep_between_blocks(w)
                start = end
            return self.id_list(w.ids, w.ids_len)
        finally:
            self.release(w)

    def __dealloc__(self):
        cdef int32_t i
        if self.id_objects != NULL:
            for i in range(self.t.n_pieces):
                Py_XDECREF(self.id_objects[i])
            free(self.id_objects)
            self.id_objects = NULL
        # (The vocabulary's hash table belongs to self.table, which frees it.)
        self.vocab = NULL
        self.t.vocab = NULL
        spm_chars_free(self.t.chars)
        self.t.chars = NULL
        free(self.t.ascii_pairs)
        self.t.ascii_pairs = NULL
        if self.t.pairs != NULL:
            spm_pairs_free(self.t.pairs)
            self.t.pairs = NULL
        spm_charpairs_free(self.t.rules.char_pairs)
        self.t.rules.char_pairs = NULL
        if self.pool != NULL:
            while self.pool_len:
                self.pool_len -= 1
                ws_free(self.pool[self.pool_len])
                free(self.pool[self.pool_len])
            free(self.pool)
            self.pool = NULL
        self.t.cache = NULL
        if self.cache_ready:
            spm_cache_free(&self.cache)
            self.cache_ready = False

    cdef void sweep_cache_if_due(self):
        """A full cache is swept (spm_cache_sweep: the chunks found since
        the last sweep stay, the rest make room) once calls that started
        with it full have made as many lookups as its table has slots: a
        chunk must recur within that many to stay.  No thread is
        encoding."""
        if not self.cache.full or self.full_lookups < <uint64_t>self.cache.table.mask + 1:
            return
        spm_cache_sweep(&self.cache)
        self.full_lookups = 0

    cdef void sweep_between_blocks(self, Workspace *w):
        """sweep_cache_if_due between two blocks of one long text (the GIL
        held; `w`, the caller's workspace, between merges), when no other
        thread encodes: none can start while the GIL is held, so none
        reads the cache while it is swept.  (Decided only when a call
        starts, a document kept, for all its length, a cache its first
        part filled.)"""
        if self.active != 1 or not self.cache_ready:
            return
        spm_cache_flush(&self.cache, &w.cache_writer)
        if w.cache_was_full:
            self.full_lookups += w.cache_lookups
        w.cache_lookups = 0
        spm_cache_quiesce(&self.cache)
        self.sweep_cache_if_due()
        w.cache_was_full = spm_load_u32(&self.cache.full)

    cdef Workspace *acquire(self) except NULL:
        """An idle workspace, or a new one.  Called with the GIL held, which
        makes the pool and the count of active workspaces thread-safe: when
        none is active, no thread reads the shared cache, so this is where
        it frees what growing retired and decides whether a full cache stays."""
        cdef Workspace *w
        if not self.tables_ready:
            self.ready_tables()
        if self.active == 0 and self.t.rules.chunked and not self.cache_off:
            if not self.cache_ready:
                # (Without memory for it, chunks are merged every time.)
                self.cache_ready = spm_cache_init(&self.cache, self.cache_slots, self.cache_bytes) == 0
                self.t.cache = &self.cache if self.cache_ready else NULL
            elif self.clear_pending:
                spm_cache_clear(&self.cache)
                self.full_lookups = 0
            else:
                spm_cache_quiesce(&self.cache)
                self.sweep_cache_if_due()
            self.clear_pending = False
        if self.pool_len:
            self.pool_len -= 1
            w = self.pool[self.pool_len]
        else:
            w = <Workspace *>malloc(sizeof(Workspace))
            if w == NULL:
                raise MemoryError()
            ws_init(w)
        w.ids_len = 0
        w.want_spans = False
        w.alpha = 0.0
        w.cache_was_full = self.cache_ready and spm_load_u32(&self.cache.full)
        self.active += 1
        return w

    cdef void release(self, Workspace *w):
        """Back to the pool.  Buffers grown for one very large text are freed
        first (a pooled workspace would otherwise keep ~50 bytes per byte of
        that text for the tokenizer's lifetime)."""
        self.active -= 1
        if self.cache_ready:
            spm_cache_flush(&self.cache, &w.cache_writer)
            if w.cache_was_full:
                self.full_lookups += w.cache_lookups
        w.cache_lookups = 0
        if w.utf8_cap > _KEEP_TEXT_BYTES:
            free(w.utf8)
            w.utf8 = NULL
            w.utf8_cap = 0
        if w.scratch_cap > _KEEP_TEXT_BYTES:
            free(w.scratch)
            w.scratch = NULL
            w.scratch_cap = 0
        if w.symbols_cap > _KEEP_TEXT_BYTES // 8:
            ws_free_symbols(w)
            spm_heap_free(&w.heap)
        if w.ids_cap > _KEEP_IDS:
            free(w.ids)
            free(w.spans)
            w.ids = NULL
            w.ids_cap = 0
            w.spans = NULL
            w.spans_cap = 0
        if self.pool == NULL:
            self.pool = <Workspace **>calloc(_POOL_SIZE, sizeof(Workspace *))
        if self.pool != NULL and self.pool_len < _POOL_SIZE:
            self.pool[self.pool_len] = w
            self.pool_len += 1
        else:
            ws_free(w)
            free(w)

    # ------------------------------------------------------------ cache

    @property
    def cache_capacity(self):
        """About how many chunks (words, mostly) the cache holds at most."""
        return 0 if self.cache_off else self.cache_slots // 4 * 3

    def set_cache_capacity(self, Py_ssize_t chunks):
        """Bounds the chunk cache to about `chunks` chunks (0: no cache):
        three quarters of a power of two of table slots (a full table's
        load, spm_cache_at_limit), at least 768, and 64 bytes of entries
        per chunk.  What it held is dropped.  Not while a thread
        encodes with this core."""
        cdef uint64_t slots = 1024
        cdef int k
        if chunks < 0 or chunks > _MAX_CACHE_CHUNKS:
            raise ValueError(f"cache_capacity must be from 0 to {_MAX_CACHE_CHUNKS}, not {chunks}")
        if self.active:
            raise RuntimeError("the cache capacity cannot change while this tokenizer is encoding")
        while slots // 4 * 3 < <uint64_t>chunks:
            slots *= 2
        if self.cache_ready:
            self.t.cache = NULL
            spm_cache_free(&self.cache)
            self.cache_ready = False
            # (Every workspace is idle, in the pool: their blocks of the
            # freed arena must not be written into the next one.)
            for k in range(self.pool_len):
                spm_cache_writer_init(&self.pool[k].cache_writer)
        self.full_lookups = 0
        self.clear_pending = False
        self.cache_off = chunks == 0
        self.cache_slots = <uint32_t>slots
        self.cache_bytes = max(<size_t>chunks * 64, <size_t>SPM_CACHE_BLOCK)

    # ------------------------------------------------------------ rules

    @property
    def byte_fallback(self):
        """All 256 <0xNN> pieces exist: unknown characters become bytes."""
        return self.t.byte_fallback

    @property
    def chunked(self):
        """Merges never cross a safe "x▁" boundary (segments are chunked)."""
        return self.t.rules.chunked

    @property
    def cut_chars(self):
        """Chunks are also cut between characters no buildable piece holds
        side by side (see core/chunking.pyx)."""
        return self.t.rules.cut_chars

    @property
    def escape_spaces(self):
        """Spaces become "▁" (escape_whitespaces)."""
        return self.t.rules.escape_spaces

    def set_escape_spaces(self, bint escape):
        """Whether segments have their spaces turned into "▁" (sentencepiece's
        escape_whitespaces; text from its normalizer is already escaped).
        Not while a thread encodes with this core."""
        if self.active:
            raise RuntimeError("set_escape_spaces cannot run while this core is encoding")
        self.t.rules.escape_spaces = escape
        if self.tables_ready:
            set_space_symbol(&self.t)
        if self.cache_ready:
            spm_cache_clear(&self.cache)
            self.full_lookups = 0

    # ------------------------------------------------------------ merge rules

    def set_ranked_merges(self, left, right, merged, bint fuse_unknown, bint ignore_merges):
        """Switches to HuggingFace tokenizers' BPE: merges ranked by pair
        (rule i joins ids left[i] and right[i] into merged[i], rank i),
        characters looked up one by one before merging (bytes, else a
        (fused) unknown id, else dropped, as tokenizers does)."""
        cdef const int32_t[::1] l = left
        cdef const int32_t[::1] r = right
        cdef const int32_t[::1] m = merged
        cdef Py_ssize_t n = l.shape[0], i
        if r.shape[0] != n or m.shape[0] != n:
            raise ValueError("left, right and merged differ in length")
        if n >= (1 << 24):
            # Ranks travel as float32 scores, exact below 2**24.
            raise ValueError(f"{n} merge rules; at most {(1 << 24) - 1} are supported")
        for i in range(n):
            if not (0 <= l[i] < self.t.n_pieces and 0 <= r[i] < self.t.n_pieces
                    and 0 <= m[i] < self.t.n_pieces):
                raise ValueError(f"merge rule {i} names an id outside the vocabulary")
        if self.active:
            raise RuntimeError("set_ranked_merges cannot run while this core is encoding")
        if self.t.pairs != NULL:
            spm_pairs_free(self.t.pairs)
        self.t.pairs = spm_pairs_new(n, &l[0] if n else NULL, &r[0] if n else NULL, &m[0] if n else NULL)
        if self.t.pairs == NULL:
            raise MemoryError("cannot allocate the merge rules")
        self.t.ranked = True
        fill_symbols(&self.t, None)
        fill_ascii_pairs(&self.t)
        self.tables_ready = True
        if self.cache_ready:
            spm_cache_clear(&self.cache)
            self.full_lookups = 0
        self.t.fuse_unknown = fuse_unknown
        self.t.ignore_merges = ignore_merges
        # Only merge results can cross a boundary, and only the ids in a
        # rule are ever merged.
        buildable = bytearray(self.t.n_pieces)
        sides = bytearray(self.t.n_pieces)
        cdef uint8_t[::1] build_view = buildable
        cdef uint8_t[::1] side_view = sides
        for i in range(n):
            build_view[m[i]] = 1
            side_view[l[i]] = 1
            side_view[r[i]] = 1
        self.violators = derive_chunk_rules(&self.t, bytes(buildable), bytes(sides))

    def ranked_merges(self):
        """The merge rules set by set_ranked_merges, as (left, right, merged)
        arrays ('i') in rank order (one rule per pair: the last of a pair
        listed twice, which is the one that applies).  Read back from the C
        table, so that the tokenizer keeps no second copy of the merges
        (its pickle and fingerprint read them here)."""
        if not self.t.ranked:
            return array("i"), array("i"), array("i")
        return rules_of_pairs(self.t.pairs)

    @property
    def vocab_size(self):
        return self.t.n_pieces

    # ------------------------------------------------------------ encoding

    def encode(self, str text, bint prefix):
        """Ids of one segment: text escaped (with the dummy prefix when
        `prefix`) and merged."""
        return self.encode_text(text, prefix, NULL, 0)

    cdef list encode_text(self, str text, bint prefix, const AddedScan *screen, int mask):
        """The ids of the segment `text` (merged whole), with the dummy
        prefix when `prefix`.  With a `screen`, None instead when the text
        of an added token of a kind in `mask` occurs in it, or a surrogate:
        the text is then planned (which names the fault).  The screen reads
        the UTF-8 that is then merged: converting a text to look through it
        and again to merge it cost a few percent of a Japanese line."""
        cdef Py_ssize_t n
        cdef int rc
        cdef const char *src
        cdef Workspace *w = self.acquire()
        try:
            if short_from_storage(text):
                # Converted into the workspace, as a batch reads its strs
                # (asked for its UTF-8, a str keeps the copy for its
                # lifetime).
                n = ws_utf8_of(w, PyUnicode_KIND(text), False, PyUnicode_DATA(text), 0,
                               <size_t>PyUnicode_GET_LENGTH(text), &src)
                if n == ERR_SURROGATE:
                    if screen != NULL:
                        return None
                    PyUnicode_AsUTF8AndSize(text, &n)  # (raises CPython's UnicodeEncodeError)
                if n < 0:
                    check_rc(<int>n, &self.t, w, text)
            else:
                src = PyUnicode_AsUTF8AndSize(text, &n)
            if screen != NULL and scan_finds(screen, src, n, mask):
                return None
            if n > _NOGIL_BYTES:
                with nogil:
                    rc = encode_span(&self.t, w, src, n, prefix)
            else:
                rc = encode_span(&self.t, w, src, n, prefix)
            if rc != OK:
                check_rc(rc, &self.t, w, text)
            return self.id_list(w.ids, w.ids_len)
        finally:
            self.release(w)

    def encode_parts(self, Plan plan not None, double alpha=0.0, uint64_t seed=0):
        """Ids of a planned text (a Plan: token ids emitted as is, text
        segments escaped and merged, each without its first `skip` ids).
        With `alpha` > 0, BPE-dropout with that probability, from a
        generator seeded by `seed`.
        """
        cdef Workspace *w = self.acquire()
        w.alpha = alpha
        w.rng = seed
        try:
            encode_plan(&self.t, w, plan)
            return self.id_list(w.ids, w.ids_len)
        finally:
            self.release(w)

    def encode_parts_offsets(self, Plan plan not None):
        """Ids of a planned text with the character span of each: a token's
        span is the one it was added with; a text's ids span its characters
        from `origin` on, the first `lead` characters (synthetic: a dummy
        prefix or HF's unk token put in front) and the core's own prefix
        being zero-width, or, for a text with an alignment, the original
        offsets it gives.  Returns (ids, starts, ends).
        """
        cdef Workspace *w = self.acquire()
        try:
            return encode_plan_offsets(&self.t, w, plan)
        finally:
            self.release(w)

    def encode_parts_batch(self, list batch, bint flat=False, double alpha=0.0, seeds=None,
                           int prefix=PREFIX_ALWAYS):
        """encode_parts over a list of planned texts.  An item that is a str
        stands for the plan of one text part (nothing for ""): a text with
        nothing to split out or normalize, passed without building a plan,
        given the dummy prefix by the rule `prefix` (False/True, or
        PREFIX_UNLESS_SPACE: not before " " or "▁").

        The parts are gathered first (UTF-8 pointers into the texts' strs,
        which `batch` keeps alive), then every text is merged in one stretch
        without the GIL, so threads encoding other batches run meanwhile.
        With `flat`, returns (ids, offsets) instead of lists: every id as
        native uint32 in a bytearray, and where each text's ids start and
        the last ends, native int64 in a bytearray (n_texts + 1 of them,
        from 0) — no Python int per token.  With `alpha` > 0, BPE-dropout, text t's
        generator seeded by seeds[t] (array('Q')).
        """
        cdef Py_ssize_t n_parts, t
        cdef const uint64_t[::1] seed_view = seeds if seeds is not None else _NO_SEEDS
        cdef Py_ssize_t n_texts = len(batch)
        cdef list out
        cdef PlanPart *items = NULL
        cdef int32_t *counts = NULL
        cdef size_t *ends = NULL
        cdef int rc
        cdef Py_ssize_t failed = -1
        cdef size_t mark
        cdef int64_t *offsets
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
        w = self.acquire()
        w.alpha = alpha
        try:
            gather(&self.t, batch, items, n_parts, counts, prefix)
            with nogil:
                rc = encode_items(&self.t, w, items, counts, n_texts, ends, &failed,
                                  &seed_view[0] if seed_view.shape[0] else NULL)
            if rc != OK:
                check_rc(rc, &self.t, w, _part_text(batch, failed))
            if flat:
                offsets_out = PyByteArray_FromStringAndSize(NULL, (n_texts + 1) * sizeof(int64_t))
                offsets = <int64_t *>PyByteArray_AS_STRING(offsets_out)
                offsets[0] = 0
                for t in range(n_texts):
                    offsets[t + 1] = <int64_t>ends[t]
                return PyByteArray_FromStringAndSize(<char *>w.ids, w.ids_len * sizeof(int32_t)), offsets_out
            out = []
            mark = 0
            for t in range(n_texts):
                out.append(self.id_list(w.ids + mark, ends[t] - mark))
                mark = ends[t]
            return out
        finally:
            free(items)
            free(counts)
            free(ends)
            self.release(w)

    def split_points(self, str text, bint prefix, Py_ssize_t parts):
        """Up to parts - 1 character offsets at which the segment `text` can
        be cut so that the pieces (the first with `prefix`, the others
        without) encode to exactly the ids of the whole: chunk boundaries,
        the first at or after each equal share of its length.  Empty when
        the core merges whole segments.  For encoding one large document on
        several threads."""
        cdef Py_ssize_t n
        cdef const char *src = PyUnicode_AsUTF8AndSize(text, &n)
        if not self.t.rules.chunked or parts < 2 or n == 0:
            return []
        cdef Workspace *w = self.acquire()
        try:
            return find_split_points(&self.t, text, src, n, prefix, parts)
        finally:
            self.release(w)

# SpmCore.flags when no piece is resplit (never read then).
_NO_FLAGS = b"\0"
