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
    spmbpe/_state.py, for each pickle and fingerprint of a tokenizer.json,
    without a dict of every rule's pair.)"""
    cdef Py_ssize_t n = left.shape[0]
    if right.shape[0] != n or merged.shape[0] != n:
        raise ValueError(f"the rules' columns differ in length ({n}, {right.shape[0]}, {merged.shape[0]})")
    cdef spm_pairs *pairs = spm_pairs_new(<size_t>n, &left[0] if n else NULL, &right[0] if n else NULL,
                                          &merged[0] if n else NULL, NULL)
    if pairs == NULL:
        raise MemoryError("cannot allocate the merge rules")
    try:
        if pairs.count == <size_t>n:
            return None
        return rules_of_pairs(pairs)
    finally:
        spm_pairs_free(pairs)


cdef int id_ints_make(IdInts *ints, int32_t n) except -1:
    """Makes every id's int object, all at once (not scattered among the
    lists returned, where each would keep its allocator block alive)."""
    cdef int32_t i
    cdef object obj
    cdef PyObject **objects = <PyObject **>calloc(n, sizeof(PyObject *))
    if objects == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            obj = i
            Py_INCREF(obj)
            objects[i] = <PyObject *>obj
    except BaseException:
        for i in range(n):
            Py_XDECREF(objects[i])
        free(objects)
        raise
    ints.objects = objects
    return 0


cdef list id_ints_list(IdInts *ints, int32_t n_ids, const int32_t *ids, size_t n):
    """A list of the ids as Python ints.  Each id's int object is made once
    and shared (allocating a fresh int per token is most of the cost of
    returning a list); the GIL is held."""
    cdef list out
    cdef size_t i
    cdef PyObject *item
    if ints.objects == NULL:
        id_ints_make(ints, n_ids)
    out = PyList_New(n)
    for i in range(n):
        item = ints.objects[ids[i]]
        Py_INCREF(<object>item)
        PyList_SET_ITEM(out, i, <object>item)
    return out


cdef void id_ints_free(IdInts *ints, int32_t n) noexcept:
    cdef int32_t i
    if ints.objects != NULL:
        for i in range(n):
            Py_XDECREF(ints.objects[i])
        free(ints.objects)
        ints.objects = NULL


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
    ranked: HuggingFace tokenizers' BPE, (left, right, merged,
    fuse_unknown, ignore_merges): merges ranked by pair (rule i joins ids
    left[i] and right[i] into merged[i], rank i), characters looked up one
    by one before merging (bytes, else a (fused) unknown id, else dropped,
    as tokenizers does); the scores are then not read.
    """

    def __cinit__(self):
        memset(&self.t, 0, sizeof(CoreTables))
        self.t.unk_id = -1
        self.t.max_segment = MAX_SEGMENT_BYTES_C
        self.t.rules.escape_spaces = True
        self.tables_ready = False
        self.ints.objects = NULL
        pool_init(&self.pool)

    def __init__(self, PieceTable table not None, scores, flags, types,
                 int unk_id, bint collapse_unknown, bint byte_fallback=True, ranked=None):
        cdef Py_ssize_t n = table.size
        if len(scores) != n or len(flags) != n or len(types) != n:
            raise ValueError("scores, flags and types must have one entry per piece")
        if unk_id >= n:
            raise ValueError(f"unk_id {unk_id} is not a piece id")
        self.table = table
        self.flags = flags
        self.types = types
        buildable = load_tables(&self.t, table, self.flags, self.types, unk_id, collapse_unknown, byte_fallback)
        if ranked is not None:
            # (The rules' pair table and chunk rules; the scores and what
            # the pieces' flags make buildable are not read.)
            left, right, merged, fuse_unknown, ignore_merges = ranked
            self.violators = load_ranked_tables(&self.t, left, right, merged, fuse_unknown, ignore_merges)
            self.tables_ready = True
        else:
            self.scores = scores
            self.buildable = buildable
            self.violators = derive_chunk_rules(&self.t, buildable)
        if not self.t.any_resplit:
            # The flags are read only to resplit UNUSED pieces.
            self.flags = _NO_FLAGS
        self.t.flags = &self.flags[0]

    cdef int ready_tables(self) except -1:
        """Builds the symbols and, for sentencepiece's and llama.cpp's merges,
        the pair table from the scores, when the first call needs them (a
        tokenizer.json's core has its rules from the start: `ranked`)."""
        if self.tables_ready:
            return 0
        fill_symbols(&self.t, self.buildable)
        self.t.pairs = score_pairs(&self.t, self.buildable, self.scores)
        fill_ascii_pairs(&self.t)
        self.tables_ready = True
        return 0

    cdef list id_list(self, const int32_t *ids, size_t n):
        """A list of the ids as Python ints (IdInts)."""
        return id_ints_list(&self.ints, self.t.n_pieces, ids, n)

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
                pool_sweep_between_blocks(&self.pool, w)
                start = end
            return self.id_list(w.ids, w.ids_len)
        finally:
            self.release(w)

    def __dealloc__(self):
        id_ints_free(&self.ints, self.t.n_pieces)
        pool_free(&self.pool, &self.t)
        free_tables(&self.t)

    cdef Workspace *acquire(self) except NULL:
        """A workspace for one call (pool_acquire), once the tables are
        ready (the GIL held)."""
        if not self.tables_ready:
            self.ready_tables()
        return pool_acquire(&self.pool, &self.t)

    cdef void release(self, Workspace *w):
        pool_release(&self.pool, w)

    # ------------------------------------------------------------ cache

    @property
    def cache_capacity(self):
        """About how many chunks (words, mostly) the cache holds at most."""
        return 0 if self.pool.cache_off else spm_cache_full_load(self.pool.cache_slots)

    def set_cache_capacity(self, Py_ssize_t chunks):
        """Bounds the chunk cache to about `chunks` chunks (0: no cache;
        pool_set_capacity).  Not while a thread encodes with this core."""
        pool_set_capacity(&self.pool, &self.t, chunks)

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
        side by side (derive_chunk_rules, core/tables.pyx)."""
        return self.t.rules.cut_chars

    @property
    def escape_spaces(self):
        """Spaces become "▁" (escape_whitespaces)."""
        return self.t.rules.escape_spaces

    def set_escape_spaces(self, bint escape):
        """Whether segments have their spaces turned into "▁" (sentencepiece's
        escape_whitespaces; text from its normalizer is already escaped).
        Not while a thread encodes with this core."""
        if self.pool.active:
            raise RuntimeError("set_escape_spaces cannot run while this core is encoding")
        self.t.rules.escape_spaces = escape
        if self.tables_ready:
            set_space_symbol(&self.t)
        pool_clear_cache(&self.pool)

    # ------------------------------------------------------------ merge rules

    def ranked_merges(self):
        """The merge rules the core was given (`ranked`), as (left, right,
        merged) arrays ('i') in rank order (one rule per pair: the last of a
        pair listed twice, which is the one that applies).  Read back from the C
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
        the UTF-8 that is then merged, not a conversion of its own."""
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
        """encode_parts over a list of planned texts, on this thread
        (encode_items_serial, core/batch.pyx).  An item that is a str
        stands for the plan of one text part (nothing for ""), given the
        dummy prefix by the rule `prefix` (False/True, or
        PREFIX_UNLESS_SPACE: not before " " or "▁").  With `flat`, returns
        (ids, offsets) instead of lists: every id as native uint32 in a
        bytearray, and where each text's ids start and the last ends, native
        int64 in a bytearray (n_texts + 1 of them, from 0).  With `alpha` >
        0, BPE-dropout, text t's generator seeded by seeds[t] (array('Q')).
        """
        return encode_items_serial(self, batch, flat, alpha, seeds, prefix)

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
