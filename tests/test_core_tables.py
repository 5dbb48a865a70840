"""The facts the compiled core and the Python layer share are written once.

Token types and piece flags are defined in csrc/spm_types.h; the compiled
module exposes them by name (spmbpe._core.TOKEN_TYPES, PIECE_FLAGS), and the
Python enum must be the same numbering.  The ``<0xNN>`` byte-piece scan is
the core's one (core/decode.pyx), checked here against its rule.
"""

from __future__ import annotations

import pytest

from spmbpe import _core
from spmbpe.tokens import TokenType


def test_token_type_enum_is_the_header():
    assert {t.name: t.value for t in TokenType} == _core.TOKEN_TYPES


def test_token_types_are_sentencepiece_numbers():
    # sentencepiece_model.proto: NORMAL=1 UNKNOWN=2 CONTROL=3 USER_DEFINED=4 BYTE=6 UNUSED=5
    assert _core.TOKEN_TYPES == {
        "NORMAL": 1,
        "UNKNOWN": 2,
        "CONTROL": 3,
        "USER_DEFINED": 4,
        "UNUSED": 5,
        "BYTE": 6,
    }


def test_piece_flags_are_distinct_bits():
    flags = _core.PIECE_FLAGS
    assert set(flags) == {"MERGEABLE", "RESPLIT"}
    assert all(v and v & (v - 1) == 0 for v in flags.values())
    assert flags["MERGEABLE"] != flags["RESPLIT"]


@pytest.mark.parametrize(
    "piece, value",
    [
        (b"<0x00>", 0x00),
        (b"<0x20>", 0x20),
        (b"<0xFF>", 0xFF),
        (b"<0xab>", 0xAB),  # (either case, as llama.cpp's strtol reads it)
        (b"<0x0G>", -1),
        (b"<0x100>", -1),
        (b"<0X41>", -1),
        (b"<0x41", -1),
        (b"0x41>", -1),
        (b"", -1),
        (b"\xe2\x96\x81", -1),
    ],
)
def test_byte_piece(piece, value):
    assert _core.byte_piece(piece) == value
