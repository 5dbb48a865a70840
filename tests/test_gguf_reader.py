"""Tests of spmbpe._gguf, the pure-Python GGUF metadata reader."""

from __future__ import annotations

import math
import pathlib
import random
import struct
import time
from array import array

import pytest

from spmbpe._gguf import (
    GGUFHeader,
    parse_gguf_header,
    read_gguf_header,
    read_gguf_metadata,
)
from spmbpe.errors import ModelFormatError

DATA_DIR = pathlib.Path(__file__).parent / "data"
FIXTURE = DATA_DIR / "ggml-vocab-llama-spm.gguf"

# GGUF value types.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY = range(10)
UINT64, INT64, FLOAT64 = 10, 11, 12


# --------------------------------------------------------------------------
# A small GGUF writer for synthetic files.
# --------------------------------------------------------------------------

_FMT = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i",
        FLOAT32: "f", BOOL: "?", UINT64: "Q", INT64: "q", FLOAT64: "d"}


class Raw(bytes):
    """A value written verbatim (for values of unknown types)."""


def _gstr(bo: str, s) -> bytes:
    b = s if isinstance(s, bytes) else s.encode("utf-8")
    return struct.pack(bo + "Q", len(b)) + b


def _gvalue(bo: str, vtype: int, value) -> bytes:
    if isinstance(value, Raw):
        return bytes(value)
    if vtype == STRING:
        return _gstr(bo, value)
    if vtype == ARRAY:
        etype, items = value
        return struct.pack(bo + "IQ", etype, len(items)) + b"".join(
            _gvalue(bo, etype, item) for item in items
        )
    return struct.pack(bo + _FMT[vtype], value)


def make_gguf(kvs, *, version=3, tensor_count=0, byteorder="<", magic=b"GGUF",
              kv_count=None) -> bytes:
    """A GGUF file (header and key/values only) from (key, type, value)
    triples; an ARRAY value is (element type, items)."""
    bo = byteorder
    head = magic + struct.pack(
        bo + "IQQ", version, tensor_count, len(kvs) if kv_count is None else kv_count
    )
    return head + b"".join(
        _gstr(bo, k) + struct.pack(bo + "I", t) + _gvalue(bo, t, v) for k, t, v in kvs
    )


ALL_SCALARS = [
    ("u8", UINT8, 255), ("i8", INT8, -128), ("u16", UINT16, 65535),
    ("i16", INT16, -32768), ("u32", UINT32, 2**32 - 1), ("i32", INT32, -(2**31)),
    ("f32", FLOAT32, 1.5), ("bool.t", BOOL, True), ("bool.f", BOOL, False),
    ("str", STRING, "h\u00e9llo \u2581w\u00f6rld \U0001f600"), ("empty", STRING, ""),
    ("u64", UINT64, 2**64 - 1), ("i64", INT64, -(2**63)), ("f64", FLOAT64, math.pi),
]

ALL_ARRAYS = [
    ("a.u8", ARRAY, (UINT8, [0, 1, 255])), ("a.i8", ARRAY, (INT8, [-128, 0, 127])),
    ("a.u16", ARRAY, (UINT16, [0, 65535])), ("a.i16", ARRAY, (INT16, [-32768, 32767])),
    ("a.u32", ARRAY, (UINT32, [0, 2**32 - 1])), ("a.i32", ARRAY, (INT32, [-(2**31), 7])),
    ("a.f32", ARRAY, (FLOAT32, [0.0, -1.25, 2.0**100])),
    ("a.bool", ARRAY, (BOOL, [True, False, True])),
    ("a.str", ARRAY, (STRING, ["<unk>", "", "\u2581the", "\u7ed9", "\x00"])),
    ("a.u64", ARRAY, (UINT64, [0, 2**64 - 1])), ("a.i64", ARRAY, (INT64, [-(2**63), 1])),
    ("a.f64", ARRAY, (FLOAT64, [math.e, -0.0])),
    ("a.empty", ARRAY, (INT32, [])), ("a.empty_str", ARRAY, (STRING, [])),
]

NESTED = ("a.nested", ARRAY, (ARRAY, [(INT32, [1, 2, 3]), (STRING, ["x", "y"]), (INT32, [])]))

EXPECTED_TYPECODE = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I",
                     INT32: "i", FLOAT32: "f", UINT64: "Q", INT64: "q", FLOAT64: "d"}


@pytest.fixture(scope="module")
def fixture_bytes() -> bytes:
    return FIXTURE.read_bytes()


def parse_error(data: bytes, path="file.gguf") -> ModelFormatError:
    with pytest.raises(ModelFormatError) as info:
        parse_gguf_header(data, path)
    err = info.value
    assert type(err) is ModelFormatError
    assert err.path == path and str(err).startswith(path)
    return err


# --------------------------------------------------------------------------
# The real fixture.
# --------------------------------------------------------------------------


def test_matches_gguf_package_reader(tmp_path):
    gguf = pytest.importorskip("gguf")

    def check(path):
        reader = gguf.GGUFReader(path)
        header = read_gguf_header(path)
        fields = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
        assert list(header.metadata) == list(fields)
        assert header.version == reader.fields["GGUF.version"].contents()
        assert header.tensor_count == reader.fields["GGUF.tensor_count"].contents()
        for key, field in fields.items():
            value = header.metadata[key]
            expected = field.contents()
            assert header.types[key].startswith(field.types[0].name), key
            if field.types[0] == gguf.GGUFValueType.ARRAY:
                if len(field.types) > 1:  # GGUFReader omits it for empty arrays
                    assert header.types[key] == f"ARRAY[{field.types[-1].name}]", key
                assert list(value) == expected, key
            else:
                assert value == expected and type(value) is type(expected), key

    check(FIXTURE)
    synthetic = tmp_path / "all.gguf"
    synthetic.write_bytes(make_gguf(ALL_SCALARS + ALL_ARRAYS))
    check(synthetic)


def test_fixture_contents():
    header = read_gguf_header(FIXTURE)
    assert isinstance(header, GGUFHeader)
    assert (header.version, header.tensor_count, header.byte_order) == (3, 0, "little")
    assert header.metadata_end == FIXTURE.stat().st_size
    meta = header.metadata
    assert len(meta) == 22
    assert meta["general.architecture"] == "llama"
    assert meta["tokenizer.ggml.model"] == "llama"
    tokens = meta["tokenizer.ggml.tokens"]
    scores = meta["tokenizer.ggml.scores"]
    types = meta["tokenizer.ggml.token_type"]
    assert isinstance(tokens, list) and len(tokens) == 32000
    assert tokens[:4] == ["<unk>", "<s>", "</s>", "<0x00>"]
    assert all(type(t) is str for t in tokens)
    assert isinstance(scores, array) and scores.typecode == "f" and len(scores) == 32000
    assert isinstance(types, array) and types.typecode == "i" and len(types) == 32000
    assert list(types[:4]) == [2, 3, 3, 6]
    assert meta["tokenizer.ggml.bos_token_id"] == 1
    assert meta["tokenizer.ggml.add_bos_token"] is True
    assert meta["tokenizer.ggml.add_eos_token"] is False
    assert meta["llama.attention.layer_norm_rms_epsilon"] == struct.unpack("<f", struct.pack("<f", 1e-5))[0]
    assert read_gguf_metadata(str(FIXTURE)) == meta


def test_mmap_path_gives_the_same_result(monkeypatch):
    import spmbpe._gguf as mod

    expected = read_gguf_metadata(FIXTURE)
    monkeypatch.setattr(mod, "_READ_ALL_LIMIT", 0)
    assert read_gguf_metadata(FIXTURE) == expected


def test_mmap_path_errors(monkeypatch, tmp_path, fixture_bytes):
    import spmbpe._gguf as mod

    monkeypatch.setattr(mod, "_READ_ALL_LIMIT", 0)
    path = tmp_path / "cut.gguf"
    path.write_bytes(fixture_bytes[:400_000])
    with pytest.raises(ModelFormatError, match="tokenizer.ggml.tokens") as info:
        read_gguf_metadata(path)
    assert info.value.path == str(path)


def test_parse_accepts_bytes_like(fixture_bytes):
    expected = parse_gguf_header(fixture_bytes).metadata
    assert parse_gguf_header(bytearray(fixture_bytes)).metadata == expected
    assert parse_gguf_header(memoryview(fixture_bytes)).metadata == expected


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_gguf_metadata(tmp_path / "nope.gguf")


# --------------------------------------------------------------------------
# Synthetic files: every type, both versions, both byte orders.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("byteorder", ["<", ">"])
@pytest.mark.parametrize("version", [2, 3])
def test_all_types_round_trip(tmp_path, version, byteorder):
    path = tmp_path / "t.gguf"
    path.write_bytes(make_gguf(ALL_SCALARS + ALL_ARRAYS + [NESTED], version=version,
                               tensor_count=7, byteorder=byteorder))
    header = read_gguf_header(path)
    assert header.version == version
    assert header.tensor_count == 7
    assert header.byte_order == ("little" if byteorder == "<" else "big")
    assert header.path == str(path)
    meta = header.metadata
    for key, vtype, value in ALL_SCALARS:
        assert meta[key] == value and type(meta[key]) is type(value), key
        assert header.types[key] == ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32",
                                     "FLOAT32", "BOOL", "STRING", "ARRAY", "UINT64",
                                     "INT64", "FLOAT64"][vtype]
    for key, _, (etype, items) in ALL_ARRAYS:
        got = meta[key]
        if etype in (STRING, BOOL):
            assert got == items and isinstance(got, list), key
        else:
            assert isinstance(got, array) and got.typecode == EXPECTED_TYPECODE[etype], key
            assert got.tolist() == items, key
    nested = meta["a.nested"]
    assert [list(x) for x in nested] == [[1, 2, 3], ["x", "y"], []]
    assert header.types["a.nested"] == "ARRAY[ARRAY]"  # inner types differ
    assert header.types["a.str"] == "ARRAY[STRING]"
    assert list(meta) == [k for k, _, _ in ALL_SCALARS + ALL_ARRAYS + [NESTED]]


def test_float32_values_are_exact():
    data = make_gguf([("f", FLOAT32, 0.1), ("a", ARRAY, (FLOAT32, [0.1]))])
    meta = parse_gguf_header(data).metadata
    as_f32 = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert meta["f"] == as_f32 and meta["a"][0] == as_f32


def test_nested_array_type_name():
    data = make_gguf([("n", ARRAY, (ARRAY, [(INT32, [1]), (INT32, [2, 3])]))])
    header = parse_gguf_header(data)
    assert header.types["n"] == "ARRAY[ARRAY[INT32]]"
    assert [x.tolist() for x in header.metadata["n"]] == [[1], [2, 3]]


def test_nonzero_bool_bytes_read_as_true():
    data = make_gguf([("b", BOOL, Raw(b"\x02"))])
    assert parse_gguf_header(data).metadata["b"] is True
    arr = make_gguf([("a", ARRAY, Raw(struct.pack("<IQ", BOOL, 2) + b"\x00\x05"))])
    assert parse_gguf_header(arr).metadata["a"] == [False, True]


def test_empty_metadata():
    header = parse_gguf_header(make_gguf([]))
    assert header.metadata == {} and header.metadata_end == 24


# --------------------------------------------------------------------------
# Malformed files.
# --------------------------------------------------------------------------


def test_bad_magic():
    err = parse_error(b"GGML" + make_gguf([])[4:])
    assert err.offset == 0 and "not a GGUF file" in err.reason


@pytest.mark.parametrize("data", [b"", b"GG", b"GGUF", b"GGUF\x03\x00"])
def test_tiny_files(data):
    err = parse_error(data)
    assert "truncated" in err.reason


def test_short_file_with_other_magic():
    err = parse_error(b"PK")
    assert err.offset == 0 and "not a GGUF file" in err.reason


def test_empty_file_on_disk(tmp_path):
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    with pytest.raises(ModelFormatError, match="truncated"):
        read_gguf_metadata(path)


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_version_1_refused(byteorder):
    err = parse_error(make_gguf([("k", UINT8, 1)], version=1, byteorder=byteorder))
    assert err.offset == 4 and "version 1" in err.reason


@pytest.mark.parametrize("version", [0, 4, 99, 0xFFFF])
def test_unsupported_version(version):
    err = parse_error(make_gguf([], version=version))
    assert err.offset == 4 and f"version {version}" in err.reason


def test_unknown_scalar_type():
    data = make_gguf([("ok", UINT8, 1), ("bad", 13, Raw(b"\x00" * 8))])
    err = parse_error(data)
    assert "unknown value type 13" in err.reason and "'bad'" in err.reason
    assert err.offset == data.index(b"bad") + 3


def test_unknown_array_element_type():
    data = make_gguf([("bad", ARRAY, Raw(struct.pack("<IQ", 13, 1) + b"\x00" * 8))])
    err = parse_error(data)
    assert "unknown value type 13" in err.reason and "'bad'" in err.reason
    assert err.offset == data.index(b"bad") + 3 + 4


def test_duplicate_key():
    data = make_gguf([("a", UINT8, 1), ("dup", UINT8, 2), ("dup", UINT8, 3)])
    err = parse_error(data)
    assert "duplicate key 'dup'" in err.reason
    assert err.offset == data.rindex(b"dup") - 8
    assert f"byte offset {data.index(b'dup') - 8}" in err.reason


def test_invalid_utf8_key():
    data = make_gguf([("fine", UINT8, 1), (b"bad\xff", UINT8, 2)])
    err = parse_error(data)
    assert "UTF-8" in err.reason and "#1" in err.reason and "bad\\xff" in err.reason
    assert err.offset == data.index(b"bad\xff") - 8


def test_invalid_utf8_string_value():
    data = make_gguf([("general.name", STRING, b"ab\xc3")])
    err = parse_error(data)
    assert "'general.name'" in err.reason and "UTF-8" in err.reason
    assert err.offset == data.index(b"ab\xc3") - 8


def test_invalid_utf8_string_array_element():
    items = ["a", "b", b"\xed\xa0\x80", "d"]  # an encoded surrogate
    data = make_gguf([("tokenizer.ggml.tokens", ARRAY, (STRING, items))])
    err = parse_error(data)
    assert "element 2 of the value of key 'tokenizer.ggml.tokens'" in err.reason
    assert "UTF-8" in err.reason
    assert err.offset == data.index(b"\xed\xa0\x80") - 8


def test_huge_string_length_fails_fast():
    data = make_gguf([("k", STRING, Raw(struct.pack("<Q", 2**62) + b"abc"))])
    t0 = time.perf_counter()
    err = parse_error(data)
    assert time.perf_counter() - t0 < 0.5
    assert str(2**62) in err.reason and "'k'" in err.reason
    assert err.offset == data.index(b"k") + 1 + 4


@pytest.mark.parametrize("etype", [UINT8, INT32, FLOAT64, BOOL, STRING, ARRAY])
def test_huge_array_count_fails_fast(etype):
    data = make_gguf([("k", ARRAY, Raw(struct.pack("<IQ", etype, 2**60) + b"\x00" * 64))])
    t0 = time.perf_counter()
    err = parse_error(data)
    assert time.perf_counter() - t0 < 0.5
    assert str(2**60) in err.reason and "'k'" in err.reason
    assert err.offset == data.index(b"k") + 1 + 4


def test_huge_string_length_inside_array():
    good = _gstr("<", "ok")
    bad = struct.pack("<Q", 2**62) + b"xyz"
    data = make_gguf([("k", ARRAY, Raw(struct.pack("<IQ", STRING, 3) + good + bad + good))])
    err = parse_error(data)
    assert "element 1 of the value of key 'k'" in err.reason
    assert err.offset == data.index(bad)


def test_impossible_kv_count():
    err = parse_error(make_gguf([("k", UINT8, 1)], kv_count=2**40))
    assert err.offset == 16 and str(2**40) in err.reason


def test_arrays_nested_two_levels_refused():
    inner = (ARRAY, [(INT32, [1])])
    err = parse_error(make_gguf([("k", ARRAY, (ARRAY, [inner]))]))
    assert "more than one level" in err.reason and "'k'" in err.reason


# --------------------------------------------------------------------------
# Truncation and corruption: only ModelFormatError may escape.
# --------------------------------------------------------------------------


def check_truncated(data: bytes, n: int, path="vocab.gguf") -> None:
    try:
        parse_gguf_header(data[:n], path)
    except ModelFormatError as err:
        assert "truncated" in err.reason, (n, err)
        assert err.offset is not None and 0 <= err.offset <= n, (n, err)
        assert str(err).startswith(f"{path} at byte offset {err.offset}: ")
    else:
        pytest.fail(f"no error for a file truncated to {n} bytes")


def test_fixture_truncated_in_header_and_first_keys(fixture_bytes):
    # The header, all the scalar keys and the first strings of the token array.
    for n in range(0, 700):
        check_truncated(fixture_bytes, n)


def test_fixture_truncated_throughout(fixture_bytes):
    size = len(fixture_bytes)
    tail = size - 215  # the scalar keys after tokenizer.ggml.token_type
    offsets = set(range(700, size, size // 12))
    offsets |= {467560, 467561, 467585, 467600, 595605, 595640, size - 1}
    offsets |= set(range(tail - 3, size, 29))
    for n in sorted(offsets):
        check_truncated(fixture_bytes, n)


def test_fixture_truncated_on_disk(tmp_path, fixture_bytes):
    for n in (3, 30, 600, 5000, 467600, len(fixture_bytes) - 1):
        path = tmp_path / f"cut{n}.gguf"
        path.write_bytes(fixture_bytes[:n])
        with pytest.raises(ModelFormatError) as info:
            read_gguf_metadata(path)
        assert info.value.path == str(path)
        assert str(info.value).startswith(f"{path} at byte offset ")


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_synthetic_truncated_at_every_offset(byteorder):
    data = make_gguf(ALL_SCALARS + ALL_ARRAYS + [NESTED], byteorder=byteorder)
    parse_gguf_header(data)
    for n in range(len(data)):
        check_truncated(data, n)


def test_truncation_message_names_the_key(fixture_bytes):
    # Too short for 32000 strings: the array as a whole is refused.
    err = parse_error(fixture_bytes[:5000])
    assert err.offset == 629  # where the array value starts
    assert "while reading the value of key 'tokenizer.ggml.tokens'" in err.reason
    assert "32000 elements" in err.reason
    # Cut inside a token: the error names that element and points at it.
    cut = 300_000
    pos, index = 641, 0
    while pos + 8 + struct.unpack_from("<Q", fixture_bytes, pos)[0] <= cut:
        pos += 8 + struct.unpack_from("<Q", fixture_bytes, pos)[0]
        index += 1
    err = parse_error(fixture_bytes[:cut])
    assert err.offset == pos
    assert f"element {index} of the value of key 'tokenizer.ggml.tokens'" in err.reason
    # Inside the string value of 'tokenizer.ggml.model' (offset 538: its length).
    err = parse_error(fixture_bytes[:545])
    assert err.offset == 538
    assert "truncated while reading the length of the value of key 'tokenizer.ggml.model'" in err.reason
    err = parse_error(fixture_bytes[:548])
    assert err.offset == 538
    assert "truncated or corrupt file while reading the value of key 'tokenizer.ggml.model'" in err.reason


def test_random_corruption_raises_only_model_format_error():
    rng = random.Random(1234)
    base = make_gguf(ALL_SCALARS + ALL_ARRAYS + [NESTED])
    for _ in range(1500):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] = rng.choice((0, 0xFF, 0x80, 13, rng.randrange(256)))
        try:
            parse_gguf_header(bytes(data), "x.gguf")
        except ModelFormatError:
            pass
