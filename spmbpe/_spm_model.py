"""A pure-Python reader of sentencepiece ``.model`` files.

A sentencepiece model file is one serialized ``sentencepiece.ModelProto``
(proto2, ``src/sentencepiece_model.proto``).  This module decodes the protobuf
wire format directly, without the ``protobuf`` or ``sentencepiece`` packages:

========  ===========  =================================================
wire      name         encoding
========  ===========  =================================================
0         varint       base-128, low group first, at most 10 bytes
1         64-bit       8 bytes little-endian (skipped: no known field uses it)
2         length       varint byte count, then the bytes (strings, bytes,
                       embedded messages)
5         32-bit       4 bytes little-endian (``float`` fields)
3, 4      groups       deprecated; rejected
6, 7      --           invalid; rejected
========  ===========  =================================================

Every field is preceded by a key, the varint ``field_number << 3 | wire_type``.

The parts of the schema that are read (field numbers in brackets)::

    ModelProto
        [1] repeated SentencePiece pieces
        [2] TrainerSpec trainer_spec
        [3] NormalizerSpec normalizer_spec
        [4] SelfTestData self_test_data          (skipped)
        [5] NormalizerSpec denormalizer_spec
    ModelProto.SentencePiece
        [1] string piece  [2] float score  [3] Type type = NORMAL
    TrainerSpec / NormalizerSpec
        every field, see _TRAINER_FIELDS / _NORMALIZER_FIELDS below

Protobuf semantics that are reproduced:

* a field may appear in any order and any number of times; for a singular
  scalar field the last occurrence wins, repeated fields accumulate, and two
  occurrences of an embedded message (``trainer_spec`` twice) are merged;
* an absent field takes the default declared in the ``.proto`` file (which is
  *not* the type's zero for several fields: ``add_dummy_prefix`` and
  ``remove_extra_whitespaces`` default to true, ``pad_id`` to -1, ...);
* ``int32`` fields keep the low 32 bits of the varint, sign-extended (a
  negative int32 is written as a ten-byte varint); ``bool`` is "varint != 0";
* a proto2 enum is closed: a value outside the enum (a piece type 9) is not
  stored, and the field keeps its previous value (its default if none);
* unknown fields are skipped, whatever their number.

Deliberately stricter than protobuf (all raise :class:`ModelFormatError`):
groups (wire types 3 and 4), a known field with the wrong wire type (protobuf
would keep it as an unknown field), invalid UTF-8 in a piece or in a string
setting that affects tokenization, and a model without pieces.  Training-only
strings (corpus paths, ``control_symbols``, ...) are decoded leniently, an
invalid byte becoming U+FFFD.  What sentencepiece checks when it *builds* a
model (no empty or duplicate pieces, exactly one UNKNOWN piece, 256 BYTE
pieces with ``byte_fallback``, ...) is left to the caller.

Like any protobuf message, a file cut exactly between two top-level fields is
a valid, shorter ``ModelProto``: cut after its last piece, a model file reads
as one without ``trainer_spec`` (whose ``model_type`` then defaults to
UNIGRAM).  Cuts anywhere else raise.

Lengths are always checked against the end of the enclosing message before any
slice is taken, so a corrupt length never causes an allocation.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from typing import Any, Dict, FrozenSet, List, NoReturn, Optional, Tuple, Type, TypeVar, Union

from ._core import first_invalid_utf8_piece, scan_model_pieces, utf8_pieces
from ._vocab import piece_offsets
from .errors import ModelFormatError
from .tokens import TokenType

__all__ = [
    "SpmModelProto",
    "TrainerSpec",
    "NormalizerSpec",
    "read_model_proto",
    "parse_model_proto",
    "is_model_proto",
    "TYPE_NORMAL",
    "TYPE_UNKNOWN",
    "TYPE_CONTROL",
    "TYPE_USER_DEFINED",
    "TYPE_UNUSED",
    "TYPE_BYTE",
    "MODEL_TYPE_UNIGRAM",
    "MODEL_TYPE_BPE",
    "MODEL_TYPE_WORD",
    "MODEL_TYPE_CHAR",
]

# ModelProto.SentencePiece.Type: spmbpe's TokenType uses its numbers.
TYPE_NORMAL = int(TokenType.NORMAL)
TYPE_UNKNOWN = int(TokenType.UNKNOWN)
TYPE_CONTROL = int(TokenType.CONTROL)
TYPE_USER_DEFINED = int(TokenType.USER_DEFINED)
TYPE_UNUSED = int(TokenType.UNUSED)
TYPE_BYTE = int(TokenType.BYTE)
_PIECE_TYPES = frozenset(int(t) for t in TokenType)

# TrainerSpec.ModelType
MODEL_TYPE_UNIGRAM = 1
MODEL_TYPE_BPE = 2
MODEL_TYPE_WORD = 3
MODEL_TYPE_CHAR = 4
_MODEL_TYPES = frozenset(range(1, 5))

_VARINT = 0
_I64 = 1
_LEN = 2
_SGROUP = 3
_EGROUP = 4
_I32 = 5

_MASK64 = (1 << 64) - 1
_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}

# Field kinds of the settings messages: how to decode the value, and the wire
# type the kind requires.
_K_INT32 = "int32"
_K_UINT64 = "uint64"
_K_BOOL = "bool"
_K_FLOAT = "float"
_K_ENUM = "enum"  # closed proto2 enum; the valid values are in the table
_K_STRING = "string"  # strict UTF-8 (the setting affects tokenization)
_K_TEXT = "text"  # training-only string: undecodable bytes are replaced
_K_BYTES = "bytes"
_K_REPEATED_TEXT = "repeated text"

_KIND_WIRE = {
    _K_INT32: _VARINT,
    _K_UINT64: _VARINT,
    _K_BOOL: _VARINT,
    _K_ENUM: _VARINT,
    _K_FLOAT: _I32,
    _K_STRING: _LEN,
    _K_TEXT: _LEN,
    _K_BYTES: _LEN,
    _K_REPEATED_TEXT: _LEN,
}

# field number -> (name, kind, default[, valid enum values]).  The field numbers
# and defaults are those of sentencepiece's src/sentencepiece_model.proto (the
# copy compiled into sentencepiece 0.2's sentencepiece_model_pb2.py).
_TRAINER_FIELDS: Dict[int, Tuple[Any, ...]] = {
    1: ("input", _K_REPEATED_TEXT, ()),
    7: ("input_format", _K_TEXT, ""),
    2: ("model_prefix", _K_TEXT, ""),
    3: ("model_type", _K_ENUM, MODEL_TYPE_UNIGRAM, _MODEL_TYPES),
    4: ("vocab_size", _K_INT32, 8000),
    5: ("accept_language", _K_REPEATED_TEXT, ()),
    6: ("self_test_sample_size", _K_INT32, 0),
    10: ("character_coverage", _K_FLOAT, 0.9995),
    11: ("input_sentence_size", _K_UINT64, 0),
    19: ("shuffle_input_sentence", _K_BOOL, True),
    12: ("mining_sentence_size", _K_INT32, 0),  # deprecated
    13: ("training_sentence_size", _K_INT32, 0),  # deprecated
    14: ("seed_sentencepiece_size", _K_INT32, 1000000),
    15: ("shrinking_factor", _K_FLOAT, 0.75),
    18: ("max_sentence_length", _K_INT32, 4192),
    16: ("num_threads", _K_INT32, 16),
    17: ("num_sub_iterations", _K_INT32, 2),
    20: ("max_sentencepiece_length", _K_INT32, 16),
    21: ("split_by_unicode_script", _K_BOOL, True),
    23: ("split_by_number", _K_BOOL, True),
    22: ("split_by_whitespace", _K_BOOL, True),
    24: ("treat_whitespace_as_suffix", _K_BOOL, False),
    26: ("allow_whitespace_only_pieces", _K_BOOL, False),
    25: ("split_digits", _K_BOOL, False),
    53: ("pretokenization_delimiter", _K_STRING, ""),
    30: ("control_symbols", _K_REPEATED_TEXT, ()),
    31: ("user_defined_symbols", _K_REPEATED_TEXT, ()),
    36: ("required_chars", _K_TEXT, ""),
    35: ("byte_fallback", _K_BOOL, False),
    32: ("vocabulary_output_piece_score", _K_BOOL, True),
    33: ("hard_vocab_limit", _K_BOOL, True),
    34: ("use_all_vocab", _K_BOOL, False),
    40: ("unk_id", _K_INT32, 0),
    41: ("bos_id", _K_INT32, 1),
    42: ("eos_id", _K_INT32, 2),
    43: ("pad_id", _K_INT32, -1),
    45: ("unk_piece", _K_STRING, "<unk>"),
    46: ("bos_piece", _K_STRING, "<s>"),
    47: ("eos_piece", _K_STRING, "</s>"),
    48: ("pad_piece", _K_STRING, "<pad>"),
    44: ("unk_surface", _K_STRING, " \u2047 "),
    54: ("seed_sentencepieces_file", _K_TEXT, ""),
    55: ("auto_character_coverage", _K_BOOL, False),
    49: ("train_extremely_large_corpus", _K_BOOL, False),
    50: ("enable_differential_privacy", _K_BOOL, False),
    51: ("differential_privacy_noise_level", _K_FLOAT, 0.0),
    52: ("differential_privacy_clipping_threshold", _K_UINT64, 0),
}

# A float field holds a float32: its default too (0.9995 reads back as
# 0.9994999766349792, as from protobuf).
for _number, _spec in list(_TRAINER_FIELDS.items()):
    if _spec[1] == _K_FLOAT:
        _f32_default = struct.unpack("<f", struct.pack("<f", _spec[2]))[0]
        _TRAINER_FIELDS[_number] = (_spec[0], _spec[1], _f32_default) + _spec[3:]
del _number, _spec, _f32_default

_NORMALIZER_FIELDS: Dict[int, Tuple[Any, ...]] = {
    1: ("name", _K_STRING, ""),
    2: ("precompiled_charsmap", _K_BYTES, b""),
    3: ("add_dummy_prefix", _K_BOOL, True),
    4: ("remove_extra_whitespaces", _K_BOOL, True),
    5: ("escape_whitespaces", _K_BOOL, True),
    6: ("normalization_rule_tsv", _K_TEXT, ""),
}


class _Spec:
    """Base of the settings messages: one attribute per field, the proto
    default where the field is absent, and ``present``, the names of the
    fields that the file sets explicitly."""

    _FIELDS: Dict[int, Tuple[Any, ...]] = {}
    __slots__ = ("present",)
    present: FrozenSet[str]

    def __init__(self, **values: Any) -> None:
        for spec in self._FIELDS.values():
            name = spec[0]
            object.__setattr__(self, name, values.pop(name, spec[2]))
        present = values.pop("present", frozenset())
        if values:
            raise TypeError(f"unknown fields: {sorted(values)}")
        object.__setattr__(self, "present", frozenset(present))

    def has(self, name: str) -> bool:
        """Whether the file sets field ``name`` (proto2 ``HasField``)."""
        return name in self.present

    def as_dict(self) -> Dict[str, Any]:
        return {spec[0]: getattr(self, spec[0]) for spec in self._FIELDS.values()}

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_make_spec, (type(self), self.as_dict(), self.present))

    def __repr__(self) -> str:
        items = ", ".join(
            f"{spec[0]}={getattr(self, spec[0])!r}"
            for spec in self._FIELDS.values()
            if spec[0] in self.present
        )
        return f"{type(self).__name__}({items})"


class TrainerSpec(_Spec):
    """``sentencepiece.TrainerSpec``: every field, with its proto default.

    Repeated string fields (``input``, ``accept_language``,
    ``control_symbols``, ``user_defined_symbols``) are tuples.  ``model_type``
    is the enum number (``MODEL_TYPE_BPE`` = 2, ...).
    """

    _FIELDS = _TRAINER_FIELDS
    __slots__ = tuple(spec[0] for spec in _TRAINER_FIELDS.values())

    # The fields, for type checkers (set in _Spec.__init__; one per entry
    # of _TRAINER_FIELDS, which tests/test_typing.py checks).
    input: Tuple[str, ...]
    input_format: str
    model_prefix: str
    model_type: int
    vocab_size: int
    accept_language: Tuple[str, ...]
    self_test_sample_size: int
    character_coverage: float
    input_sentence_size: int
    shuffle_input_sentence: bool
    mining_sentence_size: int
    training_sentence_size: int
    seed_sentencepiece_size: int
    shrinking_factor: float
    max_sentence_length: int
    num_threads: int
    num_sub_iterations: int
    max_sentencepiece_length: int
    split_by_unicode_script: bool
    split_by_number: bool
    split_by_whitespace: bool
    treat_whitespace_as_suffix: bool
    allow_whitespace_only_pieces: bool
    split_digits: bool
    pretokenization_delimiter: str
    control_symbols: Tuple[str, ...]
    user_defined_symbols: Tuple[str, ...]
    required_chars: str
    byte_fallback: bool
    vocabulary_output_piece_score: bool
    hard_vocab_limit: bool
    use_all_vocab: bool
    unk_id: int
    bos_id: int
    eos_id: int
    pad_id: int
    unk_piece: str
    bos_piece: str
    eos_piece: str
    pad_piece: str
    unk_surface: str
    seed_sentencepieces_file: str
    auto_character_coverage: bool
    train_extremely_large_corpus: bool
    enable_differential_privacy: bool
    differential_privacy_noise_level: float
    differential_privacy_clipping_threshold: int


class NormalizerSpec(_Spec):
    """``sentencepiece.NormalizerSpec`` (used for ``normalizer_spec`` and
    ``denormalizer_spec``), every field with its proto default."""

    _FIELDS = _NORMALIZER_FIELDS
    __slots__ = tuple(spec[0] for spec in _NORMALIZER_FIELDS.values())

    # The fields, for type checkers (set in _Spec.__init__; one per entry
    # of _NORMALIZER_FIELDS, which tests/test_typing.py checks).
    name: str
    precompiled_charsmap: bytes
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool
    escape_whitespaces: bool
    normalization_rule_tsv: str


class SpmModelProto:
    """A decoded ``ModelProto``.

    Pieces are kept compact: ``arena`` holds the UTF-8 bytes of all pieces
    back to back, piece ``i`` being ``arena[offsets[i]:offsets[i + 1]]``
    (``offsets`` is an ``array('q')`` of ``len(self) + 1`` entries);
    ``scores`` is an ``array('f')`` and ``types`` a ``bytes`` with one
    ``ModelProto.SentencePiece.Type`` number per piece (``TYPE_NORMAL`` = 1,
    ..., ``TYPE_BYTE`` = 6).

    ``trainer`` is a :class:`TrainerSpec` (all defaults when the file has no
    ``trainer_spec``); ``normalizer`` and ``denormalizer`` are
    :class:`NormalizerSpec` objects, or ``None`` when the file has no such
    field (sentencepiece then uses ``NormalizerSpec()`` defaults for the
    normalizer; :attr:`normalizer_or_default` gives that).
    """

    __slots__ = (
        "path",
        "arena",
        "offsets",
        "scores",
        "types",
        "trainer",
        "normalizer",
        "denormalizer",
        "_checked_pieces",
    )

    def __init__(
        self,
        arena: bytes,
        offsets: "array[int]",
        scores: "array[float]",
        types: bytes,
        trainer: TrainerSpec,
        normalizer: Optional[NormalizerSpec],
        denormalizer: Optional[NormalizerSpec],
        path: Optional[str] = None,
    ) -> None:
        self.path = path
        self.arena = arena
        self.offsets = offsets
        self.scores = scores
        self.types = types
        self.trainer = trainer
        self.normalizer = normalizer
        self.denormalizer = denormalizer
        # (arena, a copy of the offsets) when the reader found every piece
        # valid UTF-8: the tokenizer then need not check these pieces again.
        self._checked_pieces: Optional[Tuple[bytes, "array[int]"]] = None

    def _pieces_checked(self) -> bool:
        """Whether the pieces are still those the reader found valid UTF-8
        (the fields are writable)."""
        checked = self._checked_pieces
        offsets = self.offsets
        return (
            checked is not None
            and checked[0] is self.arena
            and isinstance(offsets, array)
            and offsets.typecode == "q"
            and checked[1] == offsets
        )

    def __len__(self) -> int:
        return len(self.types)

    @property
    def num_pieces(self) -> int:
        return len(self.types)

    def piece_bytes(self, i: int) -> bytes:
        """The UTF-8 bytes of piece ``i``."""
        if not 0 <= i < len(self.types):
            raise IndexError(f"piece index {i} out of range [0, {len(self.types)})")
        return self.arena[self.offsets[i] : self.offsets[i + 1]]

    def piece(self, i: int) -> str:
        """Piece ``i`` as text."""
        return self.piece_bytes(i).decode("utf-8")

    def packed_pieces(self) -> Optional[Tuple[bytes, "array[int]"]]:
        """(arena, offsets) when they are still of the reader's own kinds
        (bytes, and array('q') of one offset per piece and the end), which
        compiled code takes as they are; None when a caller has set other
        kinds (the fields are writable)."""
        arena, offs = self.arena, self.offsets
        whole = isinstance(offs, array) and offs.typecode == "q" and len(offs) == len(self.types) + 1
        return (arena, offs) if type(arena) is bytes and whole else None

    @property
    def pieces(self) -> List[str]:
        """All pieces as a list of ``str`` (decoded on each access)."""
        # (Compiled for the reader's own kinds, with no bytes object per
        # piece; any other kinds in Python.)
        packed = self.packed_pieces()
        if packed is not None:
            return utf8_pieces(*packed)
        arena, offs = self.arena, self.offsets
        return [arena[offs[i] : offs[i + 1]].decode("utf-8") for i in range(len(self.types))]

    @property
    def normalizer_or_default(self) -> NormalizerSpec:
        return self.normalizer if self.normalizer is not None else NormalizerSpec()

    def __repr__(self) -> str:
        return (
            f"<SpmModelProto {len(self)} pieces, model_type={self.trainer.model_type}, "
            f"path={self.path!r}>"
        )


# ------------------------------------------------------------------ decoding


def _fail(path: Optional[str], offset: Optional[int], message: str) -> NoReturn:
    raise ModelFormatError(path, offset, message)


def _past_end(path: Optional[str], start: int, limit: int, n: int, what: str) -> NoReturn:
    if limit >= n:
        _fail(path, start, f"truncated file: {what} runs past the end of the file ({n} bytes)")
    _fail(path, start, f"{what} runs past the end of its enclosing message (at byte {limit})")


def _read_varint(
    data: bytes, pos: int, limit: int, path: Optional[str], at: int = -1, what: str = "a varint"
) -> Tuple[int, int]:
    """Decode the varint at ``pos`` (which must end before ``limit``); return
    ``(value, next_pos)``.  Values are reduced to 64 bits, as protobuf does.
    A varint cut short is reported at offset ``at`` (the key of the field it
    belongs to) when given, else at its own start."""
    start = pos
    result = 0
    shift = 0
    while True:
        if pos >= limit:
            _past_end(path, start if at < 0 else at, limit, len(data), what)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            _fail(path, start, "invalid varint: more than 10 bytes")


def _read_key(data: bytes, pos: int, limit: int, path: Optional[str]) -> Tuple[int, int, int]:
    """Decode a field key; return ``(field_number, wire_type, next_pos)``."""
    b = data[pos]
    if b < 0x80:
        key = b
        nxt = pos + 1
    else:
        key, nxt = _read_varint(data, pos, limit, path)
        if key > 0xFFFFFFFF:
            _fail(path, pos, f"invalid field key {key:#x}: more than 32 bits")
    field = key >> 3
    wire = key & 7
    if field == 0:
        _fail(path, pos, "invalid field number 0")
    if wire == _SGROUP or wire == _EGROUP:
        _fail(path, pos, f"field {field} uses a group (wire type {wire}), which is not supported")
    if wire > _I32:
        _fail(path, pos, f"field {field} has invalid wire type {wire}")
    return field, wire, nxt


def _skip_value(
    data: bytes, wire: int, pos: int, limit: int, path: Optional[str], key_pos: int, field: int
) -> int:
    """Skip the value of an unknown field; return the position after it."""
    if wire == _VARINT:
        return _read_varint(data, pos, limit, path, key_pos, f"field {field}")[1]
    if wire == _LEN:
        ln, pos = _read_varint(data, pos, limit, path, key_pos, f"field {field}")
        end = pos + ln
        if end > limit:
            _past_end(path, key_pos, limit, len(data), f"field {field} (length {ln})")
        return end
    size = 8 if wire == _I64 else 4
    if pos + size > limit:
        _past_end(path, key_pos, limit, len(data), f"field {field} ({size}-byte value)")
    return pos + size


def _wrong_wire(path: Optional[str], pos: int, what: str, wire: int, expected: int) -> NoReturn:
    _fail(
        path,
        pos,
        f"{what} has wire type {wire} ({_WIRE_NAMES.get(wire, '?')}), "
        f"expected {expected} ({_WIRE_NAMES[expected]})",
    )


def _to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


_unpack_float = struct.Struct("<f").unpack_from


def _parse_spec(
    data: bytes,
    pos: int,
    end: int,
    table: Dict[int, Tuple[Any, ...]],
    values: Dict[str, Any],
    message: str,
    path: Optional[str],
) -> None:
    """Decode the fields of a settings message in ``data[pos:end]`` into
    ``values`` (name -> value), merging with what is already there."""
    n = len(data)
    while pos < end:
        key_pos = pos
        field, wire, pos = _read_key(data, pos, end, path)
        spec = table.get(field)
        if spec is None:
            pos = _skip_value(data, wire, pos, end, path, key_pos, field)
            continue
        name, kind = spec[0], spec[1]
        expected = _KIND_WIRE[kind]
        if wire != expected:
            _wrong_wire(path, key_pos, f"{message}.{name} (field {field})", wire, expected)
        if wire == _VARINT:
            v, pos = _read_varint(data, pos, end, path, key_pos, f"{message}.{name}")
            if kind == _K_BOOL:
                values[name] = v != 0
            elif kind == _K_UINT64:
                values[name] = v
            else:
                v = _to_int32(v)
                if kind == _K_ENUM and v not in spec[3]:
                    continue  # closed enum: an unknown value is not stored
                values[name] = v
        elif wire == _I32:
            if pos + 4 > end:
                _past_end(path, key_pos, end, n, f"{message}.{name}")
            values[name] = _unpack_float(data, pos)[0]
            pos += 4
        else:
            ln, pos = _read_varint(data, pos, end, path, key_pos, f"{message}.{name}")
            stop = pos + ln
            if stop > end:
                _past_end(path, key_pos, end, n, f"{message}.{name} (length {ln})")
            raw = data[pos:stop]
            if kind == _K_BYTES:
                values[name] = raw
            elif kind == _K_STRING:
                try:
                    values[name] = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    _fail(path, pos + exc.start, f"{message}.{name} is not valid UTF-8")
            else:
                text = raw.decode("utf-8", "replace")
                if kind == _K_REPEATED_TEXT:
                    values[name] = values.get(name, ()) + (text,)
                else:
                    values[name] = text
            pos = stop


def _parse_piece_slow(
    data: bytes, pos: int, end: int, index: int, path: Optional[str]
) -> Tuple[int, int, Optional[int], int]:
    """Decode one ``SentencePiece`` message in any field order; return
    ``(piece_start, piece_end, score_pos or None, type)``."""
    n = len(data)
    ps = pe = pos
    score_pos: Optional[int] = None
    typ = TYPE_NORMAL
    while pos < end:
        key_pos = pos
        field, wire, pos = _read_key(data, pos, end, path)
        if field == 1:
            if wire != _LEN:
                _wrong_wire(path, key_pos, f"piece {index}: SentencePiece.piece", wire, _LEN)
            ln, pos = _read_varint(
                data, pos, end, path, key_pos, f"piece {index}: the piece string"
            )
            if pos + ln > end:
                _past_end(path, key_pos, end, n, f"piece {index}: the piece string (length {ln})")
            ps = pos
            pe = pos = pos + ln
        elif field == 2:
            if wire != _I32:
                _wrong_wire(path, key_pos, f"piece {index}: SentencePiece.score", wire, _I32)
            if pos + 4 > end:
                _past_end(path, key_pos, end, n, f"piece {index}: the score")
            score_pos = pos
            pos += 4
        elif field == 3:
            if wire != _VARINT:
                _wrong_wire(path, key_pos, f"piece {index}: SentencePiece.type", wire, _VARINT)
            v, pos = _read_varint(data, pos, end, path, key_pos, f"piece {index}: the type")
            v = _to_int32(v)
            if v in _PIECE_TYPES:  # closed enum: unknown values are not stored
                typ = v
        else:
            pos = _skip_value(data, wire, pos, end, path, key_pos, field)
    return ps, pe, score_pos, typ


_ZERO_SCORE = b"\x00\x00\x00\x00"

_SPEC_NAMES = ("", "pieces", "trainer_spec", "normalizer_spec", "self_test_data",
               "denormalizer_spec")


def parse_model_proto(
    data: Union[bytes, bytearray, memoryview],
    path: Optional[Union[str, "os.PathLike[str]", "os.PathLike[bytes]"]] = None,
) -> SpmModelProto:
    """Decode a serialized ``sentencepiece.ModelProto``.

    ``path`` is only used in error messages.  Raises
    :class:`~spmbpe.errors.ModelFormatError` (with the byte offset of the bad
    item) on any malformation.
    """
    spath = None if path is None else os.fspath(path)
    if isinstance(spath, bytes):
        spath = os.fsdecode(spath)
    data = bytes(data)
    n = len(data)

    # Built as we go, with no per-piece object kept alive (that matters for
    # the speed of a 256k-piece model as much as the bytecode count does).
    # The pieces come in runs: those in the layout every serializer writes
    # are scanned in C (_core.scan_model_pieces), any others read one by
    # one into a run of their own.  A model of one run (the usual case) keeps
    # the scan's arrays as they are: no copy.
    runs: List[_PieceRun] = []
    slow: Optional[_SlowRun] = None
    n_pieces = 0
    arena_len = 0
    trainer: Dict[str, Any] = {}
    normalizer: Optional[Dict[str, Any]] = None
    denormalizer: Optional[Dict[str, Any]] = None

    pos = 0
    while pos < n:
        # Fast path, in C: the run of piece messages in the layout every
        # serializer writes (see _core.scan_model_pieces); anything else
        # takes the general path below.
        if data[pos] == 0x0A:
            run_arena, run_offsets, run_scores, run_types, stop, run_bad = scan_model_pieces(
                data, pos, arena_len
            )
            if stop != pos:
                if slow is not None:
                    runs.append(slow.finish())
                    slow = None
                runs.append((run_arena, run_offsets, run_scores, run_types, run_bad))
                n_pieces += len(run_types)
                arena_len += len(run_arena)
                pos = stop
                continue

        # General path: any top-level field.
        key_pos = pos
        field, wire, pos = _read_key(data, pos, n, spath)
        if field > 5:
            pos = _skip_value(data, wire, pos, n, spath, key_pos, field)
            continue
        name = _SPEC_NAMES[field]
        if wire != _LEN:
            _wrong_wire(spath, key_pos, f"ModelProto.{name} (field {field})", wire, _LEN)
        what = f"piece {n_pieces}" if field == 1 else f"ModelProto.{name}"
        ln, pos = _read_varint(data, pos, n, spath, key_pos, what)
        end = pos + ln
        if end > n:
            _past_end(spath, key_pos, n, n, f"{what} (length {ln})")
        if field == 1:
            ps, pe, sp, t = _parse_piece_slow(data, pos, end, n_pieces, spath)
            if slow is None:
                slow = _SlowRun(arena_len)
            slow.add(data[ps:pe], _ZERO_SCORE if sp is None else data[sp : sp + 4], t)
            n_pieces += 1
            arena_len += pe - ps
        elif field == 2:
            _parse_spec(data, pos, end, _TRAINER_FIELDS, trainer, "TrainerSpec", spath)
        elif field == 3:
            if normalizer is None:
                normalizer = {}
            _parse_spec(data, pos, end, _NORMALIZER_FIELDS, normalizer, "NormalizerSpec", spath)
        elif field == 5:
            if denormalizer is None:
                denormalizer = {}
            _parse_spec(data, pos, end, _NORMALIZER_FIELDS, denormalizer, "NormalizerSpec", spath)
        # field 4 (self_test_data) is skipped
        pos = end

    if slow is not None:
        runs.append(slow.finish())
    if not n_pieces:
        _fail(spath, None, "not a sentencepiece model: it has no pieces")
    arena, offsets, score_array, types, bad = _join_runs(runs)

    # Every piece must be valid UTF-8 on its own, as sentencepiece requires:
    # the scan checked its run; pieces read otherwise are checked here.
    if bad is None:
        bad = first_invalid_utf8_piece(arena, offsets)
    if bad >= 0:
        chunk = arena[offsets[bad] : offsets[bad + 1]]
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            _bad_utf8_piece(spath, bad, _piece_offset(data, bad) + exc.start, chunk)
        raise AssertionError(f"piece {bad} was found invalid but decodes")  # pragma: no cover

    proto = SpmModelProto(
        arena=arena,
        offsets=offsets,
        scores=score_array,
        types=types,
        trainer=_make_spec(TrainerSpec, trainer),
        normalizer=None if normalizer is None else _make_spec(NormalizerSpec, normalizer),
        denormalizer=None if denormalizer is None else _make_spec(NormalizerSpec, denormalizer),
        path=spath,
    )
    proto._checked_pieces = (arena, offsets[:])
    return proto


def _join_runs(runs: List[_PieceRun]) -> _PieceRun:
    """The model's pieces as one run (scores in native byte order)."""
    bad: Optional[int] = None
    if len(runs) == 1:
        arena, offsets, score_array, types, bad = runs[0]
    else:
        arena = b"".join(run[0] for run in runs)
        offsets = array("q", [0])
        score_array = array("f")
        for run in runs:
            offsets.extend(run[1][1:])
            score_array.extend(run[2])
        types = b"".join(run[3] for run in runs)
    if sys.byteorder == "big":  # pragma: no cover
        score_array.byteswap()
    return arena, offsets, score_array, types, bad


# A run of pieces: (arena, offsets, scores, types, first_bad_utf8): the
# pieces' bytes, count + 1 offsets into the whole model's arena (the first
# is where the run starts), the scores as read (little-endian float32), one
# type byte each, and the index in the run of the first piece that is not
# valid UTF-8, -1 when all are, or None when the run was not checked.
_PieceRun = Tuple[bytes, "array[int]", "array[float]", bytes, Optional[int]]


class _SlowRun:
    """Pieces read one by one by the general reader, gathered into a run."""

    __slots__ = ("arena", "base", "lengths", "scores", "types")

    def __init__(self, base: int) -> None:
        self.arena = bytearray()
        self.base = base
        self.lengths: List[int] = []
        self.scores = bytearray()
        self.types = bytearray()

    def add(self, piece: bytes, score: bytes, piece_type: int) -> None:
        self.arena += piece
        self.lengths.append(len(piece))
        self.scores += score
        self.types.append(piece_type)

    def finish(self) -> _PieceRun:
        scores = array("f")
        scores.frombytes(self.scores)
        return bytes(self.arena), piece_offsets(self.lengths, self.base), scores, bytes(self.types), None


def _bad_utf8_piece(path: Optional[str], index: int, offset: int, chunk: bytes) -> NoReturn:
    _fail(path, offset, f"piece {index} is not valid UTF-8: {chunk!r}")


def _piece_offset(data: bytes, index: int) -> int:
    """File offset of the string of piece ``index`` (error reporting only;
    the data is known to parse)."""
    n = len(data)
    pos = 0
    count = 0
    while pos < n:
        key_pos = pos
        field, wire, pos = _read_key(data, pos, n, None)
        if field == 1:
            ln, pos = _read_varint(data, pos, n, None)
            if count == index:
                return _parse_piece_slow(data, pos, pos + ln, index, None)[0]
            count += 1
            pos += ln
        else:
            pos = _skip_value(data, wire, pos, n, None, key_pos, field)
    raise AssertionError("piece not found")  # pragma: no cover


_SpecT = TypeVar("_SpecT", bound=_Spec)


def _make_spec(
    cls: Type[_SpecT], values: Dict[str, Any], present: Optional[FrozenSet[str]] = None
) -> _SpecT:
    return cls(present=frozenset(values) if present is None else present, **values)


def read_model_proto(path: Union[str, "os.PathLike[str]", "os.PathLike[bytes]"]) -> SpmModelProto:
    """Read and decode a sentencepiece ``.model`` file."""
    with open(path, "rb") as f:
        head = f.read(16)
        if head:
            # Fail fast, before reading all of a large file of another kind
            # (a GGUF's "G" is field 8 with the invalid wire type 7).
            spath = os.fsdecode(os.fspath(path))
            _read_key(head, 0, len(head), spath)
            f.seek(0)
        data = f.read()  # (one read, no copy to join it to the head)
    return parse_model_proto(data, path)


def is_model_proto(head: bytes) -> bool:
    """Cheap sniff: could ``head`` (the first bytes of a file) start a
    sentencepiece ``ModelProto``?

    Serializers write the fields in field-number order, so a model file starts
    with its first piece: key 0x0A (field 1, length-delimited), a varint
    length, and then a ``SentencePiece`` message whose first key is a valid
    key (normally 0x0A, the piece string).  Only the bytes present in
    ``head`` are checked.
    """
    head = bytes(head[:64])
    if len(head) < 2 or head[0] != 0x0A:
        return False
    ln = 0
    shift = 0
    pos = 1
    while True:
        if pos >= len(head) or pos > 10:
            return False
        b = head[pos]
        pos += 1
        ln |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    if ln == 0:
        return False
    if pos >= len(head):
        return True
    key = head[pos]
    if key & 0x80:
        # A multi-byte key (field >= 16, e.g. an extension): unusual but valid.
        return True
    if key >> 3 == 0 or key & 7 not in (_VARINT, _I64, _LEN, _I32):
        return False
    if key == 0x0A and pos + 1 < len(head):
        # The piece string: its length must fit in the piece message.
        sl = head[pos + 1]
        if sl < 0x80 and sl + 2 > ln:
            return False
    return True
