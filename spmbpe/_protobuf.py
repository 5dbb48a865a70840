"""A reader of the protobuf wire format (proto2), driven by tables of fields.

A message is a run of fields, each a key, the varint ``number << 3 | wire``,
then a value: wire type 0 a varint (at most 10 bytes), 1 eight bytes, 2 a
varint length and that many bytes, 5 four bytes; groups (3, 4) and the types
6 and 7 are rejected.  As in protobuf, fields come in any order and any number
of times (the last scalar wins, repeated fields accumulate, embedded messages
merge); ``int32`` keeps the low 32 bits, sign-extended; ``bool`` is "varint !=
0"; a closed enum does not store a value outside it; unknown fields are
skipped.  Stricter than protobuf: a known field of the wrong wire type, and
invalid UTF-8 in a ``string``, raise.  Every error is a :class:`ModelFormatError`
naming the file, a byte offset (the field's key, or the bad byte) and the
field.  Every length is checked against the end of its enclosing message
before a slice is taken, so a corrupt length never causes an allocation."""

from __future__ import annotations

import struct
from typing import Any, Callable, Dict, FrozenSet, NamedTuple, NoReturn, Optional, Tuple, Type, TypeVar

from .errors import ModelFormatError

VARINT, I64, LEN, I32 = 0, 1, 2, 5  # wire types (3 and 4 are groups)
_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}
F32 = struct.Struct("<f")

# Field kinds: string is strict UTF-8, text lenient (undecodable bytes
# replaced), message an embedded Message (whose class is the field's
# default); a raw field's bytes are left to the caller (or skipped), a span
# is where they lie, float bits a float's 4 bytes as read (a NaN's too).
INT32, UINT64, BOOL, ENUM, FLOAT, FLOAT_BITS = "int32", "uint64", "bool", "enum", "float", "float bits"
STRING, TEXT, BYTES, REPEATED_TEXT = "string", "text", "bytes", "repeated text"
MESSAGE, RAW, SPAN = "message", "raw", "span"


def to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def _text(data: bytes, start: int, end: int) -> str:
    return data[start:end].decode("utf-8", "replace")


# kind -> (wire type, conversion of (data, value, end)), where a value is a
# varint's number or where the field's bytes start (and ``end`` where they end).
KINDS: Dict[str, Tuple[int, Optional[Callable[[bytes, int, int], Any]]]] = {
    INT32: (VARINT, lambda data, v, end: to_int32(v)),
    ENUM: (VARINT, lambda data, v, end: to_int32(v)),
    UINT64: (VARINT, lambda data, v, end: v),
    BOOL: (VARINT, lambda data, v, end: v != 0),
    FLOAT: (I32, lambda data, v, end: F32.unpack_from(data, v)[0]),
    FLOAT_BITS: (I32, lambda data, v, end: data[v:end]),
    STRING: (LEN, lambda data, v, end: data[v:end].decode("utf-8")),
    TEXT: (LEN, _text),
    REPEATED_TEXT: (LEN, _text),
    BYTES: (LEN, lambda data, v, end: data[v:end]),
    SPAN: (LEN, lambda data, v, end: (v, end)),
    MESSAGE: (LEN, None),
    RAW: (LEN, None),
}


class Field(NamedTuple):
    name: str
    kind: str
    default: Any
    values: FrozenSet[int] = frozenset()  # an enum's valid values
    number: int = 0


def field(number: int, kind: str, default: Any, values: FrozenSet[int] = frozenset()) -> Any:
    """A field of a :class:`Message`, declared in its class body."""
    if kind == FLOAT:  # a float field holds a float32, its default too (as in protobuf)
        default = F32.unpack(F32.pack(default))[0]
    return Field("", kind, default, values, number)


class Message:
    """A decoded message: a read-only attribute per field (the default where the
    data has none) and ``present``, the names of the fields the data sets.  A
    subclass declares ``name: type = field(number, kind, default)`` in its body,
    which make its table ``FIELDS`` (number -> Field)."""

    FIELDS: Dict[int, Field] = {}
    present: FrozenSet[str]

    def __init_subclass__(cls) -> None:
        declared = {name: f for name, f in vars(cls).items() if isinstance(f, Field)}
        cls.FIELDS = {f.number: f._replace(name=name) for name, f in declared.items()}
        for name in declared:
            delattr(cls, name)

    def __init__(self, **values: Any) -> None:
        for f in self.FIELDS.values():
            object.__setattr__(self, f.name, values.pop(f.name, f.default))
        object.__setattr__(self, "present", frozenset(values.pop("present", ())))
        if values:
            raise TypeError(f"unknown fields: {sorted(values)}")

    def has(self, name: str) -> bool:
        """Whether the data sets field ``name`` (proto2 ``HasField``)."""
        return name in self.present

    def as_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self.FIELDS.values()}

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        return self.as_dict() == other.as_dict() if type(other) is type(self) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> Tuple[Any, ...]:
        return (make_message, (type(self), self.as_dict(), self.present))

    def __repr__(self) -> str:
        items = (f"{f.name}={getattr(self, f.name)!r}" for f in self.FIELDS.values() if f.name in self.present)
        return f"{type(self).__name__}({', '.join(items)})"


_M = TypeVar("_M", bound=Message)


def make_message(cls: Type[_M], values: Dict[str, Any], present: Optional[FrozenSet[str]] = None) -> _M:
    """``cls`` of the field values read_message gathered (present: those)."""
    return cls(present=frozenset(values) if present is None else present, **values)


Label = Callable[[Field, int, bool], str]  # (field, number, wrong wire type?) -> its name in errors


def fail(path: Optional[str], offset: Optional[int], message: str) -> NoReturn:
    raise ModelFormatError(path, offset, message)


def _past_end(path: Optional[str], start: int, limit: int, n: int, what: str) -> NoReturn:
    if limit >= n:
        fail(path, start, f"truncated file: {what} runs past the end of the file ({n} bytes)")
    fail(path, start, f"{what} runs past the end of its enclosing message (at byte {limit})")


def read_varint(data: bytes, pos: int, limit: int, path: Optional[str], at: int = -1,
                what: str = "a varint") -> Tuple[int, int]:
    """(value reduced to 64 bits, next position) of the varint at ``pos``, which
    must end before ``limit``; one cut short is reported at ``at`` if given."""
    start, result, shift = pos, 0, 0
    while True:
        if pos >= limit:
            _past_end(path, start if at < 0 else at, limit, len(data), what)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            fail(path, start, "invalid varint: more than 10 bytes")


def read_key(data: bytes, pos: int, limit: int, path: Optional[str]) -> Tuple[int, int, int]:
    """(field number, wire type, next position) of the key at ``pos``."""
    key, nxt = (data[pos], pos + 1) if data[pos] < 0x80 else read_varint(data, pos, limit, path)
    if key > 0xFFFFFFFF:
        fail(path, pos, f"invalid field key {key:#x}: more than 32 bits")
    number, wire = key >> 3, key & 7
    if number == 0:
        fail(path, pos, "invalid field number 0")
    if wire in (3, 4):
        fail(path, pos, f"field {number} uses a group (wire type {wire}), which is not supported")
    if wire > I32:
        fail(path, pos, f"field {number} has invalid wire type {wire}")
    return number, wire, nxt


def read_field(data: bytes, pos: int, end: int, path: Optional[str], fields: Dict[int, Field],
               label: Label) -> Tuple[Optional[Field], int, int]:
    """The field at ``pos`` of the message ending at ``end``: (its entry in
    ``fields`` or None; a varint's number or where its bytes start; the next position)."""
    key_pos = pos
    number, wire, pos = read_key(data, pos, end, path)
    f = fields.get(number)
    if f is not None and wire != KINDS[f.kind][0]:
        expected = KINDS[f.kind][0]
        fail(path, key_pos, f"{label(f, number, True)} has wire type {wire} "
             f"({_WIRE_NAMES.get(wire, '?')}), expected {expected} ({_WIRE_NAMES[expected]})")
    if wire == VARINT or wire == LEN:
        if pos < end and data[pos] < 0x80:  # (a one-byte varint, the usual case: inlined for speed)
            value, pos = data[pos], pos + 1
        else:
            value, pos = read_varint(data, pos, end, path, key_pos, _what(f, number, wire, label))
        if wire == VARINT:
            return f, value, pos
    else:
        value = 8 if wire == I64 else 4
    if pos + value > end:
        what = _what(f, number, wire, label)
        _past_end(path, key_pos, end, len(data), f"{what} (length {value})" if wire == LEN else what)
    return f, pos, pos + value


def _what(f: Optional[Field], number: int, wire: int, label: Label) -> str:
    if f is not None:
        return label(f, number, False)
    return f"field {number}" + ("" if wire in (VARINT, LEN) else f" ({8 if wire == I64 else 4}-byte value)")


def message_label(message: str) -> Label:
    """Fields named ``Message.name`` in errors (with the number in a wire type error)."""
    return lambda f, number, wrong: f"{message}.{f.name} (field {number})" if wrong else f"{message}.{f.name}"


def read_message(data: bytes, pos: int, end: int, path: Optional[str], fields: Dict[int, Field],
                 values: Dict[str, Any], label: Label) -> None:
    """Decode the message ``data[pos:end]`` into ``values`` (name -> value), merging."""
    while pos < end:
        f, value, nxt = read_field(data, pos, end, path, fields, label)
        if f is not None:
            store(data, f, value, nxt, values, path, label)
        pos = nxt


def store(data: bytes, f: Field, value: int, end: int, values: Dict[str, Any], path: Optional[str],
          label: Label) -> None:
    """Convert field ``f``'s value (as read_field returns it) by its kind into ``values``."""
    convert = KINDS[f.kind][1]
    if f.kind == MESSAGE:
        cls = f.default
        read_message(data, value, end, path, cls.FIELDS, values.setdefault(f.name, {}), message_label(cls.__name__))
    elif convert is not None:
        try:
            v = convert(data, value, end)
        except UnicodeDecodeError as exc:
            fail(path, value + exc.start, f"{label(f, 0, False)} is not valid UTF-8")
        if f.kind == REPEATED_TEXT:
            values[f.name] = values.get(f.name, ()) + (v,)
        elif f.kind != ENUM or v in f.values:  # a closed enum stores no other value
            values[f.name] = v
