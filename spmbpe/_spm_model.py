"""A pure-Python reader of sentencepiece ``.model`` files: one serialized
``sentencepiece.ModelProto`` (proto2), decoded by ``_protobuf.py`` from the
field tables below.  Beyond the wire format's errors, a piece that is not
valid UTF-8 and a model without pieces raise :class:`ModelFormatError`; what
sentencepiece checks when it *builds* a model is left to the caller."""

from __future__ import annotations

import os
import sys
from array import array
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _protobuf as pb
from ._core import scan_model_pieces, utf8_pieces
from .errors import ModelFormatError
from .tokens import TokenType

__all__ = ["SpmModelProto", "TrainerSpec", "NormalizerSpec", "read_model_proto", "parse_model_proto",
           "is_model_proto", "TYPE_NORMAL", "TYPE_UNKNOWN", "TYPE_CONTROL", "TYPE_USER_DEFINED", "TYPE_UNUSED",
           "TYPE_BYTE", "MODEL_TYPE_UNIGRAM", "MODEL_TYPE_BPE", "MODEL_TYPE_WORD", "MODEL_TYPE_CHAR"]

# ModelProto.SentencePiece.Type (TokenType has its numbers); TrainerSpec.ModelType.
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_UNUSED, TYPE_BYTE = map(int, TokenType)
MODEL_TYPE_UNIGRAM, MODEL_TYPE_BPE, MODEL_TYPE_WORD, MODEL_TYPE_CHAR = 1, 2, 3, 4


class TrainerSpec(pb.Message):
    """``sentencepiece.TrainerSpec``: every field with its proto default (sentencepiece 0.2)."""

    input: Tuple[str, ...] = pb.field(1, pb.REPEATED_TEXT, ())
    input_format: str = pb.field(7, pb.TEXT, "")
    model_prefix: str = pb.field(2, pb.TEXT, "")
    model_type: int = pb.field(3, pb.ENUM, MODEL_TYPE_UNIGRAM, frozenset(range(1, 5)))
    vocab_size: int = pb.field(4, pb.INT32, 8000)
    accept_language: Tuple[str, ...] = pb.field(5, pb.REPEATED_TEXT, ())
    self_test_sample_size: int = pb.field(6, pb.INT32, 0)
    character_coverage: float = pb.field(10, pb.FLOAT, 0.9995)
    input_sentence_size: int = pb.field(11, pb.UINT64, 0)
    shuffle_input_sentence: bool = pb.field(19, pb.BOOL, True)
    mining_sentence_size: int = pb.field(12, pb.INT32, 0)  # deprecated
    training_sentence_size: int = pb.field(13, pb.INT32, 0)  # deprecated
    seed_sentencepiece_size: int = pb.field(14, pb.INT32, 1000000)
    shrinking_factor: float = pb.field(15, pb.FLOAT, 0.75)
    max_sentence_length: int = pb.field(18, pb.INT32, 4192)
    num_threads: int = pb.field(16, pb.INT32, 16)
    num_sub_iterations: int = pb.field(17, pb.INT32, 2)
    max_sentencepiece_length: int = pb.field(20, pb.INT32, 16)
    split_by_unicode_script: bool = pb.field(21, pb.BOOL, True)
    split_by_number: bool = pb.field(23, pb.BOOL, True)
    split_by_whitespace: bool = pb.field(22, pb.BOOL, True)
    treat_whitespace_as_suffix: bool = pb.field(24, pb.BOOL, False)
    allow_whitespace_only_pieces: bool = pb.field(26, pb.BOOL, False)
    split_digits: bool = pb.field(25, pb.BOOL, False)
    pretokenization_delimiter: str = pb.field(53, pb.STRING, "")
    control_symbols: Tuple[str, ...] = pb.field(30, pb.REPEATED_TEXT, ())
    user_defined_symbols: Tuple[str, ...] = pb.field(31, pb.REPEATED_TEXT, ())
    required_chars: str = pb.field(36, pb.TEXT, "")
    byte_fallback: bool = pb.field(35, pb.BOOL, False)
    vocabulary_output_piece_score: bool = pb.field(32, pb.BOOL, True)
    hard_vocab_limit: bool = pb.field(33, pb.BOOL, True)
    use_all_vocab: bool = pb.field(34, pb.BOOL, False)
    unk_id: int = pb.field(40, pb.INT32, 0)
    bos_id: int = pb.field(41, pb.INT32, 1)
    eos_id: int = pb.field(42, pb.INT32, 2)
    pad_id: int = pb.field(43, pb.INT32, -1)
    unk_piece: str = pb.field(45, pb.STRING, "<unk>")
    bos_piece: str = pb.field(46, pb.STRING, "<s>")
    eos_piece: str = pb.field(47, pb.STRING, "</s>")
    pad_piece: str = pb.field(48, pb.STRING, "<pad>")
    unk_surface: str = pb.field(44, pb.STRING, " \u2047 ")
    seed_sentencepieces_file: str = pb.field(54, pb.TEXT, "")
    auto_character_coverage: bool = pb.field(55, pb.BOOL, False)
    train_extremely_large_corpus: bool = pb.field(49, pb.BOOL, False)
    enable_differential_privacy: bool = pb.field(50, pb.BOOL, False)
    differential_privacy_noise_level: float = pb.field(51, pb.FLOAT, 0.0)
    differential_privacy_clipping_threshold: int = pb.field(52, pb.UINT64, 0)


class NormalizerSpec(pb.Message):
    """``sentencepiece.NormalizerSpec``: every field with its proto default."""

    name: str = pb.field(1, pb.STRING, "")
    precompiled_charsmap: bytes = pb.field(2, pb.BYTES, b"")
    add_dummy_prefix: bool = pb.field(3, pb.BOOL, True)
    remove_extra_whitespaces: bool = pb.field(4, pb.BOOL, True)
    escape_whitespaces: bool = pb.field(5, pb.BOOL, True)
    normalization_rule_tsv: str = pb.field(6, pb.TEXT, "")


# The reconstructor that TrainerSpec and NormalizerSpec pickles of earlier versions name.
_make_spec = pb.make_message

# ModelProto (self_test_data is skipped) and ModelProto.SentencePiece.
_MODEL_FIELDS = {1: pb.Field("pieces", pb.RAW, None), 2: pb.Field("trainer_spec", pb.MESSAGE, TrainerSpec),
                 3: pb.Field("normalizer_spec", pb.MESSAGE, NormalizerSpec),
                 4: pb.Field("self_test_data", pb.RAW, None),
                 5: pb.Field("denormalizer_spec", pb.MESSAGE, NormalizerSpec)}
_PIECE_FIELDS = {1: pb.Field("piece", pb.SPAN, None), 2: pb.Field("score", pb.FLOAT_BITS, None),
                 3: pb.Field("type", pb.ENUM, TYPE_NORMAL, frozenset(map(int, TokenType)))}
_PIECE_WHAT = {"piece": "the piece string", "score": "the score", "type": "the type"}


class SpmModelProto:
    """A decoded ``ModelProto``.  Piece ``i`` is ``arena[offsets[i]:offsets[i + 1]]``,
    ``scores`` an ``array('f')``, ``types`` one ``SentencePiece.Type`` byte per piece.
    ``normalizer`` and ``denormalizer`` are ``None`` when the file has none."""

    __slots__ = ("path", "arena", "offsets", "scores", "types", "trainer", "normalizer", "denormalizer",
                 "_checked_pieces")

    def __init__(
        self, arena: bytes, offsets: "array[int]", scores: "array[float]", types: bytes, trainer: TrainerSpec,
        normalizer: Optional[NormalizerSpec], denormalizer: Optional[NormalizerSpec], path: Optional[str] = None,
    ) -> None:
        self.path = path
        self.arena, self.offsets, self.scores, self.types = arena, offsets, scores, types
        self.trainer, self.normalizer, self.denormalizer = trainer, normalizer, denormalizer
        # (arena, a copy of the offsets) when the reader found every piece valid UTF-8.
        self._checked_pieces: Optional[Tuple[bytes, "array[int]"]] = None

    def pieces_checked(self) -> bool:
        """Whether the pieces are still those the reader found valid UTF-8."""
        checked, offsets = self._checked_pieces, self.offsets
        return (checked is not None and checked[0] is self.arena and isinstance(offsets, array)
                and offsets.typecode == "q" and checked[1] == offsets)

    def __len__(self) -> int:
        return len(self.types)

    num_pieces = property(__len__)

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
    bad: Optional[Tuple[int, int]] = None  # the first piece not valid UTF-8: (index, where its string starts)
    settings: Dict[str, Any] = {}
    pos = 0
    top = pb.message_label("ModelProto")

    def label(f: pb.Field, number: int, wrong: bool) -> str:
        return f"piece {len(types)}" if number == 1 and not wrong else top(f, number, wrong)

    while pos < len(data):
        if data[pos] == 0x0A:  # pieces in the layout every serializer writes, scanned in C (and checked)
            run, run_offsets, run_scores, run_types, stop, run_bad = scan_model_pieces(data, pos, offsets[-1])
            if stop != pos:
                if bad is None and run_bad >= 0:
                    at = pos
                    for _ in range(run_bad):  # (in this layout: key 0x0A, length, then the piece message)
                        at += 2 + data[at + 1]
                    bad = (len(types) + run_bad, at + 4)
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
            start, end, score, typ = _read_piece(data, value, nxt, len(types), spath)
            try:
                data[start:end].decode("utf-8")
            except UnicodeDecodeError:
                bad = (len(types), start) if bad is None else bad
            arenas.append(data[start:end])
            offsets.append(offsets[-1] + end - start)
            scores.frombytes(score)
            types.append(typ)
        elif f is not None:
            pb.store(data, f, value, nxt, settings, spath, label)
        pos = nxt
    if not types:
        pb.fail(spath, None, "not a sentencepiece model: it has no pieces")
    arena = b"".join(arenas)  # (one run: that bytes object itself, not copied)
    if sys.byteorder == "big":  # pragma: no cover
        scores.byteswap()
    if bad is not None:  # every piece must be valid UTF-8 on its own, as sentencepiece requires
        index, at = bad
        chunk = arena[offsets[index] : offsets[index + 1]]
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            pb.fail(spath, at + exc.start, f"piece {index} is not valid UTF-8: {chunk!r}")
        raise AssertionError(f"piece {index} was found invalid but decodes")  # pragma: no cover
    normalizer, denormalizer = settings.get("normalizer_spec"), settings.get("denormalizer_spec")
    proto = SpmModelProto(
        arena, offsets, scores, bytes(types), pb.make_message(TrainerSpec, settings.get("trainer_spec", {})),
        None if normalizer is None else pb.make_message(NormalizerSpec, normalizer),
        None if denormalizer is None else pb.make_message(NormalizerSpec, denormalizer), spath,
    )
    proto._checked_pieces = (arena, offsets[:])
    return proto


def _read_piece(data: bytes, pos: int, end: int, index: int, path: Optional[str]) -> Tuple[int, int, bytes, int]:
    """One ``SentencePiece`` message: (where its string starts, where it ends, the score's 4 bytes, type)."""
    def label(f: pb.Field, number: int, wrong: bool) -> str:
        return f"piece {index}: " + (f"SentencePiece.{f.name}" if wrong else _PIECE_WHAT[f.name])
    values: Dict[str, Any] = {}
    pb.read_message(data, pos, end, path, _PIECE_FIELDS, values, label)
    start, stop = values.get("piece", (pos, pos))
    return start, stop, values.get("score", b"\x00\x00\x00\x00"), values.get("type", TYPE_NORMAL)


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
    fields in number order, so a model starts with its first piece: key 0x0A, a varint
    length, and a ``SentencePiece`` message starting with a valid key (normally 0x0A)."""
    head = bytes(head[:64])
    if len(head) < 2 or head[0] != 0x0A:
        return False
    try:
        ln, pos = pb.read_varint(head, 1, min(len(head), 11), None)  # (at most 10 bytes)
    except ModelFormatError:
        return False
    if ln == 0:
        return False
    if pos >= len(head):
        return True
    key = head[pos]
    if key & 0x80:
        return True  # a multi-byte key (field >= 16, e.g. an extension): unusual but valid
    if key >> 3 == 0 or key & 7 not in (pb.VARINT, pb.I64, pb.LEN, pb.I32):
        return False
    # The piece string (normally first): its length must fit in the piece message.
    return not (key == 0x0A and pos + 1 < len(head) and head[pos + 1] < 0x80 and head[pos + 1] + 2 > ln)
