"""Decoding ids one at a time, as a model generates them."""

from __future__ import annotations

import codecs
from typing import Iterable, List, Optional, Protocol

__all__ = ["StreamingDecoder"]


class _Core(Protocol):
    def decode_bytes(self, ids: Iterable[int], skip: Optional[bytes], strip_prefix: bool) -> bytes: ...


class _Normalizer(Protocol):
    def normalize(self, text: str) -> str: ...


class _Tokenizer(Protocol):
    """What a StreamingDecoder reads of an SpmTokenizer (its decoding state)."""

    @property
    def _core(self) -> _Core: ...
    @property
    def _skip_special(self) -> bytes: ...
    @property
    def _skip_none(self) -> Optional[bytes]: ...
    @property
    def _strip_prefix_on_decode(self) -> bool: ...
    @property
    def _denormalizer(self) -> Optional[_Normalizer]: ...


class StreamingDecoder:
    """Text of a sequence of ids, given one id at a time.

    ``add_token(id)`` returns the text that id completes: only whole UTF-8
    characters (a character spelled by several ``<0xNN>`` byte pieces comes
    out with its last byte), with the dummy prefix removed from the first
    piece exactly as ``decode`` removes it.  ``flush()`` returns the rest (an
    incomplete character becomes U+FFFD under ``errors="replace"``) and starts
    a new sequence.  For any ids,
    ``"".join(d.add_token(i) for i in ids) + d.flush() == tok.decode(ids)``.

    A sentencepiece model with a ``denormalizer_spec`` (none of the Llama or
    Mistral ones) is denormalized as a whole, as ``decode`` does: its text
    comes out at ``flush()``.

    >>> d = tok.streaming_decoder()                             # doctest: +SKIP
    >>> [d.add_token(i) for i in [15043, 3186]], d.flush()      # doctest: +SKIP
    (['Hello', ' world'], '')
    """

    __slots__ = ("_core", "_skip", "_strip", "_errors", "_utf8", "_started", "_held", "_denormalizer")

    def __init__(self, tokenizer: _Tokenizer, *, skip_special: bool = False, errors: str = "replace") -> None:
        codecs.lookup_error(errors)  # LookupError now, not at the first id
        self._core = tokenizer._core
        self._skip = tokenizer._skip_special if skip_special else tokenizer._skip_none
        self._strip = tokenizer._strip_prefix_on_decode
        self._errors = errors
        self._denormalizer = tokenizer._denormalizer
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)
        self._started = False
        self._held: List[str] = []

    def add_token(self, id: int) -> str:
        """The text `id` completes (``""`` while a character is incomplete)."""
        if self._started:
            data = self._core.decode_bytes((id,), self._skip, False)
        else:
            data = self._core.decode_bytes((id,), self._skip, self._strip)
            # decode strips the prefix from the first piece it renders: a
            # skipped id (skip_special) is not rendered.
            self._started = self._skip is None or not self._skip[id]
        text = self._utf8.decode(data)
        if self._denormalizer is not None:
            self._held.append(text)
            return ""
        return text

    def flush(self) -> str:
        """The rest of the text, then a fresh start (the next id is a first piece)."""
        text = self._utf8.decode(b"", final=True)
        if self._denormalizer is not None:
            text = self._denormalizer.normalize("".join(self._held) + text)
        self._utf8.reset()
        self._started = False
        self._held = []
        return text
