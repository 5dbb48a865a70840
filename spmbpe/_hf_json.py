"""HuggingFace's JSON files as both HF loaders read them: a file's JSON
object, and an added token's entry (``tokenizer.json``'s ``added_tokens``,
``tokenizer_config.json``'s ``added_tokens_decoder`` and special tokens,
``added_tokens.json``)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._gc import gc_paused
from .errors import ModelFormatError, UnsupportedFeatureError
from .tokens import AddedToken

__all__ = ["LLAMA_CLASSES", "LLAMA_DEFAULTS", "SPECIAL_ATTRIBUTES", "decoder_entries", "read_json_object", "parse_json_object", "read_optional_json_object", "json_id", "added_token"]


#: The tokenizer classes both HF loaders reproduce (transformers'
#: LlamaTokenizer, slow in 4.x, tokenizers-backed in 5.x).
LLAMA_CLASSES = {"LlamaTokenizer", "LlamaTokenizerFast"}
#: transformers' SPECIAL_TOKENS_ATTRIBUTES, the named special tokens, in the
#: order it adds missing ones; LlamaTokenizer's defaults for those a config
#: leaves out.
SPECIAL_ATTRIBUTES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
LLAMA_DEFAULTS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}

def read_json_object(path: str) -> Dict[str, Any]:
    """The JSON object in a file; ModelFormatError (with the offset) if it is
    not one."""
    with open(path, "rb") as f:
        return parse_json_object(f.read(), path)


def parse_json_object(raw: bytes, path: str) -> Dict[str, Any]:
    """The JSON object in `raw`, the bytes of the file `path` (named in
    errors, with the offset); ModelFormatError if it is not one."""
    # (Decoded at once, no newline translation; parsed with the GC held off,
    # as a tokenizer.json's merge rules are tens of thousands of small lists.)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelFormatError(path, e.start, "not valid UTF-8") from None
    try:
        with gc_paused():
            value = json.loads(text)
    except json.JSONDecodeError as e:
        # (json counts characters; the error names the byte in the file.)
        at = len(text[:e.pos].encode("utf-8"))
        raise ModelFormatError(path, at, f"not valid JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(value, dict):
        raise ModelFormatError(path, 0, "expected a JSON object")
    return value


def read_optional_json_object(path: str) -> Dict[str, Any]:
    """The JSON object in an optional file of a model folder ({} when absent)."""
    if not os.path.exists(path):
        return {}
    return read_json_object(path)


def json_id(value: object) -> Optional[int]:
    """`value` when it is a JSON integer (not a boolean), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def added_token(entry: Mapping[str, Any], token_id: int, where: str, *, special: Optional[bool] = None) -> AddedToken:
    """The AddedToken of an entry whose ``content`` is a string, with its
    flags; ``single_word`` (match whole words only) is not implemented:
    UnsupportedFeatureError naming `where` (the file or folder)."""
    content = entry["content"]
    if entry.get("single_word"):
        raise UnsupportedFeatureError(
            f"{where}: added token {content!r} has single_word=true, which spmbpe does not implement"
        )
    return AddedToken(
        content,
        token_id,
        special=bool(entry.get("special", False)) if special is None else special,
        lstrip=bool(entry.get("lstrip", False)),
        rstrip=bool(entry.get("rstrip", False)),
    )


def decoder_entries(config: Mapping[str, Any], path: str) -> List[Tuple[int, Any]]:
    """tokenizer_config.json's added_tokens_decoder as (id, entry) pairs;
    ModelFormatError naming `path` when it is not an object keyed by ids."""
    decoder = config.get("added_tokens_decoder") or {}
    if not isinstance(decoder, dict):
        raise ModelFormatError(path, None, "added_tokens_decoder is not an object")
    out = []
    for key, entry in decoder.items():
        try:
            out.append((int(key), entry))
        except ValueError:
            raise ModelFormatError(path, None, f"added_tokens_decoder[{key!r}]: the key is not an id") from None
    return out
