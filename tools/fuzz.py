#!/usr/bin/env python3
"""Fuzz spmbpe: the encoder, the decoder, and every loader on mutated files.

    python tools/fuzz.py TARGET [--seconds N] [--seed S] [--engine random|atheris]
                               [--crash-dir DIR] [--max-len BYTES]

TARGET is one of (or ``all``, which shares the time among them):

``encode``          random text (control-token spellings, pieces, odd code
                    points, lone surrogates) through encode / encode_ordinary /
                    encode_with_offsets / encode_batch of one tokenizer per
                    format; ids must be in range, agree across the entry
                    points, and ``special="none"`` must never give a control id.
``decode``          random id lists (out of range, negative, huge, not ints)
                    through decode / decode_bytes.
``gguf``            mutated GGUF files (bytes and key/value structure) through
                    ``spmbpe.load``, then a few encodes and decodes.
``model``           mutated sentencepiece ``.model`` files (bytes and fields).
``tokenizer_json``  mutated ``tokenizer.json`` files (bytes and JSON tree).
``hf_folder``       model folders with a mutated ``tokenizer_config.json``, read as
                    transformers 5 and as transformers 4 (``reference="transformers4"``).
``normalizer``      mutated precompiled character maps through
                    ``spmbpe._normalizer.Normalizer``.

A finding is any exception other than the documented ones (``spmbpe.errors``
types, ``FileNotFoundError``, and for text/ids the ``TypeError``/``ValueError``
the README names), a broken invariant, a crash of the interpreter, or an input
that takes more than ``--timeout`` seconds.  The ``random`` engine (no extra
dependency) runs the target in a child process that writes each input to
``<crash-dir>/current`` before running it, so a crash or hang leaves the input
behind; findings are saved as ``<crash-dir>/<target>-<kind>-<hash>``.  The
``atheris`` engine (``pip install atheris``) runs libFuzzer on the same
targets instead (coverage of the Python loaders only).

Replay saved inputs with ``python tools/fuzz.py TARGET --replay FILE...``.
The exit status is 1 when there were findings.  The last line printed is a
summary: inputs run per target, findings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
GGUF_FIXTURE = DATA / "ggml-vocab-llama-spm.gguf"
MODEL_FIXTURE = DATA / "mistral-v1.model"
JSON_FIXTURE = DATA / "mistral-v1.tokenizer.json"

if (ROOT / "spmbpe" / "__init__.py").exists():
    sys.path.insert(0, str(ROOT))  # the checkout's spmbpe, as the tests use it

TARGETS = ("encode", "decode", "gguf", "model", "tokenizer_json", "hf_folder", "normalizer")


class Finding(Exception):
    """A broken invariant (not an exception the API documents)."""


# --------------------------------------------------------------- file formats
#
# Small writers/readers of the three file formats, enough to build seed
# files from the fixtures and to mutate them structurally.


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n & 0xFFFFFFFFFFFFFFFF)


def _gguf_string(s: bytes) -> bytes:
    return _u64(len(s)) + s


_GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_value(vtype: int, value) -> bytes:
    """Bytes of one GGUF value (without its type): value is a Python scalar,
    bytes for STRING, or (element type, [values]) for ARRAY."""
    if vtype == 8:
        return _gguf_string(value if isinstance(value, bytes) else str(value).encode("utf-8"))
    if vtype == 9:
        etype, items = value
        return struct.pack("<I", etype) + _u64(len(items)) + b"".join(gguf_value(etype, v) for v in items)
    return struct.pack("<" + _GGUF_SCALAR[vtype], value)


def gguf_file(kvs: Sequence[Tuple[str, int, object]], version: int = 3, n_tensors: int = 0) -> bytes:
    """A GGUF file (metadata only) with the key/value pairs `kvs` =
    [(key, type, value)] in order."""
    out = [b"GGUF", struct.pack("<I", version), _u64(n_tensors), _u64(len(kvs))]
    for key, vtype, value in kvs:
        out.append(_gguf_string(key.encode("utf-8")))
        out.append(struct.pack("<I", vtype))
        out.append(gguf_value(vtype, value))
    return b"".join(out)


def small_gguf_kvs(n_pieces: int = 600) -> List[Tuple[str, int, object]]:
    """The Llama 2 fixture cut to its first `n_pieces` pieces (which hold
    <unk>, <s>, </s>, the 256 byte pieces and the first merges)."""
    from spmbpe._gguf import read_gguf_header

    header = read_gguf_header(GGUF_FIXTURE)
    meta = header.metadata
    kvs: List[Tuple[str, int, object]] = [
        ("general.architecture", 8, b"llama"),
        ("general.name", 8, b"fuzz"),
        ("tokenizer.ggml.model", 8, b"llama"),
        ("tokenizer.ggml.tokens", 9, (8, [t.encode("utf-8") for t in meta["tokenizer.ggml.tokens"][:n_pieces]])),
        ("tokenizer.ggml.scores", 9, (6, list(meta["tokenizer.ggml.scores"][:n_pieces]))),
        ("tokenizer.ggml.token_type", 9, (5, list(meta["tokenizer.ggml.token_type"][:n_pieces]))),
        ("tokenizer.ggml.bos_token_id", 4, 1),
        ("tokenizer.ggml.eos_token_id", 4, 2),
        ("tokenizer.ggml.unknown_token_id", 4, 0),
        ("tokenizer.ggml.add_bos_token", 7, True),
        ("tokenizer.ggml.add_eos_token", 7, False),
    ]
    return kvs


def _varint(n: int) -> bytes:
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def proto_fields(data: bytes) -> Optional[List[Tuple[int, int, bytes]]]:
    """Top-level fields of a protobuf message as (field, wire, raw value
    bytes incl. length prefix for LEN), or None if it does not parse."""
    out = []
    pos, n = 0, len(data)
    try:
        while pos < n:
            key, pos = _read_varint(data, pos)
            field, wire = key >> 3, key & 7
            start = pos
            if wire == 0:
                _, pos = _read_varint(data, pos)
            elif wire == 2:
                ln, pos = _read_varint(data, pos)
                pos += ln
            elif wire == 5:
                pos += 4
            elif wire == 1:
                pos += 8
            else:
                return None
            if pos > n:
                return None
            out.append((field, wire, data[start:pos]))
    except IndexError:
        return None
    return out


def _read_varint(data: bytes, pos: int) -> Tuple[int, int]:
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80 or shift > 70:
            return v, pos


def proto_join(fields: Sequence[Tuple[int, int, bytes]]) -> bytes:
    return b"".join(_varint(f << 3 | w) + raw for f, w, raw in fields)


def small_model(n_pieces: int = 600) -> bytes:
    """mistral-v1.model cut to its first `n_pieces` pieces, with its specs."""
    fields = proto_fields(MODEL_FIXTURE.read_bytes())
    assert fields is not None
    pieces = [f for f in fields if f[0] == 1][:n_pieces]
    rest = [f for f in fields if f[0] != 1]
    return proto_join(pieces + rest)


def small_tokenizer_json(n_pieces: int = 600) -> bytes:
    """mistral-v1.tokenizer.json cut to its first `n_pieces` ids, keeping
    the merges among them."""
    data = json.loads(JSON_FIXTURE.read_text(encoding="utf-8"))
    vocab = {p: i for p, i in data["model"]["vocab"].items() if i < n_pieces}
    merges = []
    for rule in data["model"]["merges"]:
        a, b = rule.split(" ", 1) if isinstance(rule, str) else rule
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(rule)
    data["model"]["vocab"] = vocab
    data["model"]["merges"] = merges
    data["added_tokens"] = [t for t in data.get("added_tokens", []) if t["id"] < n_pieces]
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


# --------------------------------------------------------------- mutators

_INTERESTING = (
    0, 1, 2, 3, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
    0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
)


def mutate_bytes(data: bytes, rng: random.Random, seeds: Sequence[bytes] = ()) -> bytes:
    """1-4 byte-level edits: flips, interesting integers, inserts, deletes,
    duplicated or spliced chunks, truncation."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        n = len(buf)
        op = rng.randrange(10)
        if n == 0:
            buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            continue
        i = rng.randrange(n)
        if op == 0:
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[i] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x0A, 0x12, 0x1A, rng.randrange(256)))
        elif op in (2, 3):
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice(_INTERESTING) + rng.choice((0, 0, -1, 1))
            raw = (value & ((1 << (8 * width)) - 1)).to_bytes(width, rng.choice(("little", "big")))
            buf[i:i + width] = raw
        elif op == 4:
            del buf[i:i + rng.randint(1, 64)]
        elif op == 5:
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 6:
            j = rng.randrange(n)
            buf[i:i] = buf[j:j + rng.randint(1, 256)]
        elif op == 7:
            del buf[rng.randrange(n + 1):]
        elif op == 8 and seeds:
            other = rng.choice(seeds)
            if other:
                j = rng.randrange(len(other))
                buf[i:] = other[j:j + rng.randint(1, 4096)]
        else:
            buf[i:i + 8] = _varint(rng.choice(_INTERESTING))
    return bytes(buf)


def _random_gguf_value(rng: random.Random):
    vtype = rng.randrange(13)
    if vtype == 9:
        etype = rng.choice((0, 4, 5, 6, 7, 8, 10, 12))
        count = rng.choice((0, 1, 2, 5))
        return vtype, (etype, [_random_scalar(etype, rng) for _ in range(count)])
    return vtype, _random_scalar(vtype, rng)


def _random_scalar(vtype: int, rng: random.Random):
    if vtype == 8:
        return rng.choice((b"", b"llama", b"gpt2", b"\xff\xfe", b"<s>", "\u2581".encode(), b"\x00"))
    if vtype == 7:
        return rng.random() < 0.5
    if vtype in (6, 12):
        return rng.choice((0.0, -1.0, float("nan"), float("inf"), -1e9, 1e30))
    fmt = _GGUF_SCALAR[vtype]
    bits = struct.calcsize(fmt) * 8
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if fmt.islower() else (0, (1 << bits) - 1)
    return max(lo, min(hi, rng.choice((0, 1, 2, 3, -1, 599, 600, 601, 32000, hi, lo))))


_TOKENIZER_KEYS = (
    "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
    "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
    "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.eot_token_id", "general.name",
    "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.pre",
)


def mutate_gguf_structure(kvs: List[Tuple[str, int, object]], rng: random.Random) -> bytes:
    """A GGUF file from `kvs` with one structural change: a key dropped,
    duplicated, retyped or given a random value; an array shortened,
    lengthened or given odd elements; the counts in the header wrong."""
    kvs = list(kvs)
    op = rng.randrange(9)
    i = rng.randrange(len(kvs))
    key, vtype, value = kvs[i]
    version, n_tensors = 3, 0
    if op == 0:
        del kvs[i]
    elif op == 1:
        kvs.insert(rng.randrange(len(kvs) + 1), kvs[i])
    elif op == 2:
        kvs[i] = (key,) + _random_gguf_value(rng)
    elif op == 3:
        kvs.append((rng.choice(_TOKENIZER_KEYS),) + _random_gguf_value(rng))
    elif op == 4 and vtype == 9:
        etype, items = value
        items = list(items)
        cut = rng.randrange(len(items) + 1)
        choice = rng.randrange(4)
        if choice == 0:
            items = items[:cut]
        elif choice == 1:
            items = items + items[:cut]
        elif choice == 2 and items:
            items[rng.randrange(len(items))] = _random_scalar(etype, rng)
        else:
            etype = rng.choice((0, 1, 4, 5, 6, 7, 8, 12))
            items = [_random_scalar(etype, rng) for _ in range(len(items))]
        kvs[i] = (key, 9, (etype, items))
    elif op == 5:
        version = rng.choice((1, 2, 4, 0x03000000, 0))
    elif op == 6:
        n_tensors = rng.choice(_INTERESTING)
    elif op == 7:
        data = gguf_file(kvs)
        # A wrong key/value count in the header.
        return data[:16] + _u64(rng.choice(_INTERESTING)) + data[24:]
    else:
        kvs[i] = (key, vtype, value)
        rng.shuffle(kvs)
    return gguf_file(kvs, version, n_tensors)


_JSON_ODD = (None, True, False, 0, -1, 2**31, 2**63, 1.5, "", "x", "\u2581", "<s>", [], {}, [1, 2], {"a": 1}, "BPE")


def _odd(rng: random.Random, extra=()):
    """A fresh copy of an odd JSON value (never a shared container)."""
    return json.loads(json.dumps(rng.choice(_JSON_ODD + tuple(extra))))


def mutate_json(tree, rng: random.Random):
    """A copy of a JSON tree with 1-3 changes at random places: a value
    replaced by an odd one, a key removed, an entry duplicated."""
    tree = json.loads(json.dumps(tree))
    for _ in range(rng.randint(1, 3)):
        node, parent, key = tree, None, None
        for _ in range(rng.randint(1, 4)):
            if isinstance(node, dict) and node:
                parent, key = node, rng.choice(list(node))
            elif isinstance(node, list) and node:
                parent, key = node, rng.randrange(len(node))
            else:
                break
            node = parent[key]
        if parent is None:
            continue
        op = rng.randrange(4)
        if op == 0:
            parent[key] = _odd(rng)
        elif op == 1:
            del parent[key]
        elif op == 2 and isinstance(parent, list):
            parent.insert(rng.randrange(len(parent) + 1), json.loads(json.dumps(parent[key])))
        elif op == 2 and isinstance(parent, dict):
            parent[str(key) + rng.choice(("", "x", "\u2581"))] = _odd(rng, (parent[key],))
        else:
            parent[key] = _odd(rng) if not isinstance(node, (int, float)) or isinstance(node, bool) \
                else node + rng.choice((-1, 1, 1000, 2**31, -(2**31)))
    return tree


# --------------------------------------------------------------- checks

def documented_errors():
    """Exceptions a loader may raise on a bad file."""
    from spmbpe import errors

    return (errors.SpmbpeError, FileNotFoundError)


_CONTROL_SPELLINGS = (
    "<s>", "</s>", "<unk>", "<pad>", "[INST]", "[/INST]", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<0x41>", "<0xFF>", "<0x", "\u2581", "\u2581\u2581", "<|", "|>", "<", ">", "/", "s", "unk",
)
_ODD_CHARS = (
    " ", "  ", "\n", "\t", "\r\n", "\x00", "\u3000", "\u00a0", "\ufeff", "\u200b", "\ufffd", "\U0001f600",
    "\u0301", "e\u0301", "\uff21", "\u2167", "\u00e9", "\u4e2d", "\ud7ff", "\U0010ffff", "\ufb01", "A", "a",
    "Hello", " world", ".", "1234", "\u0627\u0644", "\u0915\u093f", "\U0001f1fa\U0001f1f8",
)


def text_from_bytes(data: bytes, extra: Sequence[str] = ()) -> str:
    """Text built from fuzzer bytes: each byte picks a fragment (a control
    spelling, an odd character, a random code point, rarely a lone
    surrogate)."""
    out = []
    i = 0
    spellings = tuple(_CONTROL_SPELLINGS) + tuple(extra)
    while i < len(data):
        b = data[i]
        i += 1
        kind = b & 7
        if kind < 3:
            out.append(spellings[(b >> 3) % len(spellings)])
        elif kind < 6:
            out.append(_ODD_CHARS[(b >> 3) % len(_ODD_CHARS)])
        elif kind == 6 and i + 2 < len(data):
            cp = int.from_bytes(data[i:i + 3], "little") % 0x110000
            i += 3
            if 0xD800 <= cp <= 0xDFFF and data[i - 1] & 0x0F:
                cp = 0xFFFD  # a lone surrogate only now and then
            out.append(chr(cp))
        else:
            out.append(chr(0x20 + (b >> 3)))
    return "".join(out)


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def _byte_complete(tok) -> bool:
    return all(tok.piece_to_id(f"<0x{b:02X}>") != tok.unk_id for b in range(256))


def check_tokenizer(tok, text: str, policy, *, roundtrip: bool = False, strict: bool = True) -> None:
    """Encode `text` through every entry point and check the invariants.

    `strict`: also require that ``special="none"`` gives no CONTROL id and
    (with all 256 byte pieces) no unknown id.  That holds for real
    vocabularies, not for a mutated one whose CONTROL pieces can be built by
    merges or byte fallback (llama.cpp, and so spmbpe, emits them then)."""
    from spmbpe import TokenType
    from spmbpe.errors import DisallowedSpecialError

    n = tok.vocab_size
    surrogate = _has_surrogate(text)
    try:
        ids = tok.encode(text, special=policy)
    except DisallowedSpecialError as e:
        if isinstance(policy, str):
            raise Finding(f"DisallowedSpecialError with special={policy!r}: {e}")
        if e.token in policy or e.token not in tok.special_tokens:
            raise Finding(f"DisallowedSpecialError for {e.token!r} with allowed {sorted(policy)!r}")
        if text[e.offset:e.offset + len(e.token)] != e.token:
            raise Finding(f"DisallowedSpecialError offset {e.offset} does not point at {e.token!r}")
        ids = None
    except ValueError as e:
        if surrogate and "surrogate" in str(e):
            return
        raise
    if ids is None:
        return  # refused by the allow-list (which may come before a surrogate check)
    if surrogate:
        raise Finding("text with a lone surrogate encoded without an error")
    if any(not (0 <= i < n) for i in ids):
        raise Finding(f"id out of range in {ids[:20]}")
    if policy == "none" and strict:
        types = [tok.token_type(i) for i in ids]
        if TokenType.CONTROL in types:
            raise Finding(f"special='none' gave a CONTROL id: {ids}")
        if tok.unk_id is not None and tok.unk_id in ids and _byte_complete(tok):
            raise Finding(f"special='none' gave the unknown id with byte fallback: {ids}")
    if policy == "none":
        if tok.encode_ordinary(text) != ids:
            raise Finding("encode_ordinary differs from encode(special='none')")
    with_offsets, spans = tok.encode_with_offsets(text, special=policy)
    if with_offsets != ids:
        raise Finding(f"encode_with_offsets ids differ: {with_offsets} vs {ids}")
    if len(spans) != len(ids) or any(not (0 <= s <= e <= len(text)) for s, e in spans):
        raise Finding(f"bad spans {spans}")
    batch = tok.encode_batch([text, text[: len(text) // 2], text], special=policy, num_threads=2)
    if batch[0] != ids or batch[2] != ids:
        raise Finding("encode_batch differs from encode")
    if batch[1] != tok.encode(text[: len(text) // 2], special=policy):
        raise Finding("encode_batch differs from encode (second text)")
    decoded = tok.decode(ids)
    skipped = tok.decode(ids, skip_special=True)
    if tok.reference == "transformers4":
        # skip_special leaves out all_special_ids, and nothing else.
        control = {i for i in ids if tok._decoder.skip_table[i]}
    else:
        # skip_special leaves out CONTROL and UNKNOWN ids and special added tokens.
        special_added = {t.id for t in tok.added_tokens if t.special}
        control = {i for i in ids if tok.token_type(i) in (TokenType.CONTROL, TokenType.UNKNOWN) or i in special_added}
    if control and tok.decode(sorted(control), skip_special=True) != "":
        raise Finding("decode(skip_special=True) of control ids is not empty")
    if not control and skipped != decoded:
        raise Finding("skip_special changed a decode without control ids")
    if roundtrip and policy == "none" and "\u2581" not in text and decoded != text:
        raise Finding(f"decode(encode_ordinary(t)) != t: {decoded!r} vs {text!r}")


def exercise_loaded(tok) -> None:
    """After a (mutated) file loads: encode and decode must not crash and
    must stay in range, whatever the vocabulary says."""
    texts = ["Hello world", " a  b ", "</s><s>[INST]x", "\u00e9\u4e2d\U0001f600", "", "\u2581\u2581x", "<unk>"]
    texts += [t.content for t in tok.added_tokens[:8]]
    for text in texts:
        for policy in ("all", "none"):
            check_tokenizer(tok, text, policy, strict=False)
    n = tok.vocab_size
    sample = list(range(min(n, 300))) + [n - 1]
    tok.decode(sample)
    tok.decode(sample, skip_special=True)
    tok.decode_bytes(sample)
    for i in (0, n - 1):
        tok.id_to_piece(i)
        tok.token_type(i)


# --------------------------------------------------------------- targets


class Target:
    """One fuzz target: seed inputs, a mutator, and a function that runs one
    input (raising Finding or an undocumented exception on a problem)."""

    name = ""

    def __init__(self, workdir: pathlib.Path) -> None:
        self.workdir = workdir
        self.seeds: List[bytes] = []

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        return mutate_bytes(data, rng, self.seeds)

    def run(self, data: bytes) -> None:
        raise NotImplementedError

    def allowed(self, exc: BaseException) -> bool:
        return isinstance(exc, documented_errors())


class FileTarget(Target):
    """A loader target: the input is a whole file, loaded with spmbpe.load."""

    suffix = ""

    def run(self, data: bytes) -> None:
        import spmbpe

        path = self.workdir / ("input" + self.suffix)
        path.write_bytes(data)
        tok = spmbpe.load(str(path))
        exercise_loaded(tok)


class GgufTarget(FileTarget):
    name = "gguf"
    suffix = ".gguf"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        self.kvs = small_gguf_kvs()
        self.seeds = [gguf_file(self.kvs), gguf_file(small_gguf_kvs(300)[:4])]

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        if rng.random() < 0.5:
            return mutate_gguf_structure(self.kvs, rng)
        return mutate_bytes(data, rng, self.seeds)


class ModelTarget(FileTarget):
    name = "model"
    suffix = ".model"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        self.seeds = [small_model(), small_model(40)]
        nfkc = _trained_nfkc_model(workdir)
        if nfkc is not None:
            self.seeds.append(nfkc)

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        fields = proto_fields(data)
        if fields and rng.random() < 0.4:
            return proto_join(_mutate_proto_fields(fields, rng))
        return mutate_bytes(data, rng, self.seeds)


def _mutate_proto_fields(fields, rng: random.Random):
    fields = list(fields)
    i = rng.randrange(len(fields))
    op = rng.randrange(5)
    if op == 0:
        del fields[i]
    elif op == 1:
        fields.insert(rng.randrange(len(fields) + 1), fields[i])
    elif op == 2:
        # A spec field (trainer 2, normalizer 3/5) or a piece with one field set.
        field = rng.choice((1, 2, 3, 5))
        sub = rng.choice((1, 2, 3, 4, 35, 40, 41, 42, 43))
        value = _varint(rng.choice(_INTERESTING + (2**64 - 1, 2**64 - 2)))
        body = _varint(sub << 3) + value
        if field == 1:
            body = _varint(1 << 3 | 2) + _varint(3) + b"<x>" + body
        fields.insert(rng.randrange(len(fields) + 1), (field, 2, _varint(len(body)) + body))
    elif op == 3:
        f, w, raw = fields[i]
        if w == 2:
            ln, pos = _read_varint(raw, 0)
            inner = proto_fields(raw[pos:])
            if inner:
                inner = _mutate_proto_fields(inner, rng)
                body = proto_join(inner)
                fields[i] = (f, w, _varint(len(body)) + body)
    else:
        rng.shuffle(fields)
    return fields


def _trained_nfkc_model(workdir: pathlib.Path) -> Optional[bytes]:
    """A tiny BPE model with the nmt_nfkc normalizer (a real precompiled
    character map), trained with sentencepiece if it is installed."""
    try:
        import sentencepiece as spm
    except ImportError:
        return None
    corpus = workdir / "corpus.txt"
    lines = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8").splitlines()[:300]
    corpus.write_text("\n".join(lines) + "\n\uff21\uff22 \u2167 \ufb01 caf\u00e9\n", encoding="utf-8")
    prefix = workdir / "nfkc"
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), model_type="bpe", vocab_size=600,
        normalization_rule_name="nmt_nfkc", byte_fallback=True, user_defined_symbols=["<ud>"],
        minloglevel=2, character_coverage=0.9995,
    )
    return (workdir / "nfkc.model").read_bytes()


class TokenizerJsonTarget(FileTarget):
    name = "tokenizer_json"
    suffix = ".json"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        self.seeds = [small_tokenizer_json()]
        self.tree = json.loads(self.seeds[0])

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        if rng.random() < 0.7:
            return json.dumps(mutate_json(self.tree, rng), ensure_ascii=rng.random() < 0.5).encode("utf-8")
        return mutate_bytes(data, rng, self.seeds)


class HfFolderTarget(Target):
    """A model folder: the small .model plus a mutated tokenizer_config.json
    (and special_tokens_map.json / added_tokens.json)."""

    name = "hf_folder"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        self.folder = workdir / "folder"
        self.folder.mkdir(exist_ok=True)
        (self.folder / "tokenizer.model").write_bytes(small_model())
        config = {
            "tokenizer_class": "LlamaTokenizer",
            "legacy": False,
            "add_bos_token": True,
            "bos_token": "<s>",
            "eos_token": {"content": "</s>", "lstrip": False, "rstrip": False},
            "unk_token": "<unk>",
            "added_tokens_decoder": {
                "0": {"content": "<unk>", "special": True},
                "1": {"content": "<s>", "special": True},
                "2": {"content": "</s>", "special": True},
                "600": {"content": "[INST]", "special": True, "rstrip": True},
                "601": {"content": "[/INST]", "special": True, "lstrip": True},
            },
            "additional_special_tokens": ["[INST]", "[/INST]"],
        }
        self.tree = {"config": config, "map": {"pad_token": "<pad>"}, "added": {"<extra>": 602}}
        self.seeds = [json.dumps(self.tree).encode("utf-8")]

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        if rng.random() < 0.85:
            return json.dumps(mutate_json(self.tree, rng)).encode("utf-8")
        return mutate_bytes(data, rng, self.seeds)

    def run(self, data: bytes) -> None:
        import spmbpe

        try:
            tree = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            tree = {"config": data}
        if not isinstance(tree, dict):
            tree = {"config": tree}
        for name, key in (("tokenizer_config.json", "config"), ("special_tokens_map.json", "map"),
                          ("added_tokens.json", "added")):
            path = self.folder / name
            if key not in tree:
                if path.exists():
                    path.unlink()
                continue
            value = tree[key]
            path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode("utf-8"))
        # Half the inputs as transformers 5 reads the folder, half as
        # transformers 4's slow tokenizer (its decoder's roles and spellings).
        reference = "transformers4" if zlib.crc32(data) & 1 else None
        tok = spmbpe.load(str(self.folder), reference=reference)
        exercise_loaded(tok)


class NormalizerTarget(Target):
    """Precompiled character maps straight into the C normalizer."""

    name = "normalizer"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        model = _trained_nfkc_model(workdir)
        charsmap = b""
        if model is not None:
            from spmbpe._spm_model import parse_model_proto

            charsmap = bytes(parse_model_proto(model).normalizer.precompiled_charsmap)
        self.seeds = [charsmap] if charsmap else [struct.pack("<I", 8) + bytes(16)]

    def run(self, data: bytes) -> None:
        from spmbpe._normalizer import Normalizer

        flags = data[-1] if data else 0
        try:
            norm = Normalizer(
                data, add_dummy_prefix=bool(flags & 1), remove_extra_whitespaces=bool(flags & 2),
                escape_whitespaces=bool(flags & 4),
            )
        except documented_errors():
            return
        for text in ("\uff21\uff22 \u2167 \ufb01 caf\u00e9", "  a  b  ", "", "\x00\U0010ffff\u0301"):
            out = norm.normalize(text)
            normalized, align = norm.normalize_with_offsets(text)
            if normalized != out:
                raise Finding("normalize and normalize_with_offsets differ")
            if len(align) != len(normalized) + 1 or any(not (0 <= a <= len(text)) for a in align):
                raise Finding(f"bad alignment {list(align)[:20]} for {text!r} -> {normalized!r}")

    def allowed(self, exc: BaseException) -> bool:
        # The internal Normalizer raises ValueError on a corrupt map (the
        # .model loader turns that into ModelFormatError with the file).
        return isinstance(exc, (ValueError,) + documented_errors())


class EncodeTarget(Target):
    name = "encode"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        import spmbpe

        self.tokenizers = [
            (spmbpe.load(str(GGUF_FIXTURE)), True),
            (spmbpe.load(str(MODEL_FIXTURE)), True),
            (spmbpe.load(str(JSON_FIXTURE)), False),
        ]
        hf = HfFolderTarget(workdir)
        hf.run(hf.seeds[0])
        self.tokenizers.append((spmbpe.load(str(hf.folder)), False))
        model = _trained_nfkc_model(workdir)
        if model is not None:
            path = workdir / "nfkc-encode.model"
            path.write_bytes(model)
            self.tokenizers.append((spmbpe.load(str(path)), False))
        # sentencepiece's rules without byte fallback, with user-defined and
        # unused pieces, and a llama.cpp one with lstrip/rstrip added tokens.
        pieces = ["<unk>", "<s>", "</s>", "<ud>", "\u2581", "a", "b", "\u2581a", "ab", "\u2581ab", "<", ">", "s", "/"]
        types = [2, 3, 3, 4, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1]
        self.tokenizers.append((spmbpe.SpmTokenizer(pieces, None, token_types=types, reference="sentencepiece",
                                                    bos_id=1, eos_id=2), False))
        self.tokenizers.append((spmbpe.SpmTokenizer(
            pieces, None, token_types=[2, 3, 3, 4] + [1] * 10, bos_id=1, eos_id=2,
            added_tokens=[spmbpe.AddedToken("[INST]", 3, special=True, lstrip=True, rstrip=True)],
        ), False))
        self.seeds = [b"Hello world", bytes(range(0, 256, 3)), "</s>\u2581<s>".encode()]

    def run(self, data: bytes) -> None:
        if not data:
            return
        tok, roundtrip = self.tokenizers[data[0] % len(self.tokenizers)]
        mode = data[1] % 4 if len(data) > 1 else 0
        specials = sorted(tok.special_tokens)
        text = text_from_bytes(data[2:], specials)
        policy = ("all", "none", frozenset(specials[:2]), frozenset())[mode]
        check_tokenizer(tok, text, policy, roundtrip=roundtrip)

    def allowed(self, exc: BaseException) -> bool:
        return False  # check_tokenizer already accepts what is documented


class DecodeTarget(Target):
    name = "decode"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        import spmbpe

        self.tokenizers = [spmbpe.load(str(GGUF_FIXTURE)), spmbpe.load(str(MODEL_FIXTURE))]
        model = _trained_nfkc_model(workdir)
        if model is not None:
            path = workdir / "nfkc-decode.model"
            path.write_bytes(model)
            self.tokenizers.append(spmbpe.load(str(path)))
        self.seeds = [struct.pack("<8i", 1, 15043, 3186, 2, 0, 13, 259, 31999)]

    def run(self, data: bytes) -> None:
        from spmbpe import TokenType
        from spmbpe.errors import InvalidTokenIdError

        if not data:
            return
        tok = self.tokenizers[data[0] % len(self.tokenizers)]
        n = tok.vocab_size
        ids: List[object] = []
        odd = False
        bad = False
        for (v,) in struct.iter_unpack("<i", data[1:len(data) - (len(data) - 1) % 4]):
            kind = v & 0xF
            if kind == 0:
                ids.append(v)  # anything, often out of range
                bad |= not (0 <= v < n)
            elif kind == 1:
                choice = (-1, n, 2**31, 2**63, 2**64, 1.0, "1", None, True, b"x")[(v >> 4) % 10]
                ids.append(choice)
                if isinstance(choice, int):
                    bad |= not (0 <= choice < n)
                else:
                    odd = True
            else:
                ids.append((v >> 4) % n)
        for skip in (False, True):
            try:
                text = tok.decode(ids, skip_special=skip)
                raw = tok.decode_bytes(ids, skip_special=skip)
            except InvalidTokenIdError:
                if not bad:
                    raise Finding("InvalidTokenIdError for valid ids")
                continue
            except TypeError:
                if not odd:
                    raise Finding("TypeError for integer ids")
                continue
            if bad or odd:
                raise Finding(f"decode accepted invalid ids {ids[:10]}")
            if not isinstance(text, str) or not isinstance(raw, bytes):
                raise Finding("decode returned the wrong type")
            if skip:
                skipped = (TokenType.CONTROL, TokenType.UNKNOWN)
                llama = tok.reference == "llama.cpp"
                # llama_detokenize's remove_special also drops a first id that
                # is the BOS the vocabulary adds and a last one that is the EOS
                # it adds, whatever their type.
                lead = llama and tok.add_bos and bool(ids) and ids[0] == tok.bos_id
                tail = llama and tok.add_eos and len(ids) > int(lead) and ids[-1] == tok.eos_id
                inner = ids[int(lead) : len(ids) - int(tail)]
                kept = [i for i in inner if tok.token_type(i) not in skipped]
                expected = tok.decode_bytes(kept)
                if llama and ids and (lead or tok.token_type(ids[0]) in skipped):
                    # llama_detokenize strips the leading space of the first
                    # id only, whatever it renders: a skipped first id leaves
                    # the next piece its space (docs/behaviour.md). (An
                    # unknown id after them keeps a kept EOS from being last.)
                    unk = tok.unk_id
                    holds_eos = tail and kept and unk is not None and unk != tok.eos_id
                    pad = [unk] if holds_eos and tok.token_type(unk) in skipped else []
                    expected = tok.decode_bytes([ids[0]] + kept + pad, skip_special=True)
                if raw != expected:
                    raise Finding("decode_bytes(skip_special=True) shows a control/unknown id")

    def allowed(self, exc: BaseException) -> bool:
        return False


TARGET_CLASSES: Dict[str, Callable[[pathlib.Path], Target]] = {
    "encode": EncodeTarget,
    "decode": DecodeTarget,
    "gguf": GgufTarget,
    "model": ModelTarget,
    "tokenizer_json": TokenizerJsonTarget,
    "hf_folder": HfFolderTarget,
    "normalizer": NormalizerTarget,
}


# --------------------------------------------------------------- driver


def classify(target: Target, data: bytes) -> Optional[Tuple[str, str]]:
    """Run one input; None if fine, else (kind, description)."""
    try:
        target.run(data)
    except Finding as e:
        return "invariant", str(e)
    except RecursionError as e:
        return "exception", f"RecursionError: {e}"
    except MemoryError:
        return "exception", "MemoryError (a huge allocation)"
    except Exception as e:  # noqa: BLE001 - everything undocumented is a finding
        if target.allowed(e):
            return None
        tb = traceback.extract_tb(e.__traceback__)
        where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?"
        return "exception", f"{type(e).__name__} at {where}: {e}"[:2000]
    return None


def _save(crash_dir: pathlib.Path, target: str, kind: str, data: bytes, note: str) -> pathlib.Path:
    crash_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    path = crash_dir / f"{target}-{kind}-{digest}"
    path.write_bytes(data)
    path.with_suffix(".txt").write_text(note + "\n", encoding="utf-8")
    return path


def worker(name: str, seconds: float, seed: int, crash_dir: pathlib.Path, timeout: float, max_len: int) -> int:
    """The fuzz loop (in the child process).  Prints one JSON line of stats."""
    import faulthandler

    rng = random.Random(seed)
    crash_dir.mkdir(parents=True, exist_ok=True)
    current = crash_dir / f"current-{name}"
    with tempfile.TemporaryDirectory(prefix=f"spmbpe-fuzz-{name}-") as tmp:
        target = TARGET_CLASSES[name](pathlib.Path(tmp))
        corpus = list(target.seeds)
        runs = 0
        findings: Dict[str, str] = {}
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            base = rng.choice(corpus)
            try:
                data = target.mutate(base, rng) if runs >= len(target.seeds) else target.seeds[runs]
            except Exception:  # noqa: BLE001 - a bug of this harness, not of spmbpe
                traceback.print_exc()
                continue
            data = data[:max_len]
            current.write_bytes(data)
            faulthandler.dump_traceback_later(timeout, exit=True)
            result = classify(target, data)
            faulthandler.cancel_dump_traceback_later()
            runs += 1
            if result is not None:
                kind, note = result
                # One report per kind of problem: the exception type and
                # where it came from, or the invariant's text up to its data.
                signature = re.sub(r"\d+|'[^']*'|\[[^]]*\]", "", note.split(": ", 1)[0])[:80]
                if signature not in findings:
                    path = _save(crash_dir, name, kind, data, note)
                    findings[signature] = f"{path.name}: {note[:300]}"
                    print(f"[{name}] finding {path}: {note[:300]}", file=sys.stderr, flush=True)
            elif len(corpus) < 64 and rng.random() < 0.02:
                corpus.append(data)  # keep some loadable variants as bases
        current.unlink()
    print(json.dumps({"target": name, "runs": runs, "findings": list(findings.values())}), flush=True)
    return 0


def run_child(name: str, args, seconds: float, seed: int) -> Tuple[int, List[str]]:
    """Run the fuzz loop for `name` in child processes until `seconds` are
    spent, restarting after a crash; returns (inputs run, findings)."""
    crash_dir = pathlib.Path(args.crash_dir)
    runs, findings = 0, []
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 1:
            break
        cmd = [sys.executable, os.path.abspath(__file__), name, "--worker", "--seconds", f"{left:.1f}",
               "--seed", str(seed), "--crash-dir", str(crash_dir), "--timeout", str(args.timeout),
               "--max-len", str(args.max_len)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode == 0 and lines:
            stats = json.loads(lines[-1])
            runs += stats["runs"]
            findings += stats["findings"]
            break
        # The child died: a crash (signal) or a hang (faulthandler exit).
        current = crash_dir / f"current-{name}"
        if not current.exists():
            raise SystemExit(f"fuzz target {name} failed before its first input (exit {proc.returncode})")
        data = current.read_bytes()
        sig = -proc.returncode if proc.returncode < 0 else None
        kind = f"signal{sig}" if sig else "hang"
        note = f"child exited with {proc.returncode} ({signal.Signals(sig).name if sig else 'timeout: see its traceback above'})"
        path = _save(crash_dir, name, kind, data, note)
        findings.append(f"{path.name}: {note}")
        seed += 1  # do not replay the same sequence
    return runs, findings


def run_atheris(name: str, args) -> int:
    import atheris

    # libFuzzer ends the process itself (no Python cleanup), so the work
    # files live in the crash directory rather than in a temporary one.
    crash_dir = pathlib.Path(args.crash_dir)
    tmp = crash_dir / f"atheris-{name}"
    seeds_dir = tmp / "seeds"
    seeds_dir.mkdir(parents=True, exist_ok=True)
    with atheris.instrument_imports():
        import spmbpe  # noqa: F401
    target = TARGET_CLASSES[name](tmp)
    for i, s in enumerate(target.seeds):
        (seeds_dir / str(i)).write_bytes(s[: args.max_len])

    def one_input(data: bytes) -> None:
        result = classify(target, data)
        if result is not None:
            raise RuntimeError(f"{result[0]}: {result[1]}")

    atheris.Setup(
        [sys.argv[0], f"-max_total_time={int(args.seconds)}", f"-max_len={args.max_len}",
         f"-timeout={int(args.timeout)}", f"-artifact_prefix={crash_dir}/{name}-", str(seeds_dir)],
        one_input,
    )
    atheris.Fuzz()
    return 0


def replay(name: str, files: Sequence[str]) -> int:
    status = 0
    with tempfile.TemporaryDirectory(prefix=f"spmbpe-replay-{name}-") as tmp:
        target = TARGET_CLASSES[name](pathlib.Path(tmp))
        for f in files:
            result = classify(target, pathlib.Path(f).read_bytes())
            print(f"{f}: {'ok' if result is None else result}")
            status |= result is not None
    return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=TARGETS + ("all",))
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (shared by 'all')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", choices=("random", "atheris"), default="random")
    parser.add_argument("--crash-dir", default=str(ROOT / "fuzz-findings"))
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds one input may take")
    parser.add_argument("--max-len", type=int, default=1 << 21, help="longest input in bytes")
    parser.add_argument("--replay", nargs="+", metavar="FILE")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    names = TARGETS if args.target == "all" else (args.target,)
    if args.replay:
        return replay(names[0], args.replay)
    if args.worker:
        return worker(names[0], args.seconds, args.seed, pathlib.Path(args.crash_dir), args.timeout, args.max_len)
    if args.engine == "atheris":
        if len(names) != 1:
            parser.error("--engine atheris runs one target at a time")
        return run_atheris(names[0], args)
    total_runs, all_findings = {}, []
    share = args.seconds / len(names)
    for name in names:
        runs, findings = run_child(name, args, share, args.seed)
        total_runs[name] = runs
        all_findings += findings
        print(f"{name}: {runs} inputs, {len(findings)} findings", flush=True)
    for f in all_findings:
        print(f"  {f}")
    print(f"summary: {sum(total_runs.values())} inputs in {args.seconds:.0f} s "
          f"({', '.join(f'{k} {v}' for k, v in total_runs.items())}); {len(all_findings)} findings")
    return 1 if all_findings else 0


if __name__ == "__main__":
    sys.exit(main())
