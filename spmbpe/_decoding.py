"""How each reference turns ids back into text, chosen in one place.

The compiled decoder (``IdDecoder`` in ``_core.pyx``) renders ids by a small
set of rules; this module says which rules each reference follows:

* **llama.cpp** (GGUF), ``llama_detokenize`` in ``src/llama-vocab.cpp``:
  control and unknown pieces as their text (``unparse_special``, as
  ``common_detokenize`` asks by default) or nothing (``skip_special``);
  user-defined pieces as spelled; unused pieces as nothing; byte pieces as
  their byte. Only the *first id* loses one leading space (its
  ``remove_space``), whether it renders anything or not, so a skipped
  leading BOS leaves the next piece's space standing. Skipping specials
  (``remove_special``) also drops a leading BOS when the vocabulary adds
  one and a trailing EOS when it adds one, by id, whatever their type
  (``drops_ends``).
* **sentencepiece** (``.model``), ``DecodeSentencePiece`` in
  ``sentencepiece_processor.cc``: control pieces as nothing, unknown ones as
  the model's ``unk_surface`` (`` ⁇ `` unless trained with another),
  user-defined and unused pieces as normal ones; while nothing has been
  decoded, a piece's leading ``▁`` comes off (with ``add_dummy_prefix`` or
  ``remove_extra_whitespaces``; a byte piece is never stripped); a run of
  byte pieces is decoded on its own, every byte of an invalid sequence
  becoming U+FFFD.
* **tokenizers** (``tokenizer.json``), the Llama decoder ``Sequence[Replace
  ▁ -> " ", ByteFallback, Fuse, Strip(" ", 1, 0)]``: every token's ``▁`` is a
  space, a run of byte tokens that is not valid UTF-8 is U+FFFD per byte, and
  one leading space comes off the whole text.
* **transformers4** (model folders, transformers 4.57's slow
  ``LlamaTokenizer``: ``PreTrainedTokenizer._decode`` and
  ``LlamaTokenizer.convert_tokens_to_string``): added tokens that are not
  special tokens (``all_special_tokens``) cut the ids into runs, and the
  texts, each run's and each such token's, are joined with spaces
  (``spaces_between_special_tokens``, True whatever the config says), a
  run's dropped when it is empty unless it is the last. In a run, the first
  token loses a leading ``▁`` (``add_prefix_space``) and is looked up again;
  special tokens are their text, with ``legacy`` after a space when pieces
  come before them, and a second token after a special one that has no
  ``▁`` gets a space; the pieces between special tokens are decoded by
  sentencepiece, one call each (with ``legacy`` the model's own dummy
  prefix comes off again, without it only ``remove_extra_whitespaces``
  strips). Skipping leaves out ``all_special_ids`` and nothing else.
  ``clean_up_tokenization_spaces`` is the tokenizer's text post-processing
  (``TextCleanup``).

``special_as_text=True`` renders control and unknown pieces as their text in
every reference (what spmbpe 0.1 did for ``.model`` files too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Protocol, Tuple

from ._core import DECODE_CONSTANTS as _C
from ._core import PieceTable

if TYPE_CHECKING:
    from .spec import TokenizerSpec

__all__ = ["DecodeRules", "decode_rules", "TextCleanup", "TextTransform"]


class TextTransform(Protocol):
    """What decode applies to its whole text: a denormalizer, TextCleanup."""

    def normalize(self, text: str) -> str: ...


class DecodeRules(NamedTuple):
    """The rules of one reference, packed for the compiled decoder;
    `drops_ends`: skip_special also leaves out a first id that is the BOS
    the vocabulary adds and a last id that is the EOS it adds; `roles`: the
    ROLE_* bits of each id, for segmented rules; `skip`: the ids that
    skip_special leaves out, where the reference does not skip by type;
    `spelling`: each id's text where the reference spells some ids other
    than the vocabulary does (segmented rules)."""

    packed: bytes
    surface: bytes
    drops_ends: bool = False
    roles: Optional[bytes] = None
    skip: Optional[bytes] = None
    spelling: Optional[PieceTable] = None


class TextCleanup:
    """transformers' ``clean_up_tokenization``: spaces before punctuation
    and English contractions removed from the decoded text, in this order
    (PreTrainedTokenizerBase, with ``clean_up_tokenization_spaces``), after
    `before` (a denormalizer) when given. Like a denormalizer, it reads the
    text as a whole: a streaming decoder gives its text at ``flush()``."""

    __slots__ = ("_before",)

    _REPLACEMENTS = (
        (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
        (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
    )

    def __init__(self, before: Optional[TextTransform] = None) -> None:
        self._before = before

    def normalize(self, text: str) -> str:
        if self._before is not None:
            text = self._before.normalize(text)
        for old, new in self._REPLACEMENTS:
            text = text.replace(old, new)
        return text


def _pack(
    control: int, unknown: int, unused: int, user_defined: int, strip: int, byte_runs: int,
    *, strip_count: int = 1, marker_in_special: bool = False, remove_extra_whitespaces: bool = False,
    segments: bool = False, legacy_space: bool = False, first_strip: bool = False, join_spaces: bool = False,
) -> bytes:
    # Field order: DecodeRules in _core.pyx.
    packed = bytes(
        [control, unknown, unused, user_defined, strip, strip_count, byte_runs,
         int(marker_in_special), int(remove_extra_whitespaces), int(segments), int(legacy_space),
         int(first_strip), int(join_spaces)]
    )
    assert len(packed) == _C["RULES_SIZE"]
    return packed


def decode_rules(decoder: str, spec: "TokenizerSpec") -> Dict[bool, DecodeRules]:
    """The decode rules of `decoder` (a planner's ``decoder``: "llama.cpp",
    "sentencepiece", "tokenizers", "transformers4") for the tokenizer of
    `spec`, which adds a dummy prefix (``add_prefix_space``) as ``▁``
    (``escape_spaces``) or as a plain space; keyed by ``special_as_text``."""
    remove_extra_whitespaces = spec.normalizers is not None and spec.normalizers[True].remove_extra_whitespaces
    if decoder == "transformers4":
        return _transformers4_rules(spec, remove_extra_whitespaces)
    return {as_text: _rules(decoder, spec, as_text, remove_extra_whitespaces) for as_text in (False, True)}


def _rules(decoder: str, spec: "TokenizerSpec", special_as_text: bool, remove_extra_whitespaces: bool) -> DecodeRules:
    add_prefix_space = bool(spec.add_prefix_space)
    # A plain-space prefix (no escape_whitespaces) stays: the references take
    # off only the space marker (sentencepiece) or the space it decodes to.
    strip_prefix = add_prefix_space and spec.escape_spaces
    text, nothing = _C["RENDER_TEXT"], _C["RENDER_NOTHING"]
    normal = _C["RENDER_NORMAL"]
    if decoder == "llama.cpp":
        strip = _C["STRIP_FIRST_ID"] if strip_prefix else _C["STRIP_NONE"]
        packed = _pack(text, text, nothing, text, strip, _C["BYTES_RAW"])
        return DecodeRules(packed, b"", drops_ends=True)
    if decoder == "sentencepiece":
        control = text if special_as_text else nothing
        unknown = text if special_as_text else _C["RENDER_SURFACE"]
        stripping = add_prefix_space or remove_extra_whitespaces
        strip = _C["STRIP_WHILE_EMPTY"] if stripping else _C["STRIP_NONE"]
        packed = _pack(
            control, unknown, normal, normal, strip, _C["BYTES_EACH"],
            remove_extra_whitespaces=remove_extra_whitespaces,
        )
        return DecodeRules(packed, _unk_surface(spec))
    if decoder == "tokenizers":
        strip = _C["STRIP_OUTPUT"] if strip_prefix else _C["STRIP_NONE"]
        packed = _pack(text, text, normal, text, strip, _C["BYTES_RUN"], marker_in_special=True)
        return DecodeRules(packed, b"")
    raise ValueError(f"no decode rules named {decoder!r}")


def _unk_surface(spec: "TokenizerSpec") -> bytes:
    """The model's TrainerSpec.unk_surface, which sentencepiece's decode
    writes for the unknown piece (transformers 4's slow decode gets it from
    sentencepiece too)."""
    return spec.unk_surface.encode("utf-8")


def _transformers4_rules(spec: "TokenizerSpec", remove_extra_whitespaces: bool) -> Dict[bool, DecodeRules]:
    legacy = spec.prefix_scheme == "after_each_special"
    # LlamaTokenizer's sp_model: with legacy, the model as it is (its
    # add_dummy_prefix is the spec's add_prefix_space); without, the model
    # with add_dummy_prefix off.
    model_strips = (legacy and bool(spec.add_prefix_space)) or remove_extra_whitespaces
    first_strip = spec.add_prefix_space if spec.hf_add_prefix_space is None else spec.hf_add_prefix_space
    normal = _C["RENDER_NORMAL"]
    # (The roles, skip table and spelling are the same with special_as_text.)
    roles, spelling = _transformers4_tokens(spec)
    skip = bytes(role & _C["ROLE_SPECIAL"] for role in roles)
    out = {}
    for as_text in (False, True):
        packed = _pack(
            _C["RENDER_TEXT"] if as_text else _C["RENDER_NOTHING"],
            _C["RENDER_TEXT"] if as_text else _C["RENDER_SURFACE"], normal, normal,
            _C["STRIP_WHILE_EMPTY"] if model_strips else _C["STRIP_NONE"], _C["BYTES_EACH"],
            remove_extra_whitespaces=remove_extra_whitespaces, segments=True, legacy_space=legacy,
            first_strip=bool(first_strip), join_spaces=True,
        )
        out[as_text] = DecodeRules(packed, _unk_surface(spec), roles=roles, skip=skip, spelling=spelling)
    return out


def _transformers4_tokens(spec: "TokenizerSpec") -> Tuple[bytes, Optional[PieceTable]]:
    """The ROLE_* bits of each id for transformers 4's ``_decode``, and the
    table of each id's token string where an added token gives an id of the
    model another text than its piece (else None).

    transformers 4 decides by token string (``convert_ids_to_tokens``: an
    added token's content, else the model's piece): special when it is one
    of ``all_special_tokens``; split out (``legacy_added_tokens``) when it is
    an added token's content and not special, or an additional special
    token whose id is past the model's pieces."""
    table = spec.table
    n = len(table)
    model_pieces = n if spec.mergeable_limit is None else spec.mergeable_limit
    added = {token.id: token.content for token in spec.added_tokens or ()}
    respelled = {i: text for i, text in added.items() if i < model_pieces and table.piece(i) != text}
    # Every id spelled `text`: the added tokens', and the piece's unless its id is respelled.
    ids_of: Dict[str, List[int]] = {}
    for i, text in added.items():
        ids_of.setdefault(text, []).append(i)

    def spelled(text: str) -> List[int]:
        found = table.find(text.encode("utf-8"))
        extra = [found] if found >= 0 and found not in respelled and found not in added else []
        return ids_of.get(text, []) + extra

    roles = bytearray(n)
    for i in range(model_pieces, n):
        roles[i] = _C["ROLE_OUTSIDE"]
    special = set(spec.hf_special_tokens)
    if not special:
        # A tokenizer built from lists names no special tokens: its BOS, EOS,
        # unknown and padding pieces are (LlamaTokenizer's defaults are those
        # pieces' texts).
        special = {table.piece(i) for i in (spec.bos_id, spec.eos_id, spec.unk_id, spec.pad_id) if i is not None}
    # convert_tokens_to_ids: the added token (the highest id of a text), else the piece.
    token_id = {text: i for i, text in sorted(added.items())}
    split = {text for text in added.values() if text not in special}
    split.update(
        text for text in spec.hf_additional_special_tokens
        if token_id.get(text, table.find(text.encode("utf-8"))) >= model_pieces
    )
    for text in special:
        for i in spelled(text):
            roles[i] |= _C["ROLE_SPECIAL"]
    for text in split:
        for i in spelled(text):
            roles[i] |= _C["ROLE_SPLIT"]
    spelling = None
    if respelled:
        spelling = PieceTable.from_pieces(
            [respelled[i].encode("utf-8") if i in respelled else table.piece_bytes(i) for i in range(n)]
        )
    return bytes(roles), spelling
