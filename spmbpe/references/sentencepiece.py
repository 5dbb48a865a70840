"""sentencepiece (a bare ``.model``, and lists on request): ``bpe_model.cc``,
``model_interface.cc``, ``sentencepiece_processor.cc``.

Encoding: only NORMAL, USER_DEFINED and UNUSED pieces are merge results,
UNUSED ones are split again; USER_DEFINED pieces are matched in the
normalized text, leftmost-longest; control pieces in the text are plain
text; a run of unknown characters is one <unk> (without byte fallback).

Decoding (``DecodeSentencePiece``; docs/behaviour.md, "Decoding"): control
pieces as nothing, unknown ones as the model's ``unk_surface``; a leading
``▁`` comes off while nothing is decoded; invalid bytes are U+FFFD each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional

from .._added import AddedTokenMatcher, TokenAt
from .._core import SpmCore
from .._decoding import C, DecodeRules, pack, remove_extra_whitespaces
from .._vocab import indices_of
from ..tokens import AddedToken, TokenType
from . import base
from .base import MARKER, Direct, Plan, text_plan

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

NAME = "sentencepiece"
OPTIONS: Dict[str, Any] = {}


class Planner(base.Planner):
    from_lists = True

    def __init__(
        self, spec: "TokenizerSpec", core: SpmCore, matcher: AddedTokenMatcher, sentinel_ids: FrozenSet[int]
    ) -> None:
        super().__init__(spec, core, matcher, sentinel_ids)
        # sentencepiece's normalizer, with and without the dummy prefix, for
        # models whose rules are not identity (None: the core escapes).
        self.normalizers = spec.normalizers
        # sentencepiece's user-defined pieces, matched in normalized text.
        table = spec.table
        self.user_defined = AddedTokenMatcher(
            [AddedToken(table.piece(i), i, special=False) for i in indices_of(spec.types, TokenType.USER_DEFINED)]
        )

    def direct(self) -> Optional[Direct]:
        # No splitting and no normalizing to do (the common case of .model
        # files): sentencepiece reads no control token from text.
        if self.normalizers is None and not self.user_defined:
            return Direct((), "always" if self.prefix else "never")
        return None

    def plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> Plan:
        if not text:
            return Plan()
        return self.plan_segment(text, self.prefix, offsets=offsets)

    def plan_segment(
        self, text: str, prefix: bool, origin: int = 0, lead: int = 0, offsets: bool = False
    ) -> Plan:
        """sentencepiece normalizes first (the dummy prefix, spaces as "▁"),
        then splits out user-defined pieces, longest first at each position."""
        if self.normalizers is not None:
            return self._plan_normalized(text, prefix, origin, lead, offsets)
        if not self.user_defined:
            # No user-defined pieces: the core escapes and prefixes alike.
            return text_plan(text, prefix, 0, origin, lead)
        escaped = text.replace(" ", MARKER)
        if prefix:
            escaped = MARKER + escaped
            lead += 1
        fragments = self.user_defined.partition_longest(escaped)
        if fragments is None:
            return text_plan(escaped, False, 0, origin, lead)
        plan = Plan()
        for f in fragments:
            if isinstance(f, TokenAt):
                end = f.start + len(f.token.content)
                plan.add_token(f.token.id, origin + max(0, f.start - lead), origin + max(0, end - lead))
            else:
                plan.add_text(escaped[f[0] : f[1]], False, 0, origin + max(0, f[0] - lead), max(0, lead - f[0]))
        return plan

    def _plan_normalized(self, text: str, prefix: bool, origin: int, lead: int, offsets: bool) -> Plan:
        """sentencepiece with a normalizer: the normalized text (prefix and
        "▁" included) is split at user-defined pieces and merged; for
        offsets, spans map back through the normalizer's alignment."""
        normalizer = self.normalizers[prefix]  # type: ignore[index]
        if offsets:
            normalized, align = normalizer.normalize_with_offsets(text)
        else:  # (no spans: tokens at 0, texts without an alignment)
            normalized, align = normalizer.normalize(text), None
        if not normalized:
            return Plan()
        fragments = self.user_defined.partition_longest(normalized)
        if fragments is None:
            if align is None:
                return text_plan(normalized, False)
            fragments = [(0, len(normalized))]

        def back(k: int) -> int:
            return 0 if align is None else origin + max(0, align[k] - lead)

        plan = Plan()
        for f in fragments:
            if isinstance(f, TokenAt):
                plan.add_token(f.token.id, back(f.start), back(f.start + len(f.token.content)))
            else:
                alignment = None if align is None else [back(k) for k in range(f[0], f[1] + 1)]
                plan.add_text(normalized[f[0] : f[1]], False, alignment=alignment)
        return plan


def decode_rules(spec: "TokenizerSpec") -> Dict[bool, DecodeRules]:
    extra = remove_extra_whitespaces(spec)
    strip = C["STRIP_WHILE_EMPTY"] if spec.add_prefix_space or extra else C["STRIP_NONE"]
    out = {}
    for as_text in (False, True):
        control = C["RENDER_TEXT"] if as_text else C["RENDER_NOTHING"]
        unknown = C["RENDER_TEXT"] if as_text else C["RENDER_SURFACE"]
        normal = C["RENDER_NORMAL"]
        packed = pack(control, unknown, normal, normal, strip, C["BYTES_EACH"], remove_extra_whitespaces=extra)
        out[as_text] = DecodeRules(packed, spec.unk_surface.encode("utf-8"))
    return out
