# A tokenizer.json's merge rules read from the file's bytes (spmbpe/tokenizer_json.py,
# included by _core.pyx after core/rules.pyx and core/jsonl.pyx, whose JSON
# scanning it uses).  json.loads spent 30-40 ms of a 50 ms parse of
# Mistral's tokenizer.json on its 59,000 rules, each a new list of two new
# strs that merge_rule_ids then only looked up; here each rule goes from the
# file's bytes to its three ids.
#
# merges_span finds model.merges in a document that is wholly the plain JSON
# of core/jsonl.pyx (a strict subset of json.loads's grammar, so the rest of
# the document parses as json.loads parses it); json_merge_rule_ids reads the
# rules as merge_rule_ids reads the list json.loads would give.  Anything
# else -- a document or rule they do not take -- is None or RuleNotResolved,
# and the caller parses it with json.loads.


cdef inline bint _is_key(const uint8_t *key, Py_ssize_t key_len, const char *name, Py_ssize_t n) noexcept nogil:
    return key_len == n and memcmp(key, name, <size_t>n) == 0


cdef Py_ssize_t _members(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int depth, uint8_t *key,
                         Py_ssize_t *span) noexcept nogil:
    """Checks the JSON object at s[i] ('{'), `depth` deep: the position
    after it, or -1.  At depth 0 (the document) it looks for the member
    "model", at depth 1 (the model) for "merges": span[0:2] is where the
    last "merges" array of the last "model" object is ((-1, -1): none), as
    json.loads keeps the last of a repeated member."""
    cdef Py_ssize_t key_len, start
    cdef bint more = True
    i = _json_ws(s, i + 1, n)
    if i < n and s[i] == 125:  # '}'
        return i + 1
    while more:
        i = _json_key(s, i, n, key, &key_len)
        if i < 0:
            return -1
        start = i
        if depth == 0 and _is_key(key, key_len, b"model", 5):
            span[0] = span[1] = -1  # a later "model" replaces the earlier one whole
            if i < n and s[i] == 123:
                i = _members(s, i, n, 1, key, span)
            else:
                i = _json_value(s, i, n, 1)
        else:
            i = _json_value(s, i, n, depth + 1)
            if depth == 1 and i >= 0 and _is_key(key, key_len, b"merges", 6):
                if s[start] == 91:  # '['
                    span[0] = start
                    span[1] = i
                else:
                    span[0] = span[1] = -1
        if i < 0:
            return -1
        i = _json_next(s, i, n, 125, &more)
        if i < 0:
            return -1
    return i


def merges_span(const unsigned char[::1] doc):
    """(start, end) of the array model.merges in `doc`, the bytes of a
    tokenizer.json (valid UTF-8), or None when the document is not one
    plain JSON object (core/jsonl.pyx) holding a "model" object with a
    "merges" array."""
    cdef Py_ssize_t n = doc.shape[0], i
    cdef Py_ssize_t span[2]
    if n == 0:
        return None
    scratch = PyByteArray_FromStringAndSize(NULL, n)
    span[0] = span[1] = -1
    i = _json_ws(&doc[0], 0, n)
    if i >= n or doc[i] != 123:
        return None
    i = _members(&doc[0], i, n, 0, <uint8_t *>PyByteArray_AS_STRING(scratch), span)
    if i < 0 or _json_ws(&doc[0], i, n) != n or span[0] < 0:
        return None
    return span[0], span[1]


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


def json_merge_rule_ids(PieceTable table, const unsigned char[::1] doc, Py_ssize_t start, Py_ssize_t end,
                        const uint8_t[::1] model_ids):
    """merge_rule_ids of the rules in doc[start:end], a JSON array of "a b"
    strings and ["a", "b"] pairs (merges_span's): (left, right, merged)
    ids as array('i'), or RuleNotResolved where merge_rule_ids would
    raise, or where a rule is not a plain string or pair."""
    cdef _IdColumns out = _IdColumns()
    cdef const uint8_t *s
    cdef uint8_t *a
    cdef uint8_t *b
    cdef const uint8_t *space
    cdef Py_ssize_t i, n_a, n_b, rule = 0, n_left
    cdef int32_t left_id, right_id, merged_id
    cdef bint more
    if table.size != model_ids.shape[0]:
        raise ValueError("model_ids has one flag per piece of the table")
    if not 0 <= start < end <= doc.shape[0] or doc[start] != 91:
        raise ValueError("doc[start:end] is not a JSON array")
    s = &doc[0]
    # Two decoded strings side by side: a rule's join is a[0:n_a] + b[0:n_b]
    # (a decoded string is never longer than its source).
    scratch = PyByteArray_FromStringAndSize(NULL, 2 * (end - start))
    a = <uint8_t *>PyByteArray_AS_STRING(scratch)
    i = _json_ws(s, start + 1, end)
    if i < end and s[i] == 93:  # ']'
        return out.arrays()
    while True:
        if i < end and s[i] == 91:  # ["a", "b"]
            i = _rule_string(s, _json_ws(s, i + 1, end), end, a, &n_a, rule)
            i = _json_ws(s, i, end)
            if i >= end or s[i] != 44:
                raise RuleNotResolved(f"rule {rule} is not a pair of pieces")
            b = a + n_a
            i = _rule_string(s, _json_ws(s, i + 1, end), end, b, &n_b, rule)
            i = _json_ws(s, i, end)
            if i >= end or s[i] != 93:
                raise RuleNotResolved(f"rule {rule} is not a pair of pieces")
            i += 1
            left_id = model_piece(table, model_ids, <const char *>a, n_a)
            right_id = model_piece(table, model_ids, <const char *>b, n_b)
            merged_id = model_piece(table, model_ids, <const char *>a, n_a + n_b)
        else:  # "a b", split at the first space
            i = _rule_string(s, i, end, a, &n_a, rule)
            space = <const uint8_t *>memchr(a, 32, <size_t>n_a)
            if space == NULL:
                raise RuleNotResolved(f"rule {rule} has no space")
            n_left = space - a
            left_id = model_piece(table, model_ids, <const char *>a, n_left)
            right_id = model_piece(table, model_ids, <const char *>space + 1, n_a - n_left - 1)
            # The join: the right part moved over the space.
            memmove(a + n_left, space + 1, <size_t>(n_a - n_left - 1))
            merged_id = model_piece(table, model_ids, <const char *>a, n_a - 1)
        if left_id < 0 or right_id < 0 or merged_id < 0:
            raise RuleNotResolved(f"rule {rule} names a piece outside the vocabulary")
        out.append(left_id, right_id, merged_id)
        rule += 1
        i = _json_next(s, i, end, 93, &more)
        if i < 0 or (not more and i != end):
            raise RuleNotResolved(f"the rules end at rule {rule} before the array does")
        if not more:
            return out.arrays()
