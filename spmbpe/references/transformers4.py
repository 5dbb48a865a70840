"""transformers 4.x's slow ``LlamaTokenizer`` over a sentencepiece model (a
model folder, on request: ``load(folder, reference="transformers4")``).

Encoding (``tokenize``): added tokens split out of the raw text
(leftmost-longest, with their lstrip/rstrip), each text segment encoded by
sentencepiece's rules; with prefix_scheme "once" (``legacy: false``) the
quirks of its non-legacy path.

Decoding: ``PreTrainedTokenizer._decode`` and
``LlamaTokenizer.convert_tokens_to_string`` (4.57), token strings around
sentencepiece's own decode (docs/behaviour.md, "Decoding").

Its OPTIONS are what the folder's config says beyond the model
(_transformers4.py reads them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Tuple

from .._added import AddedTokenMatcher, TokenAt
from .._core import PieceTable, SpmCore
from .._decoding import C, DecodeRules, pack, remove_extra_whitespaces
from ..errors import DisallowedSpecialError
from . import base, sentencepiece
from .base import MARKER, Direct, Plan

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

NAME = "transformers4"
OPTIONS: Dict[str, Any] = {
    "special_tokens": (),
    "unk_token": "<unk>",
    "additional_special_tokens": (),
    "add_prefix_space": None,
    "clean_up_spaces": False,
}


class Planner(sentencepiece.Planner):
    def __init__(
        self, spec: "TokenizerSpec", core: SpmCore, matcher: AddedTokenMatcher, sentinel_ids: FrozenSet[int]
    ) -> None:
        super().__init__(spec, core, matcher, sentinel_ids)
        # LlamaTokenizer.tokenize drops a leading lone "▁" when the token
        # after it is one of all_special_tokens.
        own = base.options(spec, OPTIONS)
        special_tokens = set(own["special_tokens"])
        self.special_ids = frozenset(t.id for t in matcher.tokens if t.content in special_tokens)
        self.unk_token = own["unk_token"]
        # Non-legacy _tokenize encodes a segment that starts with "▁" or " "
        # as sp.encode(unk_token + segment)[len(sp.encode(unk_token)):],
        # with the dummy prefix off.
        self.unk_length = len(core.encode_parts(self.plan_segment(self.unk_token, False)))
        lone = core.encode_parts(self._non_legacy_segment(MARKER, 0, 1))
        # Whether the lone "▁" before a special token is its own piece.
        self.drops_lone_prefix = len(lone) == 1 and lone[0] == spec.table.find(MARKER.encode("utf-8"))

    def direct(self) -> Optional[Direct]:
        # The non-legacy rules rewrite every text ("▁" as a space, the prefix
        # put on before splitting): always planned.
        return None

    def _non_legacy_segment(self, segment: str, origin: int, lead: int, offsets: bool = False) -> Plan:
        """The plan of one text segment of HF's non-legacy _tokenize."""
        if not segment.startswith((MARKER, " ")):
            return self.plan_segment(segment, False, origin, lead, offsets)
        unk = self.unk_token
        plan = self.plan_segment(unk + segment, False, origin, lead + len(unk), offsets)
        if len(plan) == 1 and plan.is_text(0):
            # One text (planned without the dummy prefix): the core leaves
            # out the ids of the unk token.
            plan.set_skip(0, self.unk_length)
            return plan
        # A user-defined piece inside: drop the ids of the unk token here.
        out = Plan()
        if offsets:
            ids, starts, ends = self.core.encode_parts_offsets(plan)
        else:  # (A normalized plan holds tokens without spans.)
            ids = self.core.encode_parts(plan)
            starts = ends = [0] * len(ids)
        keep = self.unk_length if len(ids) >= self.unk_length else 0
        for token_id, start, end in zip(ids[keep:], starts[keep:], ends[keep:]):
            out.add_token(token_id, start, end)
        return out

    def plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> Plan:
        """transformers' slow LlamaTokenizer.tokenize, as a plan."""
        if not text:
            return Plan()
        legacy = self.prefix_scheme == "after_each_special"
        prefix = self.prefix
        synthetic = 0
        if not legacy:
            # Non-legacy: a literal "▁" is a space, and the dummy prefix is
            # put on the text before splitting (sentencepiece's own is off).
            text = text.replace(MARKER, " ")
            if prefix:
                text = MARKER + text
                synthetic = 1
        try:
            fragments = self.matcher.partition_hf(text, include_special, allowed)
        except DisallowedSpecialError as exc:
            # The offset in the caller's text, not in the prefixed one.
            raise DisallowedSpecialError(exc.token, max(0, exc.offset - synthetic)) from None
        plan = Plan()
        for index, fragment in enumerate(fragments):
            if isinstance(fragment, TokenAt):
                end = fragment.start + len(fragment.token.content)
                plan.add_token(fragment.token.id, max(0, fragment.start - synthetic), max(0, end - synthetic))
                continue
            segment = text[fragment[0] : fragment[1]]
            origin = max(0, fragment[0] - synthetic)
            lead = max(0, synthetic - fragment[0])
            if legacy:
                plan.extend(self.plan_segment(segment, prefix, origin, lead, offsets))
            elif (
                index == 0
                and segment == MARKER
                and len(fragments) > 1
                and isinstance(fragments[1], TokenAt)
                and fragments[1].token.id in self.special_ids
                and self.drops_lone_prefix
            ):
                continue  # the lone "▁" before a special token is dropped
            else:
                plan.extend(self._non_legacy_segment(segment, origin, lead, offsets))
        return plan


def decode_rules(spec: "TokenizerSpec") -> Dict[bool, DecodeRules]:
    own = base.options(spec, OPTIONS)
    extra = remove_extra_whitespaces(spec)
    legacy = spec.prefix_scheme == "after_each_special"
    # LlamaTokenizer's sp_model: with legacy, the model as it is (its
    # add_dummy_prefix is the spec's add_prefix_space); without, the model
    # with add_dummy_prefix off.
    model_strips = (legacy and bool(spec.add_prefix_space)) or extra
    first_strip = spec.add_prefix_space if own["add_prefix_space"] is None else own["add_prefix_space"]
    normal = C["RENDER_NORMAL"]
    # (The roles, skip table and spelling are the same with special_as_text.)
    roles, spelling = _token_roles(spec, own)
    skip = bytes(role & C["ROLE_SPECIAL"] for role in roles)
    out = {}
    for as_text in (False, True):
        packed = pack(
            C["RENDER_TEXT"] if as_text else C["RENDER_NOTHING"],
            C["RENDER_TEXT"] if as_text else C["RENDER_SURFACE"], normal, normal,
            C["STRIP_WHILE_EMPTY"] if model_strips else C["STRIP_NONE"], C["BYTES_EACH"],
            remove_extra_whitespaces=extra, segments=True, legacy_space=legacy,
            first_strip=bool(first_strip), join_spaces=True,
        )
        out[as_text] = DecodeRules(
            packed, spec.unk_surface.encode("utf-8"), roles=roles, skip=skip, spelling=spelling,
            clean_up=bool(own["clean_up_spaces"]),
        )
    return out


def _token_roles(spec: "TokenizerSpec", own: Dict[str, Any]) -> Tuple[bytes, Optional[PieceTable]]:
    """The ROLE_* bits of each id for transformers 4's ``_decode``, and the
    table of each id's token string where an added token gives an id of the
    model another text than its piece (else None).  transformers 4 decides
    by token string (``convert_ids_to_tokens``: an added token's content,
    else the model's piece); docs/behaviour.md, "transformers 4's slow
    decode", says which strings are special and which split the ids."""
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
        roles[i] = C["ROLE_OUTSIDE"]
    special = set(own["special_tokens"])
    if not special:
        # A tokenizer built from lists names no special tokens: its BOS, EOS,
        # unknown and padding pieces are (LlamaTokenizer's defaults are those
        # pieces' texts).
        special = {table.piece(i) for i in (spec.bos_id, spec.eos_id, spec.unk_id, spec.pad_id) if i is not None}
    # convert_tokens_to_ids: the added token (the highest id of a text), else the piece.
    token_id = {text: i for i, text in sorted(added.items())}
    split = {text for text in added.values() if text not in special}
    split.update(
        text for text in own["additional_special_tokens"]
        if token_id.get(text, table.find(text.encode("utf-8"))) >= model_pieces
    )
    for text in special:
        for i in spelled(text):
            roles[i] |= C["ROLE_SPECIAL"]
    for text in split:
        for i in spelled(text):
            roles[i] |= C["ROLE_SPLIT"]
    spelling = None
    if respelled:
        spelling = PieceTable.from_pieces(
            [respelled[i].encode("utf-8") if i in respelled else table.piece_bytes(i) for i in range(n)]
        )
    return bytes(roles), spelling
