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

# Chunks of up to this many symbols merge by a linear scan (merge_small),
# when every rank is below SMALL_RANKS (the scan's numbers are a rank and a
# place in 32 bits; NO_PAIR is after them all); NOT_SMALL, its answer for
# a chunk of more (or of tokenizers' bytes), is none of the result codes.
cdef enum:
    SMALL_SYMBOLS = 32
    SMALL_RANKS = 1 << 26
    NO_PAIR = 0x7FFFFFFF
    NOT_SMALL = 1

# A chunk of ASCII text longer than this is cut further where the finer
# rules allow (fine_cuts), so that long runs without spaces (code, URLs)
# become cacheable chunks.
cdef enum:
    FINE_BYTES = 32

# Bits of Workspace.seen, the words missed once; cleared when half are set.
cdef enum:
    SEEN_BITS = 1 << 19

# A span of fewer bytes (its dummy prefix's "▁" counted as three) is merged
# whole, without the cache.
cdef enum:
    SHORT_SPAN = 8



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
    the cache)."""
    copy_ids(w.ids + w.ids_len, ids, n)
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


cdef Py_ssize_t next_fine_cut(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t open_end,
                              Py_ssize_t p, Py_ssize_t b, Py_ssize_t n) noexcept nogil:
    """The first point from p (a character's start after `open_end`) to b
    where fine_cut_at cuts the chunk that starts at s[a], else b: between
    two ASCII characters (neither a space, which may be a "▁") by one bit
    of t.rules.ascii_cut, elsewhere by fine_cut_at itself."""
    cdef uint8_t u, prev
    cdef unsigned key
    while p < b:
        u = <uint8_t>s[p]
        prev = <uint8_t>s[p - 1]
        if (u | prev) < 0x80 and u != 0x20 and prev != 0x20:
            key = (<unsigned>prev) << 7 | u
            if (t.rules.ascii_cut[key >> 6] >> (key & 63)) & 1:
                return p
            p += 1
        else:
            if fine_cut_at(t, s, a, open_end, p, n):
                return p
            p += char_len(s, p, b)
    return b


cdef int fine_chunks(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                     Py_ssize_t n, bint virtual_lead, const spm_cache_view *view) noexcept nogil:
    """encode_chunk for the chunk s[a:b], cut further where fine_cut_at
    allows (next_fine_cut): Chinese and Japanese have no spaces, and a word
    beside punctuation is then the same chunk whatever the punctuation."""
    cdef Py_ssize_t open_end = opened(t, s, a, b, n), start = a, p
    cdef bint lead = virtual_lead
    cdef int rc
    p = open_end
    if p < b and not fine_cut_at(t, s, a, open_end, p, n):
        p = next_fine_cut(t, s, a, open_end, p + char_len(s, p, b), b, n)
    while p < b:
        rc = encode_chunk(t, w, s, start, p, n, lead, view, False, NULL)
        if rc != OK:
            return rc
        lead = False
        start = p
        p = next_fine_cut(t, s, a, open_end, p + char_len(s, p, b), b, n)
    return encode_chunk(t, w, s, start, b, n, lead, view, False, NULL)


cdef int encode_span(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                     bint prefix) noexcept nogil:
    """Appends the ids of the span src[0:n] (valid UTF-8), with the dummy
    prefix "▁" before it when `prefix`: chunk by chunk through the cache
    where the vocabulary allows (t.rules.chunked), else merged whole."""
    cdef Py_ssize_t i = 0, end, body
    cdef bint wide, lead = prefix, words = t.rules.escape_spaces and t.rules.n_violations == 0
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
        if words and not w.want_bounds:
            return encode_words(t, w, src, n, prefix, &view)
    while i < n:
        end = chunk_end(t, src, i, n, prefix, &wide, &body)
        # (Bounds are asked for as encode_words cuts a word it sees first:
        # encode_chunk's `word`.)
        if t.rules.cut_chars and (wide or end - body > FINE_BYTES or (w.want_bounds and words)):
            rc = fine_chunks(t, w, src, i, end, n, lead, seen)
        else:
            rc = encode_chunk(t, w, src, i, end, n, lead, seen, False, NULL)
        if rc != OK:
            return rc
        lead = False
        i = end
    return OK


cdef int encode_words(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t n, bint prefix,
                      const spm_cache_view *view) noexcept nogil:
    """encode_span's chunk loop where spaces are escaped, no piece holds
    "x▁" and the cache is on: chunks of ASCII that start with their "▁"
    and are in the cache -- most chunks of most text -- are looked up by
    spm_cache_words (csrc/spm_cache.h), the warm path in a few
    instructions a byte; each other chunk where it stops (a first
    sighting, other characters, a long run without spaces, the first of a
    span without the dummy prefix) takes the general way here."""
    cdef Py_ssize_t i = 0, body, general, end, p
    cdef bint lead = prefix, wide
    cdef uint64_t lookups = 0, missed_h = 0
    cdef size_t count
    cdef int rc = OK, missed = 0
    if ws_ids_room(w, <size_t>(3 * n + 3)) != OK:
        return ERR_NOMEM
    while True:
        count = w.ids_len
        i = <Py_ssize_t>spm_cache_words(view, s, <size_t>n, <size_t>i, lead, w.ids, &count, &lookups, &missed,
                                        &missed_h)
        w.ids_len = count
        if i >= n:
            break
        if i > 0:
            lead = False
        general = chunk_end(t, s, i, n, prefix, &wide, &body)
        if t.rules.cut_chars and (wide or general - body > FINE_BYTES):
            rc = fine_chunks(t, w, s, i, general, n, lead, view)
        else:
            # (A chunk spm_cache_words missed is that chunk, its key's hash
            # known and not looked up again.)
            rc = encode_chunk(t, w, s, i, general, n, lead, view, t.rules.cut_chars,
                              &missed_h if missed else NULL)
        if rc != OK:
            break
        lead = False
        i = general
    w.cache_lookups += lookups
    return rc


cdef inline void copy_ids(int32_t *out, const int32_t *ids, size_t n) noexcept nogil:
    """A cached chunk's ids to the output: four whatever their number when
    they are few (the ids buffer and the cache's arena have room past their
    ends; a copy loop's branches followed each chunk's count)."""
    cdef size_t k
    if n <= 4:
        memcpy(out, ids, 4 * sizeof(int32_t))
    else:
        for k in range(n):
            out[k] = ids[k]


cdef int encode_chunk(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                      Py_ssize_t n, bint virtual_lead, const spm_cache_view *view, bint word,
                      const uint64_t *missed_h) noexcept nogil:
    """Appends the ids of the chunk s[a:b] (after the dummy prefix's "▁"
    when `virtual_lead`): one character as its symbol, a chunk in the cache
    as its cached ids, any other merged (and cached).  A `word` (a chunk
    between spaces, which fine_chunks may cut) missed for the first time is
    encoded by its fine chunks instead, and cached as a whole only when it
    comes again: words seen once would fill the cache and push out the
    fine chunks that most of them share (code, punctuated text).  When
    `missed_h`, the chunk was just looked up and missed (spm_cache_words),
    and *missed_h is its key's hash."""
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
        if missed_h != NULL:
            spm_cache_key_hashed(&key, s + a + skip, <size_t>(length - skip), <size_t>(n - a - skip),
                                 virtual_lead or skip > 0, missed_h[0])
            hit = NULL
        else:
            spm_cache_key_of(&key, s + a + skip, <size_t>(length - skip), <size_t>(n - a - skip),
                             virtual_lead or skip > 0)
            hit = spm_cache_view_get(view, &key)
            w.cache_lookups += 1
        if hit != NULL:
            spm_cache_mark(hit)
            put_cached(w, spm_cache_ids(hit), hit.ids_len)
            return OK
        if word and (spm_cache_mostly_full(t.cache) or not seen_before(w, key.h)):
            return fine_chunks(t, w, s, a, b, n, virtual_lead, view)
        mark = w.ids_len
        rc = merge_chunk(t, w, s, a, b, n, virtual_lead)
        if rc == OK:
            spm_cache_put(t.cache, &w.cache_writer, &key, w.ids + mark, w.ids_len - mark)
        return rc
    return merge_chunk(t, w, s, a, b, n, virtual_lead)


cdef bint seen_before(Workspace *w, uint64_t h) noexcept nogil:
    """Whether a word of hash `h` was missed before (and marks it): a
    doorkeeper in front of the cache, as TinyLFU's.  The bit is taken from
    the hash's upper half (the cache's table is indexed by its lower
    one); the bits are cleared when half are set, so that old sightings
    fade.  Without memory for the bits every word counts as seen."""
    cdef uint64_t bit = (h >> 32) & (SEEN_BITS - 1), mask = (<uint64_t>1) << (bit & 63)
    if w.seen == NULL:
        w.seen = <uint64_t *>calloc(SEEN_BITS // 64, sizeof(uint64_t))
        if w.seen == NULL:
            return True
    if w.seen[bit >> 6] & mask:
        return True
    w.seen[bit >> 6] |= mask
    w.seen_count += 1
    if w.seen_count >= SEEN_BITS // 2:
        memset(w.seen, 0, SEEN_BITS // 8)
        w.seen_count = 0
    return False


# ---------------------------------------------------------------- symbols

cdef int32_t symbols_into(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t b, Py_ssize_t n,
                          bint virtual_lead, int32_t *ids, int32_t *starts, int32_t *ends, uint8_t *chars,
                          int32_t cap) noexcept nogil:
    """The symbols of s[a:b] (the dummy prefix's "▁" first when
    `virtual_lead`) into the arrays: their ids, spans and rows of
    t.ascii_pairs; returns their number, or -1 when there would be more
    than `cap`.  sentencepiece's and llama.cpp's: each character, its
    piece's id or a virtual id or NO_SYMBOL (tokenizers': ranked_symbols_into)."""
    cdef int32_t k = 0
    cdef Py_ssize_t i = a, length
    cdef uint8_t u
    if t.ranked:
        return ranked_symbols_into(t, s, a, b, n, virtual_lead, ids, starts, ends, chars, cap)
    if b - a + virtual_lead > cap:
        return -1
    if virtual_lead:
        ids[0] = t.marker_sym
        starts[0] = ends[0] = <int32_t>a
        chars[0] = MARKER_CHAR
        k = 1
    while i < b:
        u = <uint8_t>s[i]
        starts[k] = <int32_t>i
        if u < 0x80:
            ids[k] = t.ascii_sym[u]
            chars[k] = t.ascii_char[u]
            i += 1
        else:
            length = char_len(s, i, b)
            ids[k] = char_symbol(t, s, i, length, n)
            chars[k] = MARKER_CHAR if length == 3 and marker_at(t, s, i, n) else NO_CHAR
            i += length
        ends[k] = <int32_t>i
        k += 1
    return k


cdef int32_t ranked_symbols_into(const CoreTables *t, const char *s, Py_ssize_t a, Py_ssize_t b, Py_ssize_t n,
                                 bint virtual_lead, int32_t *ids, int32_t *starts, int32_t *ends,
                                 uint8_t *chars, int32_t cap) noexcept nogil:
    """symbols_into for tokenizers' BPE (t.ranked): each character's piece,
    else its bytes' pieces (byte fallback), else the unknown id (fused with
    the one before, with fuse_unk), else nothing (tokenizers drops it)."""
    cdef int32_t k = 0, token_id
    cdef Py_ssize_t i = a, length, j, unk_start = -1, unk_end = 0
    cdef const char *spelled
    cdef uint8_t u, row
    if virtual_lead:
        if t.marker_sym >= 0:
            k = put_symbol_at(ids, starts, ends, chars, k, cap, t.marker_sym, a, a, MARKER_CHAR)
        elif t.byte_fallback:
            for j in range(3):
                k = put_symbol_at(ids, starts, ends, chars, k, cap, t.byte_ids[<uint8_t>MARKER[j]], a, a, NO_CHAR)
        elif t.unk_id >= 0:
            unk_start = a
            unk_end = a
    while i < b and k >= 0:
        u = <uint8_t>s[i]
        if u < 0x80:
            length = 1
            token_id = t.ascii_sym[u]
            row = t.ascii_char[u]
        else:
            length = char_len(s, i, b)
            token_id = char_symbol(t, s, i, length, n)
            row = MARKER_CHAR if length == 3 and marker_at(t, s, i, n) else NO_CHAR
        if token_id >= 0 or (not t.byte_fallback and t.unk_id < 0):
            if unk_start >= 0:
                k = put_symbol_at(ids, starts, ends, chars, k, cap, t.unk_id, unk_start, unk_end, NO_CHAR)
                unk_start = -1
            if token_id >= 0:
                k = put_symbol_at(ids, starts, ends, chars, k, cap, token_id, i, i + length, row)
            # (else tokenizers drops the character.)
        elif t.byte_fallback:
            if unk_start >= 0:
                k = put_symbol_at(ids, starts, ends, chars, k, cap, t.unk_id, unk_start, unk_end, NO_CHAR)
                unk_start = -1
            spelled = MARKER if (u == 0x20 and t.rules.escape_spaces) else s + i
            for j in range(3 if spelled == MARKER else length):
                k = put_symbol_at(ids, starts, ends, chars, k, cap, t.byte_ids[<uint8_t>spelled[j]], i, i + length,
                                  NO_CHAR)
        else:
            if unk_start >= 0 and not t.fuse_unknown:
                k = put_symbol_at(ids, starts, ends, chars, k, cap, t.unk_id, unk_start, unk_end, NO_CHAR)
                unk_start = -1
            if unk_start < 0:
                unk_start = i
            unk_end = i + length
        i += length
    if unk_start >= 0:
        k = put_symbol_at(ids, starts, ends, chars, k, cap, t.unk_id, unk_start, unk_end, NO_CHAR)
    return k


cdef inline int32_t put_symbol_at(int32_t *ids, int32_t *starts, int32_t *ends, uint8_t *chars, int32_t k,
                                  int32_t cap, int32_t token_id, Py_ssize_t start, Py_ssize_t end,
                                  uint8_t row) noexcept nogil:
    """Sets symbol k, returning k + 1, or -1 when k is -1 or cap."""
    if k < 0 or k >= cap:
        return -1
    ids[k] = token_id
    starts[k] = <int32_t>start
    ends[k] = <int32_t>end
    chars[k] = row
    return k + 1


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
    """Merges the chunk s[a:b] and appends its ids: a few symbols in arrays
    of its own (merge_small), more over the workspace's and the heap."""
    cdef int32_t count
    cdef int rc
    if t.small_merges and w.alpha <= 0.0:
        rc = merge_small(t, w, s, a, b, n, virtual_lead)
        if rc != NOT_SMALL:
            return rc
    while w.split_touched_len:
        # (The pairs an earlier chunk queued are not this one's.)
        w.split_touched_len -= 1
        w.split_left[w.split_touched[w.split_touched_len]] = 0
    if ws_symbols_room(w, <size_t>(3 * (b - a) + 3)) != OK:
        return ERR_NOMEM
    count = symbols_into(t, s, a, b, n, virtual_lead, w.sym_id, w.sym_start, w.sym_end, w.sym_char,
                         <int32_t>w.symbols_cap)
    if count <= 0:
        return count
    rc = merge_heap(t, w, count)
    if rc != OK:
        return rc
    return put_symbols(t, w, s, n, virtual_lead)


cdef inline int32_t pair_rank(const CoreTables *t, int32_t left, uint8_t left_row, int32_t right,
                              uint8_t right_row, int32_t *merged) noexcept nogil:
    """The rank of the merge of the symbols `left` and `right` (its piece in
    merged[0]), or NO_RANK.  Two characters of ASCII (or "▁") are looked
    up in the table of their pairs by their rows, any other two in the pair
    table."""
    cdef const spm_ascii_pair *direct
    cdef int32_t rank
    if left_row != NO_CHAR and right_row != NO_CHAR:
        direct = &t.ascii_pairs[left_row * ASCII_CHARS + right_row]
        merged[0] = direct.merged
        return direct.rank
    if left < 0 or right < 0:
        return NO_RANK
    rank = spm_pairs_rank(t.pairs, left, right, merged)
    return rank if rank >= 0 else NO_RANK


cdef inline int32_t pair_key(int32_t rank, int32_t left) noexcept nogil:
    """A pair's place in merge_small's order: its rank, then its left
    symbol (the leftmost first on equal ranks), as one number (ranks below
    SMALL_RANKS; NO_PAIR after every pair)."""
    return NO_PAIR if rank >= SMALL_RANKS else (rank << 5) | left


cdef inline int32_t next_alive(uint32_t alive, int32_t i) noexcept nogil:
    """The first symbol after i still in `alive`, or -1."""
    return lowest_bit(alive & ~((<uint32_t>2 << i) - 1))


# A chunk of a few symbols, as merge_small holds it on the stack.
ctypedef struct SmallChunk:
    int32_t ids[SMALL_SYMBOLS]          # each symbol's id (a merge's piece once merged)
    int32_t starts[SMALL_SYMBOLS + 1]   # where it starts in the span; [k]: the chunk's end
    int32_t key[SMALL_SYMBOLS]          # the pair of it and the next live symbol (pair_key)
    int32_t merged[SMALL_SYMBOLS]       # ... and the piece that pair makes


cdef int merge_small(const CoreTables *t, Workspace *w, const char *s, Py_ssize_t a, Py_ssize_t b,
                     Py_ssize_t n, bint virtual_lead) noexcept nogil:
    """merge_heap's merges of a chunk of a few symbols (at most
    SMALL_SYMBOLS; NOT_SMALL for more), in arrays on the stack: the first
    pair in order (lowest rank, then leftmost, as in the heap) found as
    the least of every pair's place, one number each; the symbol on the
    right of a merge marked gone in a mask (its place kept, not moved), the
    pairs beside the merge looked up again.  The same merges: a pair the
    heap holds is stale only once it is no longer adjacent.  Then its ids
    are written out.  tokenizers' characters that are no piece (bytes,
    unknown, dropped) take merge_heap's way (NOT_SMALL)."""
    cdef SmallChunk c
    cdef int32_t k = small_symbols(t, &c, s, a, b, n, virtual_lead)
    if k <= 0:
        return OK if k == 0 else NOT_SMALL
    return small_put(t, w, &c, k, small_merge(t, &c, k), s, n, virtual_lead)


cdef inline int32_t small_symbols(const CoreTables *t, SmallChunk *c, const char *s, Py_ssize_t a,
                                  Py_ssize_t b, Py_ssize_t n, bint virtual_lead) noexcept nogil:
    """merge_small's symbols of s[a:b] and the pairs between them (a
    character of ASCII or "▁" after another by the table of their pairs,
    any other pair by the pair table): their number, or -1 for NOT_SMALL."""
    cdef int32_t k = 0, sym
    cdef uint8_t row, prev_row = NO_CHAR
    cdef Py_ssize_t p = a, length
    cdef uint8_t u
    if virtual_lead:
        c.ids[0] = t.marker_sym
        c.starts[0] = <int32_t>a
        prev_row = MARKER_CHAR
        k = 1
    while p < b:
        if k == SMALL_SYMBOLS:
            return -1
        u = <uint8_t>s[p]
        if u < 0x80:
            sym = t.ascii_sym[u]
            row = t.ascii_char[u]
            length = 1
        else:
            length = char_len(s, p, b)
            sym = char_symbol(t, s, p, length, n)
            row = MARKER_CHAR if length == 3 and marker_at(t, s, p, n) else NO_CHAR
        if sym < 0 and t.ranked:
            return -1
        if k:
            c.key[k - 1] = pair_key(pair_rank(t, c.ids[k - 1], prev_row, sym, row, &c.merged[k - 1]), k - 1)
        c.ids[k] = sym
        c.starts[k] = <int32_t>p
        prev_row = row
        k += 1
        p += length
    c.starts[k] = <int32_t>b
    return k


cdef inline uint32_t small_merge(const CoreTables *t, SmallChunk *c, int32_t k) noexcept nogil:
    """merge_small's merges of the k symbols in c; returns the mask of the
    symbols left."""
    cdef uint32_t alive = <uint32_t>((<uint64_t>1 << k) - 1), merging = 0
    cdef int32_t i, best, right, before, after
    # The symbols whose pair with the next one merges.
    for i in range(k - 1):
        if c.key[i] != NO_PAIR:
            merging |= <uint32_t>1 << i
    while merging:
        best = spm_least_in(c.key, merging) & 31
        # The symbol after `best` is absorbed; the pairs beside the merge change.
        right = next_alive(alive, best)
        c.ids[best] = c.merged[best]
        alive &= ~(<uint32_t>1 << right)
        merging &= ~(<uint32_t>1 << right)
        after = next_alive(alive, best)
        c.key[best] = NO_PAIR if after < 0 else \
            pair_key(pair_rank(t, c.ids[best], NO_CHAR, c.ids[after], NO_CHAR, &c.merged[best]), best)
        merging = merging & ~(<uint32_t>1 << best) | ((c.key[best] != NO_PAIR) << best)
        if best > 0:
            before = highest_bit(alive & ((<uint32_t>1 << best) - 1))
            c.key[before] = pair_key(pair_rank(t, c.ids[before], NO_CHAR, c.ids[best], NO_CHAR,
                                               &c.merged[before]), before)
            merging = merging & ~(<uint32_t>1 << before) | ((c.key[before] != NO_PAIR) << before)
    return alive


cdef inline int small_put(const CoreTables *t, Workspace *w, const SmallChunk *c, int32_t k, uint32_t alive,
                          const char *s, Py_ssize_t n, bint virtual_lead) noexcept nogil:
    """Writes out the symbols left in `alive`, each spanning its bytes (a
    symbol ends where the next one left starts)."""
    cdef int32_t i, end
    cdef bint prev_unknown = False
    cdef int rc
    while alive:
        i = lowest_bit(alive)
        alive &= alive - 1
        end = c.starts[lowest_bit(alive)] if alive else c.starts[k]
        if 0 <= c.ids[i] < t.n_pieces:
            put_id(w, c.ids[i], c.starts[i], end)
            prev_unknown = False
        else:
            rc = put_symbol(t, w, s, n, c.ids[i], c.starts[i], end, virtual_lead and i == 0, &prev_unknown)
            if rc != OK:
                return rc
    return OK


cdef int merge_heap(const CoreTables *t, Workspace *w, int32_t count) noexcept nogil:
    """sentencepiece's merge loop (bpe_model.cc) over the symbols, linked in
    order: every adjacent pair with a merge queued on the heap; the first
    popped is merged unless stale (a side absorbed or grown since it was
    queued), and the pairs it makes with its neighbours are queued.
    O(n log n)."""
    cdef int32_t *prev = w.sym_prev
    cdef int32_t *nxt = w.sym_next
    cdef uint32_t *gen = w.sym_gen
    cdef spm_bigram top
    cdef int32_t left, right, after, k
    cdef uint32_t next_gen = <uint32_t>count
    for k in range(count):
        prev[k] = k - 1
        nxt[k] = k + 1
        gen[k] = <uint32_t>k
    nxt[count - 1] = -1
    w.heap.len = 0
    if spm_heap_reserve(&w.heap, <size_t>count) != 0:
        return ERR_NOMEM
    for left in range(count - 1):
        if queue_pair(t, w, left) != OK:
            return ERR_NOMEM
    while spm_heap_pop(&w.heap, &top) == 0:
        left = <int32_t>(top.key & <uint64_t>0xFFFFFFFF)
        right = nxt[left]
        if right < 0 or gen[right] != top.right_gen:
            continue
        if skip_merge(w):
            continue
        # Symbol `left` takes in the next one and becomes the piece.
        after = nxt[right]
        w.sym_id[left] = top.merged
        w.sym_end[left] = w.sym_end[right]
        w.sym_char[left] = NO_CHAR
        gen[left] = next_gen
        next_gen += 1
        nxt[left] = after
        if after >= 0:
            prev[after] = left
        nxt[right] = -2
        if prev[left] >= 0 and queue_pair(t, w, prev[left]) != OK:
            return ERR_NOMEM
        if queue_pair(t, w, left) != OK:
            return ERR_NOMEM
    return OK


cdef int queue_pair(const CoreTables *t, Workspace *w, int32_t left) noexcept nogil:
    """Queues the merge of symbol `left` with the next one, if there is one."""
    cdef int32_t right = w.sym_next[left]
    cdef spm_bigram b
    cdef int32_t rank
    if right < 0:
        return OK
    rank = pair_rank(t, w.sym_id[left], w.sym_char[left], w.sym_id[right], w.sym_char[right], &b.merged)
    if rank == NO_RANK:
        return OK
    b.key = spm_bigram_key(rank, left)
    b.right_gen = w.sym_gen[right]
    if spm_heap_push(&w.heap, b) != 0:
        return ERR_NOMEM
    if t.any_resplit and t.flags[b.merged] & SPM_FLAG_RESPLIT:
        # sentencepiece records the halves when it queues the pair (the
        # last queued pair for a piece wins), and splits an UNUSED piece
        # back into them on output.
        return remember_split(t, w, b.merged, w.sym_id[left], w.sym_id[right])
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
    """Writes out the merged symbols in order (linked from the first)."""
    cdef int32_t i = 0
    cdef bint prev_unknown = False
    cdef int rc
    while i >= 0:
        rc = put_symbol(t, w, s, n, w.sym_id[i], w.sym_start[i], w.sym_end[i], virtual_lead and i == 0,
                        &prev_unknown)
        if rc != OK:
            return rc
        i = w.sym_next[i]
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
