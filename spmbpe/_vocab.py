"""Facts about a vocabulary that every loader and the tokenizer share.

Each is written once here: where pieces start in a piece table's arena, which
pieces are ``<0xNN>`` byte pieces, which token types are valid or special,
and what makes a special id (BOS, EOS, ...) valid.
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Callable, Iterable, List, Optional, Sequence, Union

from ._core import PieceTable
from .errors import VocabularyError
from .tokens import TokenType

__all__ = [
    "piece_offsets", "byte_piece_ids", "indices_of", "types_buffer", "checked_id", "SPECIAL_TYPES",
    "TOKEN_TYPE_VALUES",
]

#: The numbers of the token types (GGUF's and sentencepiece's).
TOKEN_TYPE_VALUES = frozenset(int(t) for t in TokenType)

# The token types, as bytes (bytes.translate deletes them to find others).
_VALID_TYPES = bytes(sorted(TOKEN_TYPE_VALUES))

#: 1 for the types ``decode(skip_special=True)`` leaves out (CONTROL, UNKNOWN).
SPECIAL_TYPES = bytes(1 if t in (TokenType.CONTROL, TokenType.UNKNOWN) else 0 for t in range(256))


def piece_offsets(lengths: Iterable[int], start: int = 0) -> "array[int]":
    """The arena offsets of consecutive pieces of these byte lengths: where
    each starts, then where the last ends (``len(lengths) + 1`` values)."""
    return array("q", accumulate(lengths, initial=start))


def byte_piece_ids(table: PieceTable) -> List[int]:
    """The ids of the ``<0xNN>`` pieces, in byte order (those present)."""
    found = (table.find(f"<0x{b:02X}>".encode("ascii")) for b in range(256))
    return [i for i in found if i >= 0]


def indices_of(types: bytes, value: int) -> List[int]:
    """The ids whose type is `value`, in id order."""
    out = []
    i = types.find(value)
    while i >= 0:
        out.append(i)
        i = types.find(value, i + 1)
    return out


def types_buffer(table: PieceTable, token_types: Union[bytes, Sequence[int], None]) -> bytes:
    """One byte per piece: its TokenType (checked)."""
    n = len(table)
    if token_types is None:
        # Without types, the 256 <0xNN> pieces are byte pieces (they decode
        # to their byte) and everything else is normal text.
        types = bytearray([TokenType.NORMAL]) * n
        for found in byte_piece_ids(table):
            types[found] = TokenType.BYTE
        return bytes(types)
    if len(token_types) != n:
        raise VocabularyError(f"token_types has {len(token_types)} entries but there are {n} pieces")
    if isinstance(token_types, bytes):
        raw = token_types
    else:
        try:
            raw = array("B", token_types).tobytes()
        except (ValueError, TypeError, OverflowError):
            raw = b""
    if len(raw) != n or raw.translate(None, _VALID_TYPES):
        for i, t in enumerate(token_types):
            if not (isinstance(t, int) and t in TOKEN_TYPE_VALUES):
                raise VocabularyError(f"piece {i} has an unknown token type {t!r}")
    return raw


def checked_id(
    name: str,
    value: Optional[int],
    n: int,
    fail: Callable[[str], Exception] = VocabularyError,
) -> Optional[int]:
    """A special id (BOS, EOS, UNK, PAD) as an int, None when absent; an id
    outside the vocabulary raises ``fail(message)``."""
    if value is None:
        return None
    if not 0 <= int(value) < n:
        raise fail(f"{name} {value} is outside the vocabulary of {n} pieces")
    return int(value)

