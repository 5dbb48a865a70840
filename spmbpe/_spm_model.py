"""A pure-Python reader of sentencepiece ``.model`` files: one serialized
``sentencepiece.ModelProto`` (proto2), decoded by ``_protobuf.py`` from the
field tables below.  Beyond the wire format's errors, a piece that is not
valid UTF-8 and a model without pieces raise :class:`ModelFormatError`; what
sentencepiece checks when it *builds* a model is left to the caller."""

from __future__ import annotations

import dataclasses
import os
import sys
from array import array
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _protobuf as pb
from ._core import scan_model_pieces, utf8_pieces
from .errors import ModelFormatError
from .tokens import TokenType

# ModelProto.SentencePiece.Type (TokenType has its numbers); TrainerSpec.ModelType.
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_UNUSED, TYPE_BYTE = map(int, TokenType)
MODEL_TYPE_UNIGRAM, MODEL_TYPE_BPE, MODEL_TYPE_WORD, MODEL_TYPE_CHAR = 1, 2, 3, 4


@dataclasses.dataclass(frozen=True)
class TrainerSpec(pb.Message):
    """The fields of ``sentencepiece.TrainerSpec`` that spmbpe reads, with their
    proto defaults (sentencepiece 0.2); the training-only ones are skipped."""

    model_type: int = pb.field(3, pb.ENUM, MODEL_TYPE_UNIGRAM, frozenset(range(1, 5)))
    treat_whitespace_as_suffix: bool = pb.field(24, pb.BOOL, False)
    byte_fallback: bool = pb.field(35, pb.BOOL, False)
    unk_id: int = pb.field(40, pb.INT32, 0)
    bos_id: int = pb.field(41, pb.INT32, 1)
    eos_id: int = pb.field(42, pb.INT32, 2)
    pad_id: int = pb.field(43, pb.INT32, -1)
    bos_piece: str = pb.field(46, pb.STRING, "<s>")
    eos_piece: str = pb.field(47, pb.STRING, "</s>")
    pad_piece: str = pb.field(48, pb.STRING, "<pad>")
    unk_surface: str = pb.field(44, pb.STRING, " \u2047 ")


@dataclasses.dataclass(frozen=True)
class NormalizerSpec(pb.Message):
    """The fields of ``sentencepiece.NormalizerSpec`` that spmbpe reads (all but
    the training-only ``normalization_rule_tsv``), with their proto defaults."""

    name: str = pb.field(1, pb.STRING, "")
    precompiled_charsmap: bytes = pb.field(2, pb.BYTES, b"")
    add_dummy_prefix: bool = pb.field(3, pb.BOOL, True)
    remove_extra_whitespaces: bool = pb.field(4, pb.BOOL, True)
    escape_whitespaces: bool = pb.field(5, pb.BOOL, True)


# ModelProto (self_test_data is skipped) and ModelProto.SentencePiece.
_MODEL_FIELDS = {1: pb.Field("pieces", pb.RAW, None), 2: pb.Field("trainer_spec", pb.MESSAGE, TrainerSpec),
                 3: pb.Field("normalizer_spec", pb.MESSAGE, NormalizerSpec),
                 4: pb.Field("self_test_data", pb.RAW, None),
                 5: pb.Field("denormalizer_spec", pb.MESSAGE, NormalizerSpec)}
_PIECE_FIELDS = {1: pb.Field("piece", pb.SPAN, None), 2: pb.Field("score", pb.FLOAT_BITS, None),
                 3: pb.Field("type", pb.ENUM, TYPE_NORMAL, frozenset(map(int, TokenType)))}
_PIECE_WHAT = {"piece": "the piece string", "score": "the score", "type": "the type"}


@dataclasses.dataclass(eq=False, repr=False)
class SpmModelProto:
    """A decoded ``ModelProto``.  Piece ``i`` is ``arena[offsets[i]:offsets[i + 1]]``,
    ``scores`` an ``array('f')``, ``types`` one ``SentencePiece.Type`` byte per piece.
    ``normalizer`` and ``denormalizer`` are ``None`` when the file has none."""

    arena: bytes
    offsets: "array[int]"
    scores: "array[float]"
    types: bytes
    trainer: TrainerSpec
    normalizer: Optional[NormalizerSpec]
    denormalizer: Optional[NormalizerSpec]
    path: Optional[str] = None
    # (arena, a copy of the offsets) when the reader found every piece valid UTF-8.
    _checked_pieces: Optional[Tuple[bytes, "array[int]"]] = dataclasses.field(default=None, init=False)

    def pieces_checked(self) -> bool:
        """Whether the pieces are still those the reader found valid UTF-8."""
        checked = self._checked_pieces
        return checked is not None and checked[0] is self.arena and checked[1] == self.offsets

    def __len__(self) -> int:
        return len(self.types)

    def piece_bytes(self, i: int) -> bytes:
        if not 0 <= i < len(self.types):
            raise IndexError(f"piece index {i} out of range [0, {len(self.types)})")
        return self.arena[self.offsets[i] : self.offsets[i + 1]]

    def piece(self, i: int) -> str:
        return self.piece_bytes(i).decode("utf-8")

    def packed_pieces(self) -> Optional[Tuple[bytes, "array[int]"]]:
        """(arena, offsets) when still of the reader's kinds (for compiled code), else None."""
        arena, offs = self.arena, self.offsets
        whole = isinstance(offs, array) and offs.typecode == "q" and len(offs) == len(self.types) + 1
        return (arena, offs) if type(arena) is bytes and whole else None

    @property
    def pieces(self) -> List[str]:
        packed = self.packed_pieces()
        return utf8_pieces(*packed) if packed is not None else [self.piece(i) for i in range(len(self))]

    @property
    def normalizer_or_default(self) -> NormalizerSpec:
        """What sentencepiece normalizes by: ``NormalizerSpec()`` when the file has none."""
        return self.normalizer if self.normalizer is not None else NormalizerSpec()

    def __repr__(self) -> str:
        return f"<SpmModelProto {len(self)} pieces, model_type={self.trainer.model_type}, path={self.path!r}>"


def parse_model_proto(
    data: Union[bytes, bytearray, memoryview],
    path: Optional[Union[str, "os.PathLike[str]", "os.PathLike[bytes]"]] = None,
) -> SpmModelProto:
    """Decode a serialized ``sentencepiece.ModelProto``; ``path`` names it in errors."""
    spath = None if path is None else os.fsdecode(os.fspath(path))
    data = bytes(data)
    arenas: List[bytes] = []  # the pieces' bytes, back to back
    offsets, scores, types = array("q", [0]), array("f"), bytearray()  # scores as read: little-endian
    settings: Dict[str, Any] = {}
    pos = 0
    top = pb.message_label("ModelProto")

    def label(f: pb.Field, number: int, wrong: bool) -> str:
        return f"piece {len(types)}" if number == 1 and not wrong else top(f, number, wrong)

    def piece_label(f: pb.Field, number: int, wrong: bool) -> str:
        return f"piece {len(types)}: " + (f"SentencePiece.{f.name}" if wrong else _PIECE_WHAT[f.name])

    while pos < len(data):
        if data[pos] == 0x0A:  # pieces in the layout every serializer writes, scanned in C (and checked)
            run, run_offsets, run_scores, run_types, stop, bad, bad_at = scan_model_pieces(data, pos, offsets[-1])
            if bad >= 0:  # (in this layout a piece's string follows its one-byte length)
                _check_utf8(data, bad_at, bad_at + data[bad_at - 1], len(types) + bad, spath)
                raise AssertionError(f"piece {len(types) + bad} was found invalid but decodes")  # pragma: no cover
            if stop != pos:
                arenas.append(run)
                if not types:  # the first run: its arrays as they are, not copied
                    offsets, scores = run_offsets, run_scores
                else:
                    offsets[-1:] = run_offsets
                    scores.extend(run_scores)
                types += run_types
                pos = stop
                continue
        f, value, nxt = pb.read_field(data, pos, len(data), spath, _MODEL_FIELDS, label)
        if f is not None and f.name == "pieces":  # a piece in any other layout
            piece: Dict[str, Any] = {}
            pb.read_message(data, value, nxt, spath, _PIECE_FIELDS, piece, piece_label)
            start, end = piece.get("piece", (value, value))
            _check_utf8(data, start, end, len(types), spath)
            arenas.append(data[start:end])
            offsets.append(offsets[-1] + end - start)
            scores.frombytes(piece.get("score", bytes(4)))
            types.append(piece.get("type", TYPE_NORMAL))
        elif f is not None:
            pb.store(data, f, value, nxt, settings, spath, label)
        pos = nxt
    if not types:
        pb.fail(spath, None, "not a sentencepiece model: it has no pieces")
    arena = b"".join(arenas)  # (one run: that bytes object itself, not copied)
    if sys.byteorder == "big":  # pragma: no cover
        scores.byteswap()
    specs = {f.name: pb.make_message(f.default, settings[f.name]) for f in _MODEL_FIELDS.values() if f.name in settings}
    proto = SpmModelProto(arena, offsets, scores, bytes(types), specs.get("trainer_spec", TrainerSpec()),
                          specs.get("normalizer_spec"), specs.get("denormalizer_spec"), spath)
    proto._checked_pieces = (arena, offsets[:])
    return proto


def _check_utf8(data: bytes, start: int, end: int, index: int, path: Optional[str]) -> None:
    """Every piece must be valid UTF-8 on its own, as sentencepiece requires."""
    try:
        data[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        pb.fail(path, start + exc.start, f"piece {index} is not valid UTF-8: {data[start:end]!r}")


def read_model_proto(path: Union[str, "os.PathLike[str]", "os.PathLike[bytes]"]) -> SpmModelProto:
    """Read and decode a sentencepiece ``.model`` file."""
    with open(path, "rb") as f:
        head = f.read(16)
        if head:  # fail fast on a large file of another kind (a GGUF's "G": field 8, wire type 7)
            pb.read_key(head, 0, len(head), os.fsdecode(os.fspath(path)))
            f.seek(0)
        data = f.read()
    return parse_model_proto(data, path)


def is_model_proto(head: bytes) -> bool:
    """Could ``head``, a file's first bytes, start a ``ModelProto``?  Serializers write
    fields in number order, so a model starts with its first piece: key 0x0A, a
    non-zero varint length, and a ``SentencePiece`` message starting with a valid
    key (normally its string's, whose length must fit in the piece)."""
    head = bytes(head[:64])
    if len(head) < 2 or head[0] != 0x0A:
        return False
    try:
        ln, pos = pb.read_varint(head, 1, min(len(head), 11), None)  # (at most 10 bytes)
        if pos < len(head) and head[pos] < 0x80:  # (a multi-byte key, field >= 16, is unusual but valid)
            number, wire, pos = pb.read_key(head, pos, len(head), None)
            if number == 1 and wire == pb.LEN and pos < len(head) and head[pos] < 0x80:
                return head[pos] + 2 <= ln
    except ModelFormatError:
        return False
    return ln > 0
