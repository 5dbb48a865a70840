"""A small pure-Python reader of GGUF *metadata* (the key/value section).

Only the header and the key/value pairs are read, never the tensors, so the
vocabulary of a multi-gigabyte model file costs no more than a
vocabulary-only file.

File layout (GGUF versions 2 and 3, all integers little-endian, or all
big-endian in a big-endian file)::

    magic      b"GGUF"
    version    uint32
    n_tensors  uint64
    n_kv       uint64
    n_kv times:
        key    string  (uint64 byte length + UTF-8 bytes)
        type   uint32  (see _TYPE_NAMES)
        value  scalar, string, or array (uint32 element type, uint64 count,
               elements)

Numeric arrays come back as a compact ``array.array``.  Any malformation
raises :class:`~spmbpe.errors.ModelFormatError` with the byte offset where the
offending item starts."""

from __future__ import annotations

import mmap
import os
import struct
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, NoReturn, Optional, Tuple, Union

from ._core import split_length_prefixed
from .errors import ModelFormatError

__all__ = [
    "GGUFHeader", "RawStrings", "read_gguf_header", "read_gguf_metadata", "parse_gguf_header", "SUPPORTED_VERSIONS",
]

SUPPORTED_VERSIONS = (2, 3)

GGUF_MAGIC = b"GGUF"

# Value types, indexed by their numeric id.
_TYPE_NAMES = (
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
    "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
)
_STRING = 8
_ARRAY = 9
_BOOL = 7

# struct format character of every fixed-size type (sizes are standard
# because formats are always used with a '<' or '>' prefix).
_SCALAR_FORMATS = {
    0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f",
    7: "?", 10: "Q", 11: "q", 12: "d",
}


def _typecode(candidates: str, size: int) -> str:
    for code in candidates:
        if array(code).itemsize == size:
            return code
    raise ImportError(f"no array typecode among {candidates!r} has {size} bytes")


# array.array typecode of every numeric type (BOOL arrays become list[bool]).
_ARRAY_TYPECODES = {
    0: "B", 1: "b", 2: _typecode("H", 2), 3: _typecode("h", 2),
    4: _typecode("IL", 4), 5: _typecode("il", 4), 6: _typecode("f", 4),
    10: _typecode("QL", 8), 11: _typecode("ql", 8), 12: _typecode("d", 8),
}

# Smallest possible encoding of one key/value pair: an empty key (8 bytes),
# the type (4 bytes) and a one-byte value.
_MIN_KV_SIZE = 8 + 4 + 1

# Files up to this size are read in one go; larger ones (model files with
# tensor data) are memory-mapped so that only the metadata pages are touched.
_READ_ALL_LIMIT = 64 * 1024 * 1024

@dataclass(eq=False)
class GGUFHeader:
    """The header and metadata of a GGUF file: `metadata`, key -> value in
    file order; `types`, key -> the GGUF type name of the value (``"UINT32"``,
    ``"ARRAY[STRING]"``, ``"ARRAY[ARRAY[INT32]]"``); `offsets`, key -> where its
    pair starts (for error messages); `metadata_end`, where the tensor
    descriptions begin.  `path` is None for an in-memory buffer."""

    path: Optional[str]
    version: int
    byte_order: str  # "little" or "big"
    tensor_count: int
    metadata: Dict[str, object]
    types: Dict[str, str]
    metadata_end: int
    offsets: Dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"GGUFHeader(path={self.path!r}, version={self.version}, "
            f"byte_order={self.byte_order!r}, tensor_count={self.tensor_count}, "
            f"{len(self.metadata)} keys)"
        )


@dataclass(eq=False, repr=False)
class RawStrings:
    """A string array kept as bytes: element i is
    ``arena[offsets[i]:offsets[i+1]]`` (not yet checked to be UTF-8);
    ``data_offset``, where the first element's length field is in the file."""

    arena: bytes
    offsets: "array[int]"
    data_offset: int

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def file_offset(self, i: int) -> int:
        """File offset of element i's bytes."""
        return self.data_offset + 8 * (i + 1) + self.offsets[i]


def read_gguf_metadata(
    path: Union[str, "os.PathLike[str]"], raw_string_keys: Iterable[str] = ()
) -> Dict[str, object]:
    """The key/value metadata of the GGUF file at ``path``; string arrays
    under `raw_string_keys` as :class:`RawStrings` (no object per element)."""
    return read_gguf_header(path, raw_string_keys).metadata


def read_gguf_header(
    path: Union[str, "os.PathLike[str]"], raw_string_keys: Iterable[str] = ()
) -> GGUFHeader:
    """The header and the metadata of the GGUF file at ``path``;
    ModelFormatError if they are not well-formed GGUF v2/v3."""
    path_str = os.fspath(path)
    with open(path_str, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= _READ_ALL_LIMIT:
            return parse_gguf_header(f.read(), path_str, raw_string_keys)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return parse_gguf_header(mm, path_str, raw_string_keys)
        finally:
            mm.close()


def parse_gguf_header(
    data: Union[bytes, bytearray, memoryview, mmap.mmap],
    path: object = None,
    raw_string_keys: Iterable[str] = (),
) -> GGUFHeader:
    """read_gguf_header of an in-memory buffer (``path`` names it in
    errors).  Every value returned is a copy: nothing refers to ``data``."""
    if not isinstance(data, (bytes, mmap.mmap)):
        data = bytes(data)
    parser = _Parser(data, None if path is None else str(path), frozenset(raw_string_keys))
    return parser.parse()


class _Parser:
    def __init__(
        self, buf: Union[bytes, mmap.mmap], path: Optional[str], raw_keys: FrozenSet[str] = frozenset()
    ) -> None:
        self.buf = buf
        self.size = len(buf)
        self.path = path
        self.pos = 0
        self.raw_keys = raw_keys
        self.set_byte_order("<")

    def set_byte_order(self, prefix: str) -> None:
        self.prefix = prefix
        self.u32 = struct.Struct(prefix + "I")
        self.u64 = struct.Struct(prefix + "Q")
        self.scalars = {t: struct.Struct(prefix + c) for t, c in _SCALAR_FORMATS.items()}

    # -- primitives ---------------------------------------------------------

    def fail(self, offset: Optional[int], message: str) -> NoReturn:
        raise ModelFormatError(self.path, offset, message)

    def need(self, nbytes: int, what: str) -> None:
        left = self.size - self.pos
        if nbytes > left:
            self.fail(
                self.pos,
                f"truncated while reading {what} "
                f"(needs {nbytes} bytes, {left} left in the file)",
            )

    def unpack(self, st: struct.Struct, what: str) -> Any:
        """The one value `st` reads at the position (an int, float or bool:
        struct's results are untyped)."""
        self.need(st.size, what)
        (value,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return value

    def raw_string(self, what: str) -> bytes:
        start = self.pos
        n = self.unpack(self.u64, f"the length of {what}")
        left = self.size - self.pos
        if n > left:
            self.fail(
                start,
                f"truncated or corrupt file while reading {what}: its length "
                f"is {n} bytes but only {left} bytes are left in the file",
            )
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        return raw

    def string(self, what: str) -> str:
        start = self.pos
        raw = self.raw_string(what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail(
                start,
                f"{what} is not valid UTF-8 ({e.reason} at byte {e.start} of "
                f"the string {_short_repr(raw)})",
            )

    # -- structure ----------------------------------------------------------

    def parse(self) -> GGUFHeader:
        magic = self.buf[0:4]
        if magic != GGUF_MAGIC[:len(magic)]:
            self.fail(0, f"not a GGUF file: it starts with {magic!r}, not {GGUF_MAGIC!r}")
        self.need(4, "the magic number")
        self.pos = 4
        version = self.unpack(self.u32, "the version")
        byte_order = "little"
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        if version > 0xFFFF and swapped <= 0xFFFF:
            # A big-endian file: every number is byte-swapped.
            version = swapped
            self.set_byte_order(">")
            byte_order = "big"
        if version == 1:
            self.fail(
                4,
                "GGUF version 1 is not supported (it used 32-bit counts and "
                "lengths); convert the model again with a current llama.cpp",
            )
        if version not in SUPPORTED_VERSIONS:
            self.fail(
                4,
                f"unsupported GGUF version {version} (supported: "
                f"{', '.join(map(str, SUPPORTED_VERSIONS))})",
            )
        tensor_count = self.unpack(self.u64, "the tensor count")
        kv_offset = self.pos
        kv_count = self.unpack(self.u64, "the key/value count")
        left = self.size - self.pos
        if kv_count > left // _MIN_KV_SIZE:
            self.fail(
                kv_offset,
                f"truncated or corrupt file while reading the key/value "
                f"pairs: the header declares {kv_count} of them, which need at "
                f"least {_MIN_KV_SIZE} bytes each, but only {left} bytes are "
                f"left in the file",
            )

        metadata: Dict[str, object] = {}
        types: Dict[str, str] = {}
        key_offsets: Dict[str, int] = {}
        for index in range(kv_count):
            key_offset = self.pos
            raw_key = self.raw_string(f"the key of key/value pair #{index}")
            try:
                key = raw_key.decode("utf-8")
            except UnicodeDecodeError as e:
                self.fail(
                    key_offset,
                    f"the key of key/value pair #{index} is not valid UTF-8 "
                    f"({e.reason} at byte {e.start} of {_short_repr(raw_key)})",
                )
            if key in key_offsets:
                self.fail(
                    key_offset,
                    f"duplicate key {key!r} (first defined at byte offset "
                    f"{key_offsets[key]})",
                )
            key_offsets[key] = key_offset
            what = f"the value of key {key!r}"
            type_offset = self.pos
            vtype = self.unpack(self.u32, f"the value type of key {key!r}")
            if vtype == _ARRAY:
                metadata[key], types[key] = self.array(what, nested=False, raw=key in self.raw_keys)
            else:
                self.check_type(vtype, type_offset, f"key {key!r}")
                metadata[key] = self.scalar(vtype, what)
                types[key] = _TYPE_NAMES[vtype]
        return GGUFHeader(
            self.path, version, byte_order, tensor_count, metadata, types, self.pos, key_offsets
        )

    def check_type(self, vtype: int, offset: int, owner: str) -> None:
        if vtype >= len(_TYPE_NAMES):
            self.fail(
                offset,
                f"{owner} has unknown value type {vtype} "
                f"(known types are 0..{len(_TYPE_NAMES) - 1})",
            )

    def scalar(self, vtype: int, what: str) -> object:
        if vtype == _STRING:
            return self.string(what)
        return self.unpack(self.scalars[vtype], what)

    def array(self, what: str, nested: bool, raw: bool = False) -> Tuple[object, str]:
        """Read an array value (element type, count, elements); return the
        value and its type name."""
        start = self.pos
        etype = self.unpack(self.u32, f"the element type of {what}")
        self.check_type(etype, start, f"the array element type of {what}")
        count = self.unpack(self.u64, f"the element count of {what}")
        left = self.size - self.pos
        if etype == _STRING:
            min_size = 8
        elif etype == _ARRAY:
            if nested:
                self.fail(
                    start,
                    f"{what} nests arrays more than one level deep, which "
                    f"is not supported",
                )
            min_size = 4 + 8
        else:
            min_size = self.scalars[etype].size
        if count > left // min_size:
            self.fail(
                start,
                f"truncated or corrupt file while reading {what}: it declares "
                f"{count} elements of type {_TYPE_NAMES[etype]} (at least "
                f"{min_size} bytes each) but only {left} bytes are left in the "
                f"file",
            )

        if etype == _STRING and raw:
            value: object = self.raw_string_array(count, what)
        elif etype == _STRING:
            value = self.string_array(count, what)
        elif etype == _ARRAY:
            items = []
            inner_types = set()
            for i in range(count):
                item, inner_type = self.array(f"element {i} of {what}", nested=True)
                items.append(item)
                inner_types.add(inner_type)
            # ARRAY[ARRAY[T]] when every inner array has the same type T.
            inner = inner_types.pop() if len(inner_types) == 1 else "ARRAY"
            return items, f"ARRAY[{inner}]"
        else:
            nbytes = count * min_size
            chunk = self.buf[self.pos:self.pos + nbytes]
            self.pos += nbytes
            if etype == _BOOL:
                value = list(map(bool, chunk))
            else:
                value = array(_ARRAY_TYPECODES[etype])
                value.frombytes(chunk)
                if self.prefix == ">":
                    value.byteswap()
        return value, f"ARRAY[{_TYPE_NAMES[etype]}]"

    def raw_string_array(self, count: int, what: str) -> RawStrings:
        start = self.pos
        found = split_length_prefixed(self.buf, start, count, self.prefix == ">")
        if found is None:
            # A length runs past the end: the careful loop says where.
            for i in range(count):
                self.raw_string(f"element {i} of {what}")
            self.fail(start, f"{what} is corrupt")  # not reached
        arena, offsets, end = found
        self.pos = end
        return RawStrings(arena, offsets, start)

    def string_array(self, count: int, what: str) -> List[str]:
        # Fast path: no bounds checks in the loop.  Slicing never reads past
        # the end, so a bad length shows up as pos > size after the loop, a
        # struct.error on the next length, or a decode error; any of those
        # sends us to the careful loop, which finds and reports the problem.
        buf, pos, size = self.buf, self.pos, self.size
        unpack = self.u64.unpack_from
        out: List[str] = []
        append = out.append
        try:
            for _ in range(count):
                (n,) = unpack(buf, pos)
                pos += 8
                end = pos + n
                append(buf[pos:end].decode("utf-8"))
                pos = end
        except (struct.error, OverflowError, UnicodeDecodeError):
            pos = size + 1
        if pos > size:
            return [self.string(f"element {i} of {what}") for i in range(count)]
        self.pos = pos
        return out


def _short_repr(raw: bytes, limit: int = 60) -> str:
    text = repr(bytes(raw[:limit]))
    return text + "..." if len(raw) > limit else text
