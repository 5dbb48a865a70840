"""Facts about a vocabulary that every loader and the tokenizer share.

Each is written once here: where pieces start in a piece table's arena, which
pieces are ``<0xNN>`` byte pieces, which token types are valid or special,
and what makes a special id (BOS, EOS, ...) valid.
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Callable, Iterable, List, Optional, Sequence, Union, cast, overload

from ._core import PieceTable
from .errors import InvalidTokenIdError, VocabularyError
from .tokens import TokenType

__all__ = [
    "piece_offsets",
    "byte_piece_ids",
    "indices_of",
    "types_buffer",
    "checked_id",
    "SPECIAL_TYPES",
    "TOKEN_TYPE_VALUES",
    "PiecesMixin",
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
    outside the vocabulary raises ``fail(message)`` (a loader passes one
    that names the file)."""
    if value is None:
        return None
    if not 0 <= int(value) < n:
        raise fail(f"{name} {value} is outside the vocabulary of {n} pieces")
    return int(value)


class PiecesMixin:
    """Mixed into SpmTokenizer: the vocabulary's lookups, over its piece
    table, token types and unknown id."""

    _table: PieceTable
    _types: bytes
    _unk_id: Optional[int]

    @property
    def vocab_size(self) -> int:
        """Number of ids (pieces) in the vocabulary."""
        return len(self._table)

    def __len__(self) -> int:
        return len(self._table)

    @overload
    def id_to_piece(self, id: int) -> str: ...
    @overload
    def id_to_piece(self, id: Iterable[int]) -> List[str]: ...

    def id_to_piece(self, id: Union[int, Iterable[int]]) -> Union[str, List[str]]:
        """The piece of an id, as spelled in the vocabulary (``▁`` kept); of
        a list of ids, the list of pieces (as sentencepiece takes both)."""
        if not hasattr(id, "__index__") and isinstance(id, Iterable):
            return [str(self._table.piece(self._valid_id(i))) for i in id]
        return str(self._table.piece(self._valid_id(cast(int, id))))

    @overload
    def piece_to_id(self, piece: str) -> int: ...  # type: ignore[overload-overlap]
    @overload
    def piece_to_id(self, piece: Iterable[str]) -> List[int]: ...

    def piece_to_id(self, piece: Union[str, Iterable[str]]) -> Union[int, List[int]]:
        """The (lowest) id of a piece; the unknown id when absent, as
        sentencepiece's ``piece_to_id`` does (KeyError without one); of a
        list of pieces, the list of ids."""
        if not isinstance(piece, str):
            return [self._piece_id(p) for p in piece]
        return self._piece_id(piece)

    def _piece_id(self, piece: str) -> int:
        if not isinstance(piece, str):
            raise TypeError(f"pieces must be str, not {type(piece).__name__}")
        found = self._table.find(piece.encode("utf-8", "surrogatepass"))
        if found >= 0:
            return found
        if self._unk_id is None:
            raise KeyError(f"{piece!r} is not a piece of this vocabulary, which has no unknown piece")
        return self._unk_id

    def token_type(self, id: int) -> TokenType:
        """The kind of piece an id is."""
        return TokenType(self._types[self._valid_id(id)])

    def _valid_id(self, id: int) -> int:
        try:
            i = int(id.__index__())
        except AttributeError:
            raise TypeError(f"token ids must be integers, not {type(id).__name__}") from None
        if not 0 <= i < len(self._table):
            raise InvalidTokenIdError(id, len(self._table))
        return i
