"""SpmTokenizer: the public tokenizer, policy over the compiled merger."""

from __future__ import annotations

import os
import threading
from array import array
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from typing import (
    TYPE_CHECKING,
    AbstractSet,
    Any,
    Collection,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ._added import AddedTokenMatcher, TokenAt
from ._core import BatchJob, PieceTable, SpmCore, TokenizerBase, batch_slices, decode_ids
from ._decoding import decode_rules
from ._state import Recipe, restore
from .errors import DisallowedSpecialError, InvalidTokenIdError, VocabularyError
from .tokens import AddedToken, TokenType

if TYPE_CHECKING:
    from ._hf_call import BatchEncoding
    from ._normalizer import Normalizer
    from ._streaming import StreamingDecoder

__all__ = ["SpmTokenizer", "PREFIX_SCHEMES"]

#: Where the dummy prefix goes once the text is split around added tokens.
#: "after_each_special": llama.cpp; every text fragment that starts the input
#: or follows an added token is prefixed.  "once": sentencepiece and
#: HuggingFace with ``legacy: false``; only the start of the input is.
PREFIX_SCHEMES = ("after_each_special", "once")

_MERGEABLE = 1  # FLAG_MERGEABLE in _core.pxd
_RESPLIT = 2  # FLAG_RESPLIT in _core.pxd

#: Whose rules a tokenizer follows where the references differ.
#: "llama.cpp": any piece may be built by a merge; CONTROL, UNKNOWN and
#: USER_DEFINED pieces are split out of the raw text, longest first; a
#: character that is no piece becomes bytes (or <unk>).
#: "sentencepiece": only NORMAL, USER_DEFINED and UNUSED pieces are merge
#: results, UNUSED ones are split again; USER_DEFINED pieces are matched in
#: the escaped text, leftmost-longest; control pieces in the text are plain
#: text; a run of unknown characters is one <unk> (without byte fallback).
#: "huggingface": transformers' slow LlamaTokenizer over a sentencepiece
#: model: added tokens split out of the raw text (leftmost-longest, with their
#: lstrip/rstrip), each text segment encoded by sentencepiece's rules; with
#: prefix_scheme "once" (legacy false) the quirks of its non-legacy path.
#: "tokenizers": HuggingFace tokenizers' BPE model from a tokenizer.json:
#: merges ranked by the merges list (set with _set_ranked_merges), a
#: Metaspace or Prepend+Replace front end per text segment.
REFERENCES = ("llama.cpp", "sentencepiece", "huggingface", "tokenizers")

SpecialPolicy = Union[str, Collection[str]]
Part = Union[
    int, Tuple[int, int, int], Tuple[str, bool, int], Tuple[str, bool, int, int, int],
    Tuple[str, bool, int, int, int, List[int]],
]


class SpmTokenizer(TokenizerBase):
    """A SentencePiece-BPE tokenizer.

    Merges the best-scoring adjacent pair first (the score is a merge rank,
    higher merges earlier; ties go to the leftmost pair), exactly as
    llama.cpp's SPM tokenizer does.

    >>> tok = spmbpe.load("ggml-vocab-llama-spm.gguf")      # doctest: +SKIP
    >>> tok.encode("Hello world")                             # doctest: +SKIP
    [15043, 3186]
    """

    def __init__(
        self,
        tokens: Sequence[str],
        scores: Optional[Sequence[float]] = None,
        *,
        token_types: Optional[Sequence[int]] = None,
        bos_id: Optional[int] = None,
        eos_id: Optional[int] = None,
        unk_id: Optional[int] = None,
        pad_id: Optional[int] = None,
        add_prefix_space: bool = True,
        prefix_scheme: str = "after_each_special",
        added_tokens: Union[Mapping[str, int], Iterable[AddedToken], None] = None,
        add_bos: bool = False,
        add_eos: bool = False,
        reference: str = "llama.cpp",
    ) -> None:
        if reference not in ("llama.cpp", "sentencepiece"):
            raise ValueError(
                f"reference must be 'llama.cpp' or 'sentencepiece' for a tokenizer built from "
                f"lists, not {reference!r} (HuggingFace folders and tokenizer.json files load "
                f"with spmbpe.load)"
            )
        encoded = [_piece_bytes(t, i) for i, t in enumerate(tokens)]
        if not encoded:
            raise VocabularyError("the vocabulary is empty: it needs at least one piece")
        self._setup(
            PieceTable.from_pieces(encoded),
            scores,
            token_types,
            bos_id=bos_id,
            eos_id=eos_id,
            unk_id=unk_id,
            pad_id=pad_id,
            add_prefix_space=add_prefix_space,
            prefix_scheme=prefix_scheme,
            added_tokens=added_tokens,
            add_bos=add_bos,
            add_eos=add_eos,
            reference=reference,
        )

    @classmethod
    def _from_table(
        cls,
        table: PieceTable,
        scores: Optional[Sequence[float]],
        token_types: Union[bytes, Sequence[int], None],
        **options: object,
    ) -> "SpmTokenizer":
        """A tokenizer over an already-built PieceTable (what the loaders
        use: no per-piece Python objects on the way)."""
        self = cls.__new__(cls)
        self._setup(table, scores, token_types, **options)  # type: ignore[arg-type]
        return self

    def _setup(
        self,
        table: PieceTable,
        scores: Optional[Sequence[float]],
        token_types: Union[bytes, Sequence[int], None],
        *,
        bos_id: Optional[int] = None,
        eos_id: Optional[int] = None,
        unk_id: Optional[int] = None,
        pad_id: Optional[int] = None,
        add_prefix_space: bool = True,
        prefix_scheme: str = "after_each_special",
        added_tokens: Union[Mapping[str, int], Iterable[AddedToken], None] = None,
        add_bos: bool = False,
        add_eos: bool = False,
        reference: str = "llama.cpp",
        byte_fallback: bool = True,
        mergeable_limit: Optional[int] = None,
        hf_special_tokens: Iterable[str] = (),
        hf_unk_token: str = "<unk>",
        front_end: Tuple[Union[str, bool], ...] = ("metaspace", "always", False),
        normalizers: Optional[Dict[bool, Normalizer]] = None,
        denormalizer: Optional[Normalizer] = None,
        escape_spaces: bool = True,
    ) -> None:
        # Every argument, for pickling and the fingerprint (spmbpe/_state.py);
        # taken first, while locals() holds nothing else.
        recipe = Recipe.capture(locals())
        added_tokens = recipe.options.get("added_tokens")  # an iterator is read once
        n = len(table)
        if reference not in REFERENCES:
            raise ValueError(
                f"reference must be one of {', '.join(map(repr, REFERENCES))}, not {reference!r}"
            )
        bad = table.first_invalid_utf8()
        if bad >= 0:
            raise VocabularyError(f"piece {bad} is not valid UTF-8: {table.piece_bytes(bad)!r}")
        if scores is None or len(scores) == 0:
            # No scores: id order is the merge order (lower id merges first),
            # the convention these vocabularies follow.
            rank = array("f", [-float(i) for i in range(n)])
        elif len(scores) != n:
            raise VocabularyError(f"scores has {len(scores)} entries but there are {n} pieces")
        elif isinstance(scores, array) and scores.typecode == "f":
            rank = scores
        else:
            rank = array("f", scores)
        types = _types_buffer(table, token_types)
        recipe.rank, recipe.types = rank, types
        self._recipe = recipe

        if prefix_scheme not in PREFIX_SCHEMES:
            raise ValueError(
                f"prefix_scheme must be one of {', '.join(map(repr, PREFIX_SCHEMES))}, "
                f"not {prefix_scheme!r}"
            )
        self._table = table
        self._types = types
        self._reference = reference
        # sentencepiece's normalizer, with and without the dummy prefix, for
        # models whose rules are not identity (None: the core escapes).
        self._normalizers = normalizers
        self._denormalizer = denormalizer
        self._add_prefix_space = bool(add_prefix_space)
        self._prefix_scheme = prefix_scheme
        self._add_bos = bool(add_bos)
        self._add_eos = bool(add_eos)

        if unk_id is None and reference != "tokenizers":
            for name in (b"<unk>", b"<UNK>"):
                found = table.find(name)
                if found >= 0:
                    unk_id = found
                    break
        self._bos_id = _check_id("bos_id", bos_id, n)
        self._eos_id = _check_id("eos_id", eos_id, n)
        self._unk_id = _check_id("unk_id", unk_id, n)
        self._pad_id = _check_id("pad_id", pad_id, n)
        if self._add_bos and self._bos_id is None:
            raise VocabularyError("add_bos=True needs a bos_id")
        if self._add_eos and self._eos_id is None:
            raise VocabularyError("add_eos=True needs an eos_id")

        if reference == "llama.cpp":
            # llama.cpp queues a merge whenever the two symbols spell any piece.
            flags = bytes([_MERGEABLE]) * n
        else:
            flags = types.translate(_SENTENCEPIECE_FLAGS)
        if mergeable_limit is not None and mergeable_limit < n:
            # Pieces appended after the model's own (HF added tokens) are
            # never built by merges.
            flags = flags[:mergeable_limit] + bytes(n - mergeable_limit)
        self._core = SpmCore(
            table,
            rank,
            flags,
            types,
            -1 if self._unk_id is None else self._unk_id,
            reference != "llama.cpp",
            byte_fallback,
        )

        self._matcher = AddedTokenMatcher(self._collect_added(added_tokens))
        # sentencepiece's user-defined pieces, matched in normalized text.
        self._sp_matcher = AddedTokenMatcher(
            [
                AddedToken(self._table.piece(i), i, special=False)
                for i in _indices_of(self._types, TokenType.USER_DEFINED)
            ]
            if reference != "llama.cpp"
            else []
        )
        # sentencepiece's decoder removes the dummy prefix only as a leading
        # "▁"; without escape_whitespaces it is a plain space and stays.
        self._strip_prefix_on_decode = self._add_prefix_space and escape_spaces
        if not escape_spaces:
            self._core.set_escape_spaces(False)
        if reference == "huggingface":
            self._init_huggingface(hf_special_tokens, hf_unk_token)
        self._front_end = front_end
        # No splitting and no normalizing to do: encode hands the text to the
        # core directly (the common case of Mistral/Llama .model files).
        plain = (reference == "sentencepiece" and normalizers is None and not self._sp_matcher) or (
            reference == "llama.cpp" and not self._matcher
        )
        # With special="none" too: llama.cpp matches only special tokens here
        # (no user-defined ones to split out), so plain text is one segment.
        plain_ordinary = plain or (reference == "llama.cpp" and not self._matcher.has_plain)
        self._set_direct(
            self._core if plain else None,
            self._core if plain_ordinary else None,
            self._add_prefix_space,
        )
        sentinel = {self._bos_id, self._eos_id, self._unk_id} - {None}
        self._sentinel_ids: FrozenSet[int] = frozenset(sentinel)  # type: ignore[arg-type]

        skip = bytearray(types.translate(_SPECIAL_TYPES))
        for token in self._matcher.tokens:
            if token.special:
                skip[token.id] = 1
        self._skip_special = bytes(skip)
        self._skip_none = None  # (decode_bytes: skip nothing)
        remove_ws = normalizers is not None and normalizers[True].remove_extra_whitespaces
        self._decoding = {
            as_text: decode_rules(
                reference, add_prefix_space=self._add_prefix_space, escape_spaces=escape_spaces,
                remove_extra_whitespaces=remove_ws, special_as_text=as_text,
            )
            for as_text in (False, True)
        }

    def _collect_added(
        self, added_tokens: Union[Mapping[str, int], Iterable[AddedToken], None]
    ) -> List[AddedToken]:
        """Added tokens: every CONTROL, UNKNOWN and USER_DEFINED piece (the
        candidates of llama.cpp's partition), then the explicit ones, which
        override a piece of the same text."""
        n = len(self._table)
        by_content: Dict[str, AddedToken] = {}
        if self._reference == "sentencepiece":
            # sentencepiece matches user-defined pieces in the normalized
            # text (_sp_matcher), and nothing before normalizing.
            candidates: List[int] = []
        elif self._reference in ("huggingface", "tokenizers"):
            # Only the configuration's added tokens are split out first.
            candidates = []
        else:
            candidates = sorted(
                _indices_of(self._types, TokenType.CONTROL)
                + _indices_of(self._types, TokenType.UNKNOWN)
                + _indices_of(self._types, TokenType.USER_DEFINED)
            )
        for i in candidates:
            piece = self._table.piece(i)
            if piece not in by_content:
                kind = self._types[i]
                by_content[piece] = AddedToken(piece, i, special=kind != TokenType.USER_DEFINED)
        if added_tokens is not None:
            items: Iterable[AddedToken]
            if isinstance(added_tokens, Mapping):
                items = [AddedToken(str(c), int(i)) for c, i in added_tokens.items()]
            else:
                items = list(added_tokens)
            for token in items:
                if not isinstance(token, AddedToken):
                    raise TypeError(
                        f"added_tokens must be a mapping of text to id or AddedToken "
                        f"objects, not {type(token).__name__}"
                    )
                if not token.content:
                    raise VocabularyError(f"added token {token.id} has empty content")
                if not 0 <= token.id < n:
                    raise VocabularyError(
                        f"added token {token.content!r} has id {token.id}, outside the "
                        f"vocabulary of {n} pieces"
                    )
                by_content[token.content] = token
        return list(by_content.values())

    # ------------------------------------------------------------ properties

    @property
    def vocab_size(self) -> int:
        """Number of ids (pieces) in the vocabulary."""
        return len(self._table)

    @property
    def bos_id(self) -> Optional[int]:
        return self._bos_id

    @property
    def eos_id(self) -> Optional[int]:
        return self._eos_id

    @property
    def unk_id(self) -> Optional[int]:
        return self._unk_id

    @property
    def pad_id(self) -> Optional[int]:
        return self._pad_id

    @property
    def add_bos(self) -> bool:
        """Whether ``encode(..., add_special_tokens=True)`` prepends BOS."""
        return self._add_bos

    @property
    def add_eos(self) -> bool:
        """Whether ``encode(..., add_special_tokens=True)`` appends EOS."""
        return self._add_eos

    @property
    def add_prefix_space(self) -> bool:
        """Whether a dummy ``▁`` prefix is added (sentencepiece ``add_dummy_prefix``)."""
        return self._add_prefix_space

    @property
    def reference(self) -> str:
        """Whose rules this tokenizer follows: "llama.cpp", "sentencepiece",
        "huggingface" (transformers' slow tokenizer) or "tokenizers"."""
        return self._reference

    @property
    def prefix_scheme(self) -> str:
        """``"after_each_special"`` (llama.cpp) or ``"once"`` (HF non-legacy)."""
        return self._prefix_scheme

    @property
    def added_tokens(self) -> List[AddedToken]:
        """The tokens split out of the text before merging, longest first."""
        return list(self._matcher.tokens)

    @property
    def special_tokens(self) -> FrozenSet[str]:
        """Texts of the special tokens that ``special=`` governs."""
        return self._matcher.special_contents

    @property
    def fingerprint(self) -> str:
        """A content hash (hex SHA-256) of the vocabulary and of every setting
        that can change an id: the same for the same vocabulary however and
        wherever it was loaded, different when a piece, score, type, special
        id, added token, prefix rule or normalizer differs.  For cache keys.

        >>> spmbpe.load("mistral-v1").fingerprint[:12]            # doctest: +SKIP
        '304902a034e0'
        """
        return self._recipe.fingerprint

    def __reduce__(self) -> Tuple[Any, Tuple[bytes]]:
        # The vocabulary's bytes and settings (spmbpe/_state.py), never a
        # path: the same bytes in every process, rebuilt without reading a file.
        return (restore, (self._recipe.to_bytes(),))

    def _set_ranked_merges(
        self,
        left: "array[int]",
        right: "array[int]",
        merged: "array[int]",
        fuse_unknown: bool,
        ignore_merges: bool,
    ) -> None:
        """tokenizer.json's merges, ranked by their place in the merges list."""
        self._core.set_ranked_merges(left, right, merged, fuse_unknown, ignore_merges)
        core, fuse, ignore = self._core, bool(fuse_unknown), bool(ignore_merges)
        # (Read back from the core when pickled: no second copy kept.)
        self._recipe.set_ranked_merges(lambda: (*core.ranked_merges(), fuse, ignore))

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return (
            f"<SpmTokenizer vocab_size={self.vocab_size} prefix_scheme={self._prefix_scheme!r} "
            f"add_prefix_space={self._add_prefix_space}>"
        )

    # ------------------------------------------------------------ pieces

    def id_to_piece(self, id: int) -> str:
        """The piece of an id, as spelled in the vocabulary (``▁`` kept)."""
        return self._table.piece(self._valid_id(id))

    def piece_to_id(self, piece: str) -> int:
        """The (lowest) id of a piece; the unknown id when absent, as
        sentencepiece's ``piece_to_id`` does (KeyError without one)."""
        found = self._table.find(piece.encode("utf-8", "surrogatepass"))
        if found >= 0:
            return found
        if self._unk_id is None:
            raise KeyError(f"{piece!r} is not a piece of this vocabulary, which has no unknown piece")
        return self._unk_id

    def token_type(self, id: int) -> TokenType:
        """The kind of piece an id is."""
        return TokenType(self._types[self._valid_id(id)])

    def _valid_id(self, id: int) -> int:
        try:
            i = int(id.__index__())
        except AttributeError:
            raise TypeError(f"token ids must be integers, not {type(id).__name__}") from None
        if not 0 <= i < len(self._table):
            raise InvalidTokenIdError(id, len(self._table))
        return i

    # ------------------------------------------------------------ encoding

    # encode(text, *, special="all", add_special_tokens=False,
    # enable_sampling=False, alpha=0.1, seed=None) is compiled, in
    # TokenizerBase (spmbpe/_core.pyx): the per-line hot path.  It hands a
    # text with nothing to split out straight to the core, and every other
    # call to _encode_planned.

    def _encode_planned(
        self,
        text: str,
        special: SpecialPolicy,
        add_special_tokens: bool,
        enable_sampling: bool,
        alpha: float,
        seed: Optional[int],
    ) -> List[int]:
        """encode's general path: the text planned into added tokens and
        segments (sampling, added tokens to split out, a normalizer)."""
        if enable_sampling:
            sample_alpha, sample_seed = _sampling(alpha, seed)
        else:
            sample_alpha = 0.0
            sample_seed = 0
        include, allowed = self._special_policy(special)
        parts = self._plan(_check_text(text), include, allowed)
        try:
            ids = self._core.encode_parts(parts, sample_alpha, sample_seed)
        except UnicodeEncodeError:
            raise _surrogate_error(text) from None
        if add_special_tokens:
            self._add_boundary_tokens(ids)
        return ids

    def encode_with_offsets(
        self,
        text: str,
        *,
        special: SpecialPolicy = "all",
        add_special_tokens: bool = False,
    ) -> Tuple[List[int], List[Tuple[int, int]]]:
        """``encode`` with, for each id, the ``(start, end)`` character span
        of the original text it stands for.

        The dummy prefix takes no characters (a lone prefix id has an empty
        span); a piece that begins with a space marker covers that space;
        the byte pieces of one character all span that character; BOS/EOS
        added by `add_special_tokens` have empty spans at the ends.

        >>> tok.encode_with_offsets("Hello world")                # doctest: +SKIP
        ([15043, 3186], [(0, 5), (5, 11)])
        """
        include, allowed = self._special_policy(special)
        parts = self._plan(_check_text(text), include, allowed, offsets=True)
        try:
            ids, starts, ends = self._core.encode_parts_offsets(parts)
        except UnicodeEncodeError:
            raise _surrogate_error(text) from None
        spans = list(zip(starts, ends))
        if add_special_tokens:
            if self._add_bos:
                ids.insert(0, self._bos_id)  # type: ignore[arg-type]
                spans.insert(0, (0, 0))
            if self._add_eos:
                ids.append(self._eos_id)  # type: ignore[arg-type]
                spans.append((len(text), len(text)))
        return ids, spans

    # encode_ordinary(text) -- encode(text, special="none") -- is compiled,
    # in TokenizerBase (spmbpe/_core.pyx): the per-line hot path.

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        special: SpecialPolicy = "all",
        add_special_tokens: bool = False,
        num_threads: Optional[int] = None,
        return_numpy: bool = False,
        dtype: object = None,
        enable_sampling: bool = False,
        alpha: float = 0.1,
        seed: Optional[int] = None,
    ) -> Any:
        """``[encode(t, ...) for t in texts]``, merged on `num_threads`
        threads (default: the machine's cores) with the GIL released.

        With ``return_numpy=True`` (NumPy needed), returns ``(ids, offsets)``:
        every id of every text in one flat ``uint32`` array (``dtype=
        numpy.uint16`` when the vocabulary fits), and the ``int64`` start of
        each text in it plus the total (``len(texts) + 1`` values), built
        without a Python int per token.  `enable_sampling`, `alpha`, `seed`:
        BPE-dropout as in ``encode``; text i draws from its own generator,
        seeded by (seed, i), so the result does not depend on the threads.

        >>> ids, offsets = tok.encode_batch(["Hello", "world"], return_numpy=True)  # doctest: +SKIP
        >>> ids[offsets[1]:offsets[2]]                                             # doctest: +SKIP
        array([3186], dtype=uint32)
        """
        include, allowed = self._special_policy(special)
        texts = texts if type(texts) is list else list(texts)
        # Nothing to split out or normalize: each text is one segment, and
        # the core checks that it is a str.
        plain = (self.plain_core is not None and allowed is None) or (
            self.ordinary_core is not None and not include
        )
        if not plain:
            texts = [_check_text(t) for t in texts]
        threads = _thread_count(num_threads)
        if return_numpy:
            np, dtype = _numpy_dtype(dtype, len(self._table))
        sample_alpha, sample_seed = _sampling(alpha, seed) if enable_sampling else (0.0, 0)
        # Sampled texts are never cut (sentencepiece draws over whole texts).
        groups, owners = self._batch_groups(texts, include, allowed, threads, cut=not sample_alpha)
        # (Sampling seeds each text by its index in the batch.)
        starts = list(accumulate((len(g) for g in groups), initial=0)) if sample_alpha else []
        flat = bool(return_numpy)
        prefix = self._add_prefix_space

        def encode_group(k: int) -> Any:
            # Planning holds the GIL; merging (most of the work) does not,
            # so one thread plans while the others merge.
            units = groups[k]
            if plain:
                plans = units  # (the core takes a text for the plan [(text, prefix)])
            else:
                plans = [self._plan(unit, include, allowed) if type(unit) is str else unit for unit in units]
            if sample_alpha:
                indices = owners[k] if owners is not None else range(starts[k], starts[k + 1])
                seeds = array("Q", [_text_seed(sample_seed, index) for index in indices])
                return self._core.encode_parts_batch(plans, flat, sample_alpha, seeds, prefix)
            return self._core.encode_parts_batch(plans, flat, 0.0, None, prefix)

        try:
            if threads <= 1 or len(groups) < 2:
                results = [encode_group(k) for k in range(len(groups))]
            elif plain:
                # Nothing to plan under the GIL: all units in one job that
                # the threads share (BatchJob).
                units = texts if owners is None else [unit for group in groups for unit in group]
                indices = range(len(texts)) if owners is None else [i for owner in owners for i in owner]
                seeds = array("Q", [_text_seed(sample_seed, i) for i in indices]) if sample_alpha else None
                results = [self._encode_job(units, threads, flat, sample_alpha, seeds, prefix)]
                owners = None if owners is None else [list(indices)]
            else:
                results = list(_executor(min(threads, len(groups))).map(encode_group, range(len(groups))))
        except UnicodeEncodeError:
            for t in texts:
                _check_surrogates(t)
            raise
        if return_numpy:
            return self._join_numpy(np, dtype, len(texts), owners, results, add_special_tokens)
        out: List[List[int]] = []
        if owners is None:
            # Every unit is a whole text, in order.
            for result in results:
                out.extend(result)
        else:
            last = -1
            for indices, result in zip(owners, results):
                for index, ids in zip(indices, result):
                    if index == last:
                        out[-1].extend(ids)  # the next piece of a text cut in pieces
                    else:
                        out.append(ids)
                        last = index
        if add_special_tokens:
            for ids in out:
                self._add_boundary_tokens(ids)
        return out

    def _encode_job(
        self, units: List[Any], threads: int, flat: bool, alpha: float, seeds: Optional["array[int]"], prefix: bool
    ) -> Any:
        """encode_parts_batch(units, ...) merged by `threads` threads, this
        one included, sharing one BatchJob."""
        job = BatchJob(self._core)
        try:
            # (The helpers wake while this thread gathers the texts.)
            pool = _executor(threads - 1)
            for _ in range(threads - 1):
                pool.submit(job.work)
            job.start(units, threads * _UNITS_PER_THREAD, alpha, seeds, prefix)
            result = job.lead(flat)
        finally:
            job.close()
        if result is None:
            # A text failed: the one-thread call raises the error it would.
            result = self._core.encode_parts_batch(units, flat, alpha, seeds, prefix)
        return result

    def _batch_groups(
        self, texts: List[str], include: bool, allowed: Optional[FrozenSet[str]], threads: int, cut: bool
    ) -> Tuple[List[List[Any]], Optional[List[List[int]]]]:
        """The batch as groups of work, one thread's call to the core each, in
        text order, and for each group the index of the text each of its
        units belongs to -- None when every unit is a whole text (the common
        case: the groups are then consecutive slices of `texts`).  Groups
        hold about an equal share of the characters.  With `cut`, on several
        threads, a text larger than two shares is planned here and its long
        segments cut at exact chunk boundaries (SpmCore.split_points), so
        that one large document keeps every thread busy."""
        if not texts:
            return [], None
        if threads <= 1:
            return [texts], None
        share, longest, stops = batch_slices(texts, threads * 4, _MIN_SHARE, 2048)
        if not (cut and self._core.chunked and longest > 2 * share):
            # Consecutive slices, each filling its share (at most 2048 texts).
            return [texts[a:b] for a, b in zip([0] + stops, stops)], None
        groups = []
        owners: List[List[int]] = []
        group: List[Any] = []
        owner: List[int] = []
        size = 0
        for index, text in enumerate(texts):
            if len(text) > 2 * share:
                units: List[Any] = self._cut_plan(self._plan(_check_text(text), include, allowed), share)
            else:
                units = [text]
            for unit in units:
                group.append(unit)
                owner.append(index)
                size += len(unit) if type(unit) is str else sum(
                    1 if type(p) is int or type(p[0]) is not str else len(p[0]) for p in unit
                )
                if size >= share or len(group) >= 2048:
                    groups.append(group)
                    owners.append(owner)
                    group, owner, size = [], [], 0
        if group:
            groups.append(group)
            owners.append(owner)
        return groups, owners

    def _cut_plan(self, parts: List[Part], share: int) -> List[List[Part]]:
        """A plan cut into consecutive plans of about `share` characters whose
        ids, joined, are the ids of the whole: long segments are cut where
        no merge can cross (the first piece keeps the prefix and skip)."""
        out: List[List[Part]] = [[]]
        size = 0
        for part in parts:
            # A token id: bare (normalized sentencepiece plans) or with its span.
            if type(part) is int or type(part[0]) is not str:  # type: ignore[index]
                out[-1].append(part)
                size += 1
                continue
            # (The ignores: mypy cannot narrow a union of tuples by type(part[0]).)
            text = part[0]  # type: ignore[index]
            cuts = self._core.split_points(text, part[1], -(-len(text) // share)) if len(text) > share else []  # type: ignore[index, arg-type]
            starts = [0] + cuts
            ends = cuts + [len(text)]
            for k, (a, b) in enumerate(zip(starts, ends)):
                if size >= share:
                    out.append([])
                    size = 0
                out[-1].append(part if not cuts else (text[a:b], part[1], part[2]) if k == 0 else (text[a:b], False, 0))  # type: ignore[index, arg-type]
                size += b - a
        return [plan for plan in out if plan]

    def _join_numpy(
        self, np: Any, dtype: Any, n_texts: int, owners: Optional[List[List[int]]],
        results: List[Tuple[bytearray, Any]], add_special_tokens: bool,
    ) -> Any:
        """encode_batch's NumPy result from the groups' flat ids and ends."""
        pieces, unit_lengths = [], []
        for data, ends in results:
            pieces.append(np.frombuffer(data, dtype=np.int32).view(np.uint32))
            unit_lengths.append(np.diff(np.frombuffer(ends, dtype=np.int64), prepend=0))
        flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.uint32)
        if owners is None:
            lengths = np.concatenate(unit_lengths) if unit_lengths else np.zeros(0, dtype=np.int64)
        else:
            # Texts cut in pieces: add up the lengths of each text's units.
            lengths = np.bincount(
                np.concatenate([np.asarray(o, dtype=np.intp) for o in owners]),
                weights=np.concatenate(unit_lengths), minlength=n_texts,
            ).astype(np.int64)
        if add_special_tokens and (self._add_bos or self._add_eos):
            # BOS/EOS around each text: one insert pass over the flat array.
            starts = np.zeros(n_texts, dtype=np.int64)
            np.cumsum(lengths[:-1], out=starts[1:])
            if self._add_eos:
                flat = np.insert(flat, starts + lengths, self._eos_id)
                starts += np.arange(n_texts)
            if self._add_bos:
                flat = np.insert(flat, starts, self._bos_id)
            lengths += int(self._add_bos) + int(self._add_eos)
        offsets = np.zeros(n_texts + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return flat.astype(dtype, copy=False), offsets

    def _add_boundary_tokens(self, ids: List[int]) -> None:
        if self._add_bos:
            ids.insert(0, self._bos_id)  # type: ignore[arg-type]
        if self._add_eos:
            ids.append(self._eos_id)  # type: ignore[arg-type]

    def _special_policy(self, special: SpecialPolicy) -> Tuple[bool, Optional[FrozenSet[str]]]:
        if isinstance(special, str):
            if special == "all":
                return True, None
            if special == "none":
                return False, None
            raise ValueError(
                f"special must be 'all', 'none' or a collection of token texts, not {special!r}"
            )
        if isinstance(special, (AbstractSet, list, tuple, frozenset)):
            allowed = frozenset(special)
            for item in allowed:
                if not isinstance(item, str):
                    raise TypeError(f"special= collections hold token texts (str), not {item!r}")
            return True, allowed
        raise TypeError(
            f"special must be 'all', 'none' or a collection of token texts, not "
            f"{type(special).__name__}"
        )

    # Plans.  A plan is the list of parts the core encodes:
    #   (token_id, start, end)               a token matched in the text;
    #   (text, prefix, skip, origin, lead)   a segment to escape and merge:
    #       `prefix` asks the core for the dummy prefix, the first `skip`
    #       ids are left out, and text[lead:] is the original text from
    #       character `origin` on (its first `lead` characters are synthetic:
    #       a prefix or HF's unk token put in front), which is what
    #       encode_with_offsets maps spans back through;
    #   (text, prefix, skip, origin, lead, alignment)   the same for
    #       normalized text: alignment[k] is the original offset of
    #       character k (and of the end).

    def _plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> List[Part]:
        if not text:
            return []
        prefix = self._add_prefix_space
        if self._reference == "sentencepiece":
            return self._plan_sentencepiece(text, prefix, offsets=offsets)
        if self._reference == "huggingface":
            return self._plan_huggingface(text, include_special, allowed, offsets)
        if self._reference == "tokenizers":
            return self._plan_tokenizers(text, include_special, allowed)
        fragments = self._matcher.partition(text, include_special, allowed)
        if fragments is None:
            return [(text, prefix, 0, 0, 0)]
        parts: List[Part] = []
        if self._prefix_scheme == "after_each_special":
            # llama.cpp: is_prev_special starts true and is re-armed by every
            # token fragment, so each text fragment that starts the input or
            # follows a token gets the prefix.
            prev_token = True
            for fragment in fragments:
                if isinstance(fragment, TokenAt):
                    parts.append(_token_part(fragment))
                    prev_token = True
                else:
                    start, end = fragment
                    parts.append((text[start:end], prefix and prev_token, 0, start, 0))
                    prev_token = False
            return parts
        # "once": the prefix belongs to the input, not to a fragment.  When a
        # token starts the input the prefix stands alone as "▁" (HF
        # "[INST]Write" -> ▁ [INST] Write), except before BOS/EOS/UNK, which
        # swallow it (HF "<s>x" -> <s> x).  Either way it is spent.
        carries = prefix
        first = fragments[0]
        if isinstance(first, TokenAt):
            if prefix and first.token.id not in self._sentinel_ids:
                parts.append(("", True, 0, 0, 0))
            carries = False
        for fragment in fragments:
            if isinstance(fragment, TokenAt):
                parts.append(_token_part(fragment))
            else:
                start, end = fragment
                parts.append((text[start:end], carries, 0, start, 0))
                carries = False
        return parts

    def _plan_sentencepiece(
        self, text: str, prefix: bool, origin: int = 0, lead: int = 0, offsets: bool = False
    ) -> List[Part]:
        """sentencepiece normalizes first (the dummy prefix, spaces as "▁"),
        then matches user-defined pieces in the normalized text, longest
        first at each position, and merges what lies between them."""
        if self._normalizers is not None:
            return self._plan_normalized(text, prefix, origin, lead, offsets)
        if not self._sp_matcher:
            # No user-defined pieces: the core escapes and prefixes alike.
            return [(text, prefix, 0, origin, lead)]
        escaped = text.replace(" ", "\u2581")
        if prefix:
            escaped = "\u2581" + escaped
            lead += 1
        fragments = self._sp_matcher.partition_longest(escaped)
        if fragments is None:
            return [(escaped, False, 0, origin, lead)]
        parts: List[Part] = []
        for f in fragments:
            if isinstance(f, TokenAt):
                end = f.start + len(f.token.content)
                parts.append((f.token.id, origin + max(0, f.start - lead), origin + max(0, end - lead)))
            else:
                parts.append((escaped[f[0] : f[1]], False, 0, origin + max(0, f[0] - lead), max(0, lead - f[0])))
        return parts

    def _plan_normalized(self, text: str, prefix: bool, origin: int, lead: int, offsets: bool) -> List[Part]:
        """sentencepiece with a normalizer: the normalized text (prefix and
        "▁" included) is split at user-defined pieces and merged; for
        offsets, spans map back through the normalizer's alignment."""
        normalizer = self._normalizers[prefix]  # type: ignore[index]
        if not offsets:
            normalized = normalizer.normalize(text)
            if not normalized:
                return []
            fragments = self._sp_matcher.partition_longest(normalized)
            if fragments is None:
                return [(normalized, False, 0, 0, 0)]
            return [
                f.token.id if isinstance(f, TokenAt) else (normalized[f[0] : f[1]], False, 0, 0, 0)
                for f in fragments
            ]
        normalized, align = normalizer.normalize_with_offsets(text)
        if not normalized:
            return []
        fragments = self._sp_matcher.partition_longest(normalized)
        if fragments is None:
            fragments = [(0, len(normalized))]

        def back(k: int) -> int:
            return origin + max(0, align[k] - lead)

        parts: List[Part] = []
        for f in fragments:
            if isinstance(f, TokenAt):
                parts.append((f.token.id, back(f.start), back(f.start + len(f.token.content))))
            else:
                # (text, prefix, skip, origin, lead, alignment)
                parts.append((normalized[f[0] : f[1]], False, 0, 0, 0, [back(k) for k in range(f[0], f[1] + 1)]))
        return parts

    def _plan_tokenizers(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]]
    ) -> List[Part]:
        """HuggingFace tokenizers: added tokens split out first, then each
        text segment normalized / pre-tokenized on its own."""
        kind = self._front_end[0]
        parts: List[Part] = []
        for fragment in self._matcher.partition_hf(text, include_special, allowed):
            if isinstance(fragment, TokenAt):
                parts.append(_token_part(fragment))
                continue
            origin = fragment[0]
            segment = text[fragment[0] : fragment[1]].replace(" ", "\u2581")
            lead = 0
            if kind == "prepend":
                # normalizer Sequence[Prepend("▁"), Replace(" ", "▁")]
                segment = "\u2581" + segment
                lead = 1
            else:
                # pre_tokenizer Metaspace: "always" prepends "▁" unless the
                # segment already starts with one; "first" only at offset 0.
                scheme, split = self._front_end[1], self._front_end[2]
                if not segment.startswith("\u2581") and (
                    scheme == "always" or (scheme == "first" and fragment[0] == 0)
                ):
                    segment = "\u2581" + segment
                    lead = 1
                if split:
                    # split=True: a word starts at every "▁" (merged with next).
                    start = 0
                    for i in range(1, len(segment) + 1):
                        if i == len(segment) or segment[i] == "\u2581":
                            parts.append(
                                (segment[start:i], False, 0, origin + max(0, start - lead), max(0, lead - start))
                            )
                            start = i
                    continue
            parts.append((segment, False, 0, origin, lead))
        return parts

    def _init_huggingface(self, special_tokens: Iterable[str], unk_token: str) -> None:
        # LlamaTokenizer.tokenize drops a leading lone "▁" when the token
        # after it is one of all_special_tokens (bos/eos/unk/pad and the
        # additional special tokens).
        self._hf_special_ids = frozenset(
            t.id for t in self._matcher.tokens if t.content in set(special_tokens)
        )
        self._hf_unk_token = unk_token
        # Non-legacy _tokenize encodes a segment that starts with "▁" or " "
        # as sp.encode(unk_token + segment)[len(sp.encode(unk_token)):],
        # with the dummy prefix off.
        self._hf_unk_length = len(self._core.encode_parts(self._plan_sentencepiece(unk_token, False)))
        self._hf_lone_prefix = self._core.encode_parts(self._hf_segment("\u2581", 0, 1))

    def _hf_segment(self, segment: str, origin: int, lead: int, offsets: bool = False) -> List[Part]:
        """Parts of one text segment of HF's non-legacy _tokenize."""
        if not segment.startswith(("\u2581", " ")):
            return self._plan_sentencepiece(segment, False, origin, lead, offsets)
        unk = self._hf_unk_token
        parts = self._plan_sentencepiece(unk + segment, False, origin, lead + len(unk), offsets)
        # (The ignores: a text part of 5 or 6 items, which mypy cannot narrow
        # to.)
        if len(parts) == 1 and type(parts[0]) is tuple and isinstance(parts[0][0], str):
            text, _, _, part_origin, part_lead = parts[0][:5]  # type: ignore[misc]
            return [(text, False, self._hf_unk_length, part_origin, part_lead) + tuple(parts[0][5:])]  # type: ignore[list-item]
        # A user-defined piece inside: drop the ids of the unk token here.
        if not offsets:
            # (A normalized plan holds bare ids, which have no spans.)
            ids = self._core.encode_parts(parts)
        else:
            ids, starts, ends = self._core.encode_parts_offsets(parts)
        keep = self._hf_unk_length if len(ids) >= self._hf_unk_length else 0
        return list(zip(ids[keep:], starts[keep:], ends[keep:])) if offsets else list(ids[keep:])

    def _plan_huggingface(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> List[Part]:
        """transformers' slow LlamaTokenizer.tokenize, as parts."""
        legacy = self._prefix_scheme == "after_each_special"
        prefix = self._add_prefix_space
        synthetic = 0
        if not legacy:
            # Non-legacy: a literal "▁" is a space, and the dummy prefix is
            # put on the text before splitting (sentencepiece's own is off).
            text = text.replace("\u2581", " ")
            if prefix:
                text = "\u2581" + text
                synthetic = 1
        try:
            fragments = self._matcher.partition_hf(text, include_special, allowed)
        except DisallowedSpecialError as exc:
            # The offset in the caller's text, not in the prefixed one.
            raise DisallowedSpecialError(exc.token, max(0, exc.offset - synthetic)) from None
        parts: List[Part] = []
        for index, fragment in enumerate(fragments):
            if isinstance(fragment, TokenAt):
                end = fragment.start + len(fragment.token.content)
                parts.append(
                    (fragment.token.id, max(0, fragment.start - synthetic), max(0, end - synthetic))
                )
                continue
            segment = text[fragment[0] : fragment[1]]
            origin = max(0, fragment[0] - synthetic)
            lead = max(0, synthetic - fragment[0])
            if legacy:
                parts.extend(self._plan_sentencepiece(segment, prefix, origin, lead, offsets))
            elif (
                index == 0
                and segment == "\u2581"
                and len(fragments) > 1
                and isinstance(fragments[1], TokenAt)
                and fragments[1].token.id in self._hf_special_ids
                and len(self._hf_lone_prefix) == 1
                and self._hf_lone_prefix[0] == self._table.find("\u2581".encode("utf-8"))
            ):
                continue  # the lone "▁" before a special token is dropped
            else:
                parts.extend(self._hf_segment(segment, origin, lead, offsets))
        return parts

    # ------------------------------------------------------------ transformers-style call

    def __call__(
        self,
        text: Union[str, Sequence[str]],
        *,
        add_special_tokens: bool = True,
        padding: Union[bool, str] = False,
        truncation: Union[bool, str, None] = None,
        max_length: Optional[int] = None,
        pad_to_multiple_of: Optional[int] = None,
        padding_side: str = "right",
        truncation_side: str = "right",
        pad_token_id: Optional[int] = None,
        return_tensors: Optional[str] = None,
        return_attention_mask: bool = True,
        special: SpecialPolicy = "all",
        num_threads: Optional[int] = None,
    ) -> "BatchEncoding":
        """What a transformers tokenizer's call returns, for code written for
        one: a dict (keys also attributes) of ``input_ids`` and
        ``attention_mask``; lists, or 2-D int64 arrays with
        ``return_tensors="np"``.  BOS/EOS are added by default (as
        transformers does); `padding` is ``True``/``"longest"`` or
        ``"max_length"``, with the vocabulary's pad id or `pad_token_id`;
        `truncation` cuts text ids so that a row has at most `max_length` ids.

        >>> tok(["Hello", "Hello world"], padding=True, pad_token_id=0)["input_ids"]  # doctest: +SKIP
        [[1, 15043, 0], [1, 15043, 3186]]
        """
        from ._hf_call import call

        return call(
            self, text, add_special_tokens=add_special_tokens, padding=padding, truncation=truncation,
            max_length=max_length, pad_to_multiple_of=pad_to_multiple_of, padding_side=padding_side,
            truncation_side=truncation_side, pad_token_id=pad_token_id, return_tensors=return_tensors,
            return_attention_mask=return_attention_mask, special=special, num_threads=num_threads,
        )

    # ------------------------------------------------------------ decoding

    def streaming_decoder(
        self, *, skip_special: bool = False, errors: str = "replace", special_as_text: bool = False
    ) -> "StreamingDecoder":
        """A decoder fed one id at a time: ``add_token(id)`` returns the text
        completed so far (whole characters only), ``flush()`` the rest; the
        pieces joined equal ``decode(ids, skip_special=..., errors=...,
        special_as_text=...)``.

        >>> d = tok.streaming_decoder()                              # doctest: +SKIP
        >>> d.add_token(15043), d.add_token(3186), d.flush()         # doctest: +SKIP
        ('Hello', ' world', '')
        """
        from ._streaming import StreamingDecoder

        return StreamingDecoder(
            self, skip_special=skip_special, errors=errors, special_as_text=special_as_text
        )

    def decode_bytes(
        self, ids: Iterable[int], *, skip_special: bool = False, special_as_text: bool = False
    ) -> bytes:
        """The UTF-8 bytes `ids` stand for, before ``decode``'s final step
        (byte pieces may split a character where the reference leaves bytes
        as they are: llama.cpp, transformers 4)."""
        skip = self._skip_special if skip_special else self._skip_none
        rules = self._decoding[special_as_text]
        return decode_ids(self._core, ids, rules.packed, skip, rules.surface)

    def decode(
        self,
        ids: Iterable[int],
        *,
        skip_special: bool = False,
        errors: str = "replace",
        special_as_text: bool = False,
    ) -> str:
        """The text of `ids`, as the tokenizer's reference decodes them
        (``spmbpe/_decoding.py``): llama.cpp's ``llama_detokenize`` for a
        GGUF, sentencepiece's ``decode`` for a ``.model`` (control pieces are
        nothing, unknown ones `` ⁇ ``), the ``tokenizer.json``'s decoder as
        the tokenizers library runs it, transformers' for a model folder.

        `skip_special` leaves out control and unknown ids and special added
        tokens; `special_as_text` renders control and unknown pieces as their
        text whatever the reference does. Bytes that are not valid UTF-8
        follow `errors` (``str.decode``) where the reference leaves them as
        they are; sentencepiece and tokenizers put U+FFFD for each.

        >>> tok.decode([15043, 3186])                            # doctest: +SKIP
        'Hello world'
        """
        text = self.decode_bytes(ids, skip_special=skip_special, special_as_text=special_as_text).decode(
            "utf-8", errors
        )
        if self._denormalizer is not None:
            # sentencepiece's denormalizer_spec, applied to the decoded text.
            text = self._denormalizer.normalize(text)
        return text


def _token_part(fragment: TokenAt) -> Tuple[int, int, int]:
    return (fragment.token.id, fragment.start, fragment.start + len(fragment.token.content))


def _piece_bytes(piece: object, index: int) -> bytes:
    if isinstance(piece, str):
        try:
            return piece.encode("utf-8")
        except UnicodeEncodeError:
            raise VocabularyError(f"piece {index} is not valid Unicode: {piece!r}") from None
    raise TypeError(f"pieces must be str, not {type(piece).__name__} (piece {index})")


# encode_batch: the least characters worth a thread's call (smaller batches
# are not split further; the GIL handoff costs more).
_MIN_SHARE = 1 << 14

# encode_batch's BatchJob units per thread: enough that a thread starting
# late or meeting slower text still ends close to the others.
_UNITS_PER_THREAD = 16

# encode_batch's thread pools, one per thread count asked for, shared by
# every tokenizer: a pool per tokenizer started new threads for each freshly
# loaded one (about a millisecond), and several tokenizers' batches may run
# on the same threads.  None is shut down while the process lives (another
# thread may be using it).  A forked child inherits the pools but not their
# threads, nor a usable lock: it starts afresh.
_POOLS: Dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_POOLS_PID = os.getpid()


def _executor(threads: int) -> ThreadPoolExecutor:
    global _POOLS, _POOLS_LOCK, _POOLS_PID
    if _POOLS_PID != os.getpid():
        _POOLS, _POOLS_LOCK, _POOLS_PID = {}, threading.Lock(), os.getpid()
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="spmbpe")
        return pool


# TokenType values 1..6 map to themselves; anything else is invalid.
_VALID_TYPES = bytes(range(1, 7))
# 1 for the types `skip_special` leaves out of decoding (CONTROL, UNKNOWN).
_SPECIAL_TYPES = bytes(1 if t in (TokenType.CONTROL, TokenType.UNKNOWN) else 0 for t in range(256))


def _types_buffer(table: PieceTable, token_types: Union[bytes, Sequence[int], None]) -> bytes:
    """One byte per piece: its TokenType."""
    n = len(table)
    if token_types is None:
        # Without types, the 256 <0xNN> pieces are byte pieces (they decode
        # to their byte) and everything else is normal text.
        types = bytearray([TokenType.NORMAL]) * n
        for b in range(256):
            found = table.find(f"<0x{b:02X}>".encode("ascii"))
            if found >= 0:
                types[found] = TokenType.BYTE
        return bytes(types)
    if len(token_types) != n:
        raise VocabularyError(f"token_types has {len(token_types)} entries but there are {n} pieces")
    if isinstance(token_types, bytes):
        raw = token_types
    else:
        try:
            raw = array("B", token_types).tobytes()
        except (ValueError, TypeError, OverflowError):
            raw = b""
    if len(raw) != n or raw.translate(None, _VALID_TYPES):
        for i, t in enumerate(token_types):
            if not (isinstance(t, int) and 1 <= t <= 6):
                raise VocabularyError(f"piece {i} has an unknown token type {t!r}")
    return raw


# Merge flags under sentencepiece's rules, by token type: NORMAL,
# USER_DEFINED and UNUSED pieces may be merge results; UNUSED ones are
# split again on output.
_SENTENCEPIECE_FLAGS = bytes(
    _MERGEABLE | _RESPLIT if t == TokenType.UNUSED
    else _MERGEABLE if t in (TokenType.NORMAL, TokenType.USER_DEFINED)
    else 0
    for t in range(256)
)


def _indices_of(types: bytes, value: int) -> List[int]:
    out = []
    i = types.find(value)
    while i >= 0:
        out.append(i)
        i = types.find(value, i + 1)
    return out


def _check_id(name: str, value: Optional[int], n: int) -> Optional[int]:
    if value is None:
        return None
    if not 0 <= int(value) < n:
        raise VocabularyError(f"{name} {value} is outside the vocabulary of {n} pieces")
    return int(value)


def _check_text(text: object) -> str:
    if type(text) is str:
        return text
    if isinstance(text, str):
        return str(text)
    raise TypeError(f"text must be str, not {type(text).__name__}")


def _surrogate_error(text: str) -> ValueError:
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return ValueError(
                f"text contains a lone surrogate {ch!r} at position {i}, which is not "
                f"valid Unicode and cannot be encoded as UTF-8"
            )
    return ValueError("text cannot be encoded as UTF-8")


def _check_surrogates(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _surrogate_error(text) from None


def _thread_count(num_threads: Optional[int]) -> int:
    if num_threads is None:
        return os.cpu_count() or 1
    if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive integer, not {num_threads!r}")
    return num_threads


def _sampling(alpha: float, seed: Optional[int]) -> Tuple[float, int]:
    """The checked dropout probability and a 64-bit seed (random when None)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be a number from 0 to 1, not {alpha!r}")
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, not {type(seed).__name__}")
    return float(alpha), seed & 0xFFFFFFFFFFFFFFFF


def _text_seed(seed: int, index: int) -> int:
    """Text `index`'s seed in a sampled batch: independent of how the batch
    is split among threads."""
    return (seed + index * 0xD1B54A32D192ED03) & 0xFFFFFFFFFFFFFFFF


def _numpy_dtype(dtype: object, vocab_size: int) -> Tuple[Any, Any]:
    """NumPy and the checked dtype of encode_batch(return_numpy=True)."""
    import numpy as np

    dtype = np.dtype(np.uint32 if dtype is None else dtype)  # type: ignore[call-overload]  # any object: np.dtype rejects a non-dtype
    if dtype not in (np.dtype(np.uint32), np.dtype(np.uint16)):
        raise ValueError(f"dtype must be numpy.uint32 or numpy.uint16, not {dtype}")
    if dtype == np.dtype(np.uint16) and vocab_size > 65536:
        raise ValueError(f"a vocabulary of {vocab_size} ids does not fit numpy.uint16")
    return np, dtype
