# Building what the encode kernel reads (declared in core/tables.pxd), once,
# when a core is made: each character's symbol, the pair table of the
# merges, and the rules of where a span may be cut into chunks.


# ---------------------------------------------------------------- symbols

# The key of an ASCII character in fill_symbols' table of virtual ids (the
# others are keyed by their UTF-8, spm_char_key, which is never below it).
cdef enum:
    ASCII_KEY = 0x100

cdef inline int32_t text_symbol(const CoreTables *t, const char *s, Py_ssize_t n,
                                const spm_chars *virtual_chars) noexcept:
    """The symbol a text of one character starts as (see CoreTables): its
    piece (the lowest id of that text), else its virtual id, else
    NO_SYMBOL."""
    cdef int32_t token_id = spm_vocab_find(t.vocab, s, <size_t>n)
    if token_id >= 0 or n < 2 or virtual_chars == NULL:
        return token_id if token_id >= 0 else NO_SYMBOL
    return spm_chars_find(virtual_chars, spm_char_key(spm_load8(s, 0, <size_t>n), <int>n), NO_SYMBOL)


cdef int fill_symbols(CoreTables *t, const uint8_t[::1] buildable) except -1:
    """Sets t.ascii_sym, t.marker_sym and t.chars.  With `buildable` (the
    pieces merges may build; sentencepiece's and llama.cpp's merges), a
    character that is no piece but lies inside a buildable piece gets a
    virtual id from t.n_pieces on, so that the pairs of such pieces can be
    keyed by symbols; without (tokenizers' rules name pieces), it has
    none."""
    cdef spm_chars *virtual_chars = NULL
    cdef spm_chars *chars = NULL
    cdef Py_ssize_t i, k, e, length
    cdef int32_t next_virtual = t.n_pieces, sym
    cdef uint32_t key
    cdef char one
    cdef const char *arena = t.arena
    cdef const int32_t *offsets = t.offsets
    cdef Py_ssize_t arena_len = offsets[t.n_pieces]
    # (The tables grow as characters are set: the pieces' bytes, which
    # would size them up front, bound their distinct characters far above
    # their number.)
    virtual_chars = spm_chars_new()
    chars = spm_chars_new()
    if virtual_chars == NULL or chars == NULL:
        spm_chars_free(virtual_chars)
        spm_chars_free(chars)
        raise MemoryError("cannot allocate the character table")
    try:
        for i in range(t.n_pieces):
            k = offsets[i]
            e = offsets[i + 1]
            if k == e:
                continue
            length = min(<Py_ssize_t>utf8_len(<uint8_t>arena[k]), e - k)
            if length == e - k:
                # A piece of one character: that character's symbol.
                if length >= 2 and spm_vocab_find(t.vocab, arena + k, <size_t>length) == i:
                    if spm_chars_set(chars, spm_char_key(spm_load8(arena, k, arena_len), <int>length),
                                     <int32_t>i) != 0:
                        raise MemoryError("cannot allocate the character table")
                continue
            if buildable is None or not buildable[i]:
                continue
            while k < e:
                length = min(<Py_ssize_t>utf8_len(<uint8_t>arena[k]), e - k)
                if spm_vocab_find(t.vocab, arena + k, <size_t>length) < 0:
                    key = spm_char_key(spm_load8(arena, k, arena_len), <int>length) if length >= 2 \
                        else ASCII_KEY | <uint8_t>arena[k]
                    if spm_chars_find(virtual_chars, key, NO_SYMBOL) == NO_SYMBOL:
                        if next_virtual == INT32_MAX or spm_chars_set(virtual_chars, key, next_virtual) != 0:
                            raise MemoryError("cannot allocate the character table")
                        if length >= 2 and spm_chars_set(chars, key, next_virtual) != 0:
                            raise MemoryError("cannot allocate the character table")
                        next_virtual += 1
                k += length
        for i in range(128):
            one = <char>i
            sym = spm_vocab_find(t.vocab, &one, 1)
            if sym < 0 and buildable is not None:
                sym = spm_chars_find(virtual_chars, ASCII_KEY | <uint32_t>i, NO_SYMBOL)
            t.ascii_sym[i] = sym
        t.space_sym = t.ascii_sym[0x20]
        t.marker_sym = text_symbol(t, MARKER, 3, virtual_chars if buildable is not None else NULL)
        set_space_symbol(t)
    except BaseException:
        spm_chars_free(virtual_chars)
        spm_chars_free(chars)
        raise
    spm_chars_free(virtual_chars)
    spm_chars_free(t.chars)
    t.chars = chars
    return 0


cdef int set_space_symbol(CoreTables *t) except -1:
    """The space's symbol and row of t.ascii_pairs, as
    t.rules.escape_spaces says: "▁"'s, or its own."""
    cdef int c
    for c in range(128):
        t.ascii_char[c] = c
    if t.rules.escape_spaces:
        t.ascii_sym[0x20] = t.marker_sym
        t.ascii_char[0x20] = MARKER_CHAR
    else:
        t.ascii_sym[0x20] = t.space_sym
    return 0


cdef int fill_ascii_pairs(CoreTables *t) except -1:
    """t.ascii_pairs from t.pairs: the merge of each pair of rows (ASCII
    characters by their own symbols, then "▁"'s)."""
    cdef int32_t a, c, left, right, rank, merged
    cdef spm_ascii_pair *table = <spm_ascii_pair *>malloc(ASCII_CHARS * ASCII_CHARS * sizeof(spm_ascii_pair))
    if table == NULL:
        raise MemoryError("cannot allocate the pairs of ASCII characters")
    for a in range(ASCII_CHARS):
        left = row_symbol(t, a)
        for c in range(ASCII_CHARS):
            right = row_symbol(t, c)
            merged = -1
            rank = spm_pairs_rank(t.pairs, left, right, &merged) if left >= 0 and right >= 0 else -1
            table[a * ASCII_CHARS + c].rank = rank if rank >= 0 else NO_RANK
            table[a * ASCII_CHARS + c].merged = merged
    free(t.ascii_pairs)
    t.ascii_pairs = table
    return 0


cdef inline int32_t row_symbol(const CoreTables *t, int32_t row) noexcept:
    """The symbol of a row of t.ascii_pairs."""
    if row == MARKER_CHAR:
        return t.marker_sym
    return t.space_sym if row == 0x20 else t.ascii_sym[row]


# ---------------------------------------------------------------- pairs

cdef extern from *:
    """
    /* A buildable piece's score and id, sorted for score_ranks: the highest
     * score first, NaN last. */
    typedef struct { float score; int32_t id; } spm_scored;
    static int spm_by_score(const void *a, const void *b) {
        float x = ((const spm_scored *)a)->score, y = ((const spm_scored *)b)->score;
        int x_nan = x != x, y_nan = y != y;
        if (x_nan || y_nan) return x_nan - y_nan;
        return (x < y) - (x > y);
    }
    """
    ctypedef struct spm_scored:
        float score
        int32_t id
    int spm_by_score(const void *a, const void *b) noexcept nogil


cdef int score_ranks(const float[::1] scores, const uint8_t[::1] buildable, int32_t *ranks) except -1:
    """Each buildable piece's rank into ranks[]: its place among the
    distinct scores, the highest first (equal scores, equal ranks: the
    leftmost pair then merges first, as sentencepiece's agenda orders
    them).  A NaN score ranks after every other."""
    cdef Py_ssize_t i, k, n = scores.shape[0], m = 0
    cdef int32_t rank = -1
    cdef spm_scored *order = <spm_scored *>malloc(max(n, 1) * sizeof(spm_scored))
    if order == NULL:
        raise MemoryError("cannot allocate the ranks")
    for i in range(n):
        if buildable[i]:
            order[m].score = scores[i]
            order[m].id = <int32_t>i
            m += 1
    qsort(order, <size_t>m, sizeof(spm_scored), spm_by_score)
    for k in range(m):
        if k == 0 or spm_by_score(&order[k - 1], &order[k]) != 0:
            rank += 1
        ranks[order[k].id] = rank
    free(order)
    return 0


cdef spm_pairs *score_pairs(CoreTables *t, const uint8_t[::1] buildable, const float[::1] scores) except NULL:
    """The pair table of sentencepiece's and llama.cpp's merges: each way a
    buildable piece's text splits into two symbols' texts -- a character,
    or a buildable piece (a longer text is only ever a symbol once a merge
    has built it) -- is a pair that makes the piece, at its score's rank.
    A text listed twice is its lowest id, as the vocabulary table says."""
    cdef const char *arena = t.arena
    cdef const int32_t *offsets = t.offsets
    cdef Py_ssize_t i, k, a, e, splits = 0, m = 0
    cdef int32_t left, right
    cdef spm_pairs *pairs = NULL
    cdef int32_t *ranks = <int32_t *>malloc(max(t.n_pieces, 1) * sizeof(int32_t))
    cdef int32_t *columns = NULL
    try:
        if ranks == NULL:
            raise MemoryError("cannot allocate the merge pairs")
        score_ranks(scores, buildable, ranks)
        for i in range(t.n_pieces):
            if buildable[i]:
                splits += offsets[i + 1] - offsets[i]
        columns = <int32_t *>malloc(4 * max(splits, 1) * sizeof(int32_t))
        if columns == NULL:
            raise MemoryError("cannot allocate the merge pairs")
        for i in range(t.n_pieces):
            a = offsets[i]
            e = offsets[i + 1]
            if not buildable[i] or e - a < 2 or spm_vocab_find(t.vocab, arena + a, <size_t>(e - a)) != i:
                continue
            k = a + min(<Py_ssize_t>utf8_len(<uint8_t>arena[a]), e - a)
            while k < e:
                left = split_symbol(t, buildable, arena + a, k - a)
                right = split_symbol(t, buildable, arena + k, e - k)
                if left != NO_SYMBOL and right != NO_SYMBOL:
                    columns[m] = left
                    columns[splits + m] = right
                    columns[2 * splits + m] = <int32_t>i
                    columns[3 * splits + m] = ranks[i]
                    m += 1
                k += min(<Py_ssize_t>utf8_len(<uint8_t>arena[k]), e - k)
        pairs = spm_pairs_new(<size_t>m, columns, columns + splits, columns + 2 * splits, columns + 3 * splits)
        if pairs == NULL:
            raise MemoryError("cannot allocate the merge pairs")
        return pairs
    finally:
        free(ranks)
        free(columns)


cdef int32_t split_symbol(const CoreTables *t, const uint8_t[::1] buildable, const char *s,
                          Py_ssize_t n) noexcept:
    """The symbol the text s[0:n] (a half of a buildable piece) is while
    merging, or NO_SYMBOL when it never is one."""
    cdef int32_t token_id
    cdef uint8_t u = <uint8_t>s[0]
    if utf8_len(u) >= n:
        # One character.
        if u < 0x80:
            return t.space_sym if u == 0x20 else t.ascii_sym[u]
        if n == 3 and u == 0xE2 and <uint8_t>s[1] == 0x96 and <uint8_t>s[2] == 0x81:
            return t.marker_sym
        return spm_chars_find(t.chars, spm_char_key(spm_load8(s, 0, <size_t>n), <int>n), NO_SYMBOL)
    token_id = spm_vocab_find(t.vocab, s, <size_t>n)
    return token_id if token_id >= 0 and buildable[token_id] else NO_SYMBOL


# ---------------------------------------------------------------- chunk rules

cdef bytes derive_chunk_rules(CoreTables *t, const uint8_t[::1] buildable,
                              const uint8_t[::1] sides=None):
    """Fills t.rules.  Chunking: merges never cross the point before a "▁"
    that follows other text unless a piece the merger may build contains
    "x▁" (x not "▁").  Such pieces are kept (up to 64 occurrences) so the
    points they could lie across are not cut (crossed, core/encode.pyx);
    with more, or with UNUSED pieces to resplit (sentencepiece resplits by
    the last pair queued anywhere in the text), tokenizers' ignore_merges,
    or no "▁" piece, spans are merged whole.

    Chunks are also cut between two other characters that no buildable
    piece holds side by side (spm_charpairs.h; spm_ascii_scan for two
    ASCII characters): Chinese and Japanese have no spaces, and a word
    beside punctuation is then the same chunk whatever the punctuation.
    And on both sides of a byte below 0x40 that is never merged with a
    neighbour (digits and newlines in Llama's vocabularies): no buildable
    piece of two or more bytes holds it; with tokenizers' ranked merges
    (`sides`: 1 for each id on either side of a rule), the id its
    character becomes is in no rule.  Neither kind of cut when a run of
    unknown characters becomes one id, which a cut would split.

    Returns the bytes t.rules.violator_bytes points into, for the caller to
    keep, or None."""
    cdef const char *arena = t.arena
    cdef const int32_t *offsets = t.offsets
    cdef Py_ssize_t i
    cdef int64_t crossing, k
    cdef int64_t at[65]
    cdef list found = []
    cdef spm_charpairs *pairs = NULL
    cdef uint8_t *seen = NULL
    cdef uint64_t low_bytes = 0   # bytes below 0x40 held by pieces of 2+ bytes
    t.rules.chunked = False
    t.rules.cut_chars = False
    t.rules.n_violations = 0
    t.rules.violator_bytes = NULL
    t.rules.isolated = 0
    memset(t.rules.ascii_held, 0, sizeof(t.rules.ascii_held))
    spm_charpairs_free(t.rules.char_pairs)
    t.rules.char_pairs = NULL
    if t.any_resplit or t.ignore_merges or spm_vocab_find(t.vocab, MARKER, 3) < 0:
        return None
    if sides is not None and not t.byte_fallback and t.unk_id < 0:
        # tokenizers drops a character it can neither look up nor spell in
        # bytes, and the symbols on its sides meet: a "▁" after it may
        # merge with what came before it.
        return None
    if t.byte_fallback or not (t.collapse_unknown or t.fuse_unknown):
        pairs = spm_charpairs_new()
        seen = <uint8_t *>calloc(SPM_ASCII_PAIRS + 1, 1)
        if pairs == NULL or seen == NULL:
            spm_charpairs_free(pairs)
            free(seen)
            raise MemoryError("cannot allocate the character pairs")
    try:
        for i in range(t.n_pieces):
            if not buildable[i]:
                continue
            crossing = spm_piece_scan(pairs, arena, offsets[t.n_pieces], offsets[i], offsets[i + 1], at, 65)
            if crossing < 0:
                raise MemoryError("cannot allocate the character pairs")
            if len(found) + crossing > 64:
                return None
            for k in range(crossing):
                found.append((i, at[k]))
            if seen != NULL and offsets[i + 1] - offsets[i] >= 2:
                low_bytes |= spm_ascii_scan(seen, arena, offsets[i], offsets[i + 1])
        if seen != NULL:
            mark_ascii(t, seen, low_bytes, sides)
            spm_ascii_pack(t.rules.ascii_held, seen)
            pack_ascii_cuts(t)
        violators = pack_violators(t, found)
        t.rules.chunked = True
        t.rules.char_pairs = pairs
        t.rules.cut_chars = pairs != NULL
        pairs = NULL
        return violators
    finally:
        spm_charpairs_free(pairs)
        free(seen)


cdef bytes pack_violators(CoreTables *t, list found):
    """Sets t.rules.violation from `found`, (piece id, offset of its "▁")
    each, and returns the pieces back to back, which t.rules.violator_bytes
    points into (for the caller to keep)."""
    cdef const char *arena = t.arena
    cdef const int32_t *offsets = t.offsets
    cdef list pieces = []
    cdef int64_t k, total = 0
    for k, (token_id, marker_at) in enumerate(found):
        piece = arena[offsets[token_id]:offsets[token_id + 1]]
        t.rules.violation[k][0] = total
        t.rules.violation[k][1] = len(piece)
        t.rules.violation[k][2] = marker_at
        pieces.append(piece)
        total += len(piece)
    violators = b"".join(pieces)
    t.rules.violator_bytes = PyBytes_AS_STRING(violators)
    t.rules.n_violations = len(found)
    return violators


cdef void pack_ascii_cuts(CoreTables *t) noexcept:
    """Sets t.rules.ascii_cut from .isolated and .ascii_held: bit a * 128 + b
    where fine_cut (core/encode.pyx) cuts between the ASCII characters a
    and b, so that fine_chunks decides a cut in a run of ASCII by one
    load."""
    cdef unsigned a, b, key
    cdef uint64_t isolated = t.rules.isolated
    cdef bint side_a
    memset(t.rules.ascii_cut, 0, sizeof(t.rules.ascii_cut))
    for a in range(0x80):
        side_a = a < 0x40 and (isolated >> a) & 1
        for b in range(0x80):
            key = a << 7 | b
            if side_a or (b < 0x40 and (isolated >> b) & 1) or not spm_ascii_pair_held(t.rules.ascii_held, a, b):
                t.rules.ascii_cut[key >> 6] |= (<uint64_t>1) << (key & 63)


cdef void mark_ascii(CoreTables *t, uint8_t *seen, uint64_t low_bytes, const uint8_t[::1] sides):
    """Sets t.rules.isolated from the bytes below 0x40 that buildable pieces
    of two or more bytes hold (`low_bytes`), or, with tokenizers' ranked
    merges, from the ids in a rule (`sides`); and marks in `seen` (see
    spm_ascii_scan) every pair beside a character whose id is not its
    text's, so that no cut is made there."""
    cdef int c, a
    cdef int32_t symbol
    cdef char one
    cdef bint merges
    for c in range(0x80):
        if sides is None:
            # sentencepiece and llama.cpp merge by text.
            merges = c >= 0x40 or (low_bytes >> c) & 1
        else:
            # tokenizers merges ids: the character's own, else its bytes,
            # else the unknown id, else none (it is dropped, and its
            # neighbours meet).  Bytes and the unknown id do not spell
            # the character, so the pairs of texts say nothing of them.
            one = <char>c
            symbol = spm_vocab_find(t.vocab, &one, 1)
            if symbol >= 0:
                merges = sides[symbol]
            else:
                symbol = t.byte_ids[c] if t.byte_fallback else t.unk_id
                merges = symbol < 0 or sides[symbol]
                if merges:
                    for a in range(0x80):
                        seen[a << 7 | c] = 1
                        seen[c << 7 | a] = 1
        # (The space is "▁" after escaping, chunked by its own rule.)
        if not merges and c < 0x40 and c != 0x20:
            t.rules.isolated |= <uint64_t>1 << c


# ---------------------------------------------------------------- loading

cdef bytes load_tables(CoreTables *t, PieceTable table, const uint8_t[::1] flags, const uint8_t[::1] types,
                       int unk_id, bint collapse_unknown, bint byte_fallback):
    """Fills t from a vocabulary (SpmCore's arguments, checked): the pieces,
    their types, the unknown id and the byte pieces.  Returns each piece's
    SPM_FLAG_MERGEABLE as bytes (for the caller to keep: derive_chunk_rules
    and fill_symbols read it).  t.flags is the caller's to set."""
    cdef Py_ssize_t n = table.size
    cdef int b
    cdef int32_t found
    t.vocab = table.vocab
    t.arena = PyBytes_AS_STRING(table.arena)
    t.offsets = table.offsets
    t.types = &types[0]
    t.n_pieces = <int32_t>n
    t.unk_id = unk_id if unk_id >= 0 else -1
    t.collapse_unknown = collapse_unknown
    t.any_resplit = False
    for b in range(n):
        if flags[b] & SPM_FLAG_RESPLIT:
            t.any_resplit = True
            break
    # Byte fallback is all or nothing: a partial <0xNN> set cannot encode
    # every character, so without all 256 unknown characters become <unk>.
    t.byte_fallback = byte_fallback
    for b in range(256 if byte_fallback else 0):
        name = f"<0x{b:02X}>".encode("ascii")
        found = spm_vocab_find(t.vocab, PyBytes_AS_STRING(name), 6)
        if found < 0:
            t.byte_fallback = False
            break
        t.byte_ids[b] = found
    buildable = bytearray(n)
    cdef uint8_t[::1] build_view = buildable
    for b in range(n):
        build_view[b] = flags[b] & SPM_FLAG_MERGEABLE
    # Short chunks merge by linear scan (merge_small), which picks the same
    # pairs as the heap; not for UNUSED pieces to resplit (their halves
    # depend on the heap's queue order), nor ranks past its numbers (a
    # score rank is below the vocabulary's size).
    t.small_merges = not t.any_resplit and n < SMALL_RANKS
    return bytes(buildable)


cdef bytes load_ranked_tables(CoreTables *t, const int32_t[::1] l, const int32_t[::1] r,
                              const int32_t[::1] m, bint fuse_unknown, bint ignore_merges):
    """Switches t to tokenizers' BPE: the pair table of the rules (rule i
    joins l[i] and r[i] into m[i], rank i), the symbols and the chunk rules.
    Returns what derive_chunk_rules does, for the caller to keep."""
    cdef Py_ssize_t n = l.shape[0], i
    if r.shape[0] != n or m.shape[0] != n:
        raise ValueError("left, right and merged differ in length")
    if n >= (1 << 24):
        # Ranks travel as float32 scores, exact below 2**24.
        raise ValueError(f"{n} merge rules; at most {(1 << 24) - 1} are supported")
    for i in range(n):
        if not (0 <= l[i] < t.n_pieces and 0 <= r[i] < t.n_pieces and 0 <= m[i] < t.n_pieces):
            raise ValueError(f"merge rule {i} names an id outside the vocabulary")
    if t.pairs != NULL:
        spm_pairs_free(t.pairs)
    t.pairs = spm_pairs_new(n, &l[0] if n else NULL, &r[0] if n else NULL, &m[0] if n else NULL, NULL)
    if t.pairs == NULL:
        raise MemoryError("cannot allocate the merge rules")
    t.ranked = True
    fill_symbols(t, None)
    fill_ascii_pairs(t)
    t.fuse_unknown = fuse_unknown
    t.ignore_merges = ignore_merges
    # Only merge results can cross a boundary, and only the ids in a rule
    # are ever merged.
    buildable = bytearray(t.n_pieces)
    sides = bytearray(t.n_pieces)
    cdef uint8_t[::1] build_view = buildable
    cdef uint8_t[::1] side_view = sides
    for i in range(n):
        build_view[m[i]] = 1
        side_view[l[i]] = 1
        side_view[r[i]] = 1
    return derive_chunk_rules(t, bytes(buildable), bytes(sides))


cdef void free_tables(CoreTables *t) noexcept:
    """Frees what t owns (the vocabulary belongs to its PieceTable)."""
    t.vocab = NULL
    spm_chars_free(t.chars)
    t.chars = NULL
    free(t.ascii_pairs)
    t.ascii_pairs = NULL
    if t.pairs != NULL:
        spm_pairs_free(t.pairs)
        t.pairs = NULL
    spm_charpairs_free(t.rules.char_pairs)
    t.rules.char_pairs = NULL
