"""Decoding ids one at a time, as a model generates them."""

from __future__ import annotations

import codecs
from typing import Any, List, Optional, Protocol

__all__ = ["StreamingDecoder"]


class _Transform(Protocol):
    def normalize(self, text: str) -> str: ...


class _Decoder(Protocol):
    """What a StreamingDecoder uses of a tokenizer's decoder (_decoding.Decoder)."""

    @property
    def transform(self) -> Optional[_Transform]: ...
    def id_decoder(self, skip_special: bool, special_as_text: bool) -> Any: ...


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
    comes out at ``flush()``; so is a model folder's with
    ``clean_up_tokenization_spaces``. Under ``reference="transformers4"``
    with ``legacy``, a special token puts a space in front of the pieces
    before it: without ``skip_special``, their text waits for the next
    special or added token or ``flush()``.

    >>> d = tok.streaming_decoder()                             # doctest: +SKIP
    >>> [d.add_token(i) for i in [15043, 3186]], d.flush()      # doctest: +SKIP
    (['Hello', ' world'], '')
    """

    __slots__ = ("_decoder", "_errors", "_utf8", "_held", "_denormalizer")

    def __init__(
        self,
        decoder: _Decoder,
        *,
        skip_special: bool = False,
        errors: str = "replace",
        special_as_text: bool = False,
    ) -> None:
        codecs.lookup_error(errors)  # LookupError now, not at the first id
        # The compiled decoder keeps the reference's state between ids: the
        # leading space still to strip, a byte run not yet settled, an id
        # that is left out if it comes last.
        self._decoder = decoder.id_decoder(skip_special, special_as_text)
        self._errors = errors
        self._denormalizer = decoder.transform
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)
        self._held: List[str] = []

    def add_token(self, id: int) -> str:
        """The text `id` completes (``""`` while a character is incomplete)."""
        text = self._utf8.decode(self._decoder.feed((id,)))
        if self._denormalizer is not None:
            self._held.append(text)
            return ""
        return text

    def flush(self) -> str:
        """The rest of the text, then a fresh start (the next id is a first piece)."""
        text = self._utf8.decode(self._decoder.finish(), final=True)
        if self._denormalizer is not None:
            text = self._denormalizer.normalize("".join(self._held) + text)
        self._utf8.reset()
        self._held = []
        return text
