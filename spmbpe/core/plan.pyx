# Plan parts read into the kernels (BatchPart in core/plan.pxd): checked,
# gathered with the GIL, merged without it.

cdef inline int _check_part(object part, bint with_offsets) except -1:
    """A plan part the core can read (its tuple items are read unchecked),
    else a TypeError: a token id, (token_id, start, end), or (text, prefix[,
    skip, ...]); `with_offsets`: (token_id, start, end) or (text, prefix,
    skip, origin, lead[, align])."""
    if type(part) is tuple:
        if len(<tuple>part) >= 5 or (len(<tuple>part) >= 3
                                     and type((<tuple>part)[0]) is not str):
            return 0
        if not with_offsets and len(<tuple>part) >= 2 and type((<tuple>part)[0]) is str:
            return 0
    elif isinstance(part, int) and not with_offsets:
        return 0
    if with_offsets:
        raise TypeError(f"a part with offsets is (token_id, start, end) or (text, prefix, skip, origin, "
                        f"lead[, align]), not {part!r}")
    raise TypeError(f"a plan part is a token id, (token_id, start, end) or (text, prefix[, skip, ...]), "
                    f"not {part!r}")


cdef Py_ssize_t _count_parts(list batch) except -1:
    """How many parts the texts of an encode_parts_batch batch have."""
    cdef Py_ssize_t n_parts = 0
    cdef object entry
    for entry in batch:
        if type(entry) is list:
            n_parts += len(<list>entry)
        elif isinstance(entry, str):
            n_parts += 1
        else:
            raise TypeError(f"text must be str, not {type(entry).__name__}")
    return n_parts


cdef str _part_text(list batch, Py_ssize_t index):
    """The text of the index-th part of a batch (for an error message)."""
    cdef list parts
    for entry in batch:
        if type(entry) is str:
            if not entry:
                continue
            if index == 0:
                return entry
            index -= 1
            continue
        parts = entry
        if index < len(parts):
            part = parts[index]
            return part[0] if type(part) is tuple and type(part[0]) is str else ""
        index -= len(parts)
    return ""


cdef inline Py_ssize_t _part_size(const BatchPart *part) noexcept nogil:
    """A part's share of the work: its UTF-8 bytes, or 1 for a token id."""
    return part.n if part.token_id < 0 else 1


cdef int gather(const CoreTables *t, list batch, BatchPart *items, int32_t *counts,
                bint prefix) except -1:
    """The parts of every text of `batch` (see encode_parts_batch) into
    items (_count_parts(batch) of them) and how many each text has into
    counts: UTF-8 pointers into the part strings, which `batch` keeps
    alive."""
    cdef Py_ssize_t i = 0, j, n
    cdef list parts
    cdef object part, entry
    for j in range(len(batch)):
        entry = batch[j]
        if type(entry) is not list:
            items[i].src = PyUnicode_AsUTF8AndSize(entry, &n)
            counts[j] = 1 if n else 0
            if n:
                items[i].n = n
                items[i].prefix = prefix
                items[i].skip = 0
                items[i].token_id = -1
                i += 1
            continue
        parts = <list>entry
        if len(parts) > INT32_MAX:
            raise ValueError(f"a text of {len(parts)} parts; at most {INT32_MAX}")
        counts[j] = <int32_t>len(parts)
        for part in parts:
            _check_part(part, False)
            if type(part) is tuple and type((<tuple>part)[0]) is str:
                items[i].src = PyUnicode_AsUTF8AndSize((<tuple>part)[0], &n)
                items[i].n = n
                items[i].prefix = (<tuple>part)[1]
                items[i].skip = (<tuple>part)[2] if len(<tuple>part) > 2 else 0
                items[i].token_id = -1
            else:
                if type(part) is tuple:
                    part = (<tuple>part)[0]
                items[i].token_id = part
                if not 0 <= items[i].token_id < t.n_pieces:
                    raise ValueError(f"token id {items[i].token_id} is not a piece id")
            i += 1
    return 0


cdef int encode_items(const CoreTables *t, Workspace *w, const BatchPart *items,
                      const int32_t *counts, Py_ssize_t n_texts, size_t *ends, Py_ssize_t *failed,
                      const uint64_t *seeds) noexcept nogil:
    """Merges n_texts gathered texts (counts[j] parts each) into w.ids,
    text j's ids ending at ends[j]; on an error, the index of the part that
    failed in failed[0].  seeds: text j's BPE-dropout seed, or NULL."""
    cdef Py_ssize_t j, k, i = 0
    cdef size_t mark, produced, skip
    cdef int rc
    for j in range(n_texts):
        if seeds != NULL:
            w.rng = seeds[j]
        for k in range(counts[j]):
            if items[i].token_id >= 0:
                if ws_push_id(w, <int32_t>items[i].token_id) != OK:
                    return ERR_NOMEM
            else:
                mark = w.ids_len
                rc = encode_segment(t, w, items[i].src, items[i].n, items[i].prefix)
                if rc != OK:
                    failed[0] = i
                    return rc
                skip = <size_t>items[i].skip
                produced = w.ids_len - mark
                if skip and produced >= skip:
                    memmove(w.ids + mark, w.ids + mark + skip, (produced - skip) * sizeof(int32_t))
                    w.ids_len -= skip
            i += 1
        ends[j] = w.ids_len
    return OK


cdef int encode_plan(const CoreTables *t, Workspace *w, list parts) except -1:
    """Appends the ids of a partitioned text (see SpmCore.encode_parts) to
    w.ids, with the GIL held."""
    cdef object part
    cdef str text
    cdef bint prefix
    cdef Py_ssize_t n
    cdef const char *src
    cdef int rc
    cdef int64_t token_id
    cdef size_t mark, produced, skip
    for part in parts:
        _check_part(part, False)
        if type(part) is tuple and type((<tuple>part)[0]) is not str:
            part = (<tuple>part)[0]  # (token_id, start, end): the id
        if type(part) is tuple:
            text = (<tuple>part)[0]
            prefix = (<tuple>part)[1]
            src = PyUnicode_AsUTF8AndSize(text, &n)
            mark = w.ids_len
            check_rc(segment(t, w, src, n, prefix), t, w, text)
            if len(<tuple>part) > 2 and (<tuple>part)[2]:
                # (text, prefix, skip, ...): leave out the segment's first
                # `skip` ids, when it has that many (HF's "<unk>" trick).
                skip = (<tuple>part)[2]
                produced = w.ids_len - mark
                if produced >= skip:
                    memmove(w.ids + mark, w.ids + mark + skip, (produced - skip) * sizeof(int32_t))
                    w.ids_len -= skip
        else:
            token_id = part
            if not 0 <= token_id < t.n_pieces:
                raise ValueError(f"token id {token_id} is not a piece id")
            if ws_push_id(w, <int32_t>token_id) != OK:
                raise MemoryError()
    return 0


cdef int check_rc(int rc, const CoreTables *t, Workspace *w, str text) except -1:
    """Raises the error a kernel's result code `rc` stands for (`text`: the
    segment it was merging), or returns 0 for OK."""
    cdef bytes bad
    if rc == OK:
        return 0
    if rc == ERR_NOMEM:
        raise MemoryError("out of memory while merging")
    if rc == ERR_TOO_LONG:
        raise ValueError(
            f"a text segment of {len(text.encode('utf-8', 'surrogatepass'))} UTF-8 bytes "
            f"is longer than the {t.max_segment} bytes one merge can take"
        )
    bad = PyBytes_FromStringAndSize(w.text + w.bad_start, w.bad_len)
    shown = bad.decode("utf-8", "replace").replace("\u2581", " ")
    raise ValueError(
        f"cannot encode the character {shown!r}: it is not in the vocabulary, "
        f"and the vocabulary has neither the 256 <0xNN> byte pieces nor an unknown piece"
    )

cdef tuple encode_plan_offsets(const CoreTables *t, Workspace *wp, list parts):
    """SpmCore.encode_parts_offsets with the workspace wp: (ids, starts,
    ends).  (The workspace is copied to a local and back: the loop below
    reads its fields often.)"""
    cdef Workspace w = wp[0]
    cdef list ids = [], starts = [], ends = []
    cdef object part
    cdef str text
    cdef Py_ssize_t n, i, k, origin, lead, skip, produced
    cdef const char *src
    cdef int rc
    cdef bint prefix
    cdef size_t mark
    cdef int32_t *char_of = NULL
    cdef int32_t s0, e0, c0, c1, pre
    w.want_spans = True
    try:
        for part in parts:
            _check_part(part, True)
            if type((<tuple>part)[0]) is not str:
                ids.append((<tuple>part)[0])
                starts.append((<tuple>part)[1])
                ends.append((<tuple>part)[2])
                continue
            text, prefix, skip, origin, lead = (<tuple>part)[:5]
            align = (<tuple>part)[5] if len(<tuple>part) > 5 else None
            src = PyUnicode_AsUTF8AndSize(text, &n)
            mark = w.ids_len
            with nogil:
                rc = encode_segment(t, &w, src, n, prefix)
            check_rc(rc, t, &w, text)
            produced = w.ids_len - mark
            if produced == 0:
                continue
            # Character index of each escaped byte: the core's prefix is
            # character -1; a space is one character of three bytes.
            free(char_of)
            char_of = <int32_t *>malloc((3 * n + 4) * sizeof(int32_t))
            if char_of == NULL:
                raise MemoryError()
            pre = 3 if prefix else 0
            for i in range(pre):
                char_of[i] = -1
            k = -1
            e0 = pre
            for i in range(n):
                if (<uint8_t>src[i] & 0xC0) != 0x80:
                    k += 1
                if src[i] == c' ' and t.rules.escape_spaces:
                    char_of[e0] = char_of[e0 + 1] = char_of[e0 + 2] = <int32_t>k
                    e0 += 3
                else:
                    char_of[e0] = <int32_t>k
                    e0 += 1
            first = mark + (skip if produced >= skip else 0)
            for i in range(first, w.ids_len):
                s0 = w.spans[2 * i]
                e0 = w.spans[2 * i + 1]
                c0 = char_of[s0] if s0 < e0 or s0 < pre + 3 * n else <int32_t>(k + 1)
                if c0 < 0:
                    c0 = 0
                c1 = char_of[e0 - 1] + 1 if e0 > s0 else c0
                ids.append(w.ids[i])
                if align is not None:
                    starts.append(align[c0])
                    ends.append(align[c1])
                else:
                    starts.append(origin + max(0, c0 - lead))
                    ends.append(origin + max(0, c1 - lead))
        return ids, starts, ends
    finally:
        free(char_of)
        w.want_spans = False
        wp[0] = w



# encode_parts_batch's seeds when there are none.
_NO_SEEDS = array("Q")
