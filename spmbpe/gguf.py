"""Tokenizers from GGUF files, with llama.cpp's semantics.

llama.cpp is what runs a GGUF file, so every rule here is llama.cpp's
(``src/llama-vocab.cpp``, ``llama_vocab::impl::load`` and ``tokenize``):

* the dummy prefix goes before every text fragment that starts the input or
  follows a special token (``is_prev_special``);
* CONTROL, USER_DEFINED and UNKNOWN pieces are split out of the text before
  merging, longest first; with ``special="none"`` only USER_DEFINED ones;
* a merge may build any piece of the vocabulary, whatever its type;
* token attributes the model name implies are applied (Phi-3: RSTRIP).
"""

from __future__ import annotations

import os
from array import array
from typing import Dict, List, Optional, Sequence, Union

from ._gguf import read_gguf_metadata
from .errors import ModelFormatError, UnsupportedModelError
from .tokenizer import SpmTokenizer
from .tokens import AddedToken, TokenType

__all__ = ["load_gguf"]

# llama.cpp's defaults for an SPM ("llama") vocabulary when a key is absent.
_DEFAULT_BOS = 1
_DEFAULT_EOS = 2
_DEFAULT_UNK = 0


def load_gguf(path: Union[str, "os.PathLike[str]"]) -> SpmTokenizer:
    """A tokenizer from the vocabulary in a GGUF file's metadata."""
    path = os.fspath(path)
    meta = read_gguf_metadata(path)
    return tokenizer_from_gguf_metadata(meta, path)


def tokenizer_from_gguf_metadata(meta: Dict[str, object], path: Optional[str] = None) -> SpmTokenizer:
    model = meta.get("tokenizer.ggml.model")
    if model is None:
        raise ModelFormatError(path, None, "no tokenizer.ggml.model key: this GGUF file has no vocabulary")
    if model != "llama":
        raise UnsupportedModelError(
            f"{path}: tokenizer.ggml.model is {model!r}; spmbpe implements SentencePiece-BPE "
            f"vocabularies, tokenizer.ggml.model = 'llama'"
        )

    tokens = meta.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ModelFormatError(path, None, "tokenizer.ggml.tokens is missing or not an array of strings")
    n = len(tokens)
    if n == 0:
        raise ModelFormatError(path, None, "tokenizer.ggml.tokens is empty")

    scores = _numeric_array(meta, "tokenizer.ggml.scores", n, path, "f")
    if scores is None:
        # llama.cpp: a missing scores array means every score is 0.
        scores = array("f", bytes(4 * n))
    types = _numeric_array(meta, "tokenizer.ggml.token_type", n, path, "i")
    if types is None:
        types = array("i", [int(TokenType.NORMAL)]) * n
    token_types: List[int] = []
    for i, t in enumerate(types):
        # llama.cpp maps an unknown type number to no attribute; treat such
        # a piece as NORMAL text rather than refusing the file.
        token_types.append(int(t) if 1 <= int(t) <= 6 else int(TokenType.NORMAL))

    bos = _token_id(meta, "tokenizer.ggml.bos_token_id", _DEFAULT_BOS, n, path)
    eos = _token_id(meta, "tokenizer.ggml.eos_token_id", _DEFAULT_EOS, n, path)
    unk = _token_id(meta, "tokenizer.ggml.unknown_token_id", _DEFAULT_UNK, n, path)
    pad = _token_id(meta, "tokenizer.ggml.padding_token_id", None, n, path)
    add_bos = _flag(meta, "tokenizer.ggml.add_bos_token", True, path)
    add_eos = _flag(meta, "tokenizer.ggml.add_eos_token", False, path)
    add_space_prefix = _flag(meta, "tokenizer.ggml.add_space_prefix", True, path)
    if add_bos and bos is None:
        add_bos = False
    if add_eos and eos is None:
        add_eos = False

    added = _special_pieces(tokens, token_types, meta)
    return SpmTokenizer(
        tokens,
        scores,
        token_types=token_types,
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


def _special_pieces(tokens: Sequence[str], types: Sequence[int], meta: Dict[str, object]) -> List[AddedToken]:
    """The pieces llama.cpp splits out of the text, with the strip
    attributes llama.cpp gives them."""
    name = str(meta.get("general.name", "")).lower()
    phi3 = "phi-3" in name or "phi3" in name
    out = []
    for i, (piece, kind) in enumerate(zip(tokens, types)):
        if kind not in (TokenType.CONTROL, TokenType.UNKNOWN, TokenType.USER_DEFINED) or not piece:
            continue
        rstrip = False
        if phi3:
            # llama.cpp: for Phi-3 every special token but <unk>, <s> and
            # <|endoftext|> drops the whitespace after it.
            rstrip = piece not in ("<unk>", "<s>", "<|endoftext|>")
        out.append(AddedToken(piece, i, special=kind != TokenType.USER_DEFINED, rstrip=rstrip))
    return out


def _numeric_array(meta: Dict[str, object], key: str, n: int, path: Optional[str], typecode: str):
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, array) and value.typecode in ("f", "d", "i", "I", "l", "L", "q", "Q", "b", "B", "h", "H"):
        if len(value) != n:
            raise ModelFormatError(
                path, None, f"{key} has {len(value)} entries but tokenizer.ggml.tokens has {n}"
            )
        return value if value.typecode == typecode else array(typecode, value)
    raise ModelFormatError(path, None, f"{key} is not a numeric array")


def _token_id(meta: Dict[str, object], key: str, default: Optional[int], n: int, path: Optional[str]) -> Optional[int]:
    value = meta.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelFormatError(path, None, f"{key} is not an integer: {value!r}")
    if value == -1 or value == 0xFFFFFFFF:
        return None  # LLAMA_TOKEN_NULL
    if not 0 <= value < n:
        raise ModelFormatError(path, None, f"{key} is {value}, outside the vocabulary of {n} pieces")
    return value


def _flag(meta: Dict[str, object], key: str, default: bool, path: Optional[str]) -> bool:
    value = meta.get(key, default)
    if not isinstance(value, bool):
        raise ModelFormatError(path, None, f"{key} is not a boolean: {value!r}")
    return value
