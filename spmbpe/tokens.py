"""Token kinds and added tokens: the vocabulary-level vocabulary of spmbpe."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["TokenType", "AddedToken", "NEVER_MERGE"]

#: SentencePiece's "never merge" score. Trainers write it on pieces the merger
#: must not build (Mistral's whitespace runs ``▁``, ``▁▁``, ...); as a merge
#: rank it loses to every real merge.
NEVER_MERGE = -1e9


class TokenType(enum.IntEnum):
    """Kind of a piece, with the numbers GGUF's ``tokenizer.ggml.token_type``
    and sentencepiece's ``ModelProto.SentencePiece.Type`` both use."""

    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6


@dataclass(frozen=True)
class AddedToken:
    """A token recognised verbatim in the text before merging.

    ``special=True`` tokens (chat markers, BOS/EOS) are matched only when the
    ``special=`` policy of :meth:`SpmTokenizer.encode` allows them;
    ``special=False`` tokens (user-defined pieces) are always split out.
    ``lstrip``/``rstrip`` drop the whitespace before/after a match, as
    llama.cpp's LSTRIP/RSTRIP token attributes do.
    """

    content: str
    id: int
    special: bool = True
    lstrip: bool = False
    rstrip: bool = False
