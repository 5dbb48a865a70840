"""TokenizerSpec: what a tokenizer file says, checked, without behaviour;
every loader and ``SpmTokenizer(tokens, ...)`` reduce their input to one
(docs/architecture.md, "The spec")."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from ._core import PieceTable, id_order_ranks
from ._vocab import checked_id, types_buffer
from .errors import VocabularyError
from .tokens import AddedToken

if TYPE_CHECKING:
    from ._normalizer import Normalizer

__all__ = ["TokenizerSpec", "RankedMerges", "PREFIX_SCHEMES", "DATA_FIELDS"]

#: Where the dummy prefix goes once the text is split around added tokens.
#: "after_each_special": llama.cpp; every text fragment that starts the input
#: or follows an added token is prefixed.  "once": sentencepiece and
#: HuggingFace with ``legacy: false``; only the start of the input is.
PREFIX_SCHEMES = ("after_each_special", "once")

#: tokenizer.json's merges: (left, right, merged) id arrays ('i') in rank
#: order, then fuse_unk and ignore_merges.
RankedMerges = Tuple["array[int]", "array[int]", "array[int]", bool, bool]

# The fields that are not settings (the pickle writes them on their own).
DATA_FIELDS = ("table", "rank", "types", "ranked_merges")


@dataclass(frozen=True, eq=False)
class TokenizerSpec:
    """A vocabulary and its settings, as a file states them.

    `rank` is each piece's merge score (float32; higher merges first),
    `types` one TokenType byte per piece; the other fields are the settings,
    the keywords of :meth:`build`.  `unk_id` is the id unknown characters become when encoding
    (None: they are dropped, or become byte pieces); `named_unk_id`, when
    given, is the id ``tok.unk_id`` reports instead (transformers 5 names an
    unknown token its BPE model does not use); `unk_surface` is the text
    sentencepiece decodes the unknown piece to (TrainerSpec.unk_surface);
    `reference_options` the settings of the reference's own (its module's
    ``OPTIONS``, spmbpe/references/) that the loader sets.
    """

    table: PieceTable
    rank: "array[float]"
    types: bytes
    ranked_merges: Optional[RankedMerges] = None
    add_bos: bool = False
    add_eos: bool = False
    add_prefix_space: bool = True
    added_tokens: Optional[Tuple[AddedToken, ...]] = None
    bos_id: Optional[int] = None
    byte_fallback: bool = True
    denormalizer: Optional["Normalizer"] = None
    eos_id: Optional[int] = None
    escape_spaces: bool = True
    front_end: Tuple[Union[str, bool], ...] = ("metaspace", "always", False)
    mergeable_limit: Optional[int] = None
    named_unk_id: Optional[int] = None
    normalizers: Optional[Dict[bool, "Normalizer"]] = None
    pad_id: Optional[int] = None
    prefix_scheme: str = "after_each_special"
    reference: str = "llama.cpp"
    reference_options: Mapping[str, Any] = field(default_factory=dict)
    unk_id: Optional[int] = None
    unk_surface: str = " \u2047 "

    @classmethod
    def build(
        cls,
        table: PieceTable,
        scores: Optional[Sequence[float]],
        token_types: Union[bytes, Sequence[int], None],
        ranked_merges: Optional[RankedMerges] = None,
        **settings: Any,
    ) -> "TokenizerSpec":
        """The checked spec.  `scores` None (or empty) means id order is the
        merge order; `token_types` None means NORMAL pieces and ``<0xNN>``
        byte pieces.  The settings are kept as given (they are what the
        pickle and fingerprint record); an iterator of added tokens is read
        once.  The reference is checked where it is used, when a tokenizer
        is built (spmbpe.references.get)."""
        n = len(table)
        bad = table.first_invalid_utf8()
        if bad >= 0:
            raise VocabularyError(f"piece {bad} is not valid UTF-8: {table.piece_bytes(bad)!r}")
        if "added_tokens" in settings:
            settings["added_tokens"] = _added_tuple(settings["added_tokens"])
        if "reference_options" in settings:
            # (Lists as tuples: the state writes each as it is.)
            settings["reference_options"] = {
                k: tuple(v) if isinstance(v, list) else v for k, v in settings["reference_options"].items()
            }
        spec = cls(table, _rank(scores, n), types_buffer(table, token_types), ranked_merges, **settings)
        if spec.prefix_scheme not in PREFIX_SCHEMES:
            raise ValueError(
                f"prefix_scheme must be one of {', '.join(map(repr, PREFIX_SCHEMES))}, "
                f"not {spec.prefix_scheme!r}"
            )
        for name in ("bos_id", "eos_id", "unk_id", "pad_id", "named_unk_id"):
            checked_id(name, getattr(spec, name), n)
        if spec.add_bos and spec.bos_id is None:
            raise VocabularyError("add_bos=True needs a bos_id")
        if spec.add_eos and spec.eos_id is None:
            raise VocabularyError("add_eos=True needs an eos_id")
        _check_added(spec.added_tokens, n)
        return spec

    @property
    def settings(self) -> Dict[str, Any]:
        """The settings (the keywords of :meth:`build`) by name, sorted."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in DATA_FIELDS}


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
