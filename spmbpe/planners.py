"""Planners: how each reference splits a text before merging.

A *plan* is a :class:`~spmbpe._core.Plan`, the compiled type the core
reads: the parts of one text, in order, each checked once, when the planner
adds it:

* ``plan.add_token(token_id, start, end)``  a token matched in the text,
  spanning characters start to end (a normalized plan without offsets adds
  bare ids, spanning nothing);
* ``plan.add_text(text, prefix, skip, origin, lead)``  a segment to escape
  and merge: `prefix` asks the core for the dummy prefix, the first `skip`
  ids are left out, and ``text[lead:]`` is the original text from character
  `origin` on (its first `lead` characters are synthetic: a prefix or HF's
  unk token put in front), which is what ``encode_with_offsets`` maps spans
  back through;
* ``plan.add_text(text, prefix, skip, alignment=alignment)``  the same for
  normalized text: ``alignment[k]`` is the original offset of character k
  (and of the end).

``Plan.of_text(text, prefix, skip, origin, lead)`` makes the plan of one
text (most plans) in one call, ``plan.extend(other)`` appends another plan,
``plan.set_skip(i, skip)`` changes the skip of text part i, and
``plan.parts()`` gives the parts back as tuples (tests, debugging).  The
core reads the plan's C array of parts as is (SpmCore.encode_parts,
encode_parts_offsets and encode_parts_batch take Plans; see
docs/architecture.md, "The plan").

One :class:`Planner` subclass per reference, registered in :data:`PLANNERS`
under the name ``SpmTokenizer(reference=...)`` and ``tok.reference`` use.
The tokenizer picks the class once, from ``spec.reference``; the class says
how the vocabulary is marked for the core (merge flags, which pieces are
split out of the raw text) and an instance, bound to one tokenizer's core and
matchers, plans its texts.
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING, ClassVar, Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Type, cast,
)

from ._added import AddedTokenMatcher, TokenAt, TokenizersMatcher
from ._core import Plan, SpmCore
from ._vocab import indices_of
from .errors import DisallowedSpecialError
from .tokens import AddedToken, TokenType

if TYPE_CHECKING:
    from .spec import TokenizerSpec

__all__ = ["Direct", "Plan", "Planner", "PLANNERS", "TRANSFORMERS_REFERENCE", "planner_class"]

# The core's merge flags (FLAG_MERGEABLE, FLAG_RESPLIT in _core.pxd).
_MERGEABLE = 1
_RESPLIT = 2

# Merge flags under sentencepiece's rules, by token type: NORMAL,
# USER_DEFINED and UNUSED pieces may be merge results; UNUSED ones are
# split again on output.
_SENTENCEPIECE_FLAGS = bytes(
    _MERGEABLE | _RESPLIT if t == TokenType.UNUSED
    else _MERGEABLE if t in (TokenType.NORMAL, TokenType.USER_DEFINED)
    else 0
    for t in range(256)
)

_MARKER = "\u2581"

# Plan.of_text, bound once: the plan of one text, made by most planned calls.
_text_plan = Plan.of_text

class Direct(NamedTuple):
    """When encode may skip a planner: a text in which none of `tokens`
    occurs (a compiled scan checks, TokenizerBase._bind) is one segment,
    merged with the dummy prefix as `prefix` says: "never", "always", or
    "unless_space" (not when the text starts with " " or "▁", as Metaspace)."""

    tokens: Sequence[AddedToken]
    prefix: str


def _add_token(plan: Plan, fragment: TokenAt) -> None:
    """A token matched in the text, with its span."""
    plan.add_token(fragment.token.id, fragment.start, fragment.start + len(fragment.token.content))


class Planner:
    """A reference's rules above the merge (the base: what every planner
    has).  Class attributes describe the vocabulary marking; ``plan`` and
    ``direct`` are what the tokenizer calls."""

    #: The reference's name in the tokenizer's state (pickle, fingerprint).
    name: ClassVar[str]
    #: The name users see and pass (``tok.reference``, ``load(reference=)``).
    public_name: ClassVar[str]
    #: How the reference turns ids back into text: a rule set of
    #: spmbpe/_decoding.py.
    decoder: ClassVar[str]
    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "public_name" not in cls.__dict__ and "name" in cls.__dict__:
            cls.public_name = cls.name

    @classmethod
    def make_matcher(cls, tokens: List[AddedToken], spec: "TokenizerSpec") -> AddedTokenMatcher:
        """The matcher that splits the added tokens out of a text."""
        return AddedTokenMatcher(tokens)

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
        self.core = core
        self.matcher = matcher
        self.prefix = bool(spec.add_prefix_space)
        self.prefix_scheme = spec.prefix_scheme
        self.sentinel_ids = sentinel_ids

    @classmethod
    def merge_flags(cls, types: bytes) -> bytes:
        """The core's flags of each piece (which may be merge results)."""
        return types.translate(_SENTENCEPIECE_FLAGS)

    @classmethod
    def typed_added_candidates(cls, types: bytes) -> List[int]:
        """The pieces split out of the raw text by their type alone (before
        the explicit added tokens, which override one of the same text)."""
        return []

    def direct(self) -> Optional[Direct]:
        """When encode may hand a text straight to the core; None: never
        (every text is planned)."""
        return None

    def plan(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]], offsets: bool = False
    ) -> Plan:
        raise NotImplementedError


class LlamaCppPlanner(Planner):
    """llama.cpp (GGUF files): any piece may be built by a merge; CONTROL,
    UNKNOWN and USER_DEFINED pieces are split out of the raw text, longest
    first; a character that is no piece becomes bytes (or <unk>)."""

    name = "llama.cpp"
    decoder = "llama.cpp"
    from_lists = True
    collapse_unknown = False

    @classmethod
    def merge_flags(cls, types: bytes) -> bytes:
        # llama.cpp queues a merge whenever the two symbols spell any piece.
        return bytes([_MERGEABLE]) * len(types)

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
            return _text_plan(text, prefix)
        plan = Plan()
        if self.prefix_scheme == "after_each_special":
            # llama.cpp: is_prev_special starts true and is re-armed by every
            # token fragment, so each text fragment that starts the input or
            # follows a token gets the prefix.
            prev_token = True
            for fragment in fragments:
                if isinstance(fragment, TokenAt):
                    _add_token(plan, fragment)
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
                _add_token(plan, fragment)
            else:
                start, end = fragment
                plan.add_text(text[start:end], carries, 0, start, 0)
                carries = False
        return plan


class SentencePiecePlanner(Planner):
    """sentencepiece (a bare .model): only NORMAL, USER_DEFINED and UNUSED
    pieces are merge results, UNUSED ones are split again; USER_DEFINED
    pieces are matched in the escaped text, leftmost-longest; control pieces
    in the text are plain text; a run of unknown characters is one <unk>
    (without byte fallback)."""

    name = "sentencepiece"
    decoder = "sentencepiece"
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
        # No splitting and no normalizing to do: encode hands the text to the
        # core directly (the common case of Mistral/Llama .model files);
        # sentencepiece reads no control token from text.
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
        then matches user-defined pieces in the normalized text, longest
        first at each position, and merges what lies between them."""
        if self.normalizers is not None:
            return self._plan_normalized(text, prefix, origin, lead, offsets)
        if not self.user_defined:
            # No user-defined pieces: the core escapes and prefixes alike.
            return _text_plan(text, prefix, 0, origin, lead)
        escaped = text.replace(" ", _MARKER)
        if prefix:
            escaped = _MARKER + escaped
            lead += 1
        fragments = self.user_defined.partition_longest(escaped)
        if fragments is None:
            return _text_plan(escaped, False, 0, origin, lead)
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
        if not offsets:
            normalized = normalizer.normalize(text)
            if not normalized:
                return Plan()
            fragments = self.user_defined.partition_longest(normalized)
            if fragments is None:
                return _text_plan(normalized, False)
            plan = Plan()
            for f in fragments:
                if isinstance(f, TokenAt):
                    plan.add_token(f.token.id)  # (no span: not planned for offsets)
                else:
                    plan.add_text(normalized[f[0] : f[1]], False)
            return plan
        normalized, align = normalizer.normalize_with_offsets(text)
        if not normalized:
            return Plan()
        fragments = self.user_defined.partition_longest(normalized)
        if fragments is None:
            fragments = [(0, len(normalized))]

        def back(k: int) -> int:
            return origin + max(0, align[k] - lead)

        plan = Plan()
        for f in fragments:
            if isinstance(f, TokenAt):
                plan.add_token(f.token.id, back(f.start), back(f.start + len(f.token.content)))
            else:
                plan.add_text(
                    normalized[f[0] : f[1]], False, alignment=[back(k) for k in range(f[0], f[1] + 1)]
                )
        return plan


class TransformersPlanner(SentencePiecePlanner):
    """transformers' slow LlamaTokenizer (4.x) over a sentencepiece model (a
    model folder): added tokens split out of the raw text (leftmost-longest,
    with their lstrip/rstrip), each text segment encoded by sentencepiece's
    rules; with prefix_scheme "once" (legacy false) the quirks of its
    non-legacy path."""

    # "huggingface" in the state, so that pickles and fingerprints of folder
    # tokenizers made before transformers 5 stay what they were.
    name = "huggingface"
    public_name = "transformers4"
    decoder = "transformers4"

    def __init__(
        self, spec: "TokenizerSpec", core: SpmCore, matcher: AddedTokenMatcher, sentinel_ids: FrozenSet[int]
    ) -> None:
        super().__init__(spec, core, matcher, sentinel_ids)
        # LlamaTokenizer.tokenize drops a leading lone "▁" when the token
        # after it is one of all_special_tokens (bos/eos/unk/pad and the
        # additional special tokens).
        special_tokens = set(spec.hf_special_tokens)
        self.special_ids = frozenset(t.id for t in matcher.tokens if t.content in special_tokens)
        self.unk_token = spec.hf_unk_token
        # Non-legacy _tokenize encodes a segment that starts with "▁" or " "
        # as sp.encode(unk_token + segment)[len(sp.encode(unk_token)):],
        # with the dummy prefix off.
        self.unk_length = len(core.encode_parts(self.plan_segment(self.unk_token, False)))
        lone = core.encode_parts(self._non_legacy_segment(_MARKER, 0, 1))
        # Whether the lone "▁" before a special token is its own piece.
        self.drops_lone_prefix = len(lone) == 1 and lone[0] == spec.table.find(_MARKER.encode("utf-8"))

    def direct(self) -> Optional[Direct]:
        # The non-legacy rules rewrite every text ("▁" as a space, the prefix
        # put on before splitting): always planned.
        return None

    def _non_legacy_segment(self, segment: str, origin: int, lead: int, offsets: bool = False) -> Plan:
        """The plan of one text segment of HF's non-legacy _tokenize."""
        if not segment.startswith((_MARKER, " ")):
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
        if not offsets:
            # (A normalized plan holds tokens without spans.)
            ids = self.core.encode_parts(plan)
            keep = self.unk_length if len(ids) >= self.unk_length else 0
            for token_id in ids[keep:]:
                out.add_token(token_id)
            return out
        ids, starts, ends = self.core.encode_parts_offsets(plan)
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
            text = text.replace(_MARKER, " ")
            if prefix:
                text = _MARKER + text
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
                and segment == _MARKER
                and len(fragments) > 1
                and isinstance(fragments[1], TokenAt)
                and fragments[1].token.id in self.special_ids
                and self.drops_lone_prefix
            ):
                continue  # the lone "▁" before a special token is dropped
            else:
                plan.extend(self._non_legacy_segment(segment, origin, lead, offsets))
        return plan


class TokenizersPlanner(Planner):
    """HuggingFace tokenizers' BPE model from a tokenizer.json: merges ranked
    by the merges list (spec.ranked_merges), a Metaspace or Prepend+Replace
    front end per text segment; added tokens split out first."""

    name = "tokenizers"
    decoder = "tokenizers"
    finds_unk_piece = False

    def __init__(
        self, spec: "TokenizerSpec", core: SpmCore, matcher: AddedTokenMatcher, sentinel_ids: FrozenSet[int]
    ) -> None:
        super().__init__(spec, core, matcher, sentinel_ids)
        self.front_end = spec.front_end
        self.escape_spaces = spec.escape_spaces

    def direct(self) -> Optional[Direct]:
        # A text without an added token is one segment: the core escapes its
        # spaces as plan() does, and the prefix follows the front end.
        # Every match (TokenizersMatcher's too: no normalizer runs before
        # it) is a token's text in the raw text, so the scan decides.
        if not self.escape_spaces:
            return None
        if self.front_end[0] == "prepend":
            return Direct(self.matcher.tokens, "always")
        scheme, split = self.front_end[1], self.front_end[2]
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
        kind = self.front_end[0]
        plan = Plan()
        for fragment in self.matcher.partition_hf(text, include_special, allowed):
            if isinstance(fragment, TokenAt):
                _add_token(plan, fragment)
                continue
            origin = fragment[0]
            segment = text[fragment[0] : fragment[1]].replace(" ", _MARKER)
            lead = 0
            if kind == "prepend":
                # normalizer Sequence[Prepend("▁"), Replace(" ", "▁")]
                segment = _MARKER + segment
                lead = 1
            else:
                # pre_tokenizer Metaspace: "always" prepends "▁" unless the
                # segment already starts with one; "first" only at offset 0.
                scheme, split = self.front_end[1], self.front_end[2]
                if not segment.startswith(_MARKER) and (
                    scheme == "always" or (scheme == "first" and fragment[0] == 0)
                ):
                    segment = _MARKER + segment
                    lead = 1
                if split:
                    _add_metaspace_words(plan, segment, origin, lead)
                    continue
            plan.add_text(segment, False, 0, origin, lead)
        return plan


def _add_metaspace_words(plan: Plan, segment: str, origin: int, lead: int) -> None:
    """Metaspace split=True: a word starts at every "▁" (merged with what
    follows it)."""
    start = 0
    for i in range(1, len(segment) + 1):
        if i == len(segment) or segment[i] == _MARKER:
            plan.add_text(segment[start:i], False, 0, origin + max(0, start - lead), max(0, lead - start))
            start = i


class Transformers5Planner(TokenizersPlanner):
    """transformers 5's tokenizers-backed LlamaTokenizer for a model folder:
    the tokenizers rules over the pipeline it builds
    (spmbpe/_transformers5.py), with tokenizers' two-pass, single_word-aware
    matching of added tokens when the folder has such tokens."""

    name = "transformers"
    decoder = "tokenizers"

    @classmethod
    def make_matcher(cls, tokens: List[AddedToken], spec: "TokenizerSpec") -> AddedTokenMatcher:
        if len(spec.front_end) > 3:
            single_word, normalized = spec.front_end[3], spec.front_end[4]
            return TokenizersMatcher(tokens, cast(Iterable[str], single_word), cast(Iterable[str], normalized))
        return AddedTokenMatcher(tokens)


#: The name, in the tokenizer's state, of the folder reference of
#: transformers 4's slow tokenizer (this is the one place that spells it).
TRANSFORMERS_REFERENCE = TransformersPlanner.name

#: Every reference, by its name in the state, in documentation order.
PLANNERS: Dict[str, Type[Planner]] = {
    cls.name: cls
    for cls in (
        LlamaCppPlanner, SentencePiecePlanner, Transformers5Planner, TransformersPlanner, TokenizersPlanner
    )
}


def planner_class(reference: str) -> Type[Planner]:
    """The planner of a reference name; ValueError naming the known ones."""
    try:
        return PLANNERS[reference]
    except (KeyError, TypeError):
        raise ValueError(
            f"reference must be one of {', '.join(map(repr, PLANNERS))}, not {reference!r}"
        ) from None
