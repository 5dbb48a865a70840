"""TokenizerSpec: what a tokenizer file says, checked, without behaviour.

Every loader (``gguf``, ``sentencepiece``, ``huggingface``,
``tokenizer_json``) and the list constructor ``SpmTokenizer(tokens, ...)``
reduce their input to one frozen :class:`TokenizerSpec`; the tokenizer is
built from it in one step (``SpmTokenizer._from_spec``), its pickle is the
spec's bytes and its fingerprint their hash (``spmbpe/_state.py``).  Which
reference's rules apply to it is the planner's business (``planners.py``).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from ._core import PieceTable, id_order_ranks
from ._vocab import checked_id, types_buffer
from .errors import VocabularyError
from .tokens import AddedToken

if TYPE_CHECKING:
    from ._normalizer import Normalizer

__all__ = ["TokenizerSpec", "RankedMerges", "PREFIX_SCHEMES"]

#: Where the dummy prefix goes once the text is split around added tokens.
#: "after_each_special": llama.cpp; every text fragment that starts the input
#: or follows an added token is prefixed.  "once": sentencepiece and
#: HuggingFace with ``legacy: false``; only the start of the input is.
PREFIX_SCHEMES = ("after_each_special", "once")

#: tokenizer.json's merges: (left, right, merged) id arrays ('i') in rank
#: order, then fuse_unk and ignore_merges.
RankedMerges = Tuple["array[int]", "array[int]", "array[int]", bool, bool]

# The fields that are not settings (the pickle writes them on their own).
_DATA_FIELDS = ("table", "rank", "types", "ranked_merges")

# Settings added after the state format's first version, left out of
# `options` (so of the pickle and the fingerprint) at these defaults: a
# tokenizer that does not use one keeps the state it had before it existed.
_LATER_SETTINGS: Dict[str, Any] = {
    "hf_add_prefix_space": None,
    "hf_additional_special_tokens": (),
    "hf_clean_up_spaces": False,
    "named_unk_id": None,
    "unk_surface": " \u2047 ",
}


@dataclass(frozen=True, eq=False)
class TokenizerSpec:
    """A vocabulary and its settings, as a file states them.

    `rank` is each piece's merge score (float32; higher merges first),
    `types` one TokenType byte per piece.  The settings are those of
    :meth:`build`; their meaning is documented on ``SpmTokenizer`` and in
    the loaders.  Build one with :meth:`build`, which checks it.
    """

    table: PieceTable
    rank: "array[float]"
    types: bytes
    ranked_merges: Optional[RankedMerges]
    add_bos: bool
    add_eos: bool
    add_prefix_space: bool
    added_tokens: Optional[Tuple[AddedToken, ...]]
    bos_id: Optional[int]
    byte_fallback: bool
    denormalizer: Optional["Normalizer"]
    eos_id: Optional[int]
    escape_spaces: bool
    front_end: Tuple[Union[str, bool], ...]
    hf_add_prefix_space: Optional[bool]
    hf_additional_special_tokens: Tuple[str, ...]
    hf_clean_up_spaces: bool
    hf_special_tokens: Tuple[str, ...]
    hf_unk_token: str
    mergeable_limit: Optional[int]
    named_unk_id: Optional[int]
    normalizers: Optional[Dict[bool, "Normalizer"]]
    pad_id: Optional[int]
    prefix_scheme: str
    reference: str
    unk_id: Optional[int]
    unk_surface: str

    @classmethod
    def build(
        cls,
        table: PieceTable,
        scores: Optional[Sequence[float]],
        token_types: Union[bytes, Sequence[int], None],
        ranked_merges: Optional[RankedMerges] = None,
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
        hf_additional_special_tokens: Iterable[str] = (),
        hf_add_prefix_space: Optional[bool] = None,
        hf_clean_up_spaces: bool = False,
        front_end: Tuple[Union[str, bool], ...] = ("metaspace", "always", False),
        normalizers: Optional[Dict[bool, "Normalizer"]] = None,
        denormalizer: Optional["Normalizer"] = None,
        escape_spaces: bool = True,
        unk_surface: str = " \u2047 ",
        named_unk_id: Optional[int] = None,
    ) -> "TokenizerSpec":
        """The checked spec.  `scores` None (or empty) means id order is the
        merge order; `token_types` None means NORMAL pieces and ``<0xNN>``
        byte pieces.  The settings are kept as given (they are what the
        pickle and fingerprint record); an iterator of added tokens is read
        once.  The reference is checked where it is used, when a tokenizer
        is built (planners.planner_class).

        `unk_id` is the id unknown characters become when encoding (None:
        they are dropped, or become byte pieces); `named_unk_id`, when
        given, is the id ``tok.unk_id`` reports instead (transformers 5
        names an unknown token its BPE model does not use).  `unk_surface`
        is the text sentencepiece decodes the unknown piece to
        (TrainerSpec.unk_surface)."""
        added = _added_tuple(added_tokens)
        n = len(table)
        bad = table.first_invalid_utf8()
        if bad >= 0:
            raise VocabularyError(f"piece {bad} is not valid UTF-8: {table.piece_bytes(bad)!r}")
        rank = _rank(scores, n)
        types = types_buffer(table, token_types)
        if prefix_scheme not in PREFIX_SCHEMES:
            raise ValueError(
                f"prefix_scheme must be one of {', '.join(map(repr, PREFIX_SCHEMES))}, "
                f"not {prefix_scheme!r}"
            )
        for name, value in (("bos_id", bos_id), ("eos_id", eos_id), ("unk_id", unk_id), ("pad_id", pad_id),
                            ("named_unk_id", named_unk_id)):
            checked_id(name, value, n)
        if add_bos and bos_id is None:
            raise VocabularyError("add_bos=True needs a bos_id")
        if add_eos and eos_id is None:
            raise VocabularyError("add_eos=True needs an eos_id")
        _check_added(added, n)
        return cls(
            table=table, rank=rank, types=types, ranked_merges=ranked_merges,
            add_bos=add_bos, add_eos=add_eos, add_prefix_space=add_prefix_space,
            added_tokens=added, bos_id=bos_id, byte_fallback=byte_fallback,
            denormalizer=denormalizer, eos_id=eos_id, escape_spaces=escape_spaces,
            front_end=front_end, hf_add_prefix_space=hf_add_prefix_space,
            hf_additional_special_tokens=tuple(hf_additional_special_tokens),
            hf_clean_up_spaces=hf_clean_up_spaces, hf_special_tokens=tuple(hf_special_tokens),
            hf_unk_token=hf_unk_token, mergeable_limit=mergeable_limit, named_unk_id=named_unk_id,
            normalizers=normalizers, pad_id=pad_id, prefix_scheme=prefix_scheme,
            reference=reference, unk_id=unk_id, unk_surface=str(unk_surface),
        )

    @property
    def options(self) -> Dict[str, Any]:
        """The settings (the keywords of :meth:`build`) by name, sorted, as
        the pickle writes them."""
        out = {
            f.name: getattr(self, f.name) for f in sorted(fields(self), key=lambda f: f.name)
            if f.name not in _DATA_FIELDS
            and not (f.name in _LATER_SETTINGS and getattr(self, f.name) == _LATER_SETTINGS[f.name])
        }
        if self.added_tokens is not None:
            out["added_tokens"] = list(self.added_tokens)
        return out



def _check_added(added: Optional[Tuple[AddedToken, ...]], n: int) -> None:
    """Each explicit added token is an AddedToken with text and an id of the
    vocabulary."""
    for token in added or ():
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


def _added_tuple(
    added_tokens: Union[Mapping[str, int], Iterable[AddedToken], None]
) -> Optional[Tuple[AddedToken, ...]]:
    if added_tokens is None:
        return None
    if isinstance(added_tokens, Mapping):
        return tuple(AddedToken(str(c), int(i)) for c, i in added_tokens.items())
    return tuple(added_tokens)


def _rank(scores: Optional[Sequence[float]], n: int) -> "array[float]":
    """The merge rank of each piece (float32, as the core reads it)."""
    if scores is None or len(scores) == 0:
        # No scores: id order is the merge order (lower id merges first),
        # the convention these vocabularies follow.
        return id_order_ranks(n)
    if len(scores) != n:
        raise VocabularyError(f"scores has {len(scores)} entries but there are {n} pieces")
    if isinstance(scores, array) and scores.typecode == "f":
        return scores
    return array("f", scores)
