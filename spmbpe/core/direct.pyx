# TokenizerBase (declared in core/direct.pxd): the per-line path from a str
# to its ids without Python code in between.

@cython.auto_pickle(False)
cdef class TokenizerBase:
    """The compiled base of SpmTokenizer (spmbpe/tokenizer.py).

    It holds ``encode_ordinary`` so that the per-line call reaches the merge
    without running Python code: a Python method in between took about a
    third of the time of encoding a short line with a warm cache.
    """

    def _set_direct(self, SpmCore plain_core, SpmCore ordinary_core, bint prefix):
        """The core to hand a str straight to when it is one segment to
        merge (nothing to split out or normalize), else None: `plain_core`
        for special="all", `ordinary_core` for special="none"; `prefix`:
        with the dummy prefix."""
        self.plain_core = plain_core
        self.ordinary_core = ordinary_core
        self.direct_prefix = prefix

    cdef list direct_ids(self, SpmCore core, str text):
        """The ids of `text` as one segment, or None when it holds a lone
        surrogate (the planned path raises the error that names it)."""
        if PyUnicode_GET_LENGTH(text) == 0:
            return []
        try:
            return core.encode_text(text, self.direct_prefix)
        except UnicodeEncodeError:
            return None

    # (Annotations for introspection only: the text is checked below, to
    # give the planned path's errors.)
    @cython.annotation_typing(False)
    def encode(self, text: str, *, special: Union[str, Collection[str]] = "all",
               add_special_tokens: bool = False, enable_sampling: bool = False, alpha: float = 0.1,
               seed: Optional[int] = None) -> List[int]:
        """Token ids of `text`.

        `special`: ``"all"`` matches every special (control, unknown, special
        added) token spelled in the text; ``"none"`` treats them as plain
        text (user-defined pieces are still split out, as llama.cpp and
        sentencepiece do); a collection of token texts allows those and
        raises DisallowedSpecialError for any other one in the text.
        `add_special_tokens`: add BOS/EOS as the vocabulary says
        (``add_bos``/``add_eos``); ``encode`` never adds them otherwise.
        `enable_sampling`: BPE-dropout (subword regularization), as
        sentencepiece's ``encode(..., enable_sampling=True, alpha=...)``:
        each merge about to be made is skipped with probability `alpha`;
        `seed` makes the draw reproducible (default: a fresh random seed).

        >>> tok.encode("Hello world")                            # doctest: +SKIP
        [15043, 3186]
        """
        cdef SpmCore core = None
        cdef list ids
        if type(text) is str and type(special) is str and not enable_sampling:
            if special == "all":
                core = self.plain_core
            elif special == "none":
                core = self.ordinary_core
            if core is not None:
                ids = self.direct_ids(core, <str>text)
                if ids is not None:
                    if add_special_tokens:
                        self._add_boundary_tokens(ids)
                    return ids
        return self._encode_planned(text, special, add_special_tokens, enable_sampling, alpha, seed)

    @cython.annotation_typing(False)
    def encode_ordinary(self, text: str) -> List[int]:
        """``encode(text, special="none")``: special tokens are plain text."""
        cdef list ids
        if self.ordinary_core is not None and type(text) is str:
            ids = self.direct_ids(self.ordinary_core, <str>text)
            if ids is not None:
                return ids
        return self._encode_planned(text, "none", False, False, 0.0, None)
