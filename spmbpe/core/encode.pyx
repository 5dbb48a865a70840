# The encode kernel (declared in core/encode.pxd): a span of UTF-8 to ids.
#
# encode_span is the one way from text to ids: encode, encode_batch, the
# command line's lines, offsets and planned texts all call it, and every id
# it makes leaves through put_id.  A span is read where it lies (no escaped
# copy: a space stands for "▁") and cut into chunks no merge can cross
# (docs/architecture.md, "The chunking invariant"); a chunk seen before
# takes its ids from the shared cache (csrc/spm_cache.h), keyed by its raw
# bytes; any other is merged:
#
#  - its characters become symbol ids (CoreTables.ascii_sym, .chars);
#  - adjacent symbols merge by the pair table built at load (.pairs: left,
#    right -> piece, rank), the lowest rank first and the leftmost on ties,
#    as sentencepiece's bpe_model.cc, llama.cpp's llm_tokenizer_spm and
#    tokenizers' Word::merge_all all do -- over the C binary heap, or for a
#    few symbols by a linear scan that picks the same pairs;
#  - the final symbols are written out: a piece as its id (an UNUSED one
#    split again into the pair that built it, sentencepiece's resegment),
#    a character that is no piece as its bytes (byte fallback) or the
#    unknown id.

cdef extern from *:
    """
    #define SPM_INT32_MAX_U ((uint32_t)0x7FFFFFFF)
    """

# Chunks of up to this many symbols merge by a linear scan (merge_small).
cdef enum:
    SMALL_SYMBOLS = 32

# A chunk of ASCII text longer than this is cut further where the finer
# rules allow (fine_cuts), so that long runs without spaces (code, URLs)
# become cacheable chunks.
cdef enum:
    FINE_BYTES = 32

# A span of fewer bytes (its dummy prefix's "▁" counted as three) is merged
# whole, without the cache.
cdef enum:
    SHORT_SPAN = 8

# The pair of symbols at i has no merge.
cdef int32_t NO_RANK = INT32_MAX


# ---------------------------------------------------------------- output

cdef inline int put_id(Workspace *w, int32_t token_id, int32_t start, int32_t end) noexcept nogil:
    """Appends an id, and its span [start, end) of the span's bytes when
    spans are wanted.  The caller made room (ws_ids_room)."""
    cdef size_t k = w.ids_len
    w.ids[k] = token_id
    if w.want_spans:
        w.spans[2 * k] = start
        w.spans[2 * k + 1] = end
    w.ids_len = k + 1
    return OK


cdef inline void put_cached(Workspace *w, const int32_t *ids, size_t n) noexcept nogil:
    """put_id for each of a cached chunk's ids (spans are never wanted with
    the cache).  Four ids whatever their number when they are few: the ids
    buffer and the cache's arena have room past their ends, and a copy
    loop's branches followed each chunk's count."""
    cdef int32_t *out = w.ids + w.ids_len
    cdef size_t k
    if n <= 4:
        memcpy(out, ids, 4 * sizeof(int32_t))
    else:
        for k in range(n):
            out[k] = ids[k]
    w.ids_len += n


# ---------------------------------------------------------------- characters

cdef inline bint marker_at(const CoreTables *t, const char *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Whether s[i] starts a "▁": a space when spaces are escaped (llama.cpp
    and sentencepiece's identity normalizer turn only U+0020 into it), or
    U+2581 itself."""
    cdef uint8_t u = <uint8_t>s[i]
    if u == 0x20:
        return t.rules.escape_spaces
    return u == 0xE2 and i + 3 <= n and <uint8_t>s[i + 1] == 0x96 and <uint8_t>s[i + 2] == 0x81


cdef inline Py_ssize_t char_len(const char *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The bytes of the character at s[i] (cut short at n)."""
    cdef Py_ssize_t length = utf8_len(<uint8_t>s[i])
    return length if length <= n - i else n - i


cdef inline int32_t char_symbol(const CoreTables *t, const char *s, Py_ssize_t i, Py_ssize_t length,
                                Py_ssize_t n) noexcept nogil:
    """The symbol of the character s[i:i+length] (not ASCII)."""
    if length == 3 and <uint8_t>s[i] == 0xE2 and <uint8_t>s[i + 1] == 0x96 and <uint8_t>s[i + 2] == 0x81:
        return t.marker_sym
    return spm_chars_find(t.chars, spm_char_key(spm_load8(s, <size_t>i, <size_t>n), <int>length), NO_SYMBOL)


# ---------------------------------------------------------------- chunks

cdef Py_ssize_t chunk_end(const CoreTables *t, const char *s, Py_ssize_t i, Py_ssize_t n, bint prefix,
                          bint *wide, Py_ssize_t *body) noexcept nogil:
    """Where the chunk that starts at s[i] ends: past the "▁"s that open it
    (body[0]: where they end), before the next "▁" (the point no merge
    crosses when t.rules.chunked, unless a piece holding "x▁" lies across
    it: `prefix`, the span has the dummy prefix).  wide[0] is set when a
    byte after its opening "▁"s is not ASCII.  Eight bytes a step: a space
    or the lead byte of "▁" found in a word, not a test per byte."""
    cdef uint64_t word, hits, high = 0
    cdef int k
    cdef bint spaces = t.rules.escape_spaces
    while i < n and marker_at(t, s, i, n):
        i += 1 if s[i] == c' ' else 3
    body[0] = i
    while i + 8 <= n:
        memcpy(&word, s + i, 8)
        hits = spm_bytes_eq(word, 0xE2)
        if spaces:
            hits |= spm_bytes_eq(word, 0x20)
        if hits == 0:
            high |= word & <uint64_t>0x8080808080808080
            i += 8
            continue
        k = spm_first_byte(hits)
        high |= spm_bytes_before(word & <uint64_t>0x8080808080808080, k)
        i += k
        if marker_at(t, s, i, n) and (t.rules.n_violations == 0 or not crossed(t, s, i, n, prefix)):
            wide[0] = high != 0
            return i
        if s[i] != c' ':
            high = 1
        i += 1
    while i < n:
        if marker_at(t, s, i, n) and (t.rules.n_violations == 0 or not crossed(t, s, i, n, prefix)):
            break
        if <uint8_t>s[i] >= 0x80:
            high = 1
        i += 1
    wide[0] = high != 0
    return i


cdef bint crossed(const CoreTables *t, const char *s, Py_ssize_t i, Py_ssize_t n, bint prefix) noexcept nogil:
    """Whether one of the pieces holding "x▁" (ChunkRules.violation) lies
    across the point before the "▁" at s[i], as the text reads with its
    spaces as "▁" (and the dummy prefix before it)."""
    cdef int32_t v
    cdef const char *piece
    for v in range(t.rules.n_violations):
        piece = t.rules.violator_bytes + t.rules.violation[v][0]
        if escaped_before(t, s, i, piece, t.rules.violation[v][2], prefix) and \
                escaped_from(t, s, i, n, piece + t.rules.violation[v][2],
                             t.rules.violation[v][1] - t.rules.violation[v][2]):
            return True
    return False


cdef bint escaped_from(const CoreTables *t, const char *s, Py_ssize_t p, Py_ssize_t n, const char *piece,
                       int32_t m) noexcept nogil:
    """Whether the text from s[p], with its spaces as "▁", starts with
    piece[0:m]."""
    cdef int32_t j = 0
    while j < m:
        if p >= n:
            return False
        if s[p] == c' ' and t.rules.escape_spaces:
            if j + 3 > m or memcmp(piece + j, MARKER, 3) != 0:
                return False
            j += 3
        else:
            if piece[j] != s[p]:
                return False
            j += 1
        p += 1
    return True


cdef bint escaped_before(const CoreTables *t, const char *s, Py_ssize_t p, const char *piece, int32_t m,
                         bint prefix) noexcept nogil:
    """Whether the text before s[p], with its spaces as "▁" (after the
    dummy prefix's when `prefix`), ends with piece[0:m]."""
    cdef int32_t j = m
    while j > 0:
        if p == 0:
            return prefix and j == 3 and memcmp(piece, MARKER, 3) == 0
        p -= 1
        if s[p] == c' ' and t.rules.escape_spaces:
            if j < 3 or memcmp(piece + j - 3, MARKER, 3) != 0:
                return False
            j -= 3
        else:
            j -= 1
            if piece[j] != s[p]:
                return False
    return True


cdef inline bint isolated_byte(uint64_t isolated, uint8_t u) noexcept nogil:
    """Whether byte u is one of ChunkRules.isolated (bit u, below 0x40)."""
    return u < 0x40 and (isolated >> u) & 1


cdef inline bint fine_cut(const CoreTables *t, const char *s, Py_ssize_t p, Py_ssize_t p_len, Py_ssize_t c,
                          Py_ssize_t c_len, Py_ssize_t n) noexcept nogil:
    """Whether a chunk may also be cut between the characters s[p:p+p_len]
    and s[c:c+c_len] (adjacent, neither a "▁"): beside a byte no piece of
    two or more bytes holds, or between two characters no buildable piece
    holds side by side (spm_charpairs.h; ASCII pairs by bits)."""
    cdef uint8_t a = <uint8_t>s[p], b = <uint8_t>s[c]
    if (p_len == 1 and isolated_byte(t.rules.isolated, a)) or (c_len == 1 and isolated_byte(t.rules.isolated, b)):
        return True
    if spm_charpairs_wanted(<int>p_len, <int>c_len):
        return not spm_charpairs_has(t.rules.char_pairs,
                                     spm_low_bytes(spm_load8(s, <size_t>p, <size_t>n), <size_t>(p_len + c_len)))
    return not spm_ascii_pair_held(t.rules.ascii_held, a, b)


cdef inline Py_ssize_t opened(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t b,
                              Py_ssize_t n) noexcept nogil:
    """Where the "▁"s that open the chunk s[a:b] end."""
    while a < b and marker_at(t, s, a, n):
        a += 1 if s[a] == c' ' else 3
    return a


cdef bint fine_cut_at(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t open_end, Py_ssize_t p,
                      Py_ssize_t n) noexcept nogil:
    """Whether the chunk that starts at s[a], its opening "▁"s ending at
    `open_end`, is also cut at p (a character's start, open_end or later):
    by fine_cut between the characters on either side, or, right after the
    opening "▁"s, before a byte no piece holds with a neighbour.  Never
    beside a "▁" within it (one a piece holding "x▁" lies across)."""
    cdef Py_ssize_t q = p - 1
    if p == open_end:
        return p > a and isolated_byte(t.rules.isolated, <uint8_t>s[p])
    if marker_at(t, s, p, n):
        return False
    while (<uint8_t>s[q] & 0xC0) == 0x80:
        q -= 1
    if marker_at(t, s, q, n):
        return False
    return fine_cut(t, s, q, p - q, p, char_len(s, p, n), n)


cdef int fine_chunks(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                     Py_ssize_t n, bint virtual_lead, const spm_cache_view *view) noexcept nogil:
    """encode_chunk for the chunk s[a:b], cut further where fine_cut_at
    allows: Chinese and Japanese have no spaces, and a word beside
    punctuation is then the same chunk whatever the punctuation."""
    cdef Py_ssize_t open_end = opened(t, s, a, b, n), start = a, p
    cdef bint lead = virtual_lead
    cdef int rc
    p = open_end
    while p < b:
        if fine_cut_at(t, s, a, open_end, p, n):
            rc = encode_chunk(t, w, s, start, p, n, lead, view)
            if rc != OK:
                return rc
            lead = False
            start = p
        p += char_len(s, p, b)
    return encode_chunk(t, w, s, start, b, n, lead, view)


cdef int encode_span(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                     bint prefix) noexcept nogil:
    """Appends the ids of the span src[0:n] (valid UTF-8), with the dummy
    prefix "▁" before it when `prefix`: chunk by chunk through the cache
    where the vocabulary allows (t.rules.chunked), else merged whole."""
    cdef Py_ssize_t i = 0, end, body
    cdef bint wide, lead = prefix
    cdef spm_cache_view view
    cdef spm_cache_view *seen = NULL
    cdef int rc
    if n > t.max_segment:
        return ERR_TOO_LONG
    if n == 0 and not prefix:
        return OK
    if not t.rules.chunked or w.alpha > 0.0 or n + 3 * prefix < SHORT_SPAN:
        # (Sampling merges whole spans, as sentencepiece does, and never
        # caches; a short span is merged sooner than looked up.)
        if w.want_bounds:
            if grow_int32(&w.bounds, &w.bounds_cap, w.bounds_len + 1) != OK:
                return ERR_NOMEM
            w.bounds[w.bounds_len] = <int32_t>n
            w.bounds_len += 1
        return merge_whole(t, w, src, n, prefix)
    if t.cache != NULL and not w.want_spans:
        spm_cache_view_of(t.cache, &view)
        seen = &view
    if n == 0:
        return encode_chunk(t, w, src, 0, 0, 0, True, seen)
    while i < n:
        end = chunk_end(t, src, i, n, prefix, &wide, &body)
        if t.rules.cut_chars and (wide or end - body > FINE_BYTES):
            rc = fine_chunks(t, w, src, i, end, n, lead, seen)
        else:
            rc = encode_chunk(t, w, src, i, end, n, lead, seen)
        if rc != OK:
            return rc
        lead = False
        i = end
    return OK


cdef int encode_chunk(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                      Py_ssize_t n, bint virtual_lead, const spm_cache_view *view) noexcept nogil:
    """Appends the ids of the chunk s[a:b] (after the dummy prefix's "▁"
    when `virtual_lead`): one character as its symbol, a chunk in the cache
    as its cached ids, any other merged (and cached)."""
    cdef spm_chunk_key key
    cdef const spm_cache_entry *hit
    cdef Py_ssize_t length = b - a, skip = 0
    cdef int32_t sym
    cdef size_t mark
    cdef int rc
    if ws_ids_room(w, <size_t>(3 * length + 3)) != OK:
        return ERR_NOMEM
    if w.want_bounds:
        # (What spmbpe._testing.chunk_bounds reports.)
        if grow_int32(&w.bounds, &w.bounds_cap, w.bounds_len + 1) != OK:
            return ERR_NOMEM
        w.bounds[w.bounds_len] = <int32_t>b
        w.bounds_len += 1
    if not virtual_lead and length <= 4 and utf8_len(<uint8_t>s[a]) >= length:
        # One character: its symbol is its id, when it is a piece (looked
        # up faster than the cache is).
        sym = t.ascii_sym[<uint8_t>s[a]] if length == 1 else char_symbol(t, s, a, length, n)
        if 0 <= sym < t.n_pieces:
            return put_id(w, sym, <int32_t>a, <int32_t>b)
    elif view != NULL and length <= SPM_CACHE_MAX_KEY + 3:
        if not virtual_lead and marker_at(t, s, a, n):
            skip = 1 if s[a] == c' ' else 3
        spm_cache_key_of(&key, s + a + skip, <size_t>(length - skip), <size_t>(n - a - skip),
                         virtual_lead or skip > 0)
        hit = spm_cache_view_get(view, &key)
        w.cache_lookups += 1
        if hit != NULL:
            spm_cache_mark(hit)
            put_cached(w, spm_cache_ids(hit), hit.ids_len)
            return OK
        mark = w.ids_len
        rc = merge_chunk(t, w, s, a, b, n, virtual_lead)
        if rc == OK:
            spm_cache_put(t.cache, &w.cache_writer, &key, w.ids + mark, w.ids_len - mark)
        return rc
    return merge_chunk(t, w, s, a, b, n, virtual_lead)


# ---------------------------------------------------------------- symbols

cdef inline void add_symbol(Symbol *sym, int32_t k, int32_t token_id, Py_ssize_t start,
                            Py_ssize_t end) noexcept nogil:
    sym[k].id = token_id
    sym[k].start = <int32_t>start
    sym[k].end = <int32_t>end
    sym[k].prev = k - 1
    sym[k].next = k + 1
    sym[k].gen = <uint32_t>k


cdef int32_t symbols_of(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                        Py_ssize_t n, bint virtual_lead) noexcept nogil:
    """The symbols of s[a:b] into w.symbols, linked in order (the dummy
    prefix's "▁" first when `virtual_lead`); returns their number, or
    ERR_NOMEM.  sentencepiece's and llama.cpp's: each character, its
    piece's id or a virtual id or NO_SYMBOL.  tokenizers' (t.ranked): each
    character's piece, else its bytes' pieces (byte fallback), else the
    unknown id (fused with the one before, with fuse_unk), else nothing
    (tokenizers drops it)."""
    cdef Symbol *sym
    cdef int32_t k = 0, token_id
    cdef Py_ssize_t i = a, length, j, unk_start = -1, unk_end = 0
    cdef const char *spelled
    cdef uint8_t u
    if ws_symbols_room(w, <size_t>(3 * (b - a) + 2)) != OK:
        return ERR_NOMEM
    sym = w.symbols
    if virtual_lead:
        if not t.ranked or t.marker_sym >= 0:
            add_symbol(sym, 0, t.marker_sym, a, a)
            k = 1
        elif t.byte_fallback:
            for j in range(3):
                add_symbol(sym, k, t.byte_ids[<uint8_t>MARKER[j]], a, a)
                k += 1
        elif t.unk_id >= 0:
            unk_start = a
            unk_end = a
    while i < b:
        u = <uint8_t>s[i]
        if u < 0x80:
            length = 1
            token_id = t.ascii_sym[u]
        else:
            length = char_len(s, i, b)
            token_id = char_symbol(t, s, i, length, n)
        if not t.ranked or token_id >= 0:
            if unk_start >= 0:
                add_symbol(sym, k, t.unk_id, unk_start, unk_end)
                k += 1
                unk_start = -1
            add_symbol(sym, k, token_id, i, i + length)
            k += 1
        elif t.byte_fallback:
            if unk_start >= 0:
                add_symbol(sym, k, t.unk_id, unk_start, unk_end)
                k += 1
                unk_start = -1
            spelled = MARKER if (u == 0x20 and t.rules.escape_spaces) else s + i
            for j in range(3 if spelled == MARKER else length):
                add_symbol(sym, k, t.byte_ids[<uint8_t>spelled[j]], i, i + length)
                k += 1
        elif t.unk_id >= 0:
            if unk_start >= 0 and not t.fuse_unknown:
                add_symbol(sym, k, t.unk_id, unk_start, unk_end)
                k += 1
                unk_start = -1
            if unk_start < 0:
                unk_start = i
            unk_end = i + length
        i += length
    if unk_start >= 0:
        add_symbol(sym, k, t.unk_id, unk_start, unk_end)
        k += 1
    if k:
        sym[k - 1].next = -1
    return k


# ---------------------------------------------------------------- merging

cdef int merge_whole(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t n,
                     bint prefix) noexcept nogil:
    """A span merged as one chunk (a vocabulary whose merges may cross any
    point, sampling), without the cache.  With tokenizers' ignore_merges, a
    span that is a piece as a whole is that piece."""
    cdef int32_t token_id
    if ws_ids_room(w, <size_t>(3 * n + 3)) != OK:
        return ERR_NOMEM
    if t.ignore_merges:
        token_id = whole_piece(t, w, s, n, prefix)
        if token_id == ERR_NOMEM:
            return ERR_NOMEM
        if token_id >= 0:
            return put_id(w, token_id, 0, <int32_t>n)
    return merge_chunk(t, w, s, 0, n, n, prefix)


cdef int32_t whole_piece(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t n,
                         bint prefix) noexcept nogil:
    """The piece whose text is the span with its spaces as "▁" (and the
    prefix), or -1; ERR_NOMEM."""
    cdef size_t need = 3 * <size_t>n + 3
    cdef size_t m = 0
    cdef Py_ssize_t i
    cdef char *grown
    if need > w.scratch_cap:
        grown = <char *>realloc(w.scratch, need)
        if grown == NULL:
            return ERR_NOMEM
        w.scratch = grown
        w.scratch_cap = need
    if prefix:
        memcpy(w.scratch, MARKER, 3)
        m = 3
    for i in range(n):
        if s[i] == c' ' and t.rules.escape_spaces:
            memcpy(w.scratch + m, MARKER, 3)
            m += 3
        else:
            w.scratch[m] = s[i]
            m += 1
    return spm_vocab_find(t.vocab, w.scratch, m)


cdef int merge_chunk(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                     Py_ssize_t n, bint virtual_lead) noexcept nogil:
    """Merges the chunk s[a:b] and appends its ids."""
    cdef int32_t count
    cdef int rc
    while w.split_touched_len:
        # (The pairs an earlier chunk queued are not this one's.)
        w.split_touched_len -= 1
        w.split_left[w.split_touched[w.split_touched_len]] = 0
    count = symbols_of(t, w, s, a, b, n, virtual_lead)
    if count <= 0:
        return count
    if count >= 2:
        if t.small_merges and count <= SMALL_SYMBOLS and w.alpha <= 0.0:
            merge_small(t, w.symbols, count)
        else:
            rc = merge_heap(t, w, count)
            if rc != OK:
                return rc
    return put_symbols(t, w, s, n, virtual_lead)


cdef inline int32_t pair_rank(const CoreTables *t, const Symbol *sym, int32_t left,
                              int32_t *merged) noexcept nogil:
    """The rank of the merge of symbol `left` with the next one (its piece
    in merged[0]), or NO_RANK."""
    cdef int32_t right = sym[left].next
    cdef const spm_pair_slot *slot
    if right < 0 or sym[left].id < 0 or sym[right].id < 0:
        return NO_RANK
    slot = spm_pairs_find(t.pairs, sym[left].id, sym[right].id)
    if slot == NULL:
        return NO_RANK
    merged[0] = slot.merged
    return slot.rank


cdef inline void absorb_next(Symbol *sym, int32_t left, int32_t merged, uint32_t gen) noexcept nogil:
    """Symbol `left` takes in the next one and becomes the piece `merged`."""
    cdef int32_t right = sym[left].next
    cdef int32_t after = sym[right].next
    sym[left].id = merged
    sym[left].end = sym[right].end
    sym[left].gen = gen
    sym[left].next = after
    if after >= 0:
        sym[after].prev = left
    sym[right].next = -2


cdef void merge_small(const CoreTables *t, Symbol *sym, int32_t count) noexcept nogil:
    """The merges of merge_heap for a few symbols: the lowest rank found by
    a scan from the left (so ties go to the leftmost, as in the heap), the
    pairs beside a merge looked up again.  The same merges: a pair the heap
    holds is stale only once it is no longer adjacent."""
    cdef int32_t rank[SMALL_SYMBOLS]
    cdef int32_t merged[SMALL_SYMBOLS]
    cdef int32_t i, best, best_rank
    cdef uint32_t gen = <uint32_t>count
    for i in range(count):
        rank[i] = pair_rank(t, sym, i, &merged[i])
    while True:
        best = -1
        best_rank = NO_RANK
        i = 0
        while i >= 0:
            if rank[i] < best_rank:
                best = i
                best_rank = rank[i]
            i = sym[i].next
        if best < 0:
            return
        absorb_next(sym, best, merged[best], gen)
        gen += 1
        i = sym[best].prev
        if i >= 0:
            rank[i] = pair_rank(t, sym, i, &merged[i])
        rank[best] = pair_rank(t, sym, best, &merged[best])


cdef int merge_heap(const CoreTables *t, Workspace *w, int32_t count) noexcept nogil:
    """sentencepiece's merge loop (bpe_model.cc) over w.symbols[0:count]:
    every adjacent pair with a merge queued on the heap; the first popped
    is merged unless stale (a side absorbed or grown since it was queued),
    and the pairs it makes with its neighbours are queued.  O(n log n)."""
    cdef Symbol *sym = w.symbols
    cdef spm_bigram top
    cdef int32_t left, right
    cdef uint32_t gen = <uint32_t>count
    w.heap.len = 0
    if spm_heap_reserve(&w.heap, <size_t>count) != 0:
        return ERR_NOMEM
    for left in range(count - 1):
        if queue_pair(t, w, left) != OK:
            return ERR_NOMEM
    while spm_heap_pop(&w.heap, &top) == 0:
        left = <int32_t>(top.key & <uint64_t>0xFFFFFFFF)
        right = sym[left].next
        if right < 0 or sym[right].gen != top.right_gen:
            continue
        if skip_merge(w):
            continue
        absorb_next(sym, left, top.merged, gen)
        gen += 1
        if sym[left].prev >= 0 and queue_pair(t, w, sym[left].prev) != OK:
            return ERR_NOMEM
        if queue_pair(t, w, left) != OK:
            return ERR_NOMEM
    return OK


cdef int queue_pair(const CoreTables *t, Workspace *w, int32_t left) noexcept nogil:
    """Queues the merge of symbol `left` with the next one, if there is one."""
    cdef Symbol *sym = w.symbols
    cdef spm_bigram b
    cdef int32_t rank = pair_rank(t, sym, left, &b.merged)
    if rank == NO_RANK:
        return OK
    b.key = spm_bigram_key(rank, left)
    b.right_gen = sym[sym[left].next].gen
    if spm_heap_push(&w.heap, b) != 0:
        return ERR_NOMEM
    if t.any_resplit and t.flags[b.merged] & SPM_FLAG_RESPLIT:
        # sentencepiece records the halves when it queues the pair (the
        # last queued pair for a piece wins), and splits an UNUSED piece
        # back into them on output.
        return remember_split(t, w, b.merged, sym[left].id, sym[sym[left].next].id)
    return OK


cdef int remember_split(const CoreTables *t, Workspace *w, int32_t token_id, int32_t left,
                        int32_t right) noexcept nogil:
    """Records that the last pair queued to build `token_id` (to resplit)
    is the symbols (left, right)."""
    if w.split_left == NULL:
        w.split_left = <int32_t *>calloc(t.n_pieces, sizeof(int32_t))
        w.split_right = <int32_t *>calloc(t.n_pieces, sizeof(int32_t))
        if w.split_left == NULL or w.split_right == NULL:
            return ERR_NOMEM
    if w.split_left[token_id] == 0:
        if grow_int32(&w.split_touched, &w.split_touched_cap, w.split_touched_len + 1) != OK:
            return ERR_NOMEM
        w.split_touched[w.split_touched_len] = token_id
        w.split_touched_len += 1
    w.split_left[token_id] = left + 1
    w.split_right[token_id] = right
    return OK


# ---------------------------------------------------------------- writing out

cdef int put_symbols(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t n,
                     bint virtual_lead) noexcept nogil:
    """Writes out the merged symbols in order."""
    cdef const Symbol *sym = w.symbols
    cdef int32_t i = 0
    cdef bint prev_unknown = False
    cdef int rc
    while i >= 0:
        rc = put_symbol(t, w, s, n, sym[i].id, sym[i].start, sym[i].end, virtual_lead and i == 0,
                        &prev_unknown)
        if rc != OK:
            return rc
        i = sym[i].next
    return OK


cdef int put_symbol(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t n, int32_t token_id,
                    int32_t start, int32_t end, bint lead, bint *prev_unknown) noexcept nogil:
    """Writes out one final symbol spanning s[start:end] (`lead`: it starts
    with the dummy prefix's "▁"): a piece as its id, an UNUSED piece as the
    pair last queued to build it (sentencepiece's resegment), a character
    that is no piece as its UTF-8 bytes' <0xNN> pieces, else the unknown
    id (one for a run of them, as sentencepiece's processor joins them)."""
    cdef int32_t left, middle, j
    cdef const char *spelled
    cdef int rc
    if 0 <= token_id < t.n_pieces:
        if w.split_left != NULL and t.flags[token_id] & SPM_FLAG_RESPLIT and w.split_left[token_id] > 0:
            left = w.split_left[token_id] - 1
            middle = after_chars(t, s, n, start, symbol_chars(t, left), lead)
            rc = put_symbol(t, w, s, n, left, start, middle, lead, prev_unknown)
            if rc != OK:
                return rc
            return put_symbol(t, w, s, n, w.split_right[token_id], middle, end, False, prev_unknown)
        prev_unknown[0] = False
        return put_id(w, token_id, start, end)
    # A character of no piece: the dummy prefix, a space or "▁" is spelled "▁".
    spelled = MARKER if lead or (s[start] == c' ' and t.rules.escape_spaces) else s + start
    if t.byte_fallback:
        prev_unknown[0] = False
        for j in range(3 if spelled == MARKER else end - start):
            put_id(w, t.byte_ids[<uint8_t>spelled[j]], start, end)
        return OK
    if t.unk_id < 0:
        w.bad_len = 3 if spelled == MARKER else end - start
        memcpy(w.bad, spelled, <size_t>w.bad_len)
        return ERR_UNENCODABLE
    if t.collapse_unknown and prev_unknown[0]:
        if w.want_spans:
            w.spans[2 * w.ids_len - 1] = end
        return OK
    prev_unknown[0] = True
    return put_id(w, t.unk_id, start, end)


cdef int32_t symbol_chars(const CoreTables *t, int32_t symbol) noexcept nogil:
    """The characters of a symbol's text: a piece's, else one."""
    cdef int32_t k = 0, i
    if not 0 <= symbol < t.n_pieces:
        return 1
    i = t.offsets[symbol]
    while i < t.offsets[symbol + 1]:
        i += utf8_len(<uint8_t>t.arena[i])
        k += 1
    return k


cdef int32_t after_chars(const CoreTables *t, const char *s, Py_ssize_t n, int32_t start, int32_t chars,
                         bint lead) noexcept nogil:
    """Where the first `chars` characters from s[start] end (`lead`: the
    first of them is the dummy prefix's "▁", which has no bytes)."""
    cdef Py_ssize_t i = start
    if lead:
        chars -= 1
    while chars > 0 and i < n:
        i += 1 if (s[i] == c' ' and t.rules.escape_spaces) else char_len(s, i, n)
        chars -= 1
    return <int32_t>i
