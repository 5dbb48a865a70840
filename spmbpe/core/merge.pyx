# The merges of one chunk or segment (declared in core/merge.pxd).


cdef inline int32_t add_symbol(Symbol *sym, int32_t count, int32_t start,
                               int32_t n) noexcept nogil:
    """Appends a symbol linked after the previous one; `start` is its byte
    offset (or, in the ranked-merge path, its id)."""
    sym[count].prev = count - 1
    sym[count].next = count + 1
    sym[count].start = start
    sym[count].n = n
    return count + 1


cdef int merge_small(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
    """SPM-BPE over a short w.text[begin:m] (at most SMALL_BYTES): the
    symbols in arrays, linked in order, the best pair found by a scan
    from the left (so ties go to the leftmost, as in the heap), the
    merged ids kept.  A merge unlinks the right symbol: shifting the
    arrays down instead became five memmove calls per merge."""
    cdef int32_t start[SMALL_BYTES]
    cdef int32_t size[SMALL_BYTES]
    cdef int32_t tid[SMALL_BYTES]       # id of a merged symbol, -1 for a character
    cdef int32_t pair_id[SMALL_BYTES]   # the piece symbol i + the next would make, or -1
    cdef float pair_score[SMALL_BYTES]
    cdef int32_t after[SMALL_BYTES]     # the next live symbol, -1 at the end
    cdef int32_t before[SMALL_BYTES]    # the previous live symbol, -1 at the start
    cdef const char *text = w.text
    cdef int32_t count = 0, offset = begin, length, i, j, best
    cdef bint prev_unknown = False
    cdef int rc
    while offset < m:
        length = utf8_len(<uint8_t>text[offset])
        if length > m - offset:
            length = m - offset
        start[count] = offset
        size[count] = length
        tid[count] = -1
        before[count] = count - 1
        after[count] = count + 1
        count += 1
        offset += length
    if count == 0:
        return OK
    after[count - 1] = -1
    pair_id[count - 1] = -1
    for i in range(count - 1):
        pair_id[i] = mergeable(t, w, text + start[i], size[i] + size[i + 1], &pair_score[i])
    while True:
        best = -1
        i = 0
        while i >= 0:
            if pair_id[i] >= 0 and (best < 0 or pair_score[i] > pair_score[best]):
                best = i
            i = after[i]
        if best < 0:
            break
        # Symbol best absorbs the next one.
        j = after[best]
        size[best] += size[j]
        tid[best] = pair_id[best]
        after[best] = after[j]
        if after[j] >= 0:
            before[after[j]] = best
        i = before[best]
        if i >= 0:
            pair_id[i] = mergeable(t, w, text + start[i], size[i] + size[best], &pair_score[i])
        j = after[best]
        if j >= 0:
            pair_id[best] = mergeable(t, w, text + start[best], size[best] + size[j], &pair_score[best])
        else:
            pair_id[best] = -1
    i = 0
    while i >= 0:
        if tid[i] >= 0:
            prev_unknown = False
            rc = push(w, tid[i], start[i], start[i] + size[i])
        else:
            rc = emit_piece(t, w, start[i], size[i], &prev_unknown)
        if rc != OK:
            return rc
        i = after[i]
    return OK


cdef int32_t mergeable(const CoreTables *t, Workspace *w, const char *s, int32_t length,
                       float *score) noexcept nogil:
    """The id of the piece s[0:length] when the merger may build it (its
    score in score[0]), else -1: the vocabulary table's answer, through
    the workspace's memo for candidates of up to 8 bytes."""
    cdef const spm_vocab_slot *slot
    cdef uint64_t head
    cdef PairMemo *e
    if length > 8 or w.memo == NULL:
        if length <= 8:
            w.memo = <PairMemo *>calloc(MEMO_SIZE, sizeof(PairMemo))
        slot = spm_vocab_mergeable(t.vocab, s, <size_t>length)
        if slot == NULL:
            return -1
        score[0] = slot.score
        return slot.id & SPM_ID_MASK
    head = spm_head8(s, <size_t>length, 1)  # (the text buffer has slack past its end)
    e = &w.memo[((head * <uint64_t>0x9E3779B97F4A7C15) >> 52) & (MEMO_SIZE - 1)]
    if e.length == length and e.head == head:
        score[0] = e.score
        return e.id
    slot = spm_vocab_mergeable(t.vocab, s, <size_t>length)
    e.head = head
    e.length = length
    if slot == NULL:
        e.id = -1
        return -1
    e.id = slot.id & SPM_ID_MASK
    e.score = slot.score
    score[0] = slot.score
    return e.id


cdef int merge(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
    """SPM-BPE over w.text[begin:m]."""
    if t.small_merges and m - begin <= SMALL_BYTES and w.alpha <= 0.0:
        return merge_small(t, w, begin, m)
    cdef Symbol *sym = w.symbols
    cdef const char *text = w.text
    cdef int32_t count = 0
    cdef int32_t offset = begin
    cdef int32_t length, i, left, right, nxt, token_id
    cdef spm_bigram top
    cdef bint prev_unknown = False
    cdef int rc

    # One symbol per UTF-8 character, linked in order.
    while offset < m:
        length = utf8_len(<uint8_t>text[offset])
        if length > m - offset:
            length = <int32_t>(m - offset)
        count = add_symbol(sym, count, offset, length)
        offset += length
    if count == 0:
        return OK
    sym[count - 1].next = -1

    w.heap.len = 0
    if spm_heap_reserve(&w.heap, <size_t>count) != 0:
        return ERR_NOMEM
    while w.split_touched_len:
        w.split_touched_len -= 1
        w.split_left[w.split_touched[w.split_touched_len]] = 0
    for i in range(1, count):
        if push_pair(t, w, i - 1, i) != OK:
            return ERR_NOMEM

    # Best-scoring pair first; stale entries (a side already absorbed or
    # grown) are skipped rather than removed, as both references do.
    while spm_heap_pop(&w.heap, &top) == 0:
        left = top.left
        right = top.right
        if sym[left].n == 0 or sym[right].n == 0 or sym[left].n + sym[right].n != top.size:
            continue
        if skip_merge(w):
            continue
        sym[left].n += sym[right].n
        sym[right].n = 0
        nxt = sym[right].next
        sym[left].next = nxt
        if nxt >= 0:
            sym[nxt].prev = left
        if push_pair(t, w, sym[left].prev, left) != OK:
            return ERR_NOMEM
        if push_pair(t, w, left, nxt) != OK:
            return ERR_NOMEM

    i = 0
    while i >= 0:
        rc = emit_piece(t, w, sym[i].start, sym[i].n, &prev_unknown)
        if rc != OK:
            return rc
        i = sym[i].next
    return OK


cdef int merge_pairs(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
    """HuggingFace tokenizers' BPE (Word::merge_all) over w.text[begin:m].

    A symbol's `start` holds its id.  The agenda is ordered by rank, then
    position; an entry is stale unless the pair now at its position
    still joins into the same id (tokenizers' own test)."""
    cdef Symbol *sym = w.symbols
    cdef int32_t count, token_id, j, offset
    if t.ignore_merges and m > begin:
        token_id = spm_vocab_find_padded(t.vocab, w.text + begin, <size_t>(m - begin))
        if token_id >= 0:
            return push(w, token_id, begin, m)
    count = ranked_symbols(t, w, begin, m)
    if count == 0:
        return OK
    if t.small_merges and count <= SMALL_BYTES and w.alpha <= 0.0:
        merge_ranked_small(t, sym, count)
    elif merge_ranked_heap(t, w, count) != OK:
        return ERR_NOMEM
    j = 0
    offset = begin
    while j >= 0:
        if push(w, sym[j].start, offset, offset + sym[j].n) != OK:
            return ERR_NOMEM
        offset += sym[j].n
        j = sym[j].next
    return OK


cdef int32_t ranked_symbols(const CoreTables *t, Workspace *w, int32_t begin, int32_t m) noexcept nogil:
    """tokenizers' first symbols of w.text[begin:m] into w.symbols, linked
    in order (each `start` an id); returns their number."""
    cdef Symbol *sym = w.symbols
    cdef const char *text = w.text
    cdef int32_t count = 0, offset = begin, length, token_id, j
    cdef int32_t unk_len = 0
    while offset < m:
        length = utf8_len(<uint8_t>text[offset])
        if length > m - offset:
            length = <int32_t>(m - offset)
        token_id = char_id(t, w, text + offset, length)
        if token_id >= 0:
            if unk_len:
                count = add_symbol(sym, count, t.unk_id, unk_len)
                unk_len = 0
            count = add_symbol(sym, count, token_id, length)
        elif t.byte_fallback:
            if unk_len:
                count = add_symbol(sym, count, t.unk_id, unk_len)
                unk_len = 0
            for j in range(length):
                count = add_symbol(sym, count, t.byte_ids[<uint8_t>text[offset + j]], 1)
        elif t.unk_id >= 0:
            if unk_len and not t.fuse_unknown:
                count = add_symbol(sym, count, t.unk_id, unk_len)
                unk_len = 0
            unk_len += length
        # else: tokenizers drops a character it can neither look up nor
        # spell in bytes, and so does this.
        offset += length
    if unk_len:
        count = add_symbol(sym, count, t.unk_id, unk_len)
    if count:
        sym[count - 1].next = -1
    return count


cdef void merge_ranked_small(const CoreTables *t, Symbol *sym, int32_t count) noexcept nogil:
    """The merges of merge_ranked_heap for a few symbols, by a scan for the
    lowest rank from the left (ties -- one pair at two places -- go to the
    leftmost, as in the heap).  The same merges: a heap entry is only
    ever stale for a pair no longer adjacent, since a symbol changes only
    by growing, and a longer text is another piece."""
    cdef int32_t rank[SMALL_BYTES]     # the rule joining symbol i and the next, or INT32_MAX
    cdef int32_t merged[SMALL_BYTES]
    cdef int32_t i, best, best_rank
    for i in range(count):
        rank_of(t, sym, i, &rank[i], &merged[i])
    while True:
        best = -1
        best_rank = INT32_MAX
        i = 0
        while i >= 0:
            if rank[i] < best_rank:
                best = i
                best_rank = rank[i]
            i = sym[i].next
        if best < 0:
            return
        absorb_next(sym, best, merged[best])
        i = sym[best].prev
        if i >= 0:
            rank_of(t, sym, i, &rank[i], &merged[i])
        rank_of(t, sym, best, &rank[best], &merged[best])


cdef inline void absorb_next(Symbol *sym, int32_t pos, int32_t merged) noexcept nogil:
    """Symbol `pos` takes in the next one and becomes the piece `merged`
    (ranked merges: a symbol's `start` is its id)."""
    cdef int32_t nxt = sym[pos].next
    sym[pos].start = merged
    sym[pos].n += sym[nxt].n
    sym[nxt].n = 0
    sym[pos].next = sym[nxt].next
    if sym[pos].next >= 0:
        sym[sym[pos].next].prev = pos


cdef inline void rank_of(const CoreTables *t, const Symbol *sym, int32_t left, int32_t *rank,
                         int32_t *merged) noexcept nogil:
    """The rank and result of the rule joining symbol `left` with the next
    one; INT32_MAX when there is none."""
    cdef const spm_pair_slot *rule
    rank[0] = INT32_MAX
    if sym[left].next < 0:
        return
    rule = spm_pairs_find(t.pairs, sym[left].start, sym[sym[left].next].start)
    if rule != NULL:
        rank[0] = rule.rank
        merged[0] = rule.merged


cdef int merge_ranked_heap(const CoreTables *t, Workspace *w, int32_t count) noexcept nogil:
    """tokenizers' merge loop over w.symbols[0:count], by its agenda."""
    cdef Symbol *sym = w.symbols
    cdef int32_t j, pos, nxt, prv
    cdef const spm_pair_slot *rule
    cdef spm_bigram top
    w.heap.len = 0
    if spm_heap_reserve(&w.heap, <size_t>count) != 0:
        return ERR_NOMEM
    for j in range(count - 1):
        if push_rule(t, w, j) != OK:
            return ERR_NOMEM
    while spm_heap_pop(&w.heap, &top) == 0:
        pos = top.left
        if sym[pos].n == 0 or sym[pos].next == -1:
            continue
        nxt = sym[pos].next
        rule = spm_pairs_find(t.pairs, sym[pos].start, sym[nxt].start)
        if rule == NULL or rule.merged != top.size:
            continue
        if skip_merge(w):
            continue
        absorb_next(sym, pos, rule.merged)
        prv = sym[pos].prev
        if prv >= 0 and push_rule(t, w, prv) != OK:
            return ERR_NOMEM
        if push_rule(t, w, pos) != OK:
            return ERR_NOMEM
    return OK


cdef int push_rule(const CoreTables *t, Workspace *w, int32_t left) noexcept nogil:
    """Queues the rule joining symbol `left` with its next one, if any.
    Ranks become scores (-rank) so the heap's order is tokenizers'."""
    cdef Symbol *sym = w.symbols
    cdef int32_t right = sym[left].next
    cdef const spm_pair_slot *rule
    cdef spm_bigram b
    if right < 0:
        return OK
    rule = spm_pairs_find(t.pairs, sym[left].start, sym[right].start)
    if rule == NULL:
        return OK
    b.score = -<float>rule.rank
    b.left = left
    b.right = right
    b.size = rule.merged
    if spm_heap_push(&w.heap, b) != 0:
        return ERR_NOMEM
    return OK


cdef int push_pair(const CoreTables *t, Workspace *w, int32_t left, int32_t right) noexcept nogil:
    """Queues the merge of two adjacent symbols when the result is a
    piece the merger may build."""
    cdef Symbol *sym = w.symbols
    cdef spm_bigram b
    cdef int32_t token_id
    if left < 0 or right < 0:
        return OK
    b.size = sym[left].n + sym[right].n
    token_id = mergeable(t, w, w.text + sym[left].start, b.size, &b.score)
    if token_id < 0:
        return OK
    b.left = left
    b.right = right
    if spm_heap_push(&w.heap, b) != 0:
        return ERR_NOMEM
    if t.any_resplit and t.flags[token_id] & SPM_FLAG_RESPLIT:
        # sentencepiece records the halves when it queues the pair (the
        # last queued pair for a piece wins), and splits an UNUSED piece
        # back into them on output.
        return remember_split(t, w, token_id, sym[left].n)
    return OK


cdef int remember_split(const CoreTables *t, Workspace *w, int32_t token_id,
                        int32_t left_n) noexcept nogil:
    """Records that the last pair queued to build `token_id` (to resplit)
    has a left half of `left_n` bytes."""
    if w.split_left == NULL:
        w.split_left = <int32_t *>calloc(t.n_pieces, sizeof(int32_t))
        if w.split_left == NULL:
            return ERR_NOMEM
    if w.split_left[token_id] == 0:
        if grow_int32(&w.split_touched, &w.split_touched_cap, w.split_touched_len + 1) != OK:
            return ERR_NOMEM
        w.split_touched[w.split_touched_len] = token_id
        w.split_touched_len += 1
    w.split_left[token_id] = left_n
    return OK


cdef inline int push(Workspace *w, int32_t token_id, int32_t start, int32_t end) noexcept nogil:
    """Appends an id and, when spans are wanted, the bytes of the
    escaped segment it stands for."""
    if w.want_spans:
        if grow_int32(&w.spans, &w.spans_cap, 2 * (w.ids_len + 1)) != OK:
            return ERR_NOMEM
        w.spans[2 * w.ids_len] = start
        w.spans[2 * w.ids_len + 1] = end
    return ws_push_id(w, token_id)


cdef int emit_piece(const CoreTables *t, Workspace *w, int32_t start, int32_t n,
                    bint *prev_unknown) noexcept nogil:
    """Appends the id(s) of the final symbol text[start:start+n]."""
    cdef int32_t token_id
    cdef int32_t j, left_n
    cdef int rc
    if n <= 4 and n == utf8_len(<uint8_t>w.text[start]):
        token_id = char_id(t, w, w.text + start, n)
    else:
        token_id = spm_vocab_find_padded(t.vocab, w.text + start, <size_t>n)
    if token_id >= 0:
        if w.split_left != NULL and (t.flags[token_id] & SPM_FLAG_RESPLIT):
            left_n = w.split_left[token_id]
            if 0 < left_n < n:
                rc = emit_piece(t, w, start, left_n, prev_unknown)
                if rc != OK:
                    return rc
                return emit_piece(t, w, start + left_n, n - left_n, prev_unknown)
        prev_unknown[0] = False
        return push(w, token_id, start, start + n)
    # Only a single character reaches here: every merge builds a piece.
    # Its UTF-8 bytes as <0xNN> pieces with byte fallback (each spanning
    # the whole character), else <unk>.
    if t.byte_fallback:
        prev_unknown[0] = False
        for j in range(n):
            if push(w, t.byte_ids[<uint8_t>w.text[start + j]], start, start + n) != OK:
                return ERR_NOMEM
        return OK
    if t.unk_id < 0:
        w.bad_start = start
        w.bad_len = n
        return ERR_UNENCODABLE
    # sentencepiece merges a run of unknown pieces into one <unk>.
    if t.collapse_unknown and prev_unknown[0]:
        if w.want_spans:
            w.spans[2 * w.ids_len - 1] = start + n
        return OK
    prev_unknown[0] = True
    return push(w, t.unk_id, start, start + n)
