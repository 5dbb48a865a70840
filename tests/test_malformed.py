"""Malformed tokenizer files raise a documented spmbpe exception that names
the file (and, where the problem has a place, the byte offset) — never a
crash, a hang, an undocumented exception or a huge allocation.

Covered per format: truncation at every byte, lengths and counts larger
than the file, wrong value types, duplicate keys and pieces, arrays of the
wrong length, ids out of range, a vocabulary with no pieces.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc

import pytest

import spmbpe
from spmbpe.errors import (
    ModelFormatError,
    SpmbpeError,
    UnsupportedFeatureError,
    UnsupportedModelError,
)

from conftest import DATA_DIR, LLAMA_SPM_GGUF
from long_run import sample
from spm_proto import (
    MODEL_TYPE_UNIGRAM,
    bpe_model_proto,
    model_proto,
    normalizer_spec,
    trainer_spec,
)

# ----------------------------------------------------------------- GGUF

STRING, ARRAY, UINT32, INT32, FLOAT32, BOOL, UINT64 = 8, 9, 4, 5, 6, 7, 10
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _value(vtype, value):
    if vtype == STRING:
        raw = value if isinstance(value, bytes) else value.encode("utf-8")
        return struct.pack("<Q", len(raw)) + raw
    if vtype == ARRAY:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(_value(etype, v) for v in items)
    return struct.pack("<" + _SCALAR[vtype], value)


def gguf_bytes(kvs, version=3, boundaries=None):
    """A metadata-only GGUF file; `boundaries` collects the offset where each
    item (header field, key, type, value) starts."""
    out = bytearray(b"GGUF")
    marks = [0, 4]
    out += struct.pack("<I", version)
    marks.append(len(out))
    out += struct.pack("<Q", 0)
    marks.append(len(out))
    out += struct.pack("<Q", len(kvs))
    for key, vtype, value in kvs:
        marks.append(len(out))
        out += _value(STRING, key)
        marks.append(len(out))
        out += struct.pack("<I", vtype)
        marks.append(len(out))
        out += _value(vtype, value)
    if boundaries is not None:
        boundaries.extend(marks)
    return bytes(out)


PIECES = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581", "a", "b", "\u2581a", "ab"]
N = len(PIECES)


def base_kvs(**changes):
    kvs = {
        "general.architecture": (STRING, "llama"),
        "tokenizer.ggml.model": (STRING, "llama"),
        "tokenizer.ggml.tokens": (ARRAY, (STRING, PIECES)),
        "tokenizer.ggml.scores": (ARRAY, (FLOAT32, [0.0] * 259 + [-1.0, -2.0, -3.0, -4.0, -5.0])),
        "tokenizer.ggml.token_type": (ARRAY, (INT32, [2, 3, 3] + [6] * 256 + [1] * 5)),
        "tokenizer.ggml.bos_token_id": (UINT32, 1),
        "tokenizer.ggml.eos_token_id": (UINT32, 2),
        "tokenizer.ggml.unknown_token_id": (UINT32, 0),
        "tokenizer.ggml.add_bos_token": (BOOL, True),
    }
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            kvs.pop(key, None)
        else:
            kvs[key] = value
    return [(k, t, v) for k, (t, v) in kvs.items()]


def load_bytes(tmp_path, data, name="x.gguf"):
    path = tmp_path / name
    path.write_bytes(data)
    return spmbpe.load(str(path)), path


def raises_format_error(tmp_path, data, name="x.gguf", match=None, offset=True):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ModelFormatError, match=match) as info:
        spmbpe.load(str(path))
    err = info.value
    assert err.path == str(path) and str(path) in str(err)
    if offset:
        assert err.offset is not None and 0 <= err.offset <= len(data), err
        assert f"byte offset {err.offset}" in str(err)
    return err


def test_gguf_base_file_loads(tmp_path):
    tok, _ = load_bytes(tmp_path, gguf_bytes(base_kvs()))
    assert tok.vocab_size == N
    assert tok.encode("ab") == [PIECES.index("\u2581a"), PIECES.index("b")]


def test_gguf_truncated_at_every_byte(tmp_path):
    # The header's bytes, every field's boundaries and the byte after, and
    # every 7th byte (in the quick run an even sample of those).
    marks = []
    data = gguf_bytes(base_kvs(), boundaries=marks)
    cuts = sorted(set(range(0, 64)) | set(marks) | {m + 1 for m in marks} | set(sample(range(64, len(data), 7), 100)))
    for cut in cuts:
        if cut >= len(data):
            continue
        # (A new file each time: rewriting one file makes ext4 flush it.)
        path = tmp_path / f"cut{cut}.gguf"
        path.write_bytes(data[:cut])
        try:
            spmbpe.load(str(path))
        except ModelFormatError as e:
            assert e.path == str(path)
            assert e.offset is not None and 0 <= e.offset <= cut, (cut, e)
        except UnsupportedModelError as e:
            # The first bytes of "GGUF" are no format spmbpe knows.
            assert cut < 4, (cut, e)
        else:
            pytest.fail(f"a GGUF cut at byte {cut} of {len(data)} loaded")


@pytest.mark.parametrize("count", [N + 1, 2**31, 2**40, 2**63, 2**64 - 1])
def test_gguf_array_count_larger_than_file(tmp_path, count):
    data = bytearray(gguf_bytes(base_kvs()))
    at = data.index(b"tokenizer.ggml.tokens") + len(b"tokenizer.ggml.tokens") + 4 + 4
    data[at:at + 8] = struct.pack("<Q", count)
    tracemalloc.start()
    start = time.monotonic()
    try:
        err = raises_format_error(tmp_path, bytes(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 5
    assert peak < 64 * 1024 * 1024, f"{peak} bytes allocated for a bad count"
    if count > 2**20:
        assert "tokenizer.ggml.tokens" in str(err)


@pytest.mark.parametrize("length", [10**6, 2**32, 2**63, 2**64 - 1])
@pytest.mark.parametrize("which", ["key", "token", "model"])
def test_gguf_string_length_larger_than_file(tmp_path, length, which):
    data = bytearray(gguf_bytes(base_kvs()))
    if which == "key":
        at = 24  # the first key's length
    elif which == "token":
        at = data.index(b"<s>") - 8
    else:
        at = data.index(b"llama", data.index(b"tokenizer.ggml.model")) - 8
    data[at:at + 8] = struct.pack("<Q", length)
    raises_format_error(tmp_path, bytes(data))


@pytest.mark.parametrize("kv_count", [10, 2**32, 2**64 - 1])
def test_gguf_kv_count_larger_than_file(tmp_path, kv_count):
    data = bytearray(gguf_bytes(base_kvs()))
    data[16:24] = struct.pack("<Q", kv_count)
    raises_format_error(tmp_path, bytes(data))


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"tokenizer.ggml.tokens": (ARRAY, (INT32, list(range(N))))}, "not an array of strings"),
        ({"tokenizer.ggml.tokens": (STRING, "abc")}, "not an array of strings"),
        ({"tokenizer.ggml.scores": (ARRAY, (STRING, PIECES))}, "not a numeric array"),
        ({"tokenizer.ggml.scores": (FLOAT32, 1.0)}, "not a numeric array"),
        ({"tokenizer.ggml.token_type": (ARRAY, (FLOAT32, [1.0] * N))}, "floats"),
        ({"tokenizer.ggml.token_type": (ARRAY, (UINT64, [2**40] * N))}, "out of range"),
        ({"tokenizer.ggml.bos_token_id": (STRING, "1")}, "not an integer"),
        ({"tokenizer.ggml.bos_token_id": (BOOL, True)}, "not an integer"),
        ({"tokenizer.ggml.add_bos_token": (UINT32, 1)}, "not a boolean"),
        ({"tokenizer.ggml.scores": (ARRAY, (FLOAT32, [0.0] * (N - 1)))}, "entries"),
        ({"tokenizer.ggml.scores": (ARRAY, (FLOAT32, [0.0] * (N + 1)))}, "entries"),
        ({"tokenizer.ggml.token_type": (ARRAY, (INT32, [1] * (N + 5)))}, "entries"),
        ({"tokenizer.ggml.bos_token_id": (UINT32, N)}, "outside the vocabulary"),
        ({"tokenizer.ggml.unknown_token_id": (UINT32, 2**31)}, "outside the vocabulary"),
        ({"tokenizer.ggml.eos_token_id": (INT32, -5)}, "outside the vocabulary"),
    ],
)
def test_gguf_wrong_value_types_and_lengths(tmp_path, changes, match):
    err = raises_format_error(tmp_path, gguf_bytes(base_kvs(**{k: v for k, v in changes.items()})), match=match)
    # The offset is the start of the offending key/value pair.
    key = next(iter(changes)).encode()
    assert err.offset == gguf_bytes(base_kvs(**changes)).index(key) - 8


def test_gguf_no_pieces(tmp_path):
    data = gguf_bytes(base_kvs(**{"tokenizer.ggml.tokens": (ARRAY, (STRING, [])),
                                  "tokenizer.ggml.scores": None, "tokenizer.ggml.token_type": None,
                                  "tokenizer.ggml.bos_token_id": None, "tokenizer.ggml.eos_token_id": None,
                                  "tokenizer.ggml.unknown_token_id": None}))
    raises_format_error(tmp_path, data, match="empty")


def test_gguf_no_tokenizer(tmp_path):
    data = gguf_bytes([("general.architecture", STRING, "llama")])
    raises_format_error(tmp_path, data, match="no tokenizer.ggml.model", offset=False)


def test_gguf_other_model_is_unsupported(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(gguf_bytes(base_kvs(**{"tokenizer.ggml.model": (STRING, "gpt2")})))
    with pytest.raises(UnsupportedModelError, match="gpt2"):
        spmbpe.load(str(path))


def test_gguf_duplicate_key(tmp_path):
    kvs = base_kvs()
    kvs.append(("tokenizer.ggml.bos_token_id", UINT32, 2))
    data = gguf_bytes(kvs)
    err = raises_format_error(tmp_path, data, match="duplicate key")
    assert err.offset == data.rindex(b"tokenizer.ggml.bos_token_id") - 8


def test_gguf_duplicate_piece(tmp_path):
    pieces = list(PIECES)
    pieces[-1] = "a"
    raises_format_error(tmp_path, gguf_bytes(base_kvs(**{"tokenizer.ggml.tokens": (ARRAY, (STRING, pieces))})),
                        match="twice")


def test_gguf_invalid_utf8_piece(tmp_path):
    pieces = [p.encode() for p in PIECES]
    pieces[-1] = b"a\xff"
    data = gguf_bytes(base_kvs(**{"tokenizer.ggml.tokens": (ARRAY, (STRING, pieces))}))
    err = raises_format_error(tmp_path, data, match="UTF-8")
    assert data[err.offset:err.offset + 2] == b"a\xff"


@pytest.mark.parametrize(
    "patch, match",
    [
        ((4, struct.pack("<I", 1)), "version 1"),
        ((4, struct.pack("<I", 99)), "version 99"),
        ((0, b"GGUX"), None),
    ],
)
def test_gguf_bad_header(tmp_path, patch, match):
    data = bytearray(gguf_bytes(base_kvs()))
    at, raw = patch
    data[at:at + len(raw)] = raw
    path = tmp_path / "x.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises((ModelFormatError, UnsupportedModelError), match=match):
        spmbpe.load(str(path))


def test_gguf_unknown_value_type_and_nesting(tmp_path):
    data = bytearray(gguf_bytes(base_kvs()))
    at = data.index(b"tokenizer.ggml.add_bos_token") + len(b"tokenizer.ggml.add_bos_token")
    data[at:at + 4] = struct.pack("<I", 13)
    raises_format_error(tmp_path, bytes(data), match="unknown value type 13")
    # An array of arrays of arrays: one level of nesting is all GGUF has.
    raw = gguf_bytes(base_kvs()[:1])
    deep = struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", INT32, 0)
    bad = raw[:16] + struct.pack("<Q", 2) + raw[24:] + _value(STRING, "x") + struct.pack("<I", ARRAY) + deep
    raises_format_error(tmp_path, bad, match="nests arrays")


def test_gguf_real_fixture_truncated_in_the_tokens(tmp_path):
    data = LLAMA_SPM_GGUF.read_bytes()
    for cut in (100, len(data) // 3, len(data) // 2, len(data) - 1):
        raises_format_error(tmp_path, data[:cut])


# ----------------------------------------------------------------- .model

MODEL_PIECES = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581", "a", "b", "\u2581a", "ab"]
MODEL_TYPES = [2, 3, 3] + [6] * 256 + [1] * 5
MODEL_SCORES = [0.0] * 259 + [-1.0, -2.0, -3.0, -4.0, -5.0]


def small_model(**kw):
    return bpe_model_proto(MODEL_PIECES, MODEL_SCORES, MODEL_TYPES, **kw)


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def test_model_base_file_loads(tmp_path):
    tok, _ = load_bytes(tmp_path, small_model(), "x.model")
    assert tok.encode("ab") == [MODEL_PIECES.index("\u2581a"), MODEL_PIECES.index("b")]


def test_model_truncated_at_every_byte(tmp_path):
    # (Every byte in the long run; in the quick one the first 64 and an even
    # sample of the rest.)
    data = small_model()
    for cut in list(range(1, 64)) + sample(range(64, len(data)), 400):
        # (A new file each time: rewriting one file makes ext4 flush it.)
        path = tmp_path / f"cut{cut}.model"
        path.write_bytes(data[:cut])
        try:
            spmbpe.load(str(path))
        except ModelFormatError as e:
            assert e.path == str(path), e
            assert e.offset is None or 0 <= e.offset <= cut, (cut, e)
        except UnsupportedModelError:
            # A cut between two top-level fields is a valid shorter model:
            # without its trainer_spec it is a Unigram model.
            pass
        # (A cut just after the normalizer_spec would load; it is the end.)


@pytest.mark.parametrize("length", [2**20, 2**40, 2**63])
def test_model_length_larger_than_file(tmp_path, length):
    data = small_model()
    # The first piece message's length varint, made huge.
    bad = b"\x0a" + _varint(length) + data[2:]
    tracemalloc.start()
    try:
        raises_format_error(tmp_path, bad, "x.model")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024


def test_model_piece_string_length_larger_than_message(tmp_path):
    data = bytearray(small_model())
    assert data[2] == 0x0A
    data[3] = 0x7F  # the piece string's length, past its message
    raises_format_error(tmp_path, bytes(data), "x.model")


def test_model_without_pieces(tmp_path):
    data = b"\x12" + _varint(len(trainer_spec(vocab_size=0))) + trainer_spec(vocab_size=0)
    path = tmp_path / "x.model"
    path.write_bytes(data)
    with pytest.raises((ModelFormatError, UnsupportedModelError), match="no pieces|not a tokenizer file"):
        spmbpe.load(str(path))
    from spmbpe.sentencepiece import read_model_proto_spec

    with pytest.raises(ModelFormatError, match="no pieces"):
        read_model_proto_spec(str(path))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"unk_id": 10**6}, "unk_id"),
        ({"bos_id": len(MODEL_PIECES)}, "bos_id"),
        ({"eos_id": 2**31 - 1}, "eos_id"),
        ({"pad_id": 5000}, "pad_id"),
    ],
)
def test_model_ids_out_of_range(tmp_path, kw, match):
    raises_format_error(tmp_path, small_model(**kw), "x.model", match=match, offset=False)


def test_model_duplicate_piece(tmp_path):
    pieces = list(MODEL_PIECES)
    pieces[-1] = "a"
    data = bpe_model_proto(pieces, MODEL_SCORES, MODEL_TYPES)
    raises_format_error(tmp_path, data, "x.model", match="twice", offset=False)


def test_model_invalid_utf8_piece(tmp_path):
    pieces = [p.encode() for p in MODEL_PIECES]
    pieces[-1] = b"a\xc3"
    data = bpe_model_proto(pieces, MODEL_SCORES, MODEL_TYPES)
    err = raises_format_error(tmp_path, data, "x.model", match="UTF-8")
    assert data[err.offset - 1:err.offset + 1] == b"a\xc3" or data[err.offset:err.offset + 2] == b"a\xc3"


def test_model_wrong_wire_type(tmp_path):
    data = small_model()
    bad = b"\x0d" + b"\x00\x00\x00\x00" + data  # field 1 as a 32-bit value
    raises_format_error(tmp_path, data + bad[:5], "x.model", match="wire type")


def test_model_unigram_is_unsupported(tmp_path):
    data = model_proto(MODEL_PIECES, MODEL_SCORES, MODEL_TYPES,
                       trainer=trainer_spec(model_type=MODEL_TYPE_UNIGRAM, vocab_size=len(MODEL_PIECES)),
                       normalizer=normalizer_spec())
    path = tmp_path / "x.model"
    path.write_bytes(data)
    with pytest.raises(UnsupportedModelError, match="Unigram"):
        spmbpe.load(str(path))


@pytest.mark.parametrize("charsmap", [b"\x00", b"\xff\xff\xff\xff" + bytes(12), struct.pack("<I", 8) + bytes(4)])
def test_model_corrupt_charsmap(tmp_path, charsmap):
    data = model_proto(MODEL_PIECES, MODEL_SCORES, MODEL_TYPES,
                       trainer=trainer_spec(vocab_size=len(MODEL_PIECES)),
                       normalizer=normalizer_spec(name="nmt_nfkc", precompiled_charsmap=charsmap))
    raises_format_error(tmp_path, data, "x.model", match="charsmap", offset=False)


# ----------------------------------------------------------------- tokenizer.json


@pytest.fixture(scope="module")
def small_json():
    data = json.loads((DATA_DIR / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    keep = 400
    vocab = {p: i for p, i in data["model"]["vocab"].items() if i < keep}
    data["model"]["vocab"] = vocab
    data["model"]["merges"] = [
        m for m in data["model"]["merges"]
        if all(x in vocab for x in (m.split(" ", 1) if isinstance(m, str) else m))
        and "".join(m.split(" ", 1) if isinstance(m, str) else m) in vocab
    ]
    data["added_tokens"] = [t for t in data["added_tokens"] if t["id"] < keep]
    return data


def _json_case(tree, path, value):
    tree = json.loads(json.dumps(tree))
    node = tree
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(tree).encode()


_DELETE = object()


def test_json_base_file_loads(tmp_path, small_json):
    tok, _ = load_bytes(tmp_path, json.dumps(small_json).encode(), "tokenizer.json")
    assert tok.vocab_size == 400


def test_json_truncated(tmp_path, small_json):
    data = json.dumps(small_json).encode()
    for cut in list(range(1, 40)) + list(range(40, len(data), len(data) // 60)):
        raises_format_error(tmp_path, data[:cut], "tokenizer.json")


def test_json_not_utf8(tmp_path, small_json):
    data = json.dumps(small_json, ensure_ascii=False).encode()
    at = data.index("\u2581".encode())
    raises_format_error(tmp_path, data[:at] + b"\xff" + data[at + 1:], "tokenizer.json", match="UTF-8")


def test_json_not_utf8_is_named_at_its_byte_in_the_file(tmp_path):
    """The offset is the file's, for a "\u2581" past the first megabyte of
    Mistral's tokenizer.json made invalid."""
    data = (DATA_DIR / "mistral-v1.tokenizer.json").read_bytes()
    at = data.index("\u2581".encode(), 1 << 20)
    err = raises_format_error(tmp_path, data[:at] + b"\xff" + data[at + 1:], "tokenizer.json", match="UTF-8")
    assert err.offset == at


def test_json_error_is_named_at_its_byte_after_other_characters(tmp_path):
    """json counts characters; the offset is the byte in the file."""
    data = '{"model": {"vocab": {"\u2581\u65e5\u672c": 0, "\u00e9": 1,}}}'.encode()
    err = raises_format_error(tmp_path, data, "tokenizer.json", match="not valid JSON")
    assert err.offset == data.index(b",}") + 1


def test_json_not_an_object(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text("[1, 2]")
    with pytest.raises((ModelFormatError, UnsupportedModelError)):
        spmbpe.load(str(path))
    from spmbpe.tokenizer_json import read_tokenizer_json_spec

    with pytest.raises(ModelFormatError, match="JSON object"):
        read_tokenizer_json_spec(str(path))


@pytest.mark.parametrize(
    "path, value, match",
    [
        (("model", "vocab", "<unk>"), 2**62, "no piece has id"),
        (("model", "vocab", "<unk>"), 10**7, "no piece has id"),
        (("model", "vocab", "<unk>"), -1, "not an id"),
        (("model", "vocab", "<unk>"), True, "not an id"),
        (("model", "vocab", "<unk>"), "0", "not an id"),
        (("model", "vocab", "<unk>"), 1, "gives id 1"),
        (("model", "vocab"), {}, "missing or empty"),
        (("model", "vocab"), [], "missing or empty"),
        (("model", "merges"), 5, "merges"),
        (("model", "merges"), ["a"], "merge rule 0"),
        (("model", "merges"), [["a"]], "merge rule 0"),
        (("model", "merges"), ["\u2581 zzz"], "outside the vocabulary"),
        (("model", "unk_token"), "<nope>", "not in the vocabulary"),
        (("model",), _DELETE, "no 'model' object"),
        (("added_tokens",), 5, "added_tokens"),
        (("added_tokens",), [{"id": -1, "content": "x"}], "invalid entry"),
        (("added_tokens",), [{"id": 2**62, "content": "x"}], "invalid entry"),  # not a u32
        (("added_tokens",), [{"id": 2**32, "content": "x"}], "invalid entry"),
        (("added_tokens",), [{"id": 1.5, "content": "x"}], "invalid entry"),
        (("added_tokens",), [5], "invalid entry"),
        (("post_processor",), {"type": "TemplateProcessing", "single": 3}, "single"),
        (("post_processor",), {"type": "TemplateProcessing", "single": [{"SpecialToken": 5}]}, "no ids"),
        (("post_processor",), {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}],
                               "special_tokens": {"<s>": {"ids": ["x"]}}}, "not an integer"),
        (("post_processor",), {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}],
                               "special_tokens": {"<s>": 7}}, "no ids"),
    ],
)
def test_json_malformed_fields(tmp_path, small_json, path, value, match):
    data = _json_case(small_json, path, value)
    start = time.monotonic()
    raises_format_error(tmp_path, data, "tokenizer.json", match=match, offset=False)
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    "path, value, error",
    [
        (("model", "type"), "Unigram", UnsupportedModelError),
        (("model", "dropout"), 0.1, UnsupportedFeatureError),
        (("pre_tokenizer",), {"type": "ByteLevel"}, UnsupportedFeatureError),
        (("normalizer",), {"type": "Sequence", "normalizers": 5}, UnsupportedFeatureError),
        (("normalizer",), {"type": "Sequence", "normalizers": [1, 2]}, UnsupportedFeatureError),
        (("post_processor",), {"type": "RobertaProcessing"}, UnsupportedFeatureError),
    ],
)
def test_json_unsupported(tmp_path, small_json, path, value, error):
    data = _json_case(small_json, path, value)
    if path == ("normalizer",):
        data = _json_case(json.loads(data), ("pre_tokenizer",), None)
    with pytest.raises(error):
        load_bytes(tmp_path, data, "tokenizer.json")
    # Unsupported features are also NotImplementedError, as they were.
    assert issubclass(UnsupportedFeatureError, NotImplementedError)
    assert issubclass(UnsupportedFeatureError, SpmbpeError)


# ----------------------------------------------------------------- HF folder


@pytest.mark.parametrize("config", [{"tokenizer_class": ["LlamaTokenizer"]}, {"tokenizer_class": 5}])
def test_hf_folder_odd_tokenizer_class(tmp_path, config):
    (tmp_path / "tokenizer.model").write_bytes(small_model())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(UnsupportedModelError):
        spmbpe.load(str(tmp_path))


@pytest.mark.parametrize("config_text", ["[]", "{", "\"x\"", "{\"bos_token\": 5}", "{\"added_tokens_decoder\": 3}"])
def test_hf_folder_bad_config(tmp_path, config_text):
    (tmp_path / "tokenizer.model").write_bytes(small_model())
    (tmp_path / "tokenizer_config.json").write_text(config_text)
    with pytest.raises(ModelFormatError) as info:
        spmbpe.load(str(tmp_path))
    assert "tokenizer_config.json" in str(info.value)
