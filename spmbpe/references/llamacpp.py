"""llama.cpp (GGUF files, and lists by default): ``llm_tokenizer_spm`` and
``llama_detokenize`` in ``src/llama-vocab.cpp``.

Encoding: any piece may be built by a merge; CONTROL, UNKNOWN and
USER_DEFINED pieces are split out of the raw text, longest first; a
character that is no piece becomes bytes (or one <unk> per character).

Decoding (docs/behaviour.md, "Decoding"): control and unknown pieces as
their text (``unparse_special``) or nothing (``skip_special``); only the
first id loses a leading space (``remove_space``); ``remove_special`` also
drops a BOS/EOS the vocabulary adds, by id, whatever its type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional

from .._added import TokenAt
from .._decoding import C, DecodeRules, pack
from .._vocab import indices_of
from ..tokens import TokenType
from . import base
from .base import Direct, Plan, add_token, text_plan

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

NAME = "llama.cpp"
OPTIONS: Dict[str, Any] = {}


class Planner(base.Planner):
    from_lists = True
    collapse_unknown = False

    @classmethod
    def merge_flags(cls, types: bytes) -> bytes:
        # llama.cpp queues a merge whenever the two symbols spell any piece.
        return bytes([base.MERGEABLE]) * len(types)

    @classmethod
    def typed_added_candidates(cls, types: bytes) -> List[int]:
        # The candidates of llama.cpp's tokenizer_st_partition.
        return sorted(
            indices_of(types, TokenType.CONTROL)
            + indices_of(types, TokenType.UNKNOWN)
            + indices_of(types, TokenType.USER_DEFINED)
        )

    def direct(self) -> Optional[Direct]:
        # llama.cpp splits only at the added tokens' texts: a text without
        # one is one fragment, which takes the prefix under either scheme.
        return Direct(self.matcher.tokens, "always" if self.prefix else "never")

    def plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> Plan:
        if not text:
            return Plan()
        prefix = self.prefix
        fragments = self.matcher.partition(text, include_special, allowed)
        if fragments is None:
            return text_plan(text, prefix)
        plan = Plan()
        if self.prefix_scheme == "after_each_special":
            # llama.cpp: is_prev_special starts true and is re-armed by every
            # token fragment, so each text fragment that starts the input or
            # follows a token gets the prefix.
            prev_token = True
            for fragment in fragments:
                if isinstance(fragment, TokenAt):
                    add_token(plan, fragment)
                    prev_token = True
                else:
                    start, end = fragment
                    plan.add_text(text[start:end], prefix and prev_token, 0, start, 0)
                    prev_token = False
            return plan
        # "once": the prefix belongs to the input, not to a fragment.  When a
        # token starts the input the prefix stands alone as "▁" (HF
        # "[INST]Write" -> ▁ [INST] Write), except before BOS/EOS/UNK, which
        # swallow it (HF "<s>x" -> <s> x).  Either way it is spent.
        carries = prefix
        first = fragments[0]
        if isinstance(first, TokenAt):
            if prefix and first.token.id not in self.sentinel_ids:
                plan.add_text("", True, 0, 0, 0)
            carries = False
        for fragment in fragments:
            if isinstance(fragment, TokenAt):
                add_token(plan, fragment)
            else:
                start, end = fragment
                plan.add_text(text[start:end], carries, 0, start, 0)
                carries = False
        return plan


def decode_rules(spec: "TokenizerSpec") -> Dict[bool, DecodeRules]:
    # A plain-space prefix (no escape_whitespaces) stays: llama.cpp takes off
    # only the space the marker decodes to.
    strip = C["STRIP_FIRST_ID"] if spec.add_prefix_space and spec.escape_spaces else C["STRIP_NONE"]
    text = C["RENDER_TEXT"]
    rules = DecodeRules(pack(text, text, C["RENDER_NOTHING"], text, strip, C["BYTES_RAW"]), b"", drops_ends=True)
    return {False: rules, True: rules}
