"""Build sentencepiece ``ModelProto`` bytes without the protobuf package.

A sentencepiece ``.model`` file is one serialized ``sentencepiece.ModelProto``
(proto2).  The tests only ever need to *write* one, from a vocabulary
(pieces, scores, types) and a handful of settings, so this module is a small
protobuf encoder covering exactly the wire forms those fields use:

* varint (wire type 0): ints, bools and enums.  Negative int32 values (pad_id
  -1) are written as their 64-bit two's complement, ten bytes, as protobuf does;
* 32-bit (wire type 5): ``float`` fields, little-endian IEEE-754 single;
* length-delimited (wire type 2): strings, bytes and embedded messages.

Field numbers come from ``src/sentencepiece_model.proto`` (the copy compiled
into the installed sentencepiece's ``sentencepiece_model_pb2.py`` agrees):

ModelProto
    1 pieces (repeated SentencePiece), 2 trainer_spec, 3 normalizer_spec
ModelProto.SentencePiece
    1 piece (string), 2 score (float), 3 type (enum: NORMAL 1, UNKNOWN 2,
    CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6 -- the same numbers as
    GGUF's ``tokenizer.ggml.token_type``)
TrainerSpec
    3 model_type (enum: UNIGRAM 1, BPE 2, WORD 3, CHAR 4), 4 vocab_size,
    35 byte_fallback, 40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id
NormalizerSpec
    1 name, 2 precompiled_charsmap (bytes), 3 add_dummy_prefix,
    4 remove_extra_whitespaces, 5 escape_whitespaces

sentencepiece reads the unk/bos/eos/pad ids only when training: a loaded model
finds ``<unk>`` by its piece type and ``<s>``, ``</s>``, ``<pad>`` by their
text (TrainerSpec.bos_piece etc., left at those defaults here).  They are
written anyway, as a trained model records them.

Fields are written in field-number order, every field of a message once, so
the output is what a protobuf serializer produces for the same message.
"""

from __future__ import annotations

import struct
from typing import Iterable, Optional, Sequence, Union

__all__ = [
    "MODEL_TYPE_UNIGRAM",
    "MODEL_TYPE_BPE",
    "bpe_model_proto",
    "model_proto",
    "sentence_piece",
    "trainer_spec",
    "normalizer_spec",
]

MODEL_TYPE_UNIGRAM = 1
MODEL_TYPE_BPE = 2

_VARINT = 0
_FIXED32 = 5
_LEN = 2

Text = Union[str, bytes]


# ---------------------------------------------------------------- wire forms


def _varint(value: int) -> bytes:
    """Base-128 varint, low 7 bits first; negatives as 64-bit two's complement."""
    if value < 0:
        value += 1 << 64
    if not 0 <= value < 1 << 64:
        raise ValueError(f"varint out of range: {value}")
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _int(field: int, value: int) -> bytes:
    """int32 / enum field."""
    return _key(field, _VARINT) + _varint(int(value))


def _bool(field: int, value: bool) -> bytes:
    return _key(field, _VARINT) + (b"\x01" if value else b"\x00")


def _float(field: int, value: float) -> bytes:
    # struct rounds a double to the nearest single; GGUF scores are already
    # float32, so they come through bit for bit.
    return _key(field, _FIXED32) + struct.pack("<f", value)


def _bytes(field: int, value: Text) -> bytes:
    """string / bytes / embedded message field."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    return _key(field, _LEN) + _varint(len(value)) + bytes(value)


# ---------------------------------------------------------------- messages


def sentence_piece(piece: Text, score: float, type_: int) -> bytes:
    """One ``ModelProto.SentencePiece`` message (unframed)."""
    if not piece:
        raise ValueError("sentencepiece rejects empty pieces")
    return _bytes(1, piece) + _float(2, score) + _int(3, type_)


def trainer_spec(
    *,
    model_type: int = MODEL_TYPE_BPE,
    vocab_size: int,
    byte_fallback: bool = True,
    unk_id: int = 0,
    bos_id: int = 1,
    eos_id: int = 2,
    pad_id: int = -1,
    unk_surface: Optional[str] = None,
) -> bytes:
    """The ``TrainerSpec`` fields that matter when encoding (unframed);
    ``unk_surface`` (decoding) only when given."""
    return (
        _int(3, model_type)
        + _int(4, vocab_size)
        + _bool(35, byte_fallback)
        + _int(40, unk_id)
        + _int(41, bos_id)
        + _int(42, eos_id)
        + _int(43, pad_id)
        + (b"" if unk_surface is None else _bytes(44, unk_surface))
    )


def normalizer_spec(
    *,
    name: str = "identity",
    precompiled_charsmap: bytes = b"",
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = False,
    escape_whitespaces: bool = True,
) -> bytes:
    """A ``NormalizerSpec`` (unframed).  An empty charsmap means no rewriting
    of characters, which is what the "identity" rule compiles to."""
    return (
        _bytes(1, name)
        + _bytes(2, precompiled_charsmap)
        + _bool(3, add_dummy_prefix)
        + _bool(4, remove_extra_whitespaces)
        + _bool(5, escape_whitespaces)
    )


def model_proto(
    pieces: Sequence[Text],
    scores: Sequence[float],
    types: Sequence[int],
    *,
    trainer: bytes,
    normalizer: bytes,
) -> bytes:
    """A serialized ``ModelProto``: the pieces in id order, then the specs
    (``trainer`` / ``normalizer`` as built by the functions above)."""
    if not len(pieces) == len(scores) == len(types):
        raise ValueError(
            f"pieces, scores and types differ in length: "
            f"{len(pieces)}, {len(scores)}, {len(types)}"
        )
    parts: list = [
        _bytes(1, sentence_piece(p, s, t)) for p, s, t in zip(pieces, scores, types)
    ]
    parts.append(_bytes(2, trainer))
    parts.append(_bytes(3, normalizer))
    return b"".join(parts)


def bpe_model_proto(
    pieces: Sequence[Text],
    scores: Sequence[float],
    types: Iterable[int],
    *,
    unk_id: int = 0,
    bos_id: int = 1,
    eos_id: int = 2,
    pad_id: int = -1,
    byte_fallback: bool = True,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = False,
    escape_whitespaces: bool = True,
    normalizer_name: str = "identity",
    unk_surface: Optional[str] = None,
) -> bytes:
    """A sentencepiece BPE model with Llama 2's settings by default."""
    types = list(types)
    return model_proto(
        pieces,
        scores,
        types,
        trainer=trainer_spec(
            model_type=MODEL_TYPE_BPE,
            vocab_size=len(pieces),
            byte_fallback=byte_fallback,
            unk_id=unk_id,
            bos_id=bos_id,
            eos_id=eos_id,
            pad_id=pad_id,
            unk_surface=unk_surface,
        ),
        normalizer=normalizer_spec(
            name=normalizer_name,
            add_dummy_prefix=add_dummy_prefix,
            remove_extra_whitespaces=remove_extra_whitespaces,
            escape_whitespaces=escape_whitespaces,
        ),
    )
