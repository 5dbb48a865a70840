"""Type stubs for the compiled merger (spmbpe/_core.pyx)."""

from typing import Iterable, List, Optional, Sequence, Tuple, Union

MAX_SEGMENT_BYTES: int

_Part = Union[int, Tuple[str, bool]]

class SpmCore:
    def __init__(
        self,
        pieces: List[bytes],
        scores: Sequence[float],
        flags: bytes,
        unk_id: int,
        byte_ids: Optional[Sequence[int]],
        collapse_unknown: bool,
        decoded: List[bytes],
    ) -> None: ...
    @property
    def vocab_size(self) -> int: ...
    def find(self, piece: bytes) -> int: ...
    def encode(self, text: str, prefix: bool) -> List[int]: ...
    def encode_parts(self, parts: List[_Part]) -> List[int]: ...
    def encode_parts_batch(self, batch: List[List[_Part]]) -> List[List[int]]: ...
    def decode_bytes(self, ids: Iterable[int], skip: bytes, strip_prefix: bool) -> bytes: ...
