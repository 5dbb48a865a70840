"""The tokenizers library (a ``tokenizer.json``): its BPE model with merges
ranked by the merges list (``spec.ranked_merges``), a Metaspace or
Prepend+Replace front end per text segment; added tokens split out first.

Decoding, the Llama decoder ``Sequence[Replace ▁ -> " ", ByteFallback, Fuse,
Strip(" ", 1, 0)]``: every token's ``▁`` is a space, a run of byte tokens
that is not valid UTF-8 is U+FFFD per byte, and one leading space comes off
the whole text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional

from .._added import TokenAt
from .._decoding import C, DecodeRules, pack
from . import base
from .base import MARKER, Direct, Plan, add_token

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

NAME = "tokenizers"
OPTIONS: Dict[str, Any] = {}


class Planner(base.Planner):
    finds_unk_piece = False

    def direct(self) -> Optional[Direct]:
        # A text without an added token is one segment, escaped and prefixed
        # as plan() does; every match (TokenizersMatcher's too: no normalizer
        # runs before it) is a token's text in the raw text, so the scan decides.
        if not self.spec.escape_spaces:
            return None
        if self.spec.front_end[0] == "prepend":
            return Direct(self.matcher.tokens, "always")
        scheme, split = self.spec.front_end[1], self.spec.front_end[2]
        if split:
            return None  # a segment per word
        return Direct(self.matcher.tokens, "never" if scheme == "never" else "unless_space")

    def plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> Plan:
        """Added tokens split out first, then each text segment normalized /
        pre-tokenized on its own."""
        if not text:
            return Plan()
        kind = self.spec.front_end[0]
        plan = Plan()
        for fragment in self.matcher.partition_hf(text, include_special, allowed):
            if isinstance(fragment, TokenAt):
                add_token(plan, fragment)
                continue
            origin = fragment[0]
            segment = text[fragment[0] : fragment[1]].replace(" ", MARKER)
            lead = 0
            if kind == "prepend":
                # normalizer Sequence[Prepend("▁"), Replace(" ", "▁")]
                segment = MARKER + segment
                lead = 1
            else:
                # pre_tokenizer Metaspace: "always" prepends "▁" unless the
                # segment already starts with one; "first" only at offset 0.
                scheme, split = self.spec.front_end[1], self.spec.front_end[2]
                if not segment.startswith(MARKER) and (
                    scheme == "always" or (scheme == "first" and fragment[0] == 0)
                ):
                    segment = MARKER + segment
                    lead = 1
                if split:
                    add_metaspace_words(plan, segment, origin, lead)
                    continue
            plan.add_text(segment, False, 0, origin, lead)
        return plan


def add_metaspace_words(plan: Plan, segment: str, origin: int, lead: int) -> None:
    """Metaspace split=True: a word starts at every "▁" (merged with what
    follows it)."""
    start = 0
    for i in range(1, len(segment) + 1):
        if i == len(segment) or segment[i] == MARKER:
            plan.add_text(segment[start:i], False, 0, origin + max(0, start - lead), max(0, lead - start))
            start = i


def decode_rules(spec: "TokenizerSpec") -> Dict[bool, DecodeRules]:
    # A plain-space prefix (no Metaspace) stays: Strip takes off only the
    # space the marker decodes to.
    strip = C["STRIP_OUTPUT"] if spec.add_prefix_space and spec.escape_spaces else C["STRIP_NONE"]
    text = C["RENDER_TEXT"]
    packed = pack(text, text, C["RENDER_NORMAL"], text, strip, C["BYTES_RUN"], marker_in_special=True)
    rules = DecodeRules(packed, b"")
    return {False: rules, True: rules}
