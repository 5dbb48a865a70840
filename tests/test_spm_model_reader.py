"""Tests of spmbpe._spm_model, the pure-Python sentencepiece ModelProto reader.

The Mistral models are checked piece by piece against the live sentencepiece
library.  Settings are checked against values read off the files' bytes by
hand (protobuf, which would give sentencepiece_model_pb2, is not a test
dependency; when it happens to be importable the settings are also compared
with it).  Synthetic models are built with the small encoder below, and
sentencepiece's own re-serialization (``serialized_model_proto``, which is
canonical protobuf output) serves as the reference for the unusual encodings.
"""

from __future__ import annotations

import dataclasses
import pathlib
import random
import struct
from typing import List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spmbpe._spm_model import (
    MODEL_TYPE_BPE,
    MODEL_TYPE_UNIGRAM,
    TYPE_BYTE,
    TYPE_CONTROL,
    TYPE_NORMAL,
    TYPE_UNKNOWN,
    TYPE_UNUSED,
    TYPE_USER_DEFINED,
    NormalizerSpec,
    SpmModelProto,
    TrainerSpec,
    is_model_proto,
    parse_model_proto,
    read_model_proto,
)
from spmbpe.errors import ModelFormatError
from long_run import examples
from spm_proto import _key, _varint  # the test suite's ModelProto writer

DATA_DIR = pathlib.Path(__file__).parent / "data"
MISTRAL_V1 = DATA_DIR / "mistral-v1.model"
MISTRAL_V3 = DATA_DIR / "mistral-v3.model"
LLAMA_SPM_GGUF = DATA_DIR / "ggml-vocab-llama-spm.gguf"

MISTRAL_MODELS = [MISTRAL_V1, MISTRAL_V3]


# ------------------------------------------------------------ a tiny encoder


def _ld(field: int, payload) -> bytes:
    """A length-delimited field (string, bytes, embedded message)."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return _key(field, 2) + _varint(len(payload)) + payload


def _vi(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _f32(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", value)


def _piece(text, score: Optional[float] = None, typ: Optional[int] = None) -> bytes:
    body = _ld(1, text)
    if score is not None:
        body += _f32(2, score)
    if typ is not None:
        body += _vi(3, typ)
    return _ld(1, body)


# A small but loadable BPE model (sentencepiece needs <unk> and the pieces
# named by bos/eos).
_SMALL_PIECES: List[Tuple[str, float, Optional[int]]] = [
    ("<unk>", 0.0, TYPE_UNKNOWN),
    ("<s>", 0.0, TYPE_CONTROL),
    ("</s>", 0.0, TYPE_CONTROL),
    ("c", -0.5, None),
    ("[X]", 0.0, TYPE_USER_DEFINED),
    ("\u2581", -1.0, None),
    ("a", -2.0, None),
    ("b", -3.0, None),
    ("\u00e9", -4.0, TYPE_NORMAL),
    ("\u2581a", -5.0, None),
    ("ab", -6.5, None),
    ("\u2581ab", -7.25, None),
    ("unused", 0.0, TYPE_UNUSED),
]

_SMALL_TRAINER = _ld(
    2,
    _vi(3, MODEL_TYPE_BPE)
    + _vi(4, len(_SMALL_PIECES))
    + _vi(35, 0)
    + _vi(43, -1)
    + _ld(44, " \u2047 "),
)
_SMALL_NORMALIZER = _ld(3, _ld(1, "identity") + _ld(2, b"") + _vi(3, 1) + _vi(4, 0))


def _small_model() -> bytes:
    return b"".join(_piece(*p) for p in _SMALL_PIECES) + _SMALL_TRAINER + _SMALL_NORMALIZER


def _top_level_boundaries(data: bytes) -> List[int]:
    """Offsets at which a top-level field of ``data`` ends (independent walk)."""
    out = []
    pos = 0
    while pos < len(data):
        key = 0
        shift = 0
        while True:
            b = data[pos]
            pos += 1
            key |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        assert key & 7 == 2
        ln = 0
        shift = 0
        while True:
            b = data[pos]
            pos += 1
            ln |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        pos += ln
        out.append(pos)
    return out


def _as_tuples(m: SpmModelProto):
    return [(m.piece(i), m.scores[i], m.types[i]) for i in range(len(m))]


# ------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", params=MISTRAL_MODELS, ids=lambda p: p.stem)
def mistral(request):
    return request.param, read_model_proto(request.param)


# --------------------------------------------------- against sentencepiece


def test_pieces_scores_types_match_sentencepiece(mistral):
    import sentencepiece as spm
    path, model = mistral
    sp = spm.SentencePieceProcessor(model_file=str(path))
    n = sp.get_piece_size()
    assert len(model) == n
    assert len(model.offsets) == n + 1
    assert model.offsets[0] == 0 and model.offsets[-1] == len(model.arena)
    assert model.pieces == [sp.id_to_piece(i) for i in range(n)]
    # float32 scores widen to the same double on both sides.
    assert list(model.scores) == [sp.get_score(i) for i in range(n)]

    flags = [
        (sp.is_unknown(i), sp.is_control(i), sp.is_unused(i), sp.is_byte(i)) for i in range(n)
    ]
    for i, (unk, ctl, unused, byte) in enumerate(flags):
        t = model.types[i]
        assert unk == (t == TYPE_UNKNOWN), i
        assert ctl == (t == TYPE_CONTROL), i
        assert unused == (t == TYPE_UNUSED), i
        assert byte == (t == TYPE_BYTE), i
        assert t in (1, 2, 3, 4, 5, 6)

    # sentencepiece has no is_user_defined(); a USER_DEFINED piece is matched
    # as a unit anywhere in the text, so it shows up when encoded inside
    # other text.
    for i in (i for i in range(n) if model.types[i] == TYPE_USER_DEFINED):
        assert i in sp.encode("x" + model.piece(i) + "x"), model.piece(i)

    # sentencepiece's canonical re-serialization reads back identically.
    again = parse_model_proto(sp.serialized_model_proto())
    assert again.arena == model.arena
    assert again.offsets == model.offsets
    assert again.scores == model.scores
    assert again.types == model.types
    assert again.trainer == model.trainer
    assert again.normalizer == model.normalizer

    assert model.trainer.unk_id == sp.unk_id()
    assert model.trainer.bos_id == sp.bos_id()
    assert model.trainer.eos_id == sp.eos_id()
    assert model.trainer.pad_id == sp.pad_id()


def test_piece_accessors(mistral):
    _, model = mistral
    assert model.piece(0) == "<unk>"
    assert model.piece_bytes(1) == b"<s>"
    assert model.piece(2) == "</s>"
    with pytest.raises(IndexError):
        model.piece(len(model))
    with pytest.raises(IndexError):
        model.piece(-1)
    assert model.types.count(TYPE_BYTE) == 256
    assert model.types.count(TYPE_UNKNOWN) == 1
    first_byte = model.types.index(TYPE_BYTE)
    assert [model.piece(first_byte + k) for k in (0, 10, 255)] == ["<0x00>", "<0x0A>", "<0xFF>"]


# Settings, read off the bytes of the files by hand (trainer_spec is the
# top-level field 2 after the pieces, normalizer_spec field 3):
#   18 02          model_type = BPE       20 80 fa 01   vocab_size = 32000
#   98 02 01       byte_fallback = true   c8 01 01      split_digits = true
#   d0 01 01       allow_whitespace_only_pieces = true
#   c0 01 00       treat_whitespace_as_suffix = false
#   c0 02 00 / c8 02 01 / d0 02 02 / d8 02 ff..ff 01   unk/bos/eos/pad = 0/1/2/-1
#   normalizer: 0a 08 "identity", 12 00 (charsmap empty), 18 01 (dummy prefix),
#   20 00 (remove_extra_whitespaces false); escape_whitespaces absent -> true.
_MISTRAL_SETTINGS = {
    "model_type": MODEL_TYPE_BPE,
    "byte_fallback": True,
    "treat_whitespace_as_suffix": False,
    "unk_id": 0,
    "bos_id": 1,
    "eos_id": 2,
    "pad_id": -1,
    "bos_piece": "<s>",
    "eos_piece": "</s>",
    "pad_piece": "<pad>",
    "unk_surface": " \u2047 ",
}


@pytest.mark.parametrize(
    "path, vocab_size, n_control, n_user",
    [(MISTRAL_V1, 32000, 2, 0), (MISTRAL_V3, 32768, 750, 20)],
    ids=["mistral-v1", "mistral-v3"],
)
def test_mistral_settings(path, vocab_size, n_control, n_user):
    model = read_model_proto(path)
    t = model.trainer
    assert isinstance(t, TrainerSpec)
    for name, value in _MISTRAL_SETTINGS.items():
        assert getattr(t, name) == value, name
    assert len(model) == vocab_size
    assert model.types.count(TYPE_CONTROL) == n_control
    assert model.types.count(TYPE_USER_DEFINED) == n_user
    if n_user:
        assert model.piece(3) == "[INST]"

    norm = model.normalizer
    assert isinstance(norm, NormalizerSpec)
    assert norm.name == "identity"
    assert norm.precompiled_charsmap == b""
    assert norm.add_dummy_prefix is True
    assert norm.remove_extra_whitespaces is False
    assert norm.escape_whitespaces is True  # absent: the proto default
    assert model.denormalizer is None


def test_settings_against_protobuf_if_available(mistral):
    from sentencepiece import sentencepiece_model_pb2 as pb2
    path, model = mistral
    proto = pb2.ModelProto()
    proto.ParseFromString(path.read_bytes())
    for ours, theirs in ((model.trainer, proto.trainer_spec), (model.normalizer, proto.normalizer_spec)):
        for name, value in dataclasses.asdict(ours).items():
            assert value == getattr(theirs, name), name


def test_the_field_tables_are_sentencepieces_schema():
    # Each field spmbpe reads has sentencepiece's number, wire type and
    # default (sentencepiece_model.proto, as the protobuf module compiles it).
    from sentencepiece import sentencepiece_model_pb2 as pb2
    from google.protobuf.descriptor import FieldDescriptor as FD
    from spmbpe import _protobuf as pb

    wire = {FD.TYPE_INT32: pb.VARINT, FD.TYPE_ENUM: pb.VARINT, FD.TYPE_BOOL: pb.VARINT,
            FD.TYPE_STRING: pb.LEN, FD.TYPE_BYTES: pb.LEN}
    for cls, theirs in ((TrainerSpec, pb2.TrainerSpec()), (NormalizerSpec, pb2.NormalizerSpec())):
        for number, field in cls.FIELDS.items():
            descriptor = theirs.DESCRIPTOR.fields_by_name[field.name]
            assert descriptor.number == number, field.name
            assert wire[descriptor.type] == field.kind[0], field.name
            assert getattr(theirs, field.name) == field.default == getattr(cls(), field.name), field.name
            if descriptor.type == FD.TYPE_ENUM:
                assert field.values == {v.number for v in descriptor.enum_type.values}, field.name


def test_defaults_without_settings():
    model = parse_model_proto(_piece("a", -1.0))
    t = model.trainer
    assert t == TrainerSpec()
    assert t.model_type == MODEL_TYPE_UNIGRAM
    assert t.byte_fallback is False
    assert (t.unk_id, t.bos_id, t.eos_id, t.pad_id) == (0, 1, 2, -1)
    assert (t.bos_piece, t.eos_piece, t.pad_piece) == ("<s>", "</s>", "<pad>")
    assert t.unk_surface == " \u2047 "
    assert t.treat_whitespace_as_suffix is False
    assert model.normalizer is None and model.denormalizer is None
    d = model.normalizer_or_default
    assert (d.name, d.add_dummy_prefix, d.remove_extra_whitespaces, d.escape_whitespaces) == (
        "",
        True,
        True,
        True,
    )
    assert model.types == bytes([TYPE_NORMAL])
    # An empty normalizer_spec message is present, with all defaults.
    model = parse_model_proto(_piece("a") + _ld(3, b"") + _ld(5, _vi(3, 0)))
    assert model.normalizer == NormalizerSpec()
    assert model.denormalizer.add_dummy_prefix is False
    assert model.scores[0] == 0.0


# ------------------------------------------------------ synthetic encodings


def test_small_model_against_sentencepiece():
    import sentencepiece as spm
    data = _small_model()
    model = parse_model_proto(data)
    assert _as_tuples(model) == [
        (p, s, TYPE_NORMAL if t is None else t) for p, s, t in _SMALL_PIECES
    ]
    sp = spm.SentencePieceProcessor(model_proto=data)
    assert model.pieces == [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    assert model.trainer.byte_fallback is False
    assert model.normalizer.remove_extra_whitespaces is False
    assert sp.is_unused(len(_SMALL_PIECES) - 1) and sp.is_unknown(0)
    assert "[X]" in sp.encode("x[X]x", out_type=str)  # USER_DEFINED: matched whole


def _tricky_model() -> bytes:
    """The small model, re-encoded every unusual-but-valid way."""
    out = []
    for i, (text, score, typ) in enumerate(_SMALL_PIECES):
        body_fields = [_ld(1, text), _f32(2, score)]
        if typ is not None:
            body_fields.append(_vi(3, typ))
        if i % 3 == 1:
            body_fields.reverse()  # fields in any order
        if i % 4 == 2:
            # unknown fields of every wire type, an extension-range field
            body_fields.insert(1, _vi(7, 5) + _key(8, 1) + b"12345678" + _ld(201, b"zz")
                               + _key(9, 5) + b"abcd")
        if i == 6:
            body_fields.insert(0, _ld(1, "overwritten"))  # last occurrence wins
            body_fields.append(_vi(3, 99))  # unknown enum value: not stored
        if i == 7:
            body_fields.append(_vi(3, TYPE_NORMAL | (1 << 40)))  # int32 truncation
        body = b"".join(body_fields)
        if i == 9:
            out.append(b"\x0a" + bytes([0x80 | len(body), 0x00]) + body)  # 2-byte length
        elif i == 10:
            out.append(bytes([0x8A, 0x00]) + _varint(len(body)) + body)  # 2-byte key
        else:
            out.append(_ld(1, body))
    # trainer_spec twice (merged), with an unknown enum value, negative int32,
    # and fields spmbpe does not read (repeated strings, a float, a uint64)
    # spread over both halves.
    out.insert(3, _ld(2, _vi(3, MODEL_TYPE_BPE) + _vi(41, 7) + _ld(30, "c1") + _vi(999, 1)))
    out.append(
        _ld(
            2,
            _vi(3, 17)
            + _vi(41, 1)
            + _ld(30, "c2")
            + _vi(24, 5)  # bool: any non-zero
            + _vi(43, -1)
            + _vi(40, (1 << 32) | 0)  # low 32 bits
            + _f32(10, 0.5)
            + _vi(11, (1 << 64) - 1)
        )
    )
    out.append(_ld(3, _ld(1, "nmt_nfkc") + _vi(4, 1)))
    out.append(_ld(3, _vi(4, 0) + _vi(5, 0)))  # merged into the first
    out.append(_ld(4, _ld(1, _ld(1, "in") + _ld(2, "out"))))  # self_test_data
    out.append(_key(6, 1) + b"\x00" * 8 + _key(7, 5) + b"\x00" * 4 + _vi(300, 1))
    return b"".join(out)


def test_tricky_encodings():
    data = _tricky_model()
    model = parse_model_proto(data)
    assert _as_tuples(model) == [
        (p, s, TYPE_NORMAL if t is None else t) for p, s, t in _SMALL_PIECES
    ]
    t = model.trainer
    assert t.model_type == MODEL_TYPE_BPE  # 17 is not a ModelType
    assert t.bos_id == 1 and t.unk_id == 0 and t.pad_id == -1
    assert t.treat_whitespace_as_suffix is True
    n = model.normalizer
    assert n.name == "nmt_nfkc"
    assert n.remove_extra_whitespaces is False and n.escape_whitespaces is False
    assert n.add_dummy_prefix is True


def test_tricky_encodings_match_protobuf_reserialization():
    import sentencepiece as spm
    data = _tricky_model()
    sp = spm.SentencePieceProcessor(model_proto=data)
    canonical = sp.serialized_model_proto()
    assert canonical != data
    ours = parse_model_proto(data)
    ref = parse_model_proto(canonical)
    assert _as_tuples(ours) == _as_tuples(ref)
    assert ours.trainer == ref.trainer
    assert ours.normalizer == ref.normalizer


def test_long_and_unusual_pieces_take_the_general_path():
    long_piece = "\u00e9" * 100  # 200 bytes: two-byte lengths
    pieces = [("<unk>", 0.0, TYPE_UNKNOWN), (long_piece, -1.5, None), ("", -2.0, None),
              ("x", -3.0, TYPE_USER_DEFINED)]
    data = b"".join(_piece(*p) for p in pieces) + _piece("y") + _piece("z", typ=TYPE_BYTE)
    model = parse_model_proto(data)
    assert model.pieces == ["<unk>", long_piece, "", "x", "y", "z"]
    assert list(model.scores) == [0.0, -1.5, -2.0, -3.0, 0.0, 0.0]
    assert model.types == bytes([2, 1, 1, 4, 1, 6])
    assert list(model.offsets) == [0, 5, 205, 205, 206, 207, 208]


def test_input_types_and_paths(tmp_path):
    data = _small_model()
    ref = _as_tuples(parse_model_proto(data))
    assert _as_tuples(parse_model_proto(bytearray(data))) == ref
    assert _as_tuples(parse_model_proto(memoryview(data))) == ref
    p = tmp_path / "small.model"
    p.write_bytes(data)
    assert _as_tuples(read_model_proto(p)) == ref
    assert read_model_proto(str(p)).path == str(p)
    with pytest.raises(FileNotFoundError):
        read_model_proto(tmp_path / "missing.model")


# ------------------------------------------------------------------ errors


def _error(data: bytes, path=None) -> ModelFormatError:
    with pytest.raises(ModelFormatError) as info:
        parse_model_proto(data, path)
    assert isinstance(info.value, ValueError)
    return info.value


def test_truncation_at_every_offset_of_a_small_model():
    data = _small_model()
    boundaries = set(_top_level_boundaries(data))
    full = _as_tuples(parse_model_proto(data))
    for cut in range(len(data)):
        prefix = data[:cut]
        if cut in boundaries:
            # A protobuf message cut between two top-level fields is a valid,
            # shorter message.
            model = parse_model_proto(prefix)
            assert _as_tuples(model) == full[: len(model)]
            continue
        err = _error(prefix, "small.model")
        if cut == 0:
            assert err.offset is None and "no pieces" in str(err)
        else:
            assert err.offset is not None and 0 <= err.offset < cut, (cut, err)
            assert err.path == "small.model"
            assert "truncated" in str(err), (cut, str(err))


def test_truncated_mistral():
    data = MISTRAL_V1.read_bytes()
    boundaries = _top_level_boundaries(data)
    trainer_end, normalizer_end = boundaries[-2], boundaries[-1]
    cuts = [1, 2, 5, 15, 16 + 7, 4000, 100001, trainer_end - 3, trainer_end - 230,
            normalizer_end - 1, normalizer_end - 10]
    assert normalizer_end == len(data)
    for cut in cuts:
        assert cut not in boundaries
        err = _error(data[:cut], MISTRAL_V1)
        assert err.offset is not None and 0 <= err.offset < cut
        assert str(MISTRAL_V1) in str(err)
    # Cut exactly after the last piece: a valid ModelProto without settings.
    model = parse_model_proto(data[: boundaries[-3]])
    assert len(model) == 32000 and model.trainer.model_type == MODEL_TYPE_UNIGRAM


def test_not_a_model():
    err = _error(b"")
    assert err.offset is None
    err = _error(_SMALL_TRAINER + _SMALL_NORMALIZER)  # well-formed, no pieces
    assert err.offset is None and "no pieces" in err.reason
    _error(b"\x00" * 64)  # field number 0
    assert _error(b"\x00").offset == 0
    _error(b'{"model": {"type": "BPE"}}')  # JSON: '{' is a group start key
    _error(b"\n" * 100)  # 0x0A 0x0A ...: a piece whose length runs off
    _error(LLAMA_SPM_GGUF.read_bytes())
    _error(b"GGUF\x03\x00\x00\x00" + bytes(64))
    rng = random.Random(1234)
    for size in (1, 2, 3, 7, 100, 4096, 65536):
        for _ in range(20):
            _error(bytes(rng.getrandbits(8) for _ in range(size)) if size < 4096
                   else rng.randbytes(size) if hasattr(rng, "randbytes")
                   else bytes(rng.getrandbits(8) for _ in range(size)))


def test_gguf_file_fails_fast(tmp_path):
    err = None
    with pytest.raises(ModelFormatError) as info:
        read_model_proto(LLAMA_SPM_GGUF)
    err = info.value
    assert err.offset == 0 and "wire type 7" in err.reason
    assert err.path == str(LLAMA_SPM_GGUF)


def test_invalid_varints():
    # An 11-byte length varint.
    err = _error(b"\x0a" + b"\xff" * 10 + b"\x01" + b"\x00" * 20)
    assert err.offset == 1 and "more than 10 bytes" in err.reason
    # An overlong varint inside a piece (the type field).
    err = _error(_ld(1, _ld(1, "a") + b"\x18" + b"\x80" * 10 + b"\x01") + _piece("b"))
    assert err.offset == 6 and "more than 10 bytes" in err.reason
    # ... and inside trainer_spec.
    err = _error(_piece("a") + _ld(2, b"\x20" + b"\xff" * 11))
    assert "more than 10 bytes" in err.reason
    # A varint cut by the end of the enclosing message (not the file).
    err = _error(_ld(1, _ld(1, "a") + b"\x18\x80") + _piece("b"))
    assert "enclosing message" in err.reason and err.offset == 5
    # A ten-byte varint is fine (negative int32).
    model = parse_model_proto(_piece("a") + _ld(2, _vi(43, -5)))
    assert model.trainer.pad_id == -5


def test_huge_lengths():
    for n in (2**60, 2**63, 2**64 - 1, 10**9):
        err = _error(b"\x0a" + _varint(n) + b"\x0a\x01a")
        assert err.offset == 0 and "truncated" in err.reason
        err = _error(_piece("a") + b"\x12" + _varint(n) + b"\x00" * 10)
        assert err.offset == len(_piece("a"))
        err = _error(_piece("a") + _ld(2, _key(46, 2) + _varint(n) + b"<x>") + _piece("b"))
        assert "TrainerSpec.bos_piece" in err.reason and "enclosing" in err.reason
        assert err.offset == len(_piece("a")) + 2
        err = _error(_piece("a") + _ld(2, _key(46, 2) + _varint(n) + b"<x>"))
        assert "TrainerSpec.bos_piece" in err.reason and "truncated" in err.reason
        err = _error(_ld(1, b"\x0a" + _varint(n) + b"abc"))
        assert "piece 0" in err.reason
        err = _error(_piece("a") + _ld(1, _ld(7, b"") + _key(7, 2) + _varint(n)))  # unknown
        assert "field 7" in err.reason


def test_wire_type_errors():
    # Groups, at the top level and inside messages.
    err = _error(_piece("a") + _key(9, 3) + _key(9, 4))
    assert "group" in err.reason and err.offset == len(_piece("a"))
    assert "group" in _error(_ld(1, _ld(1, "a") + _key(5, 3))).reason
    assert "group" in _error(_piece("a") + _ld(3, _key(1, 4))).reason
    # Invalid wire types 6 and 7.
    for wire in (6, 7):
        err = _error(_piece("a") + _key(12, wire) + b"\x00" * 8)
        assert f"wire type {wire}" in err.reason
    # Known fields with the wrong wire type.
    cases = [
        (_vi(1, 5), "ModelProto.pieces"),
        (_piece("a") + _vi(2, 1), "trainer_spec"),
        (_piece("a") + _f32(3, 1.0), "normalizer_spec"),
        (_piece("a") + _vi(4, 1), "self_test_data"),
        (_ld(1, _vi(1, 3)), "SentencePiece.piece"),
        (_ld(1, _ld(1, "a") + _vi(2, 3)), "SentencePiece.score"),
        (_ld(1, _ld(1, "a") + _ld(3, "x")), "SentencePiece.type"),
        (_piece("a") + _ld(2, _ld(3, "BPE")), "TrainerSpec.model_type"),
        (_piece("a") + _ld(2, _vi(44, 1)), "TrainerSpec.unk_surface"),
        (_piece("a") + _ld(2, _ld(35, "x")), "TrainerSpec.byte_fallback"),
        (_piece("a") + _ld(3, _f32(3, 1.0)), "NormalizerSpec.add_dummy_prefix"),
        (_piece("a") + _ld(5, _vi(2, 0)), "NormalizerSpec.precompiled_charsmap"),
    ]
    for data, name in cases:
        err = _error(data)
        assert name in err.reason and "wire type" in err.reason, (name, err.reason)
        assert err.offset is not None
    # A field spmbpe does not read is skipped whatever its wire type, as
    # protobuf skips it (here character_coverage, a float, as a varint).
    assert parse_model_proto(_piece("a") + _ld(2, _vi(10, 1))).trainer == TrainerSpec()
    # Field number 0 inside a piece; a key wider than 32 bits.
    assert "field number 0" in _error(_ld(1, _ld(1, "a") + b"\x00\x00")).reason
    assert "32 bits" in _error(_piece("a") + _varint(1 << 35 | 2) + b"\x00").reason


def test_invalid_utf8_piece():
    data = bytearray(MISTRAL_V1.read_bytes())
    model = parse_model_proto(bytes(data))
    index = 5000
    piece = model.piece_bytes(index)
    start = data.index(b"\x0a" + bytes([len(piece)]) + piece + b"\x15")  # its string field
    assert data.count(b"\x0a" + bytes([len(piece)]) + piece + b"\x15") == 1
    offset = start + 2 + len(piece) - 1
    data[offset] = 0xFF  # replace the last byte
    err = _error(bytes(data), MISTRAL_V1)
    assert f"piece {index}" in err.reason and "UTF-8" in err.reason
    assert err.offset == offset
    # A piece starting with a continuation byte (general path) ...
    err = _error(_piece("a") + _piece(b"\x80b") + _piece("c"))
    assert "piece 1" in err.reason and err.offset == len(_piece("a")) + 4
    # ... two halves of a character in two pieces: the concatenation is valid
    # UTF-8 but neither piece is.
    err = _error(_piece("a") + _piece(b"x\xc3") + _piece(b"\xa9") + _piece("c"))
    assert "piece 1" in err.reason, err.reason
    assert err.offset == len(_piece("a")) + 4 + 1
    err = _error(_piece("a") + _piece(b"x\xc3") + _piece(b"") + _piece(b"\xa9") + _piece("c"))
    assert "piece 1" in err.reason, err.reason
    err = _error(_piece("a") + _piece(b"x\xc3", -1.0))
    assert "piece 1" in err.reason
    # Surrogates and overlong forms are not UTF-8 either.
    assert "piece 0" in _error(_piece(b"\xed\xa0\x80")).reason
    assert "piece 0" in _error(_piece(b"\xc0\xaf")).reason
    # Invalid UTF-8 in a setting that matters for tokenization ...
    err = _error(_piece("a") + _ld(2, _ld(44, b"\xff")))
    assert "unk_surface" in err.reason
    assert "NormalizerSpec.name" in _error(_piece("a") + _ld(3, _ld(1, b"\xfe"))).reason
    # ... but not in a training-only one (a corpus path, say), which is not read.
    model = parse_model_proto(_piece("a") + _ld(2, _ld(1, b"/data/\xe9t\xe9.txt")))
    assert model.trainer == TrainerSpec()


def test_pickle_and_repr():
    import pickle

    model = parse_model_proto(_small_model(), "small.model")
    again = pickle.loads(pickle.dumps(model))
    assert _as_tuples(again) == _as_tuples(model)
    assert again.trainer == model.trainer
    assert again.normalizer == model.normalizer and again.path == "small.model"
    assert "13 pieces" in repr(model)
    assert "byte_fallback=False" in repr(model.trainer)
    with pytest.raises(AttributeError):
        model.trainer.byte_fallback = True


def test_error_message_and_attributes():
    err = _error(b"\x0a\x05abc", "x.model")
    assert err.path == "x.model" and err.offset == 0
    assert str(err).startswith("x.model at byte offset 0: ")


# -------------------------------------------------------------- sniffing


def test_is_model_proto():
    for path in MISTRAL_MODELS:
        with open(path, "rb") as f:
            head = f.read(64)
        assert is_model_proto(head)
        assert is_model_proto(head[:2])
    assert is_model_proto(_small_model()[:16])
    assert is_model_proto(_tricky_model()[:64])
    assert not is_model_proto(b"")
    assert not is_model_proto(b"\x0a")
    assert not is_model_proto(b"\x0a\x00")  # an empty first piece message
    assert not is_model_proto(LLAMA_SPM_GGUF.read_bytes()[:64])
    assert not is_model_proto(b'{"version": "1.0", "model": {}}')
    assert not is_model_proto(b"\x0a\x05\x0f\x00\x00\x00\x00")  # bad inner key
    assert not is_model_proto(b"\x0a\x05\x0a\x09abcdefghi")  # inner string too long
    assert not is_model_proto(b"\x0a" + b"\xff" * 20)


# ------------------------------------------- differential, when protobuf is here


def _from_pb2(proto):
    pieces = [(p.piece, p.score, p.type) for p in proto.pieces]
    return pieces


def test_mutations_agree_with_protobuf():
    """Random corruptions of a small model: whatever protobuf rejects, we
    reject; whatever both accept decodes the same.  (We also reject some
    inputs that protobuf accepts: groups, known fields with the wrong wire
    type, invalid UTF-8, no pieces.)"""
    from sentencepiece import sentencepiece_model_pb2 as pb2
    from google.protobuf.message import DecodeError

    base = _small_model()
    rng = random.Random(99)
    both = 0
    for _ in range(1500):
        data = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3)
            i = rng.randrange(len(data))
            if op == 0:
                data[i] = rng.randrange(256)
            elif op == 1:
                data.insert(i, rng.randrange(256))
            else:
                del data[i]
        data = bytes(data)
        proto = pb2.ModelProto()
        try:
            proto.ParseFromString(data)
            pb_ok = True
        except DecodeError:
            pb_ok = False
        try:
            ours = parse_model_proto(data)
        except ModelFormatError as exc:
            ours = None
            reason = exc.reason
        if not pb_ok:
            assert ours is None, data
            continue
        if ours is None:
            # Only where we are deliberately stricter than protobuf.
            assert any(
                word in reason for word in ("UTF-8", "wire type", "group", "no pieces")
            ), reason
            continue
        both += 1
        assert _as_tuples(ours) == _from_pb2(proto)
        for name, value in dataclasses.asdict(ours.trainer).items():
            assert value == getattr(proto.trainer_spec, name), name
        assert (ours.normalizer is not None) == proto.HasField("normalizer_spec")
        if ours.normalizer is not None:
            for name, value in dataclasses.asdict(ours.normalizer).items():
                assert value == getattr(proto.normalizer_spec, name), name
    assert both > 50


_CORRUPTION = st.tuples(
    st.sampled_from(["flip", "wire", "huge length", "cut", "delete", "insert"]),
    st.integers(0, 10**6),  # where (modulo the size)
    st.integers(0, 2**64 - 1),  # with what
)


@settings(max_examples=examples(2000), deadline=None)
@given(st.sampled_from(["small", "tricky"]), st.lists(_CORRUPTION, min_size=1, max_size=4))
def test_any_corruption_is_a_model_format_error_or_a_model(base, corruptions):
    # Flipped bits, other wire types, huge lengths, cuts: the reader returns
    # a model or raises ModelFormatError at an offset inside the data, and
    # never anything else (an IndexError, a MemoryError, a hang).
    data = bytearray(_small_model() if base == "small" else _tricky_model())
    for what, at, value in corruptions:
        at %= len(data) + 1
        if what == "flip" and at < len(data):
            data[at] ^= 1 << value % 8
        elif what == "wire" and at < len(data):
            data[at] = data[at] & 0xF8 | value % 8
        elif what == "huge length":
            data[at:at] = _varint(value)
        elif what == "cut":
            del data[at:]
        elif what == "delete":
            del data[at : at + 1 + value % 3]
        else:
            data[at:at] = bytes([value % 256])
    try:
        model = parse_model_proto(bytes(data), "x.model")
    except ModelFormatError as exc:
        assert exc.path == "x.model" and str(exc).startswith("x.model")
        assert exc.offset is None or 0 <= exc.offset < len(data), (exc.offset, len(data))
    else:
        assert len(model) > 0 and len(model.offsets) == len(model) + 1 == len(model.scores) + 1


# --- the UTF-8 check of every piece ------------------------------------------------------

_MARKER = "\u2581".encode("utf-8")
_PIECE_BYTES = st.lists(
    st.one_of(
        st.sampled_from([_MARKER, _MARKER[:2], b"a", b"abcdefgh", b"\x80", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80",
                         b"\xf0\x9f\xa6\x99", b"\xf0\x9f", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x00"]),
        st.binary(max_size=3),
    ),
    max_size=6,
).map(b"".join)


def _python_first_invalid(pieces):
    for i, piece in enumerate(pieces):
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError:
            return i
    return -1


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(_PIECE_BYTES, min_size=1, max_size=8))
def test_piece_utf8_check_equals_pythons_decoder(pieces):
    # The reader's and the table's checks pass "▁" + ASCII (most pieces)
    # without decoding it; every other piece is decoded strictly.
    from array import array

    from spmbpe._core import PieceTable, first_invalid_utf8_piece

    offsets = array("q", [0])
    for piece in pieces:
        offsets.append(offsets[-1] + len(piece))
    arena = b"".join(pieces)
    expected = _python_first_invalid(pieces)
    assert first_invalid_utf8_piece(arena, offsets) == expected
    assert PieceTable(arena, offsets).first_invalid_utf8() == expected


@pytest.mark.parametrize("lead", [b"", _MARKER])
@pytest.mark.parametrize("bad", [b"\xff", b"\x80", b"\xe2\x96", b"\xc3"])
def test_a_bad_byte_anywhere_after_ascii_is_found(lead, bad):
    # Every position of the 8-byte blocks that the ASCII test reads at once.
    from array import array

    from spmbpe._core import PieceTable, first_invalid_utf8_piece

    for k in range(20):
        for tail in (b"", b"xyz"):
            good = lead + b"a" * k + tail
            pieces = [b"ok", good, lead + b"a" * k + bad + tail, good]
            offsets = array("q", [0])
            for piece in pieces:
                offsets.append(offsets[-1] + len(piece))
            arena = b"".join(pieces)
            assert first_invalid_utf8_piece(arena, offsets) == 2, (k, tail)
            assert PieceTable(arena, offsets).first_invalid_utf8() == 2, (k, tail)


def _model_of(pieces, general):
    """A model of the pieces, each in the common layout (scanned in C) or,
    where `general` says so, with its score first (the general reader);
    and the file offset of each piece's string."""
    data = b""
    at = []
    for i, (piece, slow) in enumerate(zip(pieces, general)):
        string = _ld(1, piece)
        body = _f32(2, -float(i)) + string if slow else string + _f32(2, -float(i))
        entry = _ld(1, body)
        at.append(len(data) + len(entry) - len(body) + (5 if slow else 0) + len(string) - len(piece))
        data += entry
    return data, at


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.tuples(_PIECE_BYTES, st.booleans()), min_size=1, max_size=8))
def test_the_readers_utf8_check_equals_pythons_decoder_in_every_run(entries):
    # The reader checks each piece while it copies it, run by run (the
    # scanned layout and the general one); the error names the first bad
    # piece and the file offset of its first bad byte.
    pieces = [piece for piece, _ in entries]
    data, at = _model_of(pieces, [slow for _, slow in entries])
    expected = _python_first_invalid(pieces)
    if expected < 0:
        model = parse_model_proto(data)
        assert [model.piece_bytes(i) for i in range(len(model))] == pieces
        assert list(model.scores) == [-float(i) for i in range(len(pieces))]
        assert model.pieces_checked()
        return
    err = _error(data)
    assert f"piece {expected} is not valid UTF-8" in err.reason, err.reason
    try:
        pieces[expected].decode("utf-8")
    except UnicodeDecodeError as exc:
        assert err.offset == at[expected] + exc.start


@settings(max_examples=examples(200), deadline=None)
@given(pieces=st.lists(st.text(st.characters(exclude_categories=["Cs"]), max_size=6), max_size=40),
       bad=st.one_of(st.none(), st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe3\x81"])),
       at=st.integers(0, 40))
def test_pieces_are_decoded_as_bytes_decode_decodes_them(pieces, bad, at):
    # utf8_pieces (compiled, SpmModelProto.pieces) against .decode("utf-8")
    # of each piece's bytes: the same texts, or the same error.
    from array import array

    from spmbpe._core import utf8_pieces

    raw = [p.encode("utf-8") for p in pieces]
    if bad is not None and raw:
        raw[at % len(raw)] += bad
    offsets = array("q", [0])
    for r in raw:
        offsets.append(offsets[-1] + len(r))
    arena = b"".join(raw)
    try:
        expected = [r.decode("utf-8") for r in raw]
    except UnicodeDecodeError:
        with pytest.raises(UnicodeDecodeError):
            utf8_pieces(arena, offsets)
        return
    assert utf8_pieces(arena, offsets) == expected


def test_pieces_with_offsets_outside_the_arena_are_refused():
    from array import array

    from spmbpe._core import utf8_pieces

    for bad in ([0, 4], [2, 1], [-1, 1], []):
        with pytest.raises(ValueError):
            utf8_pieces(b"abc", array("q", bad))
