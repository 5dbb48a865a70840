# Escaping, chunk boundaries and the rules behind them, and the chunk loop
# (declared in core/chunking.pxd).
#
# The chunking invariant: SentencePiece-BPE merges by piece, and a merge can
# only join two symbols that some buildable piece holds side by side.  A
# boundary no buildable piece can lie across (before a "▁" that follows other
# text, unless one of the few "x▁" pieces covers it; between two characters
# no buildable piece holds together; beside a byte no piece of two or more
# bytes holds) is never crossed by any merge, whatever the order, so merging
# each chunk alone gives the ids of merging the whole segment -- and a chunk
# seen before gives its cached ids.


cdef inline bint single_char(const char *text, int32_t begin, int32_t length) noexcept nogil:
    """Whether the chunk of `length` bytes at text[begin] is one character
    (or less): looked up faster than the cache is, so not cached."""
    return length <= 4 and utf8_len(<uint8_t>text[begin]) >= length


# A chunk run() will come to: its length, whether it is one character,
# whether it goes through the cache and its hash.
ctypedef struct ChunkAhead:
    uint64_t h
    int32_t length
    bint single
    bint cached


cdef inline void look_ahead(const char *text, int32_t begin, int32_t end, bint caching,
                            const spm_cache_view *view, ChunkAhead *c) noexcept nogil:
    """Fills c for the chunk text[begin:end] and, when it goes through the
    cache (not one character, nor longer than a key may be), starts
    loading its slot."""
    c.length = end - begin
    c.single = single_char(text, begin, c.length)
    c.cached = caching and not c.single and c.length <= SPM_CACHE_MAX_KEY
    c.h = 0
    if c.cached:
        c.h = spm_hash_bytes(text + begin, <size_t>c.length)
        spm_cache_view_prefetch(view, c.h)


cdef inline bint isolated_byte(uint64_t isolated, uint8_t u) noexcept nogil:
    """Whether byte u is one of ChunkRules.isolated (bit u, below 0x40)."""
    return u < 0x40 and (isolated >> u) & 1


# Each ASCII byte as escaped text, padded to four bytes, and its length:
# the space is "▁".
cdef char ESCAPED_ASCII[128][4]
cdef uint8_t ESCAPED_LEN[128]
memset(ESCAPED_ASCII, 0, sizeof(ESCAPED_ASCII))
for _c in range(0x80):
    ESCAPED_ASCII[_c][0] = <char>_c
    ESCAPED_LEN[_c] = 1
memcpy(ESCAPED_ASCII[0x20], MARKER, 3)
ESCAPED_LEN[0x20] = 3
del _c


cdef Py_ssize_t escape_spaces(const char *src, Py_ssize_t i, Py_ssize_t n, char *text,
                              Py_ssize_t m) noexcept nogil:
    """Writes src[i:n] to text[m:] with spaces as "▁"; returns the new m.
    Eight bytes at once when none is a space."""
    cdef Py_ssize_t stop
    cdef uint64_t word, spaces
    cdef char c
    while i < n:
        stop = n
        if i + 8 <= n:
            memcpy(&word, src + i, 8)
            spaces = word ^ <uint64_t>0x2020202020202020
            spaces = (spaces - <uint64_t>0x0101010101010101) & ~spaces & <uint64_t>0x8080808080808080
            if not spaces:
                memcpy(text + m, src + i, 8)
                m += 8
                i += 8
                continue
            stop = i + 8
        while i < stop:
            c = src[i]
            if c == c' ':
                memcpy(text + m, MARKER, 3)
                m += 3
            else:
                text[m] = c
                m += 1
            i += 1
    return m


# ---------------------------------------------------------------- the rules

cdef bytes derive_chunk_rules(CoreTables *t, const uint8_t[::1] buildable,
                              const uint8_t[::1] sides=None):
    """Chunking: merges never cross the boundary before a "▁" that
    follows other text unless a piece the merger may build contains
    "x▁" (x not "▁").  Such pieces are kept (up to 64 occurrences) so
    the boundaries they could cover are not used; with more, or with
    UNUSED pieces to resplit (sentencepiece resplits by the last pair
    queued anywhere in the text), or without a "▁" piece, the core
    merges whole segments.

    Chunks are also cut between two other characters that no buildable
    piece holds side by side (spm_charpairs.h; spm_ascii_scan for two
    ASCII characters): Chinese and Japanese have no spaces, and a word
    beside punctuation is then the same chunk whatever the punctuation,
    so fewer distinct chunks are merged.  And on both sides of a byte
    below 0x40 that is never merged with a neighbour (digits and
    newlines in Llama's vocabularies): no buildable piece of two or more
    bytes holds it; with tokenizers' ranked merges (`sides`: 1 for each
    id on either side of a rule), the id its character becomes is in no
    rule.  Neither kind of cut when a run of unknown characters becomes
    one id, which a cut would split.

    Fills t.rules (SpmCore calls it when it is built, with no workspace
    active); returns the bytes t.rules.violator_bytes points into, for the
    caller to keep, or None when it does not chunk."""
    cdef const char *arena = t.arena
    cdef const int32_t *offsets = t.offsets
    cdef Py_ssize_t i
    cdef int64_t k, crossing, total
    cdef int64_t at[65]
    cdef list found = []
    cdef spm_charpairs *pairs = NULL
    cdef uint8_t *seen = NULL
    cdef uint64_t low_bytes = 0   # bytes below 0x40 held by pieces of 2+ bytes
    t.rules.chunked = False
    t.rules.cut_chars = False
    t.rules.isolated = 0
    memset(t.rules.ascii_held, 0, sizeof(t.rules.ascii_held))
    t.rules.n_violations = 0
    t.rules.violator_bytes = NULL
    spm_charpairs_free(t.rules.char_pairs)
    t.rules.char_pairs = NULL
    if t.any_resplit or t.ignore_merges or spm_vocab_find(t.vocab, MARKER, 3) < 0:
        return None
    if t.byte_fallback or not (t.collapse_unknown or t.fuse_unknown):
        pairs = spm_charpairs_new()
        seen = <uint8_t *>calloc(SPM_ASCII_PAIRS + 1, 1)
        if pairs == NULL or seen == NULL:
            spm_charpairs_free(pairs)
            free(seen)
            raise MemoryError("cannot allocate the character pairs")
    for i in range(t.n_pieces):
        if not buildable[i]:
            continue
        crossing = spm_piece_scan(pairs, arena, offsets[t.n_pieces], offsets[i], offsets[i + 1],
                                  at, 65)
        if crossing < 0:
            spm_charpairs_free(pairs)
            free(seen)
            raise MemoryError("cannot allocate the character pairs")
        if len(found) + crossing > 64:
            spm_charpairs_free(pairs)
            free(seen)
            return None
        for k in range(crossing):
            found.append((i, at[k]))
        if seen != NULL and offsets[i + 1] - offsets[i] >= 2:
            low_bytes |= spm_ascii_scan(seen, arena, offsets[i], offsets[i + 1])
    if seen != NULL:
        mark_ascii(t, seen, low_bytes, sides)
        spm_ascii_pack(t.rules.ascii_held, seen)
        free(seen)
    pieces = []
    total = 0
    for i, (token_id, k) in enumerate(found):
        piece = arena[offsets[token_id]:offsets[token_id + 1]]
        t.rules.violation[i][0] = total
        t.rules.violation[i][1] = len(piece)
        t.rules.violation[i][2] = k
        pieces.append(piece)
        total += len(piece)
    cdef bytes violators = b"".join(pieces)
    t.rules.violator_bytes = PyBytes_AS_STRING(violators)
    t.rules.n_violations = len(found)
    t.rules.chunked = True
    t.rules.char_pairs = pairs
    t.rules.cut_chars = pairs != NULL
    build_ascii_cuts(&t.rules)
    return violators


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


# ---------------------------------------------------------------- escaping

cdef int segment(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                 bint prefix) noexcept:
    """encode_segment, releasing the GIL only for a long text (the
    release and re-acquisition cost more than merging a short one)."""
    cdef int rc
    if n > _NOGIL_BYTES:
        with nogil:
            rc = encode_segment(t, w, src, n, prefix)
        return rc
    return encode_segment(t, w, src, n, prefix)


cdef int encode_segment(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                        bint prefix) noexcept nogil:
    """Escapes src[0:n] into the workspace, merges it and appends the ids;
    a long text block by block (encode_blocks)."""
    cdef Py_ssize_t m
    if n == 0 and not prefix:
        return OK
    if n > 2 * BLOCK_BYTES and blocks_apply(t) and w.alpha == 0.0 and not w.want_spans:
        return encode_blocks(t, w, src, n, prefix)
    m = escape(t, w, src, n, prefix)
    if m < 0:
        return <int>m
    return run(t, w, <int32_t>m)


cdef inline bint blocks_apply(const CoreTables *t) noexcept nogil:
    """Whether a long text may be merged a block at a time (encode_blocks:
    each block ends at a chunk boundary no piece crosses)."""
    return t.rules.chunked and t.rules.n_violations == 0 and t.rules.escape_spaces


cdef inline bint by_str_blocks(const CoreTables *t, str text) noexcept:
    """Whether a one-segment text is read from its str a block at a time
    (SpmCore.encode_long): longer than two of its blocks (str_block_end),
    in a vocabulary whose long texts merge block by block.  (Most texts are
    short: the first test decides.)"""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    return n > BLOCK_BYTES // 2 and n > 2 * (BLOCK_BYTES // PyUnicode_KIND(text)) and blocks_apply(t)


cdef inline bint short_from_storage(str text) noexcept:
    """Whether a text short enough to be merged whole (no blocks) is read as
    CPython stores it rather than as its UTF-8: not ASCII (an ASCII str is
    its own UTF-8), compact (one of the legacy kind, before 3.12, is made
    ready by asking for the UTF-8), and without the UTF-8 copy CPython keeps
    once asked (that one is read as it is).  Asked for, the copy would stay
    on the caller's str for its lifetime."""
    return PyUnicode_IS_COMPACT(text) and not PyUnicode_IS_ASCII(text) \
        and PyUnicode_GET_LENGTH(text) <= BLOCK_BYTES // 2 \
        and (<PyCompactUnicodeObject *><PyObject *>text).utf8 == NULL


cdef Py_ssize_t str_block_end(int kind, const void *data, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """Where the block of a str's characters data[start:n] (`kind` bytes
    each) that starts at `start` ends, as encode_blocks cuts UTF-8: before
    the first space that follows an ASCII character other than a space, at
    least a block's worth of bytes on (BLOCK_BYTES // kind characters)."""
    cdef Py_ssize_t end = start + BLOCK_BYTES // kind
    if end >= n:
        return n
    return <Py_ssize_t>spm_ucs_space_after_ascii(kind, data, <size_t>end, <size_t>n)


cdef int encode_str_block(const CoreTables *t, Workspace *w, int kind, bint ascii, const void *data,
                          Py_ssize_t start, Py_ssize_t end, bint prefix) noexcept nogil:
    """A block of encode_blocks read from a str as CPython stores it: its
    characters data[start:end] (`kind` bytes each; `ascii`: the str is
    ASCII, its data already UTF-8) are escaped and merged, the ids appended.
    No UTF-8 copy of the whole str is made.  ERR_SURROGATE when the block
    holds a surrogate."""
    cdef const char *src
    cdef Py_ssize_t n = ws_utf8_of(w, kind, ascii, data, <size_t>start, <size_t>end, &src), m
    if n < 0:
        return <int>n
    m = escape(t, w, src, n, prefix)
    if m < 0:
        return <int>m
    return run(t, w, <int32_t>m)


cdef int encode_blocks(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                       bint prefix) noexcept nogil:
    """encode_segment of a long text, escaped and merged about BLOCK_BYTES
    at a time, so that the escaped text and its boundaries stay in the
    CPU's cache and the workspace does not grow to three times the text
    (a whole 30 MB document ran slower per MB than its lines).  A block
    ends before a space that follows an ASCII character other than a space:
    there the escaped text has a "▁" after other text, which is a chunk
    boundary when the vocabulary is chunked with no "x▁" piece (no merge
    crosses it), and the block after it starts as escape starts a text
    without the dummy prefix."""
    cdef Py_ssize_t start = 0, end, m
    cdef const char *at
    cdef int rc
    if n > t.max_segment:
        return ERR_TOO_LONG
    while start < n:
        end = start + BLOCK_BYTES
        while end < n:
            at = <const char *>memchr(src + end, b" ", <size_t>(n - end))
            if at == NULL:
                end = n
                break
            end = at - src
            if src[end - 1] != c' ' and <uint8_t>src[end - 1] < 0x80:
                break
            end += 1
        if end > n:
            end = n
        m = escape(t, w, src + start, end - start, prefix and start == 0)
        if m < 0:
            return <int>m
        rc = run(t, w, <int32_t>m)
        if rc != OK:
            return rc
        start = end
    return OK


cdef Py_ssize_t escape_two_byte_run(const CoreTables *t, const char *src, Py_ssize_t i, Py_ssize_t n,
                                    char *text, Py_ssize_t *m, int32_t *bounds, int32_t *nb) noexcept nogil:
    """escape's two-byte characters from src[i] (one starts there) after a
    two-byte character: Cyrillic, Greek, Hebrew and Arabic words, up to the
    first character of another length.  Each is cut as cut_other's last
    case cuts it, by its pair with the one before, read as one 4-byte key.
    Returns the new i; m and nb are advanced.  (In escape's general loop,
    the tests for markers, ASCII and lengths were half of Russian's
    escaping; inlined there, this loop made Japanese slower.  Three-byte
    characters done the same way made Chinese and Japanese slower, with
    fewer instructions.)"""
    cdef Py_ssize_t at = m[0]
    cdef int32_t cuts = nb[0]
    while True:
        bounds[cuts] = <int32_t>at
        memcpy(text + at, src + i, 2)
        cuts += cut_between(t, src + i - 2, 2, 2, False)
        at += 2
        i += 2
        if i + 2 > n or (<uint8_t>src[i] & 0xE0) != 0xC0:
            break
    m[0] = at
    nb[0] = cuts
    return i


cdef Py_ssize_t escape(const CoreTables *t, Workspace *w, const char *src, Py_ssize_t n,
                       bint prefix) noexcept nogil:
    """Writes src[0:n] to w.text with spaces as "▁" (and the dummy prefix
    when `prefix`); returns its length, or an error code (< 0).  Sets
    w.ready_bounds when it found all the chunk boundaries on the way
    (run then skips find_bounds)."""
    cdef Py_ssize_t i = 0, m = 0, length, escaped
    cdef bint marker
    cdef uint8_t u
    cdef uint64_t word
    cdef int k
    cdef uint32_t prev
    cdef int32_t nb = 0, other_len = 0
    cdef int32_t *bounds
    cdef char *text
    cdef const uint8_t *cuts = t.rules.ascii_cut
    if n > t.max_segment:
        return ERR_TOO_LONG
    if ws_reserve(w, <size_t>(3 * n + 3)) != OK:
        return ERR_NOMEM
    text = w.text
    # llama.cpp (llama_escape_whitespace) and sentencepiece's identity
    # normalizer both turn only U+0020 into the marker.
    if prefix:
        memcpy(text, MARKER, 3)
        m = 3
    w.ready_bounds = -1
    if not t.rules.escape_spaces:
        memcpy(text + m, src, n)
        return m + n
    if t.rules.chunked and t.rules.n_violations == 0:
        # The chunk boundaries too, as find_bounds would find them, so that
        # run need not read the text again.  An ASCII byte after an ASCII
        # byte (or the start, or a marker) is cut by ascii_cut, by the
        # byte before and this one; other characters by the rules
        # themselves (cut_other).  (Four bytes are written per ASCII
        # byte, into the slack past the end at worst, and the lengths come
        # from a table: a branch on the space, taken about every sixth
        # byte at random, cost more than the rest of the loop.)
        if grow_int32(&w.bounds, &w.bounds_cap, <size_t>(n + 2)) != OK:
            return ERR_NOMEM
        bounds = w.bounds
        prev = 0x20 if prefix else ASCII_START
        while i < n:
            # ASCII after ASCII (or the start, or a marker): by the table,
            # eight bytes a step while they are all ASCII (one test of a
            # word instead of a test and a branch per byte).
            while i + 8 <= n:
                memcpy(&word, src + i, 8)
                if word & <uint64_t>0x8080808080808080:
                    break
                for k in range(8):
                    u = <uint8_t>src[i + k]
                    bounds[nb] = <int32_t>m
                    nb += cuts[prev << 7 | u]
                    memcpy(text + m, ESCAPED_ASCII[u], 4)
                    m += ESCAPED_LEN[u]
                    prev = u
                i += 8
            while i < n:
                u = <uint8_t>src[i]
                if u >= 0x80:
                    break
                bounds[nb] = <int32_t>m
                nb += cuts[prev << 7 | u]
                memcpy(text + m, ESCAPED_ASCII[u], 4)
                m += ESCAPED_LEN[u]
                prev = u
                i += 1
            # Other characters, and an ASCII byte after one: by the rules.
            while i < n:
                u = <uint8_t>src[i]
                if u < 0x80 and prev <= ASCII_START:
                    break
                # (Characters as find_bounds reads them: a marker, else
                # whole with cut_chars, else byte by byte.)
                marker = u == 0x20
                length = 1
                if u == <uint8_t>MARKER[0] and i + 3 <= n and src[i + 1] == MARKER[1] and src[i + 2] == MARKER[2]:
                    marker = True
                    length = 3
                elif u >= 0x80 and t.rules.cut_chars:
                    length = min(<Py_ssize_t>utf8_len(u), n - i)
                escaped = 3 if u == 0x20 else length
                # (Four bytes at once, one move, into the slack at worst.)
                if u < 0x80:
                    memcpy(text + m, ESCAPED_ASCII[u], 4)
                elif i + 4 <= n:
                    memcpy(text + m, src + i, 4)
                else:
                    memcpy(text + m, src + i, <size_t>length)
                bounds[nb] = <int32_t>m
                if marker:
                    # Cut unless it follows a marker or the start.
                    nb += prev != 0x20 and prev != ASCII_START
                    prev = 0x20
                elif u < 0x80:
                    nb += cut_other(t, src, i, n, escaped, prev, other_len)
                    prev = u
                else:
                    nb += cut_other(t, src, i, n, escaped, prev, other_len)
                    prev = OTHER_CHAR
                    other_len = <int32_t>length
                m += escaped
                i += length
                if other_len == 2 and prev == OTHER_CHAR and i + 2 <= n and (<uint8_t>src[i] & 0xE0) == 0xC0 \
                        and t.rules.cut_chars:
                    i = escape_two_byte_run(t, src, i, n, text, &m, bounds, &nb)
        bounds[nb] = <int32_t>m
        w.ready_bounds = nb + 1
        return m
    return escape_spaces(src, i, n, text, m)


cdef inline int32_t cut_other(const CoreTables *t, const char *src, Py_ssize_t i, Py_ssize_t n,
                              Py_ssize_t length, uint32_t prev, int32_t other_len) noexcept nogil:
    """1 when find_bounds cuts before the character src[i:i+length] (not a
    marker; src[0:n] is what escape reads) that follows `prev`: an ASCII
    byte, 0x20 for a marker, ASCII_START at the start, or OTHER_CHAR for
    the character of other_len bytes right before it.  The cases that
    ascii_cut leaves out: this character or the one before is not ASCII.
    (The pair is read from the source: read from the escaped text, its
    8-byte word spanned the two stores just made there and waited for
    them, a fifth of escape's time on Russian.)"""
    cdef uint8_t u = <uint8_t>src[i]
    cdef const char *pair
    if prev == 0x20 or prev == ASCII_START:
        return isolated_byte(t.rules.isolated, u) and prev == 0x20
    if prev < 0x80:
        other_len = 1
        if isolated_byte(t.rules.isolated, <uint8_t>prev):
            return 1
    if isolated_byte(t.rules.isolated, u):
        return 1
    if not t.rules.cut_chars:
        return 0
    pair = src + i - other_len
    if spm_charpairs_wanted(other_len, <int>length):
        return cut_between(t, pair, other_len, <int32_t>length, i - other_len + 8 <= n)
    return not spm_ascii_pair_held(t.rules.ascii_held, <uint8_t>pair[0], u)


cdef void build_ascii_cuts(ChunkRules *r) noexcept:
    """Fills ascii_cut from the chunking rules of find_bounds for two
    ASCII bytes: before a space that follows another byte; with
    cut_chars on both sides of an isolated byte and between two bytes
    no buildable piece holds side by side (the byte after a space
    meets the marker, never a pair).  The row ASCII_START (the first
    byte without a prefix) cuts nowhere; a prefix is a space."""
    cdef uint32_t p, u
    cdef bint cut
    memset(r.ascii_cut, 0, sizeof(r.ascii_cut))
    for p in range(0x80):
        for u in range(0x80):
            if u == 0x20:
                cut = p != 0x20
            elif p == 0x20:
                cut = isolated_byte(r.isolated, <uint8_t>u)
            else:
                cut = isolated_byte(r.isolated, <uint8_t>u) \
                    or isolated_byte(r.isolated, <uint8_t>p) \
                    or (r.cut_chars and not spm_ascii_pair_held(r.ascii_held, p, u))
            if cut:
                r.ascii_cut[p << 7 | u] = 1


# ---------------------------------------------------------------- boundaries

cdef bint safe_boundary(const CoreTables *t, const char *text, int32_t i, int32_t m) noexcept nogil:
    """No piece that contains "x▁" can lie across position i."""
    cdef const char *v = t.rules.violator_bytes
    cdef int32_t j, start, length
    for j in range(t.rules.n_violations):
        start = i - t.rules.violation[j][2]
        length = t.rules.violation[j][1]
        if start >= 0 and start + length <= m \
                and memcmp(text + start, v + t.rules.violation[j][0], length) == 0:
            return False
    return True


cdef int32_t find_bounds(const CoreTables *t, Workspace *w, int32_t m) noexcept nogil:
    """The chunk boundaries of w.text[0:m] into w.bounds, ending with m:
    the safe positions before a "▁" that follows other text and, with
    cut_chars, between two other characters no buildable piece holds
    side by side and on both sides of an isolated byte.  Returns their
    number, or -1 when out of memory."""
    cdef const char *text = w.text
    cdef int32_t i = 0, nb = 0, prev = -1, prev_len = 0, length
    cdef bint prev_marker = True, cut, cut_next = False
    cdef bint cut_chars = t.rules.cut_chars
    cdef uint64_t isolated = t.rules.isolated
    cdef const uint64_t *held = t.rules.ascii_held
    cdef uint8_t u
    # At most one boundary per character, but most text has far fewer:
    # the list grows as needed.
    if grow_int32(&w.bounds, &w.bounds_cap, <size_t>(m // 4 + 16)) != OK:
        return -1
    while i < m:
        if nb + 2 > <int64_t>w.bounds_cap and grow_int32(&w.bounds, &w.bounds_cap, <size_t>nb + 2) != OK:
            return -1
        if i + 3 <= m and text[i] == MARKER[0] and text[i + 1] == MARKER[1] and text[i + 2] == MARKER[2]:
            if not prev_marker and (cut_next or t.rules.n_violations == 0 or safe_boundary(t, text, i, m)):
                w.bounds[nb] = i
                nb += 1
            prev_marker = True
            cut_next = False
            prev = -1
            i += 3
        else:
            # (Without cut_chars, byte by byte: only markers matter.)
            length = 1
            u = <uint8_t>text[i]
            if cut_chars and u >= 0x80:
                length = min(utf8_len(u), m - i)
            cut = isolated_byte(isolated, u)
            if (cut or cut_next) and i > 0:
                w.bounds[nb] = i
                nb += 1
            elif cut_chars and prev >= 0:
                # (Two characters of one byte are ASCII: the text is valid UTF-8.)
                if cut_between(t, text + prev, prev_len, length, True) if spm_charpairs_wanted(prev_len, length) \
                        else not spm_ascii_pair_held(held, <uint8_t>text[prev], u):
                    w.bounds[nb] = i
                    nb += 1
            cut_next = cut
            prev_marker = False
            prev = i
            prev_len = length
            i += length
    w.bounds[nb] = m
    return nb + 1


cdef inline bint cut_between(const CoreTables *t, const char *pair, int32_t left,
                             int32_t right, bint padded) noexcept nogil:
    """No buildable piece holds the characters pair[0:left] and
    pair[left:left+right] side by side.  `padded`: 8 bytes may be read
    from pair (spm_head8)."""
    return not spm_charpairs_has(t.rules.char_pairs, spm_head8(pair, <size_t>(left + right), padded))


cdef int run(const CoreTables *t, Workspace *w, int32_t m) noexcept nogil:
    """Merges w.text[0:m]: whole, or chunk by chunk at the boundaries
    before a "▁" that follows other text, reusing cached chunks."""
    cdef const char *text = w.text
    cdef const int32_t *bounds
    cdef int32_t begin, end, nb, b, length
    cdef const spm_cache_entry *hit
    cdef spm_cache_view view
    cdef uint64_t h, lookups = 0
    cdef ChunkAhead ahead
    cdef size_t mark, n_ids
    cdef bint use_cache, single, prev_unknown
    cdef bint want_spans = w.want_spans
    cdef const int32_t *cached
    cdef int32_t *ids
    cdef int32_t k, token_id
    cdef int rc
    # (A local: stores into the workspace could alias t as far as the
    # compiler knows, and it would load t.cache again at every use.)
    cdef spm_cache *cache = t.cache
    if not t.rules.chunked or m < 8 or w.alpha > 0.0:
        # (Sampling merges whole segments, as sentencepiece does, and
        # never caches.)
        if t.pairs != NULL:
            return merge_pairs(t, w, 0, m)
        return merge(t, w, 0, m)
    nb = w.ready_bounds if w.ready_bounds >= 0 else find_bounds(t, w, m)
    if nb < 0:
        return ERR_NOMEM
    # Room for every id the text can give (each covers at least a byte),
    # and the four a hit copies whatever its count: the hits below append
    # to a local cursor with no check of their own.
    if grow_int32(&w.ids, &w.ids_cap, w.ids_len + <size_t>m + 8) != OK:
        return ERR_NOMEM
    ids = w.ids
    n_ids = w.ids_len
    bounds = w.bounds
    if cache != NULL:
        spm_cache_view_of(cache, &view)
    else:
        memset(&view, 0, sizeof(view))
    # Each chunk's hash is taken one chunk ahead and its slot prefetched,
    # so that the cache miss overlaps the chunk before.
    look_ahead(text, 0, bounds[0], cache != NULL, &view, &ahead)
    begin = 0
    for b in range(nb):
        end = bounds[b]
        length = ahead.length
        # One character is looked up faster than the cache is: chunks cut
        # between CJK characters are mostly single.
        single = ahead.single
        use_cache = ahead.cached
        h = ahead.h
        if b + 1 < nb:
            look_ahead(text, end, bounds[b + 1], cache != NULL, &view, &ahead)
        if use_cache:
            hit = spm_cache_view_get(&view, text + begin, <size_t>length, h)
            lookups += 1
            if hit != NULL:
                spm_cache_mark(hit)
                rc = OK
                if want_spans:
                    w.ids_len = n_ids
                    rc = spans_of_hit(t, w, spm_cache_ids(hit), hit.ids_len, begin, end)
                    if rc == ERR_NOMEM:
                        return rc
                if rc == OK:
                    cached = spm_cache_ids(hit)
                    if hit.ids_len <= 4:
                        # Four ids whatever their number (the arena and
                        # the ids have room past the end): a copy loop's
                        # branches followed each chunk's count.
                        memcpy(ids + n_ids, cached, 4 * sizeof(int32_t))
                    else:
                        for k in range(hit.ids_len):  # (a few ids: no memcpy call)
                            ids[n_ids + k] = cached[k]
                    n_ids += hit.ids_len
                    begin = end
                    continue
                use_cache = False  # (merged below for its spans; already cached)
        w.ids_len = n_ids
        if single and not want_spans:
            # A character in the vocabulary is its id, whichever merger
            # (emit_piece's fast case, without the call; merge_pairs makes
            # no merge of one symbol).
            token_id = char_id(t, w, text + begin, length)
            if token_id >= 0:
                ids[n_ids] = token_id
                n_ids += 1
                begin = end
                continue
        mark = n_ids
        if t.pairs != NULL:
            rc = merge_pairs(t, w, begin, end)
        elif single:
            prev_unknown = False
            rc = emit_piece(t, w, begin, length, &prev_unknown)
        else:
            rc = merge(t, w, begin, end)
        if rc != OK:
            w.cache_lookups += lookups
            return rc
        # (The mergers grow w.ids themselves; within the room made above
        # it does not move, but it is read again in case.)
        ids = w.ids
        n_ids = w.ids_len
        if use_cache:
            spm_cache_put(cache, &w.cache_writer, text + begin, <size_t>length, h,
                          ids + mark, n_ids - mark)
        begin = end
    w.ids_len = n_ids
    w.cache_lookups += lookups
    return OK


cdef int spans_of_hit(const CoreTables *t, Workspace *w, const int32_t *ids, int32_t n,
                      int32_t begin, int32_t end) noexcept nogil:
    """Appends the spans of cached ids for text[begin:end]: each piece
    spans its own bytes, back to back.  Returns 1 (nothing appended)
    when that does not hold -- a byte or unknown piece, whose span the
    merger gives differently -- so the chunk is merged instead."""
    cdef int32_t i, at = begin, kind
    for i in range(n):
        kind = t.types[ids[i]]
        # (The unknown id by name too: a vocabulary may type it NORMAL.)
        if kind == SPM_TYPE_BYTE or kind == SPM_TYPE_UNKNOWN or ids[i] == t.unk_id:
            return 1
        at += t.offsets[ids[i] + 1] - t.offsets[ids[i]]
    if at != end:
        return 1
    if grow_int32(&w.spans, &w.spans_cap, 2 * (w.ids_len + <size_t>n)) != OK:
        return ERR_NOMEM
    at = begin
    for i in range(n):
        w.spans[2 * (w.ids_len + i)] = at
        at += t.offsets[ids[i] + 1] - t.offsets[ids[i]]
        w.spans[2 * (w.ids_len + i) + 1] = at
    return OK


cdef list find_split_points(const CoreTables *t, Workspace *w, str text, const char *src,
                            Py_ssize_t n, bint prefix, Py_ssize_t parts):
    """SpmCore.split_points for the UTF-8 src[0:n] of `text` (chunked, n > 0,
    parts >= 2): the character offsets of the chunk boundaries at or after
    each equal share of the escaped segment."""
    cdef Py_ssize_t m, i, c = -1, e, j = 0, nw = 0
    cdef int32_t nb, b
    cdef list out = []
    cdef int64_t last = 0, at
    cdef int64_t *wanted = <int64_t *>malloc(parts * sizeof(int64_t))
    if wanted == NULL:
        raise MemoryError()
    try:
        m = escape(t, w, src, n, prefix)
        if m < 0:
            check_rc(<int>m, t, w, text)
        nb = find_bounds(t, w, <int32_t>m)
        if nb < 0:
            raise MemoryError()
        # The boundary at or after each share (bounds are ascending; the
        # last one is the end).
        b = 0
        for j in range(1, parts):
            at = m * j // parts
            while b < nb - 1 and w.bounds[b] < at:
                b += 1
            if b < nb - 1 and w.bounds[b] > last:
                last = w.bounds[b]
                wanted[nw] = last
                nw += 1
        # Escaped byte offsets -> character offsets of `text`.
        e = 3 if prefix else 0
        j = 0
        for i in range(n):
            if (<uint8_t>src[i] & 0xC0) != 0x80:
                c += 1
                if j < nw and e == wanted[j]:
                    out.append(c)
                    j += 1
            e += 3 if (src[i] == c' ' and t.rules.escape_spaces) else 1
        return out
    finally:
        free(wanted)

