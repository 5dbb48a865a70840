# TokenizerBase (declared in core/direct.pxd): a call's one way from a text
# to its ids.  A text in which no added token can occur is one segment and
# goes straight to the merge (a compiled scan decides); any other text is
# split by the reference's planner (pyahocorasick) and merged in one call.

import sys

from spmbpe._policy import check_text, sampling, special_policy, surrogate_error


# The special= policies that need no planner (TokenizerBase.direct_mask),
# interned as the same literals in Python code are.
cdef str _RAISE = sys.intern("raise")
cdef str _ALL = sys.intern("all")
cdef str _NONE = sys.intern("none")

# planners.Direct.prefix -> PREFIX_*.
_PREFIX_MODES = {"never": PREFIX_NEVER, "always": PREFIX_ALWAYS, "unless_space": PREFIX_UNLESS_SPACE}


# A text of up to this many characters that is not ASCII is looked through
# for added tokens in a copy of its UTF-8 on the stack (one_segment, for a
# batch's texts).
cdef enum:
    _SCAN_CHARS = 1024


@cython.auto_pickle(False)
cdef class TokenizerBase:
    """The compiled base of SpmTokenizer (spmbpe/tokenizer.py).

    ``encode`` and ``encode_ordinary`` live here so that a call reaches the
    merge without running Python code (a short line with a warm cache costs
    little more than the call).
    """

    def __cinit__(self):
        self.scan.texts = NULL
        self.scan.lengths = NULL
        self.scan.n_lengths = 0

    def __dealloc__(self):
        free(self.scan.lengths)

    def _bind(self, SpmCore core not None, planner, direct, bos_added, eos_added):
        """The core and the planner every call uses.  `direct`: None when
        every text is planned, else (tokens, prefix mode): a text in which
        none of those added tokens (spmbpe.tokens.AddedToken) occurs is one
        segment, with the dummy prefix as the prefix rule says ("never",
        "always", "unless_space": not before " " or "▁"; planners.Direct).
        `bos_added`/`eos_added`: the ids add_special_tokens puts around the
        ids, or None."""
        self.core = core
        self.planner = planner
        self.bos_added = bos_added
        self.eos_added = eos_added
        self.direct_core = None
        free(self.scan.lengths)
        self.scan.lengths = NULL
        self.scan.texts = NULL
        self.scan.n_lengths = 0
        memset(self.scan.first, 0, sizeof(self.scan.first))
        for i in range(4):
            self.scan.only[i] = -1
        if direct is None:
            return
        tokens, prefix = direct
        self.prefix_mode = _PREFIX_MODES[prefix]
        self.build_scan(tokens)
        self.direct_core = core

    cdef int build_scan(self, object tokens) except -1:
        # A token whose text is no UTF-8 (a lone surrogate) cannot occur in a
        # text the scan reads: such a text is planned.
        cdef list texts = []
        cdef list kinds = []
        cdef dict index = {}
        cdef set lengths = set()
        cdef Py_ssize_t i
        for token in tokens:
            try:
                data = token.content.encode("utf-8")
            except UnicodeEncodeError:
                continue
            if not data:
                continue
            kind = KIND_SPECIAL if token.special else KIND_PLAIN
            at = index.get(data)
            if at is None:
                index[data] = len(texts)
                texts.append(data)
                kinds.append(kind)
            else:
                kinds[at] |= kind
            lengths.add(len(data))
            self.scan.first[(<bytes>data)[0]] |= kind
        if not texts:
            return 0
        offsets = array("q", [0])
        total = 0
        for data in texts:
            total += len(data)
            offsets.append(total)
        self.scan_table = PieceTable(b"".join(texts), offsets)
        self.scan_kinds = bytes(kinds)
        ordered = sorted(lengths)
        self.scan.lengths = <int32_t *>malloc(len(ordered) * sizeof(int32_t))
        if self.scan.lengths == NULL:
            raise MemoryError()
        for i in range(len(ordered)):
            self.scan.lengths[i] = ordered[i]
        self.scan.n_lengths = len(ordered)
        for mask in range(1, 4):
            starts = [b for b in range(256) if self.scan.first[b] & mask]
            self.scan.only[mask] = -1 if not starts else starts[0] if len(starts) == 1 else 256
        self.scan.texts = self.scan_table.vocab
        self.scan.kinds = <const uint8_t *>PyBytes_AS_STRING(self.scan_kinds)
        return 0

    cdef int direct_mask(self, object special):
        """The kinds of added tokens that send a text to the planner under
        a special= policy, or 0 when the policy itself needs the planner (a
        collection, which it checks)."""
        cdef str policy
        if self.direct_core is None or type(special) is not str:
            return 0
        # Told apart by identity: a literal in the caller's code is the
        # interned string itself (comparing the text is a visible share of
        # a short cached line's call), and a policy built at run time is
        # brought to it first.
        policy = <str>special
        if policy is not _RAISE and policy is not _ALL and policy is not _NONE:
            policy = sys.intern(policy)
        if policy is _RAISE or policy is _ALL:
            return KIND_PLAIN | KIND_SPECIAL
        if policy is _NONE:
            return KIND_PLAIN
        return 0

    cdef int one_segment(self, str text, int mask, bint *prefix) except -1:
        """1 when `text` is one segment under `mask` (no such added token in
        it), with its dummy prefix in `prefix`; 0 when it must be planned
        (also a text that is no UTF-8 when it had to be looked through: the
        planned path names the fault; else its reading names it)."""
        cdef Py_ssize_t n, length = PyUnicode_GET_LENGTH(text)
        cdef const char *s
        cdef char *converted
        cdef char on_stack[4 * _SCAN_CHARS + 64]
        cdef bint found
        if not scan_can_find(&self.scan, mask):
            # (Read from the str itself: asking for its UTF-8 would make a
            # copy that stays on it.  A surrogate shows up as it is read.)
            prefix[0] = length > 0 and takes_prefix_char(self.prefix_mode, PyUnicode_READ_CHAR(text, 0))
            return 1
        if short_from_storage(text):
            # Converted to be looked through, for the same reason, on the
            # stack when short.
            if length <= _SCAN_CHARS:
                converted = &on_stack[0]
            else:
                converted = <char *>malloc(4 * length + 64)
                if converted == NULL:
                    raise MemoryError()
            n = spm_ucs_to_utf8(PyUnicode_KIND(text), PyUnicode_DATA(text), 0, <size_t>length, converted)
            found = n < 0 or scan_finds(&self.scan, converted, n, mask)
            prefix[0] = not found and takes_prefix(self.prefix_mode, converted, n)
            if converted != &on_stack[0]:
                free(converted)
            # (A surrogate, n < 0, goes the planned way, which names it.)
            return not found
        s = PyUnicode_AsUTF8AndSize_NoError(text, &n)
        if s == NULL:
            PyErr_Clear()
            return 0
        if scan_finds(&self.scan, s, n, mask):
            return 0
        prefix[0] = takes_prefix(self.prefix_mode, s, n)
        return 1

    cdef list direct_ids(self, str text, int mask):
        """The ids of `text` when it is one segment under `mask` (no added
        token of those kinds in it), else None: it must be planned (also a
        text that is no UTF-8 when it had to be looked through: the planned
        path names the fault; else its reading names it).  An empty text
        gives [], as every planner does (the dummy prefix alone is no
        text)."""
        cdef bint prefix
        cdef bint screen
        cdef list ids
        if PyUnicode_GET_LENGTH(text) == 0:
            return []
        # A short text that is not ASCII, where a token may occur, is looked
        # through in the UTF-8 the merge converts it into (encode_text's
        # screen), not converted once to look and again to merge; any other
        # as one_segment does.
        screen = scan_can_find(&self.scan, mask) and short_from_storage(text)
        if screen:
            prefix = takes_prefix_char(self.prefix_mode, PyUnicode_READ_CHAR(text, 0))
        elif not self.one_segment(text, mask, &prefix):
            return None
        if by_str_blocks(&self.direct_core.t, text):  # (never a screened text: those are short)
            ids = self.direct_core.encode_long(text, prefix)
            if ids is None:
                # (What the planned path raises for it.)
                raise surrogate_error(text)
            return ids
        try:
            return self.direct_core.encode_text(text, prefix, &self.scan if screen else NULL, mask)
        except UnicodeEncodeError:
            raise surrogate_error(text) from None

    cdef list encode_planned(self, object text, object special, bint add_special_tokens,
                             bint enable_sampling, object alpha, object seed):
        """The general path: the planner splits the text, the core merges
        the parts in one call."""
        sample_alpha, sample_seed = sampling(alpha, seed) if enable_sampling else (0.0, 0)
        matched, allowed = special_policy(special)
        try:
            # (A Plan takes its texts' UTF-8 as it is filled: a lone
            # surrogate fails while planning.)
            plan = self.planner.plan(check_text(text), matched, allowed)
            ids = self.core.encode_parts(plan, sample_alpha, sample_seed)
        except UnicodeEncodeError:
            raise surrogate_error(text) from None
        if add_special_tokens:
            self._add_boundary_tokens(ids)
        return ids

    # (Annotations for introspection only: the text is checked below, to
    # give the planned path's errors.)
    @cython.annotation_typing(False)
    def encode(self, text: str, *, special: Union[str, Collection[str]] = "raise",
               add_special_tokens: bool = False, enable_sampling: bool = False, alpha: float = 0.1,
               seed: Optional[int] = None) -> List[int]:
        """Token ids of `text`.

        `special`: what a special token (control, unknown, special added
        token) spelled in the text becomes.  ``"raise"`` (the default, as
        tiktoken): DisallowedSpecialError naming the token and its offset,
        never a silent control id from untrusted text; ``"all"``: its id;
        ``"none"``: plain text (user-defined pieces are still split out, as
        llama.cpp and sentencepiece do); a collection of token texts: those
        become ids, any other one raises.  (A bare .model follows
        sentencepiece, which never reads a control token from text.)
        `add_special_tokens`: add BOS/EOS as the vocabulary says
        (``add_bos``/``add_eos``); ``encode`` never adds them otherwise.
        `enable_sampling`: BPE-dropout (subword regularization), as
        sentencepiece's ``encode(..., enable_sampling=True, alpha=...)``:
        each merge about to be made is skipped with probability `alpha`;
        `seed` makes the draw reproducible (default: a fresh random seed).

        >>> tok.encode("Hello world")                            # doctest: +SKIP
        [15043, 3186]
        """
        cdef list ids
        cdef int mask
        if type(text) is str and not enable_sampling:
            mask = self.direct_mask(special)
            if mask:
                ids = self.direct_ids(<str>text, mask)
                if ids is not None:
                    if add_special_tokens:
                        self._add_boundary_tokens(ids)
                    return ids
        return self.encode_planned(text, special, add_special_tokens, enable_sampling, alpha, seed)

    @cython.annotation_typing(False)
    def encode_ordinary(self, text: str) -> List[int]:
        """``encode(text, special="none")``: special tokens are plain text."""
        cdef list ids
        if type(text) is str and self.direct_core is not None:
            ids = self.direct_ids(<str>text, KIND_PLAIN)
            if ids is not None:
                return ids
        return self.encode_planned(text, "none", False, False, 0.0, None)

    def _all_one_segment(self, list texts, special):
        """The prefix rule (PREFIX_*) to hand the core with a batch whose
        every text is a str that is one segment under `special` (the core
        then needs no plan at all); -1 when one is not, or when the policy
        needs the planner."""
        cdef int mask = self.direct_mask(special)
        cdef bint prefix
        if not mask:
            return -1
        if not scan_can_find(&self.scan, mask):
            # No added token of those kinds exists: every str is one
            # segment.  (The core's gather refuses anything else, and a str
            # that is no UTF-8, by the errors the planned path gives.)
            return self.prefix_mode
        for text in texts:
            if type(text) is not str or not self.one_segment(<str>text, mask, &prefix):
                return -1
        return self.prefix_mode

    def _line_block_prefix(self, const unsigned char[::1] block, special):
        """The prefix rule (PREFIX_*) to hand the core with the lines of
        `block` (UTF-8 bytes or bytearray, BatchJob.start_lines) when no line holds an
        added token of a kind `special` splits out, so that each line is one
        segment; -1 when one may (a token across a line end counts too: the
        lines then go the planned way), or when the policy needs the
        planner."""
        cdef int mask = self.direct_mask(special)
        if not mask or (block.shape[0] and scan_finds(&self.scan, <const char *>&block[0], block.shape[0], mask)):
            return -1
        return self.prefix_mode

    def _plan_unit(self, text, bint matched, allowed):
        """A batch text's plan: the whole text as one segment when no added
        token can occur in it (the planner is not called), else the
        planner's.  (Plans of the Python layer's batch scheduler.)"""
        cdef bint prefix
        cdef int mask = KIND_PLAIN | KIND_SPECIAL if matched else KIND_PLAIN
        if type(text) is str and self.direct_core is not None and self.one_segment(<str>text, mask, &prefix):
            return Plan.of_text(text, prefix) if PyUnicode_GET_LENGTH(text) else Plan()
        return self.planner.plan(text, matched, allowed)

    def _add_boundary_tokens(self, list ids):
        """BOS/EOS around `ids` (in place) as add_special_tokens=True adds them."""
        if self.bos_added is not None:
            ids.insert(0, self.bos_added)
        if self.eos_added is not None:
            ids.append(self.eos_added)
