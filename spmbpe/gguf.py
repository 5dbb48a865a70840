"""Tokenizers from GGUF files: the metadata read into a spec as llama.cpp
reads it (``src/llama-vocab.cpp``, ``llama_vocab::impl::load``), with the
token attributes llama.cpp derives from token texts (the end-of-generation
list becomes CONTROL) and from the model name (Phi-3: RSTRIP); the encoding
and decoding rules are references/llamacpp.py's."""

from __future__ import annotations

import os
from array import array
from typing import Any, Dict, Literal, Optional, Sequence, Union, overload

from ._core import PieceTable
from ._gguf import RawStrings, read_gguf_header
from ._vocab import TOKEN_TYPE_VALUES, checked_id, piece_offsets
from .errors import ModelFormatError, UnsupportedModelError
from .spec import TokenizerSpec
from .tokens import AddedToken, TokenType

__all__ = ["read_gguf_spec", "spec_from_gguf_metadata"]

def read_gguf_spec(path: Union[str, "os.PathLike[str]"]) -> TokenizerSpec:
    """The TokenizerSpec of a GGUF file's vocabulary."""
    path = os.fspath(path)
    header = read_gguf_header(path, raw_string_keys=(_TOKENS,))
    return spec_from_gguf_metadata(header.metadata, path, header.offsets)


_TOKENS = "tokenizer.ggml.tokens"


class _Source:
    """Where metadata came from, for error messages: the file and the byte
    offset of each key/value pair."""

    def __init__(self, path: Optional[str], offsets: Optional[Dict[str, int]]) -> None:
        self.path = path
        self.offsets = offsets or {}

    def error(self, key: str, message: str) -> ModelFormatError:
        return ModelFormatError(self.path, self.offsets.get(key), message)


def spec_from_gguf_metadata(
    meta: Dict[str, object], path: Optional[str] = None, offsets: Optional[Dict[str, int]] = None
) -> TokenizerSpec:
    """The TokenizerSpec of already-read GGUF metadata; `offsets` (key ->
    byte offset of its pair) make error messages precise."""
    src = _Source(path, offsets)
    model = meta.get("tokenizer.ggml.model")
    if model is None:
        raise ModelFormatError(path, None, "no tokenizer.ggml.model key: this GGUF file has no vocabulary")
    if model != "llama":
        raise UnsupportedModelError(
            f"{path}: tokenizer.ggml.model is {model!r}; spmbpe implements SentencePiece-BPE "
            f"vocabularies, tokenizer.ggml.model = 'llama'"
        )
    table = _piece_table(meta.get(_TOKENS), path, src.offsets.get(_TOKENS))
    n = len(table)

    scores = _numeric_array(meta, "tokenizer.ggml.scores", n, src, "f")
    if scores is None:
        # llama.cpp: without a scores array every score is 0 (merges then go
        # left to right), which is not the id order of a bare piece list.
        scores = array("f", bytes(4 * n))
    types = _numeric_array(meta, "tokenizer.ggml.token_type", n, src, "i")
    if types is None:
        types = array("i", [int(TokenType.NORMAL)]) * n

    # llama.cpp's defaults for an SPM ("llama") vocabulary when a key is absent.
    bos = _token_id(meta, "tokenizer.ggml.bos_token_id", 1, n, src)
    eos = _token_id(meta, "tokenizer.ggml.eos_token_id", 2, n, src)
    unk = _token_id(meta, "tokenizer.ggml.unknown_token_id", 0, n, src)
    pad = _token_id(meta, "tokenizer.ggml.padding_token_id", None, n, src)
    add_bos = _flag(meta, "tokenizer.ggml.add_bos_token", True, src) and bos is not None
    add_eos = _flag(meta, "tokenizer.ggml.add_eos_token", False, src) and eos is not None
    add_space_prefix = _flag(meta, "tokenizer.ggml.add_space_prefix", True, src)

    base = _types_bytes(types)
    attrs = _token_attributes(table, base, meta, eos, n)
    token_types = bytearray(base.translate(_UNDEFINED_AS_NORMAL))
    for i, a in attrs.items():
        token_types[i] = _type_of(a)
    added = [
        AddedToken(
            table.piece(i),
            i,
            special=bool(a & (_CONTROL | _UNKNOWN)),
            lstrip=bool(a & _LSTRIP),
            rstrip=bool(a & _RSTRIP),
        )
        for i, a in sorted(attrs.items())
        if a & (_CONTROL | _UNKNOWN | _USER_DEFINED)
    ]
    return TokenizerSpec.build(
        table,
        scores,
        bytes(token_types),
        bos_id=bos,
        eos_id=eos,
        unk_id=unk,
        pad_id=pad,
        add_prefix_space=add_space_prefix,
        prefix_scheme="after_each_special",
        added_tokens=added,
        add_bos=add_bos,
        add_eos=add_eos,
    )


def _piece_table(tokens: object, path: Optional[str], offset: Optional[int] = None) -> PieceTable:
    """The vocabulary table of tokenizer.ggml.tokens, as llama.cpp reads it."""
    if isinstance(tokens, list) and all(isinstance(t, str) for t in tokens):
        encoded = [t.encode("utf-8") for t in tokens]
        tokens = RawStrings(b"".join(encoded), piece_offsets(map(len, encoded)), 0)
    if not isinstance(tokens, RawStrings):
        raise ModelFormatError(path, offset, f"{_TOKENS} is missing or not an array of strings")
    if len(tokens) == 0:
        raise ModelFormatError(path, tokens.data_offset, f"{_TOKENS} is empty")
    arena, offsets = tokens.arena, tokens.offsets
    table = PieceTable(arena, offsets)
    if b"\x00" in arena or table.first_empty >= 0:
        # llama.cpp reads each token as a C string (cut at a NUL byte) and
        # renames an empty one, so that every token has a text.
        pieces = []
        for i in range(len(tokens)):
            piece = arena[offsets[i] : offsets[i + 1]].split(b"\x00", 1)[0]
            pieces.append(piece if piece else f"[EMPTY_{i}]".encode("ascii"))
        table = PieceTable(b"".join(pieces), piece_offsets(map(len, pieces)))
    bad = table.first_invalid_utf8()
    if bad >= 0:
        raise ModelFormatError(
            path, tokens.file_offset(bad), f"element {bad} of {_TOKENS} is not valid UTF-8: "
            f"{table.piece_bytes(bad)[:40]!r}"
        )
    dup = table.first_duplicate
    if dup >= 0:
        # llama.cpp asserts that every text is unique and aborts the load.
        first = table.find(table.piece_bytes(dup))
        raise ModelFormatError(
            path, tokens.file_offset(dup),
            f"{_TOKENS} holds {table.piece(dup)!r} twice (ids {first} and {dup})",
        )
    return table


# llama.cpp's token attributes (llama_token_attr), as bits.
_UNDEFINED = 0
_UNKNOWN = 1 << 0
_UNUSED = 1 << 1
_NORMAL = 1 << 2
_CONTROL = 1 << 3
_USER_DEFINED = 1 << 4
_BYTE = 1 << 5
_LSTRIP = 1 << 7
_RSTRIP = 1 << 8

_ATTR_OF_TYPE: Dict[int, int] = {  # (a TokenType is an int)
    TokenType.NORMAL: _NORMAL,
    TokenType.UNKNOWN: _UNKNOWN,
    TokenType.CONTROL: _CONTROL,
    TokenType.USER_DEFINED: _USER_DEFINED,
    TokenType.UNUSED: _UNUSED,
    TokenType.BYTE: _BYTE,
}
_TYPE_OF_ATTR = {attr: TokenType(t) for t, attr in _ATTR_OF_TYPE.items()}

# Texts llama.cpp marks CONTROL whatever the file says: the end-of-generation
# list, and the end-of-turn/fill-in-the-middle lists of its auto-detection.
_EOG_TEXTS = frozenset([
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>", "[e~[",
])
_FIM_TEXTS = {
    "tokenizer.ggml.fim_pre_token_id": ("tokenizer.ggml.prefix_token_id", (
        "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\uff5cfim\u2581begin\uff5c>", "<PRE>",
        "\u2581<PRE>", "<|code_prefix|>", "<|prefix|>")),
    "tokenizer.ggml.fim_suf_token_id": ("tokenizer.ggml.suffix_token_id", (
        "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\uff5cfim\u2581hole\uff5c>", "<SUF>",
        "\u2581<SUF>", "<|code_suffix|>", "<|suffix|>")),
    "tokenizer.ggml.fim_mid_token_id": ("tokenizer.ggml.middle_token_id", (
        "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\uff5cfim\u2581end\uff5c>", "<MID>",
        "\u2581<MID>", "<|code_middle|>", "<|middle|>")),
    "tokenizer.ggml.fim_pad_token_id": (None, ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]")),
    "tokenizer.ggml.fim_rep_token_id": (None, ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>")),
    "tokenizer.ggml.fim_sep_token_id": (None, ("<|file_sep|>",)),
}
# gpt-oss markers llama.cpp turns into plain USER_DEFINED tokens in every model.
_FORCED_USER_DEFINED = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")


def _types_bytes(types: Sequence[int]) -> bytes:
    """The file's token types, one byte each; a number outside 1..6 is
    llama.cpp's UNDEFINED (0)."""
    try:
        raw = array("B", types).tobytes()
    except (ValueError, TypeError, OverflowError):
        raw = bytes(t if t in TOKEN_TYPE_VALUES else 0 for t in types)
    return raw.translate(_KNOWN_TYPES)


_KNOWN_TYPES = bytes(t if t in TOKEN_TYPE_VALUES else 0 for t in range(256))
_UNDEFINED_AS_NORMAL = bytes([TokenType.NORMAL]) + bytes(range(1, 256))


def _token_attributes(
    table: PieceTable, types: bytes, meta: Dict[str, object], eos: Optional[int], n: int
) -> Dict[int, int]:
    """llama.cpp's attribute bits of every token that is special or that a
    rule of llama_vocab::impl::load touches (by token text or model name)."""
    attrs: Dict[int, int] = {}
    for kind in (TokenType.UNKNOWN, TokenType.CONTROL, TokenType.USER_DEFINED):
        i = types.find(kind)
        while i >= 0:
            attrs[i] = _ATTR_OF_TYPE[kind]
            i = types.find(kind, i + 1)

    def get(i: int) -> int:
        return attrs.get(i, _ATTR_OF_TYPE.get(types[i], _UNDEFINED))

    ids = _Lookup(table)

    # Fill-in-the-middle auto-detection: when the file names no id for a
    # category, llama.cpp marks the first listed text it meets (in hash-map
    # order) CONTROL; marking every one present agrees with it whenever a
    # vocabulary has at most one text per category.
    for key, (old_key, texts) in _FIM_TEXTS.items():
        if key in meta or (old_key is not None and old_key in meta):
            continue
        for text in texts:
            if text in ids:
                attrs[ids[text]] = get(ids[text]) | _CONTROL
    eog = set()
    for text in _EOG_TEXTS:
        if text in ids:
            attrs[ids[text]] = get(ids[text]) | _CONTROL
            eog.add(ids[text])
    for text in _FORCED_USER_DEFINED:
        if text in ids:
            attrs[ids[text]] = _USER_DEFINED
    for key in ("tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"):
        extra = meta.get(key)
        if isinstance(extra, int) and not isinstance(extra, bool) and 0 <= extra < n:
            eog.add(extra)
    if eos is not None:
        eog.add(eos)
    eog_texts = {table.piece(i) for i in eog}
    # Harmony-style vocabularies: <|end|> separates messages, it does not end
    # generation, and becomes a plain USER_DEFINED token.
    calls = "<|call|>" in eog_texts or "<|calls|>" in eog_texts
    if "<|end|>" in eog_texts and calls and ("<|return|>" in eog_texts or "<|flush|>" in eog_texts):
        attrs[ids["<|end|>"]] = _USER_DEFINED
    # Vocabularies with their own end marker demote </s> to a NORMAL piece.
    if "</s>" in eog_texts and ("<|tool_response>" in eog_texts or "<|plamo:eos|>" in eog_texts):
        attrs[ids["</s>"]] = _NORMAL

    special = [i for i, a in attrs.items() if a & (_CONTROL | _USER_DEFINED | _UNKNOWN)]
    name = str(meta.get("general.name", "")).lower()
    pre = str(meta.get("tokenizer.ggml.pre", ""))
    arch = str(meta.get("general.architecture", ""))
    if any(s in pre for s in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
        s in arch for s in ("nomic-bert-moe", "jina-bert-v3")
    ):
        if "<mask>" in ids:
            attrs[ids["<mask>"]] = get(ids["<mask>"]) | _LSTRIP
    elif "phi-3" in name or "phi3" in name:
        # Phi-3: whitespace after a special token is dropped, except after
        # <unk>, <s> and <|endoftext|>; </s> drops it too.
        for i in special:
            attrs[i] |= _RSTRIP
        if "</s>" in ids:
            attrs[ids["</s>"]] = get(ids["</s>"]) | _RSTRIP
        for text in ("<unk>", "<s>", "<|endoftext|>"):
            if text in ids:
                attrs[ids[text]] = get(ids[text]) & ~_RSTRIP
    elif "modern-bert" in name:
        if "[MASK]" in ids:
            attrs[ids["[MASK]"]] = get(ids["[MASK]"]) | _LSTRIP
    return attrs


class _Lookup:
    """``text in ids`` and ``ids[text]`` over a PieceTable."""

    def __init__(self, table: PieceTable) -> None:
        self.table = table

    def __contains__(self, text: str) -> bool:
        return self.table.find(text.encode("utf-8")) >= 0

    def __getitem__(self, text: str) -> int:
        found = self.table.find(text.encode("utf-8"))
        if found < 0:
            raise KeyError(text)
        return found


def _type_of(attr: int) -> TokenType:
    """The TokenType a set of attribute bits acts as (CONTROL first: a
    CONTROL bit makes a token special whatever else it is)."""
    for bit in (_CONTROL, _UNKNOWN, _USER_DEFINED, _BYTE, _UNUSED):
        if attr & bit:
            return _TYPE_OF_ATTR[bit]
    return TokenType.NORMAL


@overload
def _numeric_array(
    meta: Dict[str, object], key: str, n: int, src: _Source, typecode: Literal["f"]
) -> Optional["array[float]"]: ...
@overload
def _numeric_array(
    meta: Dict[str, object], key: str, n: int, src: _Source, typecode: Literal["i"]
) -> Optional["array[int]"]: ...
def _numeric_array(
    meta: Dict[str, object], key: str, n: int, src: _Source, typecode: str
) -> Optional["array[Any]"]:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, array) and value.typecode in ("f", "d", "i", "I", "l", "L", "q", "Q", "b", "B", "h", "H"):
        if len(value) != n:
            raise src.error(key, f"{key} has {len(value)} entries but tokenizer.ggml.tokens has {n}")
        if value.typecode == typecode:
            return value
        try:
            # llama.cpp reads token types as int32 and scores as float32.
            return array(typecode, value)
        except (TypeError, OverflowError):
            raise src.error(
                key, f"{key} holds {'floats' if value.typecode in 'fd' else 'integers out of range'}, "
                f"not {'int32 token types' if typecode == 'i' else 'float scores'}"
            ) from None
    raise src.error(key, f"{key} is not a numeric array")


def _token_id(meta: Dict[str, object], key: str, default: Optional[int], n: int, src: _Source) -> Optional[int]:
    value = meta.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise src.error(key, f"{key} is not an integer: {value!r:.80}")
    if value == -1 or value == 0xFFFFFFFF:
        return None  # LLAMA_TOKEN_NULL
    return checked_id(key, value, n, lambda message: src.error(key, message))


def _flag(meta: Dict[str, object], key: str, default: bool, src: _Source) -> bool:
    value = meta.get(key, default)
    if not isinstance(value, bool):
        raise src.error(key, f"{key} is not a boolean: {value!r:.80}")
    return value
