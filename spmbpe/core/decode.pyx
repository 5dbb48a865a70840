# Ids back to bytes.

cdef inline int hex_value(char c) noexcept nogil:
    if c'0' <= c <= c'9':
        return c - c'0'
    if c'A' <= c <= c'F':
        return c - c'A' + 10
    if c'a' <= c <= c'f':
        return c - c'a' + 10
    return -1


cdef int byte_piece_value(const char *s, Py_ssize_t n) noexcept nogil:
    """The byte a piece s[0:n] spelled ``<0xNN>`` stands for (two hex
    digits, either case, as llama.cpp's strtol reads them), else -1."""
    cdef int hi, lo
    if n != 6 or memcmp(s, b"<0x", 3) != 0 or s[5] != c'>':
        return -1
    hi = hex_value(s[3])
    lo = hex_value(s[4])
    if hi < 0 or lo < 0:
        return -1
    return hi * 16 + lo


def byte_piece(bytes piece):
    """The byte the piece ``<0xNN>`` (UTF-8) stands for, else -1."""
    return byte_piece_value(PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))


cdef inline Py_ssize_t _as_id(object item, int32_t n) except -1:
    cdef Py_ssize_t token_id
    try:
        token_id = item
    except TypeError:
        raise TypeError(f"token ids must be integers, not {type(item).__name__}") from None
    except OverflowError:
        raise InvalidTokenIdError(item, n) from None
    if token_id < 0 or token_id >= n:
        raise InvalidTokenIdError(item, n)
    return token_id


# # How each reference renders ids as text (spmbpe/_decoding.py chooses the
# rules per reference; the fields below are those rules' encoding, in order):
#   control, unknown, unused, user_defined: RENDER_* for pieces of that type;
#   strip: which leading space comes off (STRIP_*), with strip_count;
#   byte_runs: how <0xNN> runs that are not valid UTF-8 become text (BYTES_*);
#   marker_in_special: U+2581 in rendered control/unknown/user-defined text
#   becomes a space too (tokenizers' Replace decoder runs on every token);
#   segments, legacy_space, first_strip, join_spaces: transformers 4's
#   PreTrainedTokenizer._decode (see render_segmented), where a per-id table
#   of ROLE_* bits says which ids are special tokens and which added ones.
cdef enum:
    RENDER_TEXT = 0        # the piece as spelled (U+2581 kept, but see marker_in_special)
    RENDER_NOTHING = 1
    RENDER_SURFACE = 2     # the reference's unknown surface (sentencepiece: " \u2047 ")
    RENDER_NORMAL = 3      # as a NORMAL piece: U+2581 as a space, stripped as one
cdef enum:
    STRIP_NONE = 0
    STRIP_FIRST_ID = 1        # llama.cpp detokenize: the first id, rendered or not, loses one space
    STRIP_FIRST_RENDERED = 2  # the first piece rendered loses one leading space
    STRIP_WHILE_EMPTY = 3     # sentencepiece: a leading U+2581 of the pieces decoded while the text is empty
    STRIP_OUTPUT = 4          # tokenizers' Strip decoder: up to strip_count spaces off the whole text
cdef enum:
    BYTES_RAW = 0          # the bytes as they are; the caller decodes them (errors=)
    BYTES_EACH = 1         # sentencepiece: each byte of an invalid sequence is U+FFFD
    BYTES_RUN = 2          # tokenizers' ByteFallback: a run that is not valid UTF-8 is U+FFFD per byte
cdef enum:
    RULES_SIZE = 13
cdef enum:
    ROLE_SPECIAL = 1       # one of all_special_tokens: its text, inside a run
    ROLE_SPLIT = 2         # an added token that is not special: a sub-text of its own
    ROLE_OUTSIDE = 4       # not a piece of the sentencepiece model (appended by the folder)

cdef struct DecodeRules:
    uint8_t control
    uint8_t unknown
    uint8_t unused
    uint8_t user_defined
    uint8_t strip
    uint8_t strip_count
    uint8_t byte_runs
    uint8_t marker_in_special
    uint8_t remove_extra_whitespaces   # sentencepiece: keep stripping while the text is empty
    uint8_t segments       # transformers 4: runs between added tokens, decoded by sentencepiece
    uint8_t legacy_space   # (legacy) a space before the pieces that a special token follows
    uint8_t first_strip    # (add_prefix_space) a run's first token loses its U+2581
    uint8_t join_spaces    # (spaces_between_special_tokens) sub-texts joined with spaces

cdef const char *REPLACEMENT = b"\xef\xbf\xbd"  # U+FFFD in UTF-8


cdef inline Py_ssize_t utf8_sequence(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """Length of the valid UTF-8 character at `s` (n bytes available): > 0
    valid, 0 a valid but incomplete prefix, -1 invalid (RFC 3629: no
    overlong forms, surrogates or code points past U+10FFFF)."""
    cdef uint8_t c = s[0]
    cdef Py_ssize_t need, i
    cdef uint8_t lo = 0x80, hi = 0xBF
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        need = 2
    elif 0xE0 <= c <= 0xEF:
        need = 3
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif 0xF0 <= c <= 0xF4:
        need = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return -1
    for i in range(1, need):
        if i >= n:
            return 0
        if not (lo <= s[i] <= hi):
            return -1
        lo = 0x80
        hi = 0xBF
    return need


# What a decoder has rendered and not yet returned, and the state the
# references' text-wide rules keep.
cdef struct DecodeOut:
    char *data
    Py_ssize_t n, cap
    int strip_left                # spaces still to take off the text (STRIP_OUTPUT)
    bint text_empty               # nothing rendered since a sentencepiece decode began
    bint run_emitted              # (segments) the run's text is not empty
    bint sep_owed                 # (segments) a space goes before the next text (join_spaces)

# A run of <0xNN> pieces whose text is not settled yet.
cdef struct ByteRun:
    uint8_t *data
    Py_ssize_t n, cap
    Py_ssize_t valid              # its prefix already checked to be whole, valid characters
    bint bad                      # (BYTES_RUN) it is not valid UTF-8


cdef int out_reserve(DecodeOut *o, Py_ssize_t more) except -1:
    cdef Py_ssize_t want = o.n + more
    cdef char *grown
    if want > o.cap:
        want = want * 2 if want > 64 else 128
        grown = <char *>realloc(o.data, want)
        if grown == NULL:
            raise MemoryError()
        o.data = grown
        o.cap = want
    return 0


cdef int out_emit(DecodeOut *o, const char *s, Py_ssize_t n) except -1:
    # tokenizers' Strip decoder takes spaces off the text as a whole.
    while o.strip_left > 0 and n > 0 and s[0] == c' ':
        s += 1
        n -= 1
        o.strip_left -= 1
    if n > 0:
        o.strip_left = 0
        o.text_empty = False
        o.run_emitted = True
        if o.sep_owed:
            o.sep_owed = False
            out_reserve(o, 1)
            o.data[o.n] = c' '
            o.n += 1
        out_reserve(o, n)
        memcpy(o.data + o.n, s, n)
        o.n += n
    return 0


cdef int out_piece(DecodeOut *o, const char *s, Py_ssize_t n, bint unescape, bint strip) except -1:
    """A piece's text, U+2581 as a space when `unescape`, one leading space
    (or U+2581) off when `strip`."""
    cdef Py_ssize_t i = 0, start
    if strip and n > 0:
        if s[0] == c' ':
            i = 1
        elif unescape and n >= 3 and memcmp(s, MARKER, 3) == 0:
            i = 3
    if not unescape:
        return out_emit(o, s + i, n - i)
    start = i
    while i < n:
        if n - i >= 3 and memcmp(s + i, MARKER, 3) == 0:
            out_emit(o, s + start, i - start)
            out_emit(o, b" ", 1)
            i += 3
            start = i
        else:
            i += 1
    return out_emit(o, s + start, n - start)


cdef bytes out_take(DecodeOut *o, Py_ssize_t n):
    """The first n bytes rendered, taken out."""
    cdef bytes data = PyBytes_FromStringAndSize(o.data, n)
    if o.n > n:
        memmove(o.data, o.data + n, o.n - n)
    o.n -= n
    return data


cdef int run_settle(ByteRun *r, DecodeOut *o, uint8_t byte_runs, bint final) except -1:
    """Turns the pending byte run into text as far as it is settled (all of
    it when `final`: the run has ended), by the rule `byte_runs`."""
    cdef Py_ssize_t i = 0, k
    if r.n == 0:
        if final:
            r.bad = False
        return 0
    if byte_runs == BYTES_EACH:
        # sentencepiece decodes the run character by character; a byte that
        # starts no valid character is U+FFFD on its own.
        while i < r.n:
            k = utf8_sequence(r.data + i, r.n - i)
            if k > 0:
                out_emit(o, <const char *>r.data + i, k)
                i += k
            elif k == 0 and not final:
                break
            else:
                out_emit(o, REPLACEMENT, 3)
                i += 1
        memmove(r.data, r.data + i, r.n - i)
        r.n -= i
        return 0
    # BYTES_RUN: tokenizers' ByteFallback: the whole run is its text when it
    # is valid UTF-8, else every byte of it is U+FFFD.
    i = r.valid
    while not r.bad and i < r.n:
        k = utf8_sequence(r.data + i, r.n - i)
        if k > 0:
            i += k
        elif k == 0 and not final:
            break
        else:
            r.bad = True
    r.valid = i
    if r.bad:
        for k in range(r.n):
            out_emit(o, REPLACEMENT, 3)
        r.n = 0
        r.valid = 0
    elif final:
        out_emit(o, <const char *>r.data, r.n)
        r.n = 0
        r.valid = 0
    if final:
        r.bad = False
    return 0


cdef int run_push(ByteRun *r, uint8_t b) except -1:
    """Appends a byte to the run."""
    cdef uint8_t *grown
    cdef Py_ssize_t want
    if r.n == r.cap:
        want = r.cap * 2 if r.cap else 16
        grown = <uint8_t *>realloc(r.data, want)
        if grown == NULL:
            raise MemoryError()
        r.data = grown
        r.cap = want
    r.data[r.n] = b
    r.n += 1
    return 0


cdef class IdDecoder:
    """Renders ids as text by one reference's rules (DecodeRules), keeping
    what a streaming decoder needs between calls: whether the leading space
    is still to strip, and a byte run whose text is not settled yet.
    ``feed(ids)`` returns the bytes settled so far, ``finish()`` the rest.
    """
    cdef SpmCore core
    cdef DecodeRules rules
    cdef const uint8_t[::1] skip
    cdef bint skipping
    cdef const uint8_t[::1] roles    # ROLE_* of each id (with rules.segments)
    cdef PieceTable spelling         # each id's text, where the reference's differs (or None)
    cdef int32_t lead_id, tail_id
    cdef bytes surface
    # state
    cdef bint at_start
    cdef bint tail_held
    cdef bint first
    cdef bint bos_ws
    cdef bint bos_ws_seen
    cdef DecodeOut o
    cdef ByteRun r
    # transformers 4's segments (render_segmented)
    cdef Py_ssize_t run_pos      # tokens of the current run so far (its i)
    cdef Py_ssize_t cur_len      # of them, since its last special token
    cdef bint prev_special
    cdef bint holding            # out[hold_pos:] may still get a space before it
    cdef Py_ssize_t hold_pos
    cdef bint hold_sep           # sep_owed when the hold began

    def __cinit__(self, SpmCore core not None, const uint8_t[::1] rules not None, skip, bytes surface not None,
                  int32_t lead_id=-1, int32_t tail_id=-1, roles=None, PieceTable spelling=None):
        if rules.shape[0] != RULES_SIZE:
            raise ValueError("decode rules have the wrong size")
        self.core = core
        memcpy(&self.rules, &rules[0], RULES_SIZE)
        self.skipping = skip is not None
        if self.skipping:
            self.skip = skip
            if self.skip.shape[0] < core.t.n_pieces:
                raise ValueError("the skip table is shorter than the vocabulary")
        if self.rules.segments:
            if roles is None:
                raise ValueError("segmented decode rules need a table of roles")
            self.roles = roles
            if self.roles.shape[0] < core.t.n_pieces:
                raise ValueError("the table of roles is shorter than the vocabulary")
            if spelling is not None and spelling.size < core.t.n_pieces:
                raise ValueError("the spelling table is shorter than the vocabulary")
            self.spelling = spelling
        # Ids left out as a sequence's first and last one, whatever their
        # type (llama_detokenize's remove_special drops a leading BOS and a
        # trailing EOS that the vocabulary adds); -1 for none.
        self.lead_id = lead_id if self.skipping else -1
        self.tail_id = tail_id if self.skipping else -1
        self.surface = surface
        self.reset()

    def __dealloc__(self):
        free(self.r.data)
        free(self.o.data)

    cpdef reset(self):
        """A fresh sequence: the next id is a first one."""
        self.at_start = True
        self.tail_held = False
        self.first = True
        self.bos_ws = True
        self.bos_ws_seen = False
        self.o.text_empty = True
        self.o.strip_left = self.rules.strip_count if self.rules.strip == STRIP_OUTPUT else 0
        self.r.n = 0
        self.r.valid = 0
        self.r.bad = False
        self.o.n = 0
        self.run_pos = 0
        self.cur_len = 0
        self.prev_special = False
        self.o.run_emitted = False
        self.o.sep_owed = False
        self.holding = False
        self.hold_pos = 0
        self.hold_sep = False

    cdef int push_byte(self, uint8_t b) except -1:
        if self.rules.byte_runs == BYTES_RAW:
            if self.first and (self.rules.strip == STRIP_FIRST_ID or self.rules.strip == STRIP_FIRST_RENDERED):
                self.first = False
                if b == 0x20:
                    return 0
            self.first = False
            return out_emit(&self.o, <const char *>&b, 1)
        self.first = False
        run_push(&self.r, b)
        return run_settle(&self.r, &self.o, self.rules.byte_runs, False)

    cdef int render(self, Py_ssize_t token_id) except -1:
        cdef const CoreTables *t = &self.core.t
        cdef int64_t a = t.offsets[token_id]
        cdef int64_t e = t.offsets[token_id + 1]
        if self.skipping and self.skip[token_id]:
            if self.rules.strip == STRIP_FIRST_ID:
                self.first = False
            return 0
        if self.rules.segments:
            if self.spelling is not None:
                # (An added token that gives a piece's id a text of its own.)
                a = self.spelling.offsets[token_id]
                e = self.spelling.offsets[token_id + 1]
                return self.render_segmented(token_id, PyBytes_AS_STRING(self.spelling.arena) + a, e - a)
            return self.render_segmented(token_id, t.arena + a, e - a)
        return self.render_piece(token_id, t.arena + a, e - a)

    cdef int render_piece(self, Py_ssize_t token_id, const char *s, Py_ssize_t n) except -1:
        """Piece `token_id`, spelled s[0:n], by its type's rule."""
        cdef uint8_t kind = self.core.t.types[token_id]
        cdef uint8_t how
        cdef int value
        cdef bint strip
        if kind == SPM_TYPE_BYTE:
            value = byte_piece_value(s, n)
            if value >= 0:
                return self.push_byte(<uint8_t>value)
        # Any other piece ends a byte run.
        run_settle(&self.r, &self.o, self.rules.byte_runs, True)
        if kind == SPM_TYPE_CONTROL:
            how = self.rules.control
        elif kind == SPM_TYPE_UNKNOWN:
            how = self.rules.unknown
        elif kind == SPM_TYPE_USER_DEFINED:
            how = self.rules.user_defined
        elif kind == SPM_TYPE_UNUSED:
            how = self.rules.unused
        else:
            how = RENDER_NORMAL
        if self.rules.strip == STRIP_WHILE_EMPTY or self.rules.segments:
            return self.render_sentencepiece(how, s, n)
        if how == RENDER_NOTHING:
            if self.rules.strip == STRIP_FIRST_ID:
                self.first = False
            return 0
        if how == RENDER_SURFACE:
            self.first = False
            return out_emit(&self.o, PyBytes_AS_STRING(self.surface), PyBytes_GET_SIZE(self.surface))
        strip = self.first and (self.rules.strip == STRIP_FIRST_ID or self.rules.strip == STRIP_FIRST_RENDERED)
        self.first = False
        if how == RENDER_NORMAL:
            return out_piece(&self.o, s, n, True, strip)
        return out_piece(&self.o, s, n, self.rules.marker_in_special, strip)

    cdef int render_segmented(self, Py_ssize_t token_id, const char *s, Py_ssize_t n) except -1:
        # transformers 4's PreTrainedTokenizer._decode: added tokens that are
        # not special split the ids into runs, and the texts (each run's,
        # each such token's) are joined with spaces, a run's dropped when
        # empty unless it is the last. LlamaTokenizer.convert_tokens_to_string
        # decodes a run: its first token loses a leading U+2581
        # (add_prefix_space) and is then looked up again as a piece; special
        # tokens are their text, and with legacy a space goes before the
        # pieces they follow; the pieces between them go to sentencepiece's
        # decode, one call each (so its leading-space strip starts afresh).
        cdef uint8_t role = self.roles[token_id]
        cdef bint marked = n >= 3 and memcmp(s, MARKER, 3) == 0
        if role & ROLE_SPLIT:
            self.end_run()
            out_emit(&self.o, s, n)
            self.o.sep_owed = self.rules.join_spaces
            self.o.run_emitted = False
            return 0
        if self.run_pos == 0 and self.rules.first_strip and marked:
            s += 3
            n -= 3
            token_id = spm_vocab_find(self.core.t.vocab, s, n)
            role = self.roles[token_id] if token_id >= 0 else ROLE_OUTSIDE
            if role & ROLE_OUTSIDE:
                # Not a piece of the model: sentencepiece's decode gives an
                # unknown piece's text as it is spelled.
                token_id = -1
        self.run_pos += 1
        if role & ROLE_SPECIAL:
            run_settle(&self.r, &self.o, self.rules.byte_runs, True)
            if self.cur_len > 0 and self.rules.legacy_space:
                self.space_before_pieces()
            self.cur_len = 0
            self.holding = False
            self.prev_special = True
            return out_emit(&self.o, s, n)
        if self.prev_special and self.run_pos == 2 and self.rules.first_strip and not marked:
            out_emit(&self.o, b" ", 1)
        if self.cur_len == 0:
            # A sentencepiece decode call begins.
            self.bos_ws = self.rules.strip == STRIP_WHILE_EMPTY
            self.bos_ws_seen = False
            self.o.text_empty = True
            self.hold_pos = self.o.n
            self.hold_sep = self.o.sep_owed
            # Without skipping, a special token may still follow these pieces.
            self.holding = self.rules.legacy_space and not self.skipping
        self.cur_len += 1
        self.prev_special = False
        if token_id < 0:
            run_settle(&self.r, &self.o, self.rules.byte_runs, True)
            return self.render_sentencepiece(RENDER_TEXT, s, n)
        return self.render_piece(token_id, s, n)

    cdef int space_before_pieces(self) except -1:
        """transformers 4 (legacy): the space that goes before the text of
        the pieces since the hold began, now that a special token follows."""
        cdef Py_ssize_t p
        if self.o.sep_owed:
            # (Their text is empty: the separator is still owed.)
            return out_emit(&self.o, b" ", 1)
        p = self.hold_pos + (1 if self.hold_sep else 0)
        out_reserve(&self.o, 1)
        memmove(self.o.data + p + 1, self.o.data + p, self.o.n - p)
        self.o.data[p] = c' '
        self.o.n += 1
        return 0

    cdef int end_run(self) except -1:
        """The end of a run (an added token or the last id): an empty run's
        text is dropped, except the last one's, which still gets its space."""
        run_settle(&self.r, &self.o, self.rules.byte_runs, True)
        if self.o.run_emitted:
            self.o.sep_owed = self.rules.join_spaces
        self.run_pos = 0
        self.cur_len = 0
        self.prev_special = False
        self.holding = False
        return 0

    cdef int render_sentencepiece(self, uint8_t how, const char *s, Py_ssize_t n) except -1:
        # sentencepiece's DecodeSentencePiece: while nothing has been
        # decoded, the leading U+2581 of a piece comes off (once; again and
        # again with remove_extra_whitespaces); control pieces are nothing,
        # unknown ones its unk_surface.
        cdef bint stripped = False
        if self.bos_ws_seen or not self.o.text_empty:
            self.bos_ws = False
        if how == RENDER_NOTHING:
            self.bos_ws_seen = False
            return 0
        if how == RENDER_SURFACE:
            self.bos_ws_seen = False
            return out_emit(&self.o, PyBytes_AS_STRING(self.surface), PyBytes_GET_SIZE(self.surface))
        if how == RENDER_TEXT:
            self.bos_ws_seen = False
            return out_piece(&self.o, s, n, self.rules.marker_in_special, False)
        if self.bos_ws and n >= 3 and memcmp(s, MARKER, 3) == 0:
            s += 3
            n -= 3
            stripped = not self.rules.remove_extra_whitespaces
        self.bos_ws_seen = stripped
        return out_piece(&self.o, s, n, True, False)

    cdef bytes take(self):
        """The bytes rendered so far, but for a hold (space_before_pieces)."""
        cdef bytes data = out_take(&self.o, self.hold_pos if self.holding else self.o.n)
        self.hold_pos = 0
        return data

    def feed(self, ids):
        """The bytes that `ids` settle (a byte run may wait for its end, and
        a tail id for the next id: the last one is left out)."""
        cdef int32_t n = self.core.t.n_pieces
        cdef Py_ssize_t token_id
        for item in ids:
            token_id = _as_id(item, n)
            if self.at_start:
                self.at_start = False
                if token_id == self.lead_id:
                    # (llama.cpp then strips no leading space: remove_space
                    # is cleared with the BOS.)
                    self.first = False
                    continue
            if self.tail_held:
                self.tail_held = False
                self.render(self.tail_id)
            if token_id == self.tail_id:
                self.tail_held = True
                continue
            self.render(token_id)
        return self.take()

    def finish(self):
        """The rest (a pending byte run; a tail id held last is left out),
        then a fresh sequence."""
        run_settle(&self.r, &self.o, self.rules.byte_runs, True)
        if self.rules.segments:
            if self.run_pos > 0 and not self.o.run_emitted and self.o.sep_owed:
                # The last run's text is joined even when it is empty: the
                # separator owed is all that shows of it.
                self.o.sep_owed = False
                out_emit(&self.o, b" ", 1)
            self.end_run()
        data = self.take()
        self.reset()
        return data


def decode_ids(SpmCore core not None, ids, const uint8_t[::1] rules not None, skip, bytes surface not None,
               int32_t lead_id=-1, int32_t tail_id=-1, roles=None, PieceTable spelling=None):
    """The bytes of `ids` rendered by `rules` (one whole sequence)."""
    cdef IdDecoder decoder = IdDecoder(core, rules, skip, surface, lead_id, tail_id, roles, spelling)
    cdef bytes head = decoder.feed(ids)
    cdef bytes tail = decoder.finish()
    return head + tail if tail else head

# The decode rules' values, for spmbpe/_decoding.py (the one place that
# chooses them per reference).
DECODE_CONSTANTS = {
    "RENDER_TEXT": RENDER_TEXT, "RENDER_NOTHING": RENDER_NOTHING,
    "RENDER_SURFACE": RENDER_SURFACE, "RENDER_NORMAL": RENDER_NORMAL,
    "STRIP_NONE": STRIP_NONE, "STRIP_FIRST_ID": STRIP_FIRST_ID,
    "STRIP_FIRST_RENDERED": STRIP_FIRST_RENDERED, "STRIP_WHILE_EMPTY": STRIP_WHILE_EMPTY,
    "STRIP_OUTPUT": STRIP_OUTPUT,
    "BYTES_RAW": BYTES_RAW, "BYTES_EACH": BYTES_EACH, "BYTES_RUN": BYTES_RUN,
    "RULES_SIZE": RULES_SIZE,
    "ROLE_SPECIAL": ROLE_SPECIAL, "ROLE_SPLIT": ROLE_SPLIT, "ROLE_OUTSIDE": ROLE_OUTSIDE,
}

