"""Splitting added tokens out of the text before merging (pyahocorasick).

The partition follows llama.cpp's ``tokenizer_st_partition``: candidates are
taken longest text first (then lowest id); each one splits every remaining
text fragment at all its non-overlapping occurrences, left to right.  That is
not leftmost-longest matching: in ``"abcd"`` with tokens ``ab`` and ``bcd``,
``bcd`` wins because it is longer, although ``ab`` starts first.

One Aho-Corasick pass finds every occurrence of every candidate; the
priority-ordered splitting then runs over those positions only, so a text
without added tokens costs one automaton scan.  The other references
match leftmost-longest (``_Longest``).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Protocol, Sequence, Tuple, Union

# pyahocorasick is a C extension that ships neither stubs nor py.typed: its
# Automaton is typed by the _Automaton protocol below.
import ahocorasick  # type: ignore[import-not-found]

from .errors import DisallowedSpecialError
from .tokens import AddedToken

__all__ = ["AddedTokenMatcher", "TextSpan", "TokenAt", "TokenizersMatcher"]

# llama.cpp strips with C isspace() on bytes: the six ASCII whitespace
# characters; UTF-8 continuation bytes never count.
_STRIP_CHARS = frozenset(" \t\n\v\f\r")

#: A text fragment: (start, end) character offsets into the text.
TextSpan = Tuple[int, int]


class TokenAt:
    """A matched added token inside the text."""

    __slots__ = ("token", "start")

    def __init__(self, token: AddedToken, start: int) -> None:
        self.token = token
        self.start = start

    def __repr__(self) -> str:
        return f"TokenAt({self.token.content!r}, id={self.token.id}, start={self.start})"


Fragment = Union[TextSpan, TokenAt]


class _Automaton(Protocol):
    """The part of ``ahocorasick.Automaton`` used here: words are token
    texts, values ranks, a match ``(index of its last character, rank)``."""

    def add_word(self, key: str, value: int, /) -> bool: ...
    def make_automaton(self) -> None: ...
    def iter(self, string: str, start: int = ..., end: int = ..., /) -> Iterator[Tuple[int, int]]: ...


class AddedTokenMatcher:
    """Finds added tokens in text and partitions it around them."""

    def __init__(self, tokens: Sequence[AddedToken]) -> None:
        # Priority: longest UTF-8 text first, then lowest id.  llama.cpp sorts
        # by byte length with an unstable std::sort; equal lengths keep id
        # order for up to 16 candidates (insertion sort) and an
        # implementation-defined order beyond, which matters only when two
        # equal-length tokens overlap in the text.
        self.tokens: List[AddedToken] = sorted(
            (t for t in tokens if t.content),
            key=lambda t: (-len(t.content.encode("utf-8", "surrogatepass")), t.id),
        )
        self.by_content: Dict[str, AddedToken] = {t.content: t for t in self.tokens}
        self.special_contents: FrozenSet[str] = frozenset(
            t.content for t in self.tokens if t.special
        )
        self.has_plain = any(not t.special for t in self.tokens)
        self._longest_by: Dict[bool, Optional[_Longest]] = {}
        self._automaton: Optional[_Automaton] = None
        if self.tokens:
            automaton: _Automaton = ahocorasick.Automaton()
            for rank, token in enumerate(self.tokens):
                automaton.add_word(token.content, rank)
            automaton.make_automaton()
            self._automaton = automaton

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def partition_hf(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]] = None
    ) -> List[Fragment]:
        """The fragments of `text` as transformers' slow tokenizers split it:
        leftmost-longest matches (its Trie.split), then each token's
        rstrip/lstrip removes the whitespace (str.lstrip/rstrip: any Unicode
        whitespace) at the start/end of the text next to it; text fragments
        left empty are dropped."""
        longest = self._longest(include_special)
        if longest is None:
            return [(0, len(text))] if text else []
        fragments = _fragments(self.tokens, longest.matches(text, 0, len(text)), 0, len(text))
        _check_allowed(fragments, allowed)
        pieces: List[Union[List[int], TokenAt]] = [p if isinstance(p, TokenAt) else list(p) for p in fragments]
        for i, piece in enumerate(pieces):
            if not isinstance(piece, TokenAt):
                continue
            if piece.token.rstrip and i + 1 < len(pieces):
                span = pieces[i + 1]
                if not isinstance(span, TokenAt):
                    while span[0] < span[1] and text[span[0]].isspace():
                        span[0] += 1
            if piece.token.lstrip and i > 0:
                span = pieces[i - 1]
                if not isinstance(span, TokenAt):
                    while span[1] > span[0] and text[span[1] - 1].isspace():
                        span[1] -= 1
        return [
            p if isinstance(p, TokenAt) else (p[0], p[1])
            for p in pieces
            if isinstance(p, TokenAt) or p[1] > p[0]
        ]

    def _longest(self, include_special: bool) -> Optional["_Longest"]:
        """Leftmost-longest matching of every token, or of the special=False
        ones only (made on first use)."""
        if include_special not in self._longest_by:
            ranks = [rank for rank, t in enumerate(self.tokens) if include_special or not t.special]
            self._longest_by[include_special] = _Longest(self.tokens, ranks) if ranks else None
        return self._longest_by[include_special]

    def partition_longest(self, text: str) -> Optional[List[Fragment]]:
        """The fragments of `text` under leftmost-longest matching (at each
        position the longest token that starts there; sentencepiece's
        PrefixMatcher), or None when no token occurs."""
        if self._automaton is None:
            return None
        matches = self._longest(True).matches(text, 0, len(text))  # type: ignore[union-attr]
        return _fragments(self.tokens, matches, 0, len(text)) if matches else None

    def partition(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]] = None
    ) -> Optional[List[Fragment]]:
        """The fragments of `text` by llama.cpp's partition, or None when no
        added token occurs.  `include_special`: special tokens take part
        (else only the ``special=False`` ones); `allowed`: the special tokens
        that may appear (_check_allowed)."""
        if self._automaton is None or (not include_special and not self.has_plain):
            return None
        occurrences: Dict[int, List[int]] = {}
        tokens = self.tokens
        for end, rank in self._automaton.iter(text):
            token = tokens[rank]
            if not include_special and token.special:
                continue
            starts = occurrences.get(rank)
            if starts is None:
                occurrences[rank] = [end - len(token.content) + 1]
            else:
                starts.append(end - len(token.content) + 1)
        if not occurrences:
            return None

        fragments: List[Fragment] = [(0, len(text))]
        for rank in sorted(occurrences):
            fragments = _split(text, fragments, tokens[rank], occurrences[rank])
        _check_allowed(fragments, allowed)
        return fragments


def _fragments(tokens: Sequence[AddedToken], matches: List[Tuple[int, int]], begin: int, end: int) -> List[Fragment]:
    """text[begin:end] cut around `matches` ((index of the last character,
    rank) of each, left to right, not overlapping)."""
    out: List[Fragment] = []
    cursor = begin
    for last, rank in matches:
        token = tokens[rank]
        start = last - len(token.content) + 1
        if start > cursor:
            out.append((cursor, start))
        out.append(TokenAt(token, start))
        cursor = last + 1
    if cursor < end:
        out.append((cursor, end))
    return out


def _check_allowed(fragments: List[Fragment], allowed: Optional[FrozenSet[str]]) -> None:
    """DisallowedSpecialError for the first special token not in `allowed`
    (None: any)."""
    if allowed is not None:
        for fragment in fragments:
            if isinstance(fragment, TokenAt) and fragment.token.special and fragment.token.content not in allowed:
                raise DisallowedSpecialError(fragment.token.content, fragment.start)


class _Longest:
    """The leftmost-longest matches of some tokens' texts, left to right and
    not overlapping: the match that starts first, the longest of those, then
    the same after its end (tokenizers' aho-corasick LeftmostLongest,
    sentencepiece's PrefixMatcher; transformers 4's Trie.split, but for its
    own quirks).  pyahocorasick's iter_long is not that: it misses a shorter
    match that starts inside a longer token's prefix it followed in vain
    (tokens "a b" and " " in "a ba ": the last space).

    A regular expression of the texts' trie finds them: a group is optional
    where a text ends, so the engine tries the longer texts first and backs
    off to the longest that matched; one pass in C.  It is compiled on first
    use, not when a tokenizer loads; a trie too deep for ``re`` falls back
    to all of an Aho-Corasick automaton's matches."""

    __slots__ = ("_tokens", "_rank", "_pattern")

    def __init__(self, tokens: Sequence[AddedToken], ranks: Iterable[int]) -> None:
        self._tokens = tokens
        # (A text given twice: the later rank, as Automaton.add_word keeps.)
        self._rank: Dict[str, int] = {tokens[rank].content: rank for rank in ranks}
        self._pattern: Any = None

    def matches(self, text: str, begin: int, end: int) -> List[Tuple[int, int]]:
        """(index of the last character, rank) of each match in text[begin:end]."""
        pattern = self._pattern
        if pattern is None:
            pattern = self._pattern = self._compile()
        rank = self._rank
        if not isinstance(pattern, re.Pattern):
            return _all_matches_longest(pattern, self._tokens, text, begin, end)
        return [(m.end() - 1, rank[m.group()]) for m in pattern.finditer(text, begin, end)]

    def _compile(self) -> Any:
        trie: Dict[str, Any] = {}
        for content in self._rank:
            node = trie
            for ch in content:
                node = node.setdefault(ch, {})
            node[""] = {}
        try:
            return re.compile(_trie_expression(trie))
        except (RecursionError, re.error, OverflowError):
            automaton = ahocorasick.Automaton()
            for content, rank in self._rank.items():
                automaton.add_word(content, rank)
            automaton.make_automaton()
            return automaton


def _trie_expression(node: Dict[str, Any]) -> str:
    """The regular expression of the texts below a trie node ("" marks a
    text's end): each branch a literal run, optional where a text ends."""
    branches = []
    for ch in sorted(k for k in node if k):
        child, run = node[ch], [ch]
        while len(child) == 1 and "" not in child:
            ((ch, child),) = child.items()
            run.append(ch)
        branches.append(re.escape("".join(run)) + _trie_expression(child))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return "(?:" + body + ")?" if "" in node else body


def _all_matches_longest(
    automaton: _Automaton, tokens: Sequence[AddedToken], text: str, begin: int, end: int
) -> List[Tuple[int, int]]:
    """_Longest.matches from every match the automaton finds: the longest
    at each start, taken left to right without overlap."""
    longest: Dict[int, Tuple[int, int]] = {}  # start -> (last, rank)
    for last, rank in automaton.iter(text, begin, end):
        start = last - len(tokens[rank].content) + 1
        found = longest.get(start)
        if found is None or last > found[0]:
            longest[start] = (last, rank)
    out = []
    cursor = begin
    for start in sorted(longest):
        if start >= cursor:
            last, rank = longest[start]
            out.append((last, rank))
            cursor = last + 1
    return out


def _split(
    text: str, fragments: List[Fragment], token: AddedToken, starts: List[int]
) -> List[Fragment]:
    """Splits every text fragment at the non-overlapping occurrences of one
    token, left to right (llama.cpp: find() from the end of the last match)."""
    size = len(token.content)
    out: List[Fragment] = []
    for fragment in fragments:
        if isinstance(fragment, TokenAt):
            out.append(fragment)
            continue
        begin, end = fragment
        cursor = begin
        i = bisect_left(starts, begin)
        while i < len(starts):
            at = starts[i]
            i += 1
            if at + size > end:
                break
            if at < cursor:
                continue
            left_end = at
            if token.lstrip:
                while left_end > cursor and text[left_end - 1] in _STRIP_CHARS:
                    left_end -= 1
            if left_end > cursor:
                out.append((cursor, left_end))
            out.append(TokenAt(token, at))
            cursor = at + size
            if token.rstrip:
                while cursor < end and text[cursor] in _STRIP_CHARS:
                    cursor += 1
        if cursor < end:
            out.append((cursor, end))
    return out


# Rust regex \s (Unicode White_Space), which tokenizers' lstrip/rstrip use;
# str.isspace also counts U+001C..U+001F.
_WHITE_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _is_word(ch: str) -> bool:
    # tokenizers' single_word test is the regex \w: letters, digits, marks,
    # connector punctuation (Python's \w: alphanumerics and "_").
    return ch.isalnum() or ch == "_" or unicodedata.category(ch) in ("Mn", "Mc", "Me", "Pc")


class TokenizersMatcher(AddedTokenMatcher):
    """Added tokens as tokenizers' AddedVocabulary.extract_and_normalize
    finds them (tokenizers/src/tokenizer/added_vocabulary.rs, find_matches):
    the tokens with ``normalized: false`` first, leftmost-longest over the
    raw text, then those with ``normalized: true`` over each text piece left
    (no normalizer runs in these pipelines); a ``single_word`` match next to
    a word character on either side of its piece is dropped (and no shorter
    match replaces it); lstrip/rstrip take the whitespace beside the token."""

    def __init__(self, tokens: Sequence[AddedToken], single_word: Iterable[str], normalized: Iterable[str]) -> None:
        super().__init__(tokens)
        self._single_word = frozenset(single_word)
        self._normalized = frozenset(normalized)
        self._passes: Dict[bool, List[_Longest]] = {}

    def _passes_of(self, include_special: bool) -> List["_Longest"]:
        found = self._passes.get(include_special)
        if found is None:
            found = []
            for normalized in (False, True):
                ranks = [
                    rank for rank, token in enumerate(self.tokens)
                    if (token.content in self._normalized) == normalized and (include_special or not token.special)
                ]
                if ranks:
                    found.append(_Longest(self.tokens, ranks))
            self._passes[include_special] = found
        return found

    def partition_hf(
        self, text: str, include_special: bool, allowed: Optional[FrozenSet[str]] = None
    ) -> List[Fragment]:
        pieces: List[Fragment] = [(0, len(text))] if text else []
        for longest in self._passes_of(include_special):
            out: List[Fragment] = []
            for piece in pieces:
                if isinstance(piece, TokenAt):
                    out.append(piece)
                else:
                    out.extend(self._find(text, piece[0], piece[1], longest))
            pieces = out
        _check_allowed(pieces, allowed)
        return pieces

    def _find(self, text: str, begin: int, end: int, longest: "_Longest") -> List[Fragment]:
        """find_matches over text[begin:end], in offsets of `text`."""
        out: List[Fragment] = []
        cursor = begin
        for last, rank in longest.matches(text, begin, end):
            token = self.tokens[rank]
            start, stop = last - len(token.content) + 1, last + 1
            if token.content in self._single_word and (
                (start > begin and _is_word(text[start - 1])) or (stop < end and _is_word(text[stop]))
            ):
                continue
            left = start
            if token.lstrip:
                while left > cursor and text[left - 1] in _WHITE_SPACE:
                    left -= 1
            if left > cursor:
                out.append((cursor, left))
            out.append(TokenAt(token, start))
            cursor = stop
            if token.rstrip:
                while cursor < end and text[cursor] in _WHITE_SPACE:
                    cursor += 1
        if cursor < end:
            out.append((cursor, end))
        return out
