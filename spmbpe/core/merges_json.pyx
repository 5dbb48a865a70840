# A tokenizer.json's vocabulary and merge rules read from the file's bytes
# (spmbpe/tokenizer_json.py; uses core/rules.pyx and core/jsonl.pyx): each
# rule goes from the file's bytes to its three ids, and the vocabulary to
# the table's arena, with no Python object made per rule or piece.
#
# model_spans finds model.merges and model.vocab in a document that is wholly
# the plain JSON of core/jsonl.pyx (a strict subset of json.loads's grammar,
# so the rest of the document parses as json.loads parses it);
# json_merge_rule_ids reads the rules as merge_rule_ids reads the list
# json.loads would give, and json_vocab_pieces the vocabulary in its plain
# case.  Anything else -- a document, rule or vocabulary they do not take --
# is None or RuleNotResolved, and the caller parses it with json.loads.


cdef enum:
    # The longest member name looked for ("merges"), as its source may spell
    # it: six bytes a character (\uXXXX).
    _NAME_SOURCE_MAX = 36


cdef inline bint _is_key(const uint8_t *key, Py_ssize_t key_len, const char *name, Py_ssize_t n) noexcept nogil:
    return key_len == n and memcmp(key, name, <size_t>n) == 0


cdef Py_ssize_t _member_name(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t *name,
                             Py_ssize_t *name_len) noexcept nogil:
    """_json_key with the name decoded into `name` (room for
    _NAME_SOURCE_MAX + 8 bytes: _json_string writes 8 at a time) only when
    its source is short enough to spell one looked for; a longer one gets
    name_len -1."""
    cdef Py_ssize_t after = _json_string(s, i, n, NULL, NULL) if i < n and s[i] == 34 else -1
    if after < 0:
        return -1
    if after - i - 2 <= _NAME_SOURCE_MAX:
        return _json_key(s, i, n, name, name_len)
    name_len[0] = -1
    return _json_key(s, i, n, NULL, NULL)


cdef Py_ssize_t _members(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int depth, uint8_t *key,
                         Py_ssize_t *span) noexcept nogil:
    """Checks the JSON object at s[i] ('{'), `depth` deep: the position
    after it, or -1.  At depth 0 (the document) it looks for the member
    "model", at depth 1 (the model) for "merges" and "vocab": span[0:2] is
    where the last "merges" array of the last "model" object is, span[2:4]
    its last "vocab" object ((-1, -1): none), as json.loads keeps the last
    of a repeated member."""
    cdef Py_ssize_t key_len, start
    cdef bint more = True
    i = _json_ws(s, i + 1, n)
    if i < n and s[i] == 125:  # '}'
        return i + 1
    while more:
        i = _member_name(s, i, n, key, &key_len)
        if i < 0:
            return -1
        start = i
        if depth == 0 and _is_key(key, key_len, b"model", 5):
            span[0] = span[1] = span[2] = span[3] = -1  # a later "model" replaces the earlier one whole
            if i < n and s[i] == 123:
                i = _members(s, i, n, 1, key, span)
            else:
                i = _json_value(s, i, n, 1)
        else:
            i = _json_value(s, i, n, depth + 1)
            if depth == 1 and i >= 0 and _is_key(key, key_len, b"merges", 6):
                span[0] = start if s[start] == 91 else -1  # '['
                span[1] = i if s[start] == 91 else -1
            elif depth == 1 and i >= 0 and _is_key(key, key_len, b"vocab", 5):
                span[2] = start if s[start] == 123 else -1  # '{'
                span[3] = i if s[start] == 123 else -1
        if i < 0:
            return -1
        i = _json_next(s, i, n, 125, &more)
        if i < 0:
            return -1
    return i


def model_spans(const unsigned char[::1] doc):
    """(merges_start, merges_end, vocab_start, vocab_end): where the array
    model.merges and the object model.vocab are in `doc`, the bytes of a
    tokenizer.json (valid UTF-8); the vocabulary's two are -1 when it is
    not an object.  None when the document is not one plain JSON object
    (core/jsonl.pyx) holding a "model" object with a "merges" array."""
    cdef Py_ssize_t n = doc.shape[0], i
    cdef Py_ssize_t span[4]
    cdef uint8_t name[_NAME_SOURCE_MAX + 8]
    if n == 0:
        return None
    span[0] = span[1] = span[2] = span[3] = -1
    i = _json_ws(&doc[0], 0, n)
    if i >= n or doc[i] != 123:
        return None
    i = _members(&doc[0], i, n, 0, name, span)
    if i < 0 or _json_ws(&doc[0], i, n) != n or span[0] < 0:
        return None
    return span[0], span[1], span[2], span[3]


def json_vocab_pieces(const unsigned char[::1] doc, Py_ssize_t start, Py_ssize_t end):
    """The pieces of model.vocab, the JSON object doc[start:end]
    (model_spans'), by id: (arena, offsets) as PieceTable takes them, when
    its members are plain strings whose values are the ids 0..n-1, each
    once, as JSON integers.  None for anything else -- another id, a
    float, a lone surrogate -- which json.loads then reads (and
    spec_from_json names what is wrong).  A name given twice is not seen
    here: the caller checks the table (PieceTable.first_duplicate)."""
    cdef const uint8_t *s
    cdef uint8_t *text
    cdef Py_ssize_t i, name_len, at = 0, count = 0, cap = 0, k
    cdef int64_t value
    cdef int64_t *found = NULL   # (offset, length, id) of each member, in the file's order
    cdef int64_t *grown
    cdef bint more = True, in_order = True
    if not 0 <= start < end <= doc.shape[0] or doc[start] != 123:
        raise ValueError("doc[start:end] is not a JSON object")
    s = &doc[0]
    # Every name decoded back to back (a decoded string is never longer
    # than its source).
    decoded = PyByteArray_FromStringAndSize(NULL, end - start)
    text = <uint8_t *>PyByteArray_AS_STRING(decoded)
    try:
        i = _json_ws(s, start + 1, end)
        if i < end and s[i] == 125:  # '}': an empty vocabulary, the loader's error
            return None
        while more:
            if count == cap:
                cap = 2 * cap + 1024
                grown = <int64_t *>realloc(found, <size_t>cap * 3 * sizeof(int64_t))
                if grown == NULL:
                    raise MemoryError()
                found = grown
            i = _json_key(s, i, end, text + at, &name_len)
            if i < 0 or i >= end or not 48 <= s[i] <= 57:
                return None
            value = 0
            k = i
            while i < end and 48 <= s[i] <= 57 and i - k < 10:
                value = value * 10 + (s[i] - 48)
                i += 1
            if (s[k] == 48 and i - k > 1) or (i < end and (48 <= s[i] <= 57 or s[i] == 46 or s[i] == 101
                                                             or s[i] == 69)):
                return None  # not one plain integer below 10**10 (a float, 1e3, 01)
            found[3 * count] = at
            found[3 * count + 1] = name_len
            found[3 * count + 2] = value
            in_order = in_order and value == count
            at += name_len
            count += 1
            i = _json_next(s, i, end, 125, &more)
            if i < 0 or (not more and i != end):
                return None
        return _pieces_by_id(decoded, at, found, count, in_order)
    finally:
        free(found)


cdef object _pieces_by_id(bytearray decoded, Py_ssize_t length, const int64_t *found, Py_ssize_t count,
                          bint in_order):
    """(arena, offsets) of the `count` members `found` ((offset, length,
    id) in `decoded`, whose first `length` bytes they fill), by id; None
    unless the ids are 0..count-1, each once.  `in_order`: they are, in
    the file's order (as files write them), and the arena is `decoded`."""
    cdef const char *text = PyByteArray_AS_STRING(decoded)
    cdef Py_ssize_t k, piece_id
    offsets = array("q", bytes(8 * (count + 1)))
    cdef int64_t[::1] off = offsets
    if in_order:
        for k in range(count):
            off[k + 1] = off[k] + found[3 * k + 1]
        return PyBytes_FromStringAndSize(text, length), offsets
    # off[id + 1]: the length of the piece of that id (-1: none yet).
    for k in range(count + 1):
        off[k] = -1
    for k in range(count):
        piece_id = found[3 * k + 2]
        if piece_id >= count or off[piece_id + 1] >= 0:
            return None
        off[piece_id + 1] = found[3 * k + 1]
    off[0] = 0
    for k in range(count):
        off[k + 1] += off[k]
    arena = PyBytes_FromStringAndSize(NULL, length)
    for k in range(count):
        piece_id = found[3 * k + 2]
        memcpy(PyBytes_AS_STRING(arena) + off[piece_id], text + found[3 * k], <size_t>found[3 * k + 1])
    return arena, offsets


cdef Py_ssize_t _rule_string(const uint8_t *s, Py_ssize_t i, Py_ssize_t end, uint8_t *o,
                             Py_ssize_t *o_len, Py_ssize_t rule) except -1:
    """The JSON string of rule `rule` at s[i], decoded into `o`: the
    position after it (RuleNotResolved when it is none, or not plain)."""
    if i >= end or s[i] != 34:
        raise RuleNotResolved(f"rule {rule} is not a pair of pieces")
    i = _json_string(s, i, end, o, o_len)
    if i < 0:
        raise RuleNotResolved(f"rule {rule} is not a plain JSON string")
    return i


cdef enum:
    # Rules read, and their lookups' slots loading, before the first of them
    # is looked up: the vocabulary's table is larger than the second-level
    # cache, and three lookups a rule, one after the other, each waited for
    # its miss (the keys are read as words too: spm_vocab_key_of's
    # `padded`).
    _RULES_AHEAD = 8
    # Decoded rules go back to back into the scratch, which is taken up
    # again from its start once this much is written (and the rules in it
    # looked up): only its first pages are ever touched.
    _SCRATCH_WINDOW = 1 << 16


ctypedef struct _RuleKeys:
    spm_vocab_key part[3]  # left, right, merged


cdef Py_ssize_t _look_up_rules(_IdColumns out, PieceTable table, const uint8_t[::1] model_ids,
                               const _RuleKeys *ahead, Py_ssize_t rule, Py_ssize_t stop) except -1:
    """Appends the three ids of rules rule..stop-1 (their keys hashed and
    prefetched in ahead[rule % _RULES_AHEAD]); returns stop."""
    cdef const _RuleKeys *keys
    cdef int32_t left_id, right_id, merged_id
    while rule < stop:
        keys = &ahead[rule % _RULES_AHEAD]
        left_id = model_key_piece(table, model_ids, &keys.part[0])
        right_id = model_key_piece(table, model_ids, &keys.part[1])
        merged_id = model_key_piece(table, model_ids, &keys.part[2])
        if left_id < 0 or right_id < 0 or merged_id < 0:
            raise RuleNotResolved(f"rule {rule} names a piece outside the vocabulary")
        out.append(left_id, right_id, merged_id)
        rule += 1
    return stop


def json_merge_rule_ids(PieceTable table, const unsigned char[::1] doc, Py_ssize_t start, Py_ssize_t end,
                        const uint8_t[::1] model_ids):
    """merge_rule_ids of the rules in doc[start:end], a JSON array of "a b"
    strings and ["a", "b"] pairs (model_spans'): (left, right, merged)
    ids as array('i'), or RuleNotResolved where merge_rule_ids would
    raise, or where a rule is not a plain string or pair."""
    cdef _IdColumns out = _IdColumns()
    cdef _RuleKeys ahead[_RULES_AHEAD]
    cdef _RuleKeys *keys
    cdef const uint8_t *s
    cdef uint8_t *base
    cdef uint8_t *a
    cdef const uint8_t *space
    cdef Py_ssize_t i, n_a, n_b, rule = 0, looked_up = 0, n_left, n_right, at = 0
    cdef bint more
    if table.size != model_ids.shape[0]:
        raise ValueError("model_ids has one flag per piece of the table")
    if not 0 <= start < end <= doc.shape[0] or doc[start] != 91:
        raise ValueError("doc[start:end] is not a JSON array")
    s = &doc[0]
    # (At most a rule per 6 bytes, "a b",: reserved once, never copied.)
    out.reserve((end - start) // 6 + 1)
    # Each rule's parts and join, decoded: a decoded string is never longer
    # than its source, and a rule writes at most twice its own (a join
    # after "a b"), so the rules since the scratch was last taken up from
    # its start always fit; the keys are read 8 bytes at a time, into the
    # slack at worst.
    scratch = PyByteArray_FromStringAndSize(NULL, 2 * (end - start) + 8)
    base = <uint8_t *>PyByteArray_AS_STRING(scratch)
    i = _json_ws(s, start + 1, end)
    if i < end and s[i] == 93:  # ']'
        return out.arrays()
    while True:
        a = base + at
        keys = &ahead[rule % _RULES_AHEAD]
        if i < end and s[i] == 91:  # ["a", "b"]: the join is the two side by side
            i = _rule_string(s, _json_ws(s, i + 1, end), end, a, &n_a, rule)
            i = _json_ws(s, i, end)
            if i >= end or s[i] != 44:
                raise RuleNotResolved(f"rule {rule} is not a pair of pieces")
            i = _rule_string(s, _json_ws(s, i + 1, end), end, a + n_a, &n_b, rule)
            i = _json_ws(s, i, end)
            if i >= end or s[i] != 93:
                raise RuleNotResolved(f"rule {rule} is not a pair of pieces")
            i += 1
            spm_vocab_key_of(table.vocab, <const char *>a, <size_t>n_a, 1, &keys.part[0])
            spm_vocab_key_of(table.vocab, <const char *>a + n_a, <size_t>n_b, 1, &keys.part[1])
            spm_vocab_key_of(table.vocab, <const char *>a, <size_t>(n_a + n_b), 1, &keys.part[2])
            at += n_a + n_b
        else:  # "a b", split at the first space; the join written after it
            i = _rule_string(s, i, end, a, &n_a, rule)
            space = <const uint8_t *>memchr(a, 32, <size_t>n_a)
            if space == NULL:
                raise RuleNotResolved(f"rule {rule} has no space")
            n_left = space - a
            n_right = n_a - n_left - 1
            memcpy(a + n_a, a, <size_t>n_left)
            memcpy(a + n_a + n_left, space + 1, <size_t>n_right)
            spm_vocab_key_of(table.vocab, <const char *>a, <size_t>n_left, 1, &keys.part[0])
            spm_vocab_key_of(table.vocab, <const char *>space + 1, <size_t>n_right, 1, &keys.part[1])
            spm_vocab_key_of(table.vocab, <const char *>a + n_a, <size_t>(n_a - 1), 1, &keys.part[2])
            at += 2 * n_a - 1
        rule += 1
        if at >= _SCRATCH_WINDOW:
            looked_up = _look_up_rules(out, table, model_ids, ahead, looked_up, rule)
            at = 0
        elif rule - looked_up == _RULES_AHEAD:
            looked_up = _look_up_rules(out, table, model_ids, ahead, looked_up, looked_up + 1)
        i = _json_next(s, i, end, 93, &more)
        if i < 0 or (not more and i != end):
            raise RuleNotResolved(f"the rules end at rule {rule} before the array does")
        if not more:
            break
    _look_up_rules(out, table, model_ids, ahead, looked_up, rule)
    return out.arrays()
