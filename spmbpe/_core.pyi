"""Type stubs for the compiled core (spmbpe/_core.pyx)."""

import mmap
from array import array
from typing import Any, Collection, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

MAX_SEGMENT_BYTES: int
# csrc/spm_types.h by name: token types (sentencepiece's numbers) and piece flags.
TOKEN_TYPES: Dict[str, int]
PIECE_FLAGS: Dict[str, int]

_Part = Union[
    int,
    Tuple[int, int, int],
    Tuple[str, bool],
    Tuple[str, bool, int],
    Tuple[str, bool, int, int, int],
    Tuple[str, bool, int, int, int, List[int]],
]
# The element type of a plan passed in: any mix of those kinds (the core
# only reads the list, so a list of a narrower union is fine).
_PartT = TypeVar("_PartT", bound=_Part)

class PieceTable:
    arena: bytes
    size: int
    first_empty: int
    def __init__(self, arena: bytes, offsets: "array[int]", *, utf8_checked: bool = ...) -> None: ...
    @staticmethod
    def from_pieces(pieces: List[bytes]) -> "PieceTable": ...
    def __len__(self) -> int: ...
    def find(self, piece: bytes) -> int: ...
    def piece_bytes(self, i: int) -> bytes: ...
    def piece(self, i: int) -> str: ...
    def pieces(self) -> List[str]: ...
    def lengths(self) -> "array[int]": ...
    @property
    def first_duplicate(self) -> int: ...
    def first_invalid_utf8(self) -> int: ...

def split_length_prefixed(
    buf: Union[bytes, memoryview, mmap.mmap], pos: int, count: int, big_endian: bool
) -> Optional[Tuple[bytes, "array[int]", int]]: ...

def first_invalid_utf8_piece(arena: Union[bytes, bytearray], offsets: "array[int]") -> int: ...

def scan_model_pieces(
    buf: Union[bytes, memoryview], pos: int, base: int
) -> Tuple[bytes, "array[int]", "array[float]", bytes, int, int]: ...
def byte_piece(piece: bytes) -> int: ...
def batch_slices(texts: List[str], parts: int, min_share: int, max_items: int) -> Tuple[int, int, List[int]]: ...

class SpmCore:
    table: PieceTable
    byte_fallback: bool
    chunked: bool
    cut_chars: bool
    escape_spaces: bool
    def __init__(
        self,
        table: PieceTable,
        scores: Sequence[float],
        flags: bytes,
        types: bytes,
        unk_id: int,
        collapse_unknown: bool,
        byte_fallback: bool = ...,
    ) -> None: ...
    @property
    def vocab_size(self) -> int: ...
    def set_ranked_merges(
        self,
        left: "array[int]",
        right: "array[int]",
        merged: "array[int]",
        fuse_unknown: bool,
        ignore_merges: bool,
    ) -> None: ...
    def ranked_merges(self) -> Tuple["array[int]", "array[int]", "array[int]"]: ...
    def encode(self, text: str, prefix: bool) -> List[int]: ...
    def encode_parts(self, parts: List[_PartT], alpha: float = ..., seed: int = ...) -> List[int]: ...
    def encode_parts_offsets(self, parts: List[_PartT]) -> Tuple[List[int], List[int], List[int]]: ...
    def encode_parts_batch(
        self,
        batch: List[Union[str, List[_Part]]],
        flat: bool = ...,
        alpha: float = ...,
        seeds: Optional["array[int]"] = ...,
        prefix: bool = ...,
    ) -> Any: ...
    def split_points(self, text: str, prefix: bool, parts: int) -> List[int]: ...
    def set_escape_spaces(self, escape: bool) -> None: ...

class TokenizerBase:
    """The compiled base of spmbpe.SpmTokenizer."""

    def _bind(
        self, core: SpmCore, planner: Any, direct: Optional[Tuple[Sequence[Any], str]],
        bos_added: Optional[int], eos_added: Optional[int],
    ) -> None: ...
    def _all_one_segment(self, texts: List[Any], special: object) -> bool: ...
    def _plan_unit(self, text: str, include: bool, allowed: Optional[FrozenSet[str]]) -> List[Any]: ...
    def _add_boundary_tokens(self, ids: List[int]) -> None: ...
    def encode(
        self,
        text: str,
        *,
        special: Union[str, Collection[str]] = ...,
        add_special_tokens: bool = ...,
        enable_sampling: bool = ...,
        alpha: float = ...,
        seed: Optional[int] = ...,
    ) -> List[int]: ...
    def encode_ordinary(self, text: str) -> List[int]: ...

class BatchJob:
    def __init__(self, core: SpmCore) -> None: ...
    def start(
        self,
        batch: List[Union[str, List[_Part]]],
        units: int,
        alpha: float = ...,
        seeds: Optional["array[int]"] = ...,
        prefix: bool = ...,
    ) -> None: ...
    def work(self) -> None: ...
    def lead(self, flat: bool = ...) -> Any: ...
    def close(self) -> None: ...

DECODE_CONSTANTS: Dict[str, int]

class IdDecoder:
    def __init__(self, core: SpmCore, rules: bytes, skip: Optional[bytes], surface: bytes) -> None: ...
    def reset(self) -> None: ...
    def feed(self, ids: Iterable[int]) -> bytes: ...
    def finish(self) -> bytes: ...

def decode_ids(core: SpmCore, ids: Iterable[int], rules: bytes, skip: Optional[bytes], surface: bytes) -> bytes: ...
