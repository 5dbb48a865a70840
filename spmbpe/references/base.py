"""What every reference module builds on: the planner base and the plan's
helpers.  A planner turns a text into a :class:`~spmbpe._core.Plan`, the
compiled type the core reads (docs/architecture.md, "The plan")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Dict, FrozenSet, List, NamedTuple, Optional, Sequence

from .._added import AddedTokenMatcher, TokenAt
from .._core import Plan, SpmCore
from ..tokens import AddedToken, TokenType

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

__all__ = ["Direct", "MARKER", "Plan", "Planner", "SENTENCEPIECE_FLAGS", "add_token", "text_plan"]

# The core's merge flags (FLAG_MERGEABLE, FLAG_RESPLIT in _core.pxd).
MERGEABLE = 1
RESPLIT = 2

#: Merge flags under sentencepiece's rules, by token type: NORMAL,
#: USER_DEFINED and UNUSED pieces may be merge results; UNUSED ones are
#: split again on output.
SENTENCEPIECE_FLAGS = bytes(
    MERGEABLE | RESPLIT if t == TokenType.UNUSED
    else MERGEABLE if t in (TokenType.NORMAL, TokenType.USER_DEFINED)
    else 0
    for t in range(256)
)

MARKER = "\u2581"

#: Plan.of_text, bound once: the plan of one text, made by most planned calls.
text_plan = Plan.of_text


class Direct(NamedTuple):
    """When encode may skip a planner: a text in which none of `tokens`
    occurs (a compiled scan checks, TokenizerBase._bind) is one segment,
    merged with the dummy prefix as `prefix` says: "never", "always", or
    "unless_space" (not when the text starts with " " or "▁", as Metaspace)."""

    tokens: Sequence[AddedToken]
    prefix: str


def add_token(plan: Plan, fragment: TokenAt) -> None:
    """A token matched in the text, with its span."""
    plan.add_token(fragment.token.id, fragment.start, fragment.start + len(fragment.token.content))


class Planner:
    """A reference's rules above the merge: class attributes describe the
    vocabulary marking; ``plan`` and ``direct`` are what the tokenizer calls."""

    #: Whether ``SpmTokenizer(tokens, ...)`` may follow it (the others need
    #: settings only a loader knows).
    from_lists: ClassVar[bool] = False
    #: Whether a piece spelled ``<unk>``/``<UNK>`` is the unknown id when the
    #: file names none.
    finds_unk_piece: ClassVar[bool] = True
    #: Whether a run of characters that are no piece gives one unknown id
    #: (sentencepiece) rather than one per character (llama.cpp).
    collapse_unknown: ClassVar[bool] = True

    def __init__(
        self, spec: "TokenizerSpec", core: SpmCore, matcher: AddedTokenMatcher, sentinel_ids: FrozenSet[int]
    ) -> None:
        self.spec = spec
        self.core = core
        self.matcher = matcher
        self.prefix = bool(spec.add_prefix_space)
        self.prefix_scheme = spec.prefix_scheme
        self.sentinel_ids = sentinel_ids

    @classmethod
    def make_matcher(cls, tokens: List[AddedToken], spec: "TokenizerSpec") -> AddedTokenMatcher:
        """The matcher that splits the added tokens out of a text."""
        return AddedTokenMatcher(tokens)

    @classmethod
    def merge_flags(cls, types: bytes) -> bytes:
        """The core's flags of each piece (which may be merge results)."""
        return types.translate(SENTENCEPIECE_FLAGS)

    @classmethod
    def typed_added_candidates(cls, types: bytes) -> List[int]:
        """The pieces split out of the raw text by their type alone (before
        the explicit added tokens, which override one of the same text)."""
        return []

    def direct(self) -> Optional[Direct]:
        """When encode may hand a text straight to the core (None: never)."""
        return None

    def plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> Plan:
        raise NotImplementedError


def options(spec: "TokenizerSpec", defaults: Dict[str, Any]) -> Dict[str, Any]:
    """A reference's own settings for `spec`: its `defaults`, overridden by
    the spec's ``reference_options``."""
    return {**defaults, **spec.reference_options}
