"""SpmTokenizer: the public tokenizer, policy over the compiled merger.

Built in one step from a :class:`~spmbpe.spec.TokenizerSpec` (what a file
says): the spec's reference (a module of ``spmbpe/references/``) marks the
vocabulary for the compiled core, plans each text and says how ids decode;
this class owns the public API and the ``special=`` policy.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple, Type, Union, cast, overload

from . import references
from ._core import PieceTable, SpmCore, TokenizerBase
from ._decoding import Decoder, DecodingMixin
from ._encoding import EncodingMixin
from ._hf_call import call
from ._names import NamesMixin
from ._policy import SpecialPolicy
from ._state import fingerprint, register_builder, restore, state_bytes
from .errors import InvalidTokenIdError, VocabularyError
from .references.base import Planner
from .spec import PREFIX_SCHEMES, TokenizerSpec
from .tokens import AddedToken, TokenType

__all__ = ["SpmTokenizer", "tokenizer_from_spec", "PREFIX_SCHEMES", "SpecialPolicy"]

class SpmTokenizer(TokenizerBase, EncodingMixin, DecodingMixin, NamesMixin):
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
        reference = references.OLD_NAMES.get(reference, reference)
        if not getattr(references.REFERENCES.get(reference), "Planner", Planner).from_lists:
            listed = [name for name, ref in references.REFERENCES.items() if ref.Planner.from_lists]
            raise ValueError(
                f"reference must be {' or '.join(map(repr, listed))} for a tokenizer built from "
                f"lists, not {reference!r} (HuggingFace folders and tokenizer.json files load "
                f"with spmbpe.load)"
            )
        # (The settings are this signature's keywords, as TokenizerSpec.build takes them.)
        settings = {k: v for k, v in locals().items() if k not in ("self", "tokens", "scores", "token_types")}
        encoded = [_piece_bytes(t, i) for i, t in enumerate(tokens)]
        if not encoded:
            raise VocabularyError("the vocabulary is empty: it needs at least one piece")
        spec = TokenizerSpec.build(PieceTable.from_pieces(encoded), scores, token_types, **settings)
        self._build(spec)

    def _build(self, spec: TokenizerSpec) -> None:
        reference = references.get(spec.reference)
        unknown = sorted(set(spec.reference_options) - set(reference.OPTIONS))
        if unknown:
            raise ValueError(f"reference {spec.reference!r} has no option {unknown[0]!r}")
        planner_cls: Type[Planner] = reference.Planner
        self._spec = spec
        self._fingerprint: Optional[str] = None
        self._table, self._types = spec.table, spec.types
        self._add_prefix_space = bool(spec.add_prefix_space)
        self._add_bos, self._add_eos = bool(spec.add_bos), bool(spec.add_eos)
        # (Checked by TokenizerSpec.build; ints here.)
        self._bos_id, self._eos_id, self._pad_id = (None if i is None else int(i) for i in (
            spec.bos_id, spec.eos_id, spec.pad_id))
        # The id unknown characters become, and the one unk_id reports (a
        # name the encoder does not use: transformers 5's folders).
        encode_unk = _unknown_id(spec, planner_cls)
        unk_id = encode_unk if spec.named_unk_id is None else spec.named_unk_id
        self._unk_id = None if unk_id is None else int(unk_id)
        self._core = core = _make_core(spec, planner_cls, encode_unk)
        self._merge_settings: Optional[Tuple[bool, bool]] = None
        if spec.ranked_merges is not None:
            # The core's table is then the rules' one copy; the state reads
            # them back (_whole_spec).
            self._merge_settings = spec.ranked_merges[3:]
            # (What follows keeps this spec too -- the planner, the
            # matcher, the decoder -- and none reads the rules.)
            self._spec = spec = dataclasses.replace(spec, ranked_merges=None)
        self._matcher = planner_cls.make_matcher(_added_tokens(spec, planner_cls), spec)
        sentinel_ids = frozenset(i for i in (self._bos_id, self._eos_id, self._unk_id) if i is not None)
        self._planner: Planner = planner_cls(spec, core, self._matcher, sentinel_ids)
        self._plan = self._planner.plan
        # The compiled base's encode: texts without an added token go
        # straight to the core, as the planner's direct() allows.
        bos, eos = self._bos_id if self._add_bos else None, self._eos_id if self._add_eos else None
        self._bind(core, self._planner, self._planner.direct(), bos, eos)
        self._decoder = Decoder(core, reference.decode_rules(spec), spec, self._matcher.tokens, (bos, eos))

    # ------------------------------------------------------------ properties

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

    # transformers' names of the special ids (the same properties).
    bos_token_id, eos_token_id, unk_token_id, pad_token_id = bos_id, eos_id, unk_id, pad_id

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
        "transformers" (transformers 5), "transformers4" (transformers 4.x's
        slow tokenizer) or "tokenizers" (the modules of spmbpe/references/)."""
        return self._spec.reference

    @property
    def prefix_scheme(self) -> str:
        """``"after_each_special"`` (llama.cpp) or ``"once"`` (HF non-legacy)."""
        return self._spec.prefix_scheme

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
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self._whole_spec())
        return self._fingerprint

    @property
    def cache_capacity(self) -> int:
        """About how many distinct chunks (a word and the space before it,
        mostly) the chunk cache holds: 98,304 by default, which takes up to
        6.8 MB once full.  Set it, when no thread is encoding with this
        tokenizer, to bound the memory (0: no cache; chunks are then merged
        every time) or to hold more of a large corpus; what the cache held
        is dropped.  Ids never depend on it.  A setting of this process:
        a pickled tokenizer has the default.

        >>> tok.cache_capacity = 200_000                          # doctest: +SKIP
        """
        return int(self._core.cache_capacity)

    @cache_capacity.setter
    def cache_capacity(self, chunks: int) -> None:
        if isinstance(chunks, bool) or not isinstance(chunks, int):
            raise TypeError(f"cache_capacity must be an int, not {type(chunks).__name__}")
        self._core.set_cache_capacity(chunks)

    def describe(self) -> Dict[str, bool]:
        """What ``spmbpe info`` reports beyond the properties above:
        ``byte_fallback`` (unknown characters become byte pieces),
        ``chunked`` (the merge may cut text at spaces, exactly: its fast
        path) and ``normalizer_runs`` (a normalizer stage runs before the
        merge, as sentencepiece's does when the model's rules do more than
        escape spaces)."""
        return {
            "byte_fallback": bool(self._core.byte_fallback),
            "chunked": bool(self._core.chunked),
            "normalizer_runs": self._spec.normalizers is not None,
        }

    def __reduce__(self) -> Tuple[Any, Tuple[bytes]]:
        # The vocabulary's bytes and settings (spmbpe/_state.py), never a
        # path: the same bytes in every process, rebuilt without reading a file.
        return (restore, (state_bytes(self._whole_spec()),))

    def _whole_spec(self) -> TokenizerSpec:
        """The spec this tokenizer was built from, its merge rules read back
        from the core as the state writes them (_state._canonical_merges)."""
        if self._merge_settings is None:
            return self._spec
        return dataclasses.replace(self._spec, ranked_merges=(*self._core.ranked_merges(), *self._merge_settings))

    def __repr__(self) -> str:
        return (
            f"<SpmTokenizer vocab_size={self.vocab_size} reference={self.reference!r} "
            f"prefix_scheme={self.prefix_scheme!r} add_prefix_space={self._add_prefix_space}>"
        )

    @property
    def vocab_size(self) -> int:
        """Number of ids (pieces) in the vocabulary."""
        return len(self._table)

    def __len__(self) -> int:
        return len(self._table)

    # ------------------------------------------------------------ pieces

    @overload
    def id_to_piece(self, id: int) -> str: ...
    @overload
    def id_to_piece(self, id: Iterable[int]) -> List[str]: ...

    def id_to_piece(self, id: Union[int, Iterable[int]]) -> Union[str, List[str]]:
        """The piece of an id, as spelled in the vocabulary (``▁`` kept); of
        a list of ids, the list of pieces (as sentencepiece takes both)."""
        if not hasattr(id, "__index__") and isinstance(id, Iterable):
            return [str(self._table.piece(self._valid_id(i))) for i in id]
        return str(self._table.piece(self._valid_id(cast(int, id))))

    @overload
    def piece_to_id(self, piece: str) -> int: ...  # type: ignore[overload-overlap]
    @overload
    def piece_to_id(self, piece: Iterable[str]) -> List[int]: ...

    def piece_to_id(self, piece: Union[str, Iterable[str]]) -> Union[int, List[int]]:
        """The (lowest) id of a piece; the unknown id when absent, as
        sentencepiece's ``piece_to_id`` does (KeyError without one); of a
        list of pieces, the list of ids."""
        if not isinstance(piece, str):
            return [self._piece_id(p) for p in piece]
        return self._piece_id(piece)

    def _piece_id(self, piece: str) -> int:
        if not isinstance(piece, str):
            raise TypeError(f"pieces must be str, not {type(piece).__name__}")
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

    # transformers' names of the lookups (the same methods).
    convert_ids_to_tokens = id_to_piece
    convert_tokens_to_ids = piece_to_id

    # encode and encode_ordinary are compiled, in TokenizerBase
    # (spmbpe/core/direct.pyx): the per-line hot path.  The other encoders
    # are EncodingMixin's (_encoding.py).

    __call__ = call  # the call transformers' tokenizers answer (_hf_call.py)

def _unknown_id(spec: TokenizerSpec, planner_cls: Type[Planner]) -> Optional[int]:
    """The id unknown characters become: the file's, or a piece spelled
    ``<unk>``/``<UNK>`` where the reference takes one (None: none)."""
    if spec.unk_id is not None or not planner_cls.finds_unk_piece:
        return spec.unk_id
    for name in (b"<unk>", b"<UNK>"):
        found = spec.table.find(name)
        if found >= 0:
            return int(found)
    return None


def _make_core(spec: TokenizerSpec, planner_cls: Type[Planner], unk_id: Optional[int]) -> SpmCore:
    """The compiled merger of a spec, its pieces marked by the reference."""
    n = len(spec.table)
    flags = planner_cls.merge_flags(spec.types)
    if spec.mergeable_limit is not None and spec.mergeable_limit < n:
        # Pieces appended after the model's own (HF added tokens) are never
        # built by merges.
        flags = flags[: spec.mergeable_limit] + bytes(n - spec.mergeable_limit)
    core = SpmCore(
        spec.table, spec.rank, flags, spec.types, -1 if unk_id is None else int(unk_id),
        planner_cls.collapse_unknown, spec.byte_fallback, spec.ranked_merges,
    )
    if not spec.escape_spaces:
        core.set_escape_spaces(False)
    return core


def _added_tokens(spec: TokenizerSpec, planner_cls: Type[Planner]) -> List[AddedToken]:
    """The tokens split out of the text before merging: the pieces the
    reference splits out by type, then the explicit ones, which override a
    piece of the same text."""
    by_content: Dict[str, AddedToken] = {}
    for i in planner_cls.typed_added_candidates(spec.types):
        piece = spec.table.piece(i)
        if piece not in by_content:
            by_content[piece] = AddedToken(piece, i, special=spec.types[i] != TokenType.USER_DEFINED)
    for token in spec.added_tokens or ():
        by_content[token.content] = token
    return list(by_content.values())


def _piece_bytes(piece: object, index: int) -> bytes:
    if isinstance(piece, str):
        try:
            return piece.encode("utf-8")
        except UnicodeEncodeError:
            raise VocabularyError(f"piece {index} is not valid Unicode: {piece!r}") from None
    raise TypeError(f"pieces must be str, not {type(piece).__name__} (piece {index})")


def tokenizer_from_spec(spec: TokenizerSpec) -> SpmTokenizer:
    """The tokenizer of a spec, in one step: what every loader and
    unpickling end with."""
    tok = SpmTokenizer.__new__(SpmTokenizer)
    tok._build(spec)
    return tok


# Unpickling (spmbpe/_state.py) builds tokenizers through this module.
register_builder(tokenizer_from_spec)
