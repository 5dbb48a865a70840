"""A reader of the protobuf wire format (proto2), driven by tables of fields.

A field is a key (the varint ``number << 3 | wire``) and a value: a varint
(wire type 0, at most 10 bytes), eight bytes (1), a varint length and that
many bytes (2), or four bytes (5); groups (3, 4), 6 and 7 are rejected.  As in
protobuf, fields come in any order and number (the last scalar wins, embedded
messages merge), ``int32`` keeps the low 32 bits, ``bool`` is "varint != 0", a
closed enum stores no value outside it, and fields not in a table are skipped.
Stricter than protobuf: a table's field with the wrong wire type, or a
``string`` that is not UTF-8, raises.  Every error is a :class:`ModelFormatError`
naming the file, a byte offset (the field's key, or the bad byte) and the field.
Lengths are checked against the end of the enclosing message before a slice is
taken, so a corrupt length allocates nothing."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Dict, FrozenSet, NamedTuple, NoReturn, Optional, Tuple, Type, TypeVar

from .errors import ModelFormatError

VARINT, I64, LEN, I32 = 0, 1, 2, 5  # wire types (3 and 4 are groups)
_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}
Kind = Tuple[int, Any]


# Field kinds, each (wire type, conversion of (data, value, end)), where a
# value is a varint's number or where the field's bytes start (and ``end``
# where they end).  A message kind's field is an embedded Message (whose class
# is the field's default); a raw field's bytes are left to the caller (or
# skipped), a span is where they lie, float bits a float's 4 bytes as read.
INT32 = ENUM = (VARINT, lambda data, v, end: (v & 0x7FFFFFFF) - (v & 0x80000000))  # low 32 bits, signed
BOOL = (VARINT, lambda data, v, end: v != 0)
STRING = (LEN, lambda data, v, end: data[v:end].decode("utf-8"))
BYTES = (LEN, lambda data, v, end: data[v:end])
SPAN = (LEN, lambda data, v, end: (v, end))
FLOAT_BITS = (I32, lambda data, v, end: data[v:end])
MESSAGE: Kind = (LEN, "message")
RAW: Kind = (LEN, None)


class Field(NamedTuple):
    name: str
    kind: Kind
    default: Any
    values: FrozenSet[int] = frozenset()  # an enum's valid values (empty: any)


def field(number: int, kind: Kind, default: Any, values: FrozenSet[int] = frozenset()) -> Any:
    """A field of a :class:`Message`: its number, kind and proto default."""
    return dataclasses.field(default=default, metadata={"field": (number, kind, values)})


@dataclasses.dataclass(frozen=True)
class Message:
    """A decoded message: a frozen dataclass with an attribute per field (its
    default where the data has none).  A subclass, a frozen dataclass too,
    declares ``name: type = field(number, kind, default)``, which make its
    table ``FIELDS`` (number -> Field)."""

    FIELDS: ClassVar[Dict[int, Field]] = {}

    def __init_subclass__(cls) -> None:
        declared = [(name, f.metadata["field"], f.default) for name, f in vars(cls).items()
                    if isinstance(f, dataclasses.Field)]
        cls.FIELDS = {number: Field(name, kind, default, values) for name, (number, kind, values), default in declared}


_M = TypeVar("_M", bound=Message)


def make_message(cls: Type[_M], values: Dict[str, Any], present: Any = None) -> _M:
    """``cls`` of the field values read_message gathered.  Names the class does
    not declare (in a pickle of an earlier table, with its ``present``) are left out."""
    names = {f.name for f in cls.FIELDS.values()}
    return cls(**{name: value for name, value in values.items() if name in names})


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
    if f is not None and wire != f.kind[0]:
        fail(path, key_pos, f"{label(f, number, True)} has wire type {wire} "
             f"({_WIRE_NAMES.get(wire, '?')}), expected {f.kind[0]} ({_WIRE_NAMES[f.kind[0]]})")
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
    convert = f.kind[1]
    if f.kind is MESSAGE:
        cls = f.default
        read_message(data, value, end, path, cls.FIELDS, values.setdefault(f.name, {}), message_label(cls.__name__))
    elif convert is not None:
        try:
            v = convert(data, value, end)
        except UnicodeDecodeError as exc:
            fail(path, value + exc.start, f"{label(f, 0, False)} is not valid UTF-8")
        if not f.values or v in f.values:  # a closed enum stores no other value
            values[f.name] = v
