# Merge rules as ids, looked up in a PieceTable (included by _core.pyx after
# core/vocab.pyx): the rules of a tokenizer.json, and the rules transformers
# 5 derives for a vocabulary that has none: hash lookups on the pieces'
# bytes, with no str made per part.
#
# Both answer only for the model's own pieces (`model_ids[id]` != 0).  A
# part whose lowest id is not one (an added token with the same text and a
# lower id, or a text outside the model) raises RuleNotResolved: the
# caller's Python reading, by the vocabulary dict, then decides, and names a
# rule at fault.


class RuleNotResolved(ValueError):
    """A rule these lookups do not decide (see above)."""


cdef class _IdColumns:
    """Three growing int32 columns (left, right, merged), each an array('i')
    written in place (carray.resize): what the rules take is written once,
    and a reserve that proves too large is given back untouched."""
    cdef carray.array left, right, merged
    cdef Py_ssize_t n, cap

    def __cinit__(self):
        self.left = carray.clone(_INT32_ARRAY, 0, False)
        self.right = carray.clone(_INT32_ARRAY, 0, False)
        self.merged = carray.clone(_INT32_ARRAY, 0, False)

    cdef int reserve(self, Py_ssize_t cap) except -1:
        """Room for `cap` rules (memory only becomes resident as written)."""
        if cap > self.cap:
            carray.resize(self.left, cap)
            carray.resize(self.right, cap)
            carray.resize(self.merged, cap)
            self.cap = cap
        return 0

    cdef int append(self, int32_t left, int32_t right, int32_t merged) except -1:
        if self.n == self.cap:
            self.reserve(2 * self.cap + 1024)
        self.left.data.as_ints[self.n] = left
        self.right.data.as_ints[self.n] = right
        self.merged.data.as_ints[self.n] = merged
        self.n += 1
        return 0

    cdef tuple arrays(self):
        carray.resize(self.left, self.n)
        carray.resize(self.right, self.n)
        carray.resize(self.merged, self.n)
        self.cap = self.n
        return self.left, self.right, self.merged


cdef inline int32_t model_key_piece(PieceTable table, const uint8_t[::1] model_ids,
                                    const spm_vocab_key *key) except -2:
    """The model id of the key's piece, or -1 when no piece has that text;
    RuleNotResolved when its lowest id is not the model's."""
    cdef int32_t found = spm_vocab_find_key(table.vocab, key)
    if found >= 0 and not model_ids[found]:
        raise RuleNotResolved(key.s[:key.len].decode("utf-8", "replace"))
    return found


cdef inline int32_t model_piece(PieceTable table, const uint8_t[::1] model_ids, const char *s,
                                Py_ssize_t n) except -2:
    """model_key_piece of the piece s[0:n]."""
    cdef spm_vocab_key key
    spm_vocab_key_of(table.vocab, s, <size_t>n, 0, &key)
    return model_key_piece(table, model_ids, &key)


def merge_rule_ids(PieceTable table, list rules, const uint8_t[::1] model_ids):
    """(left, right, merged) ids, as array('i'), of tokenizer.json merge
    rules ("a b", split at the first space as the Python reading does, or
    ["a", "b"]) in their order.  ValueError (RuleNotResolved, or
    UnicodeEncodeError for a surrogate) on the first rule that is not two
    model pieces whose join is one."""
    cdef _IdColumns out = _IdColumns()
    cdef Py_ssize_t i, n_left, n_right, n
    cdef const char *s
    cdef const char *space
    cdef const char *right
    cdef int32_t left_id, right_id, merged_id
    cdef bytearray joined = bytearray(64)
    if table.size != model_ids.shape[0]:
        raise ValueError("model_ids has one flag per piece of the table")
    for i in range(len(rules)):
        rule = rules[i]
        if type(rule) is str:
            s = PyUnicode_AsUTF8AndSize(rule, &n)
            space = <const char *>memchr(s, c' ', <size_t>n)
            if space == NULL:
                raise RuleNotResolved(f"rule {i} has no space")
            n_left = space - s
            right = space + 1
            n_right = n - n_left - 1
        elif type(rule) is list and len(<list>rule) == 2 and type(rule[0]) is str and type(rule[1]) is str:
            s = PyUnicode_AsUTF8AndSize(rule[0], &n_left)
            right = PyUnicode_AsUTF8AndSize(rule[1], &n_right)
        else:
            raise RuleNotResolved(f"rule {i} is not a pair of pieces")
        left_id = model_piece(table, model_ids, s, n_left)
        right_id = model_piece(table, model_ids, right, n_right)
        if n_left + n_right > len(joined):
            joined = bytearray(2 * (n_left + n_right))
        memcpy(PyByteArray_AS_STRING(joined), s, <size_t>n_left)
        memcpy(PyByteArray_AS_STRING(joined) + n_left, right, <size_t>n_right)
        merged_id = model_piece(table, model_ids, PyByteArray_AS_STRING(joined), n_left + n_right)
        if left_id < 0 or right_id < 0 or merged_id < 0:
            raise RuleNotResolved(f"rule {i} names a piece outside the vocabulary")
        out.append(left_id, right_id, merged_id)
    return out.arrays()


def split_merge_ids(PieceTable table, const uint8_t[::1] model_ids):
    """The merges transformers 5 derives for a vocabulary without any (tu_base
    generate_merges, no scores): every split of every model piece into two
    model pieces, ordered by the merged piece's id, then by the length of
    the left part -- the order in which this loop meets them (the two parts'
    ids, the last keys of that sort, are fixed by the split).  (left, right,
    merged) as array('i'); RuleNotResolved where a part's lowest id is not
    the model's."""
    cdef _IdColumns out = _IdColumns()
    cdef int32_t i, left_id, right_id
    cdef Py_ssize_t start, k, size
    cdef const char *arena = PyBytes_AS_STRING(table.arena)
    if table.size != model_ids.shape[0]:
        raise ValueError("model_ids has one flag per piece of the table")
    for i in range(table.size):
        if not model_ids[i]:
            continue
        start = table.offsets[i]
        size = table.offsets[i + 1] - start
        if size < 2:
            continue  # (an empty piece has no first byte to read)
        # Split after each character (the pieces are valid UTF-8).
        k = utf8_len(<uint8_t>arena[start])
        while k < size:
            left_id = model_piece(table, model_ids, arena + start, k)
            if left_id >= 0:
                right_id = model_piece(table, model_ids, arena + start + k, size - k)
                if right_id >= 0:
                    out.append(left_id, right_id, i)
            k += utf8_len(<uint8_t>arena[start + k])
    return out.arrays()
