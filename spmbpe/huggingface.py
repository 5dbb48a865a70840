"""Tokenizers from HuggingFace model folders, as transformers runs them.

A folder with ``tokenizer.model`` and ``tokenizer_config.json`` is what the
slow ``LlamaTokenizer`` (transformers 4.x) reads, so its rules apply:

* ``legacy`` (absent means true, as transformers treats it) picks where the
  dummy prefix goes: true prefixes every text segment between added tokens
  (the same ids as llama.cpp), false prefixes the input once;
* ``added_tokens_decoder`` entries are split out of the raw text first, with
  their ``lstrip``/``rstrip``; bos/eos/unk (and pad) always are;
* ``add_bos_token``/``add_eos_token`` say what ``add_special_tokens=True`` adds.
"""

from __future__ import annotations

import json
import os
from array import array
from typing import Dict, List, Optional, Tuple

from ._core import PieceTable
from ._spm_model import read_model_proto
from .errors import ModelFormatError, UnsupportedModelError
from .sentencepiece import tokenizer_from_model_proto
from .tokenizer import SpmTokenizer
from .tokens import NEVER_MERGE, AddedToken, TokenType

__all__ = ["load_hf_folder"]

# Slow tokenizer classes whose tokenize() this module reproduces.
_LLAMA_CLASSES = {"LlamaTokenizer", "LlamaTokenizerFast"}


def load_hf_folder(folder: str) -> SpmTokenizer:
    """A tokenizer from a model folder holding ``tokenizer.model``."""
    model_path = os.path.join(folder, "tokenizer.model")
    config = _read_json(os.path.join(folder, "tokenizer_config.json"))
    special_map = _read_json(os.path.join(folder, "special_tokens_map.json"))
    cls = config.get("tokenizer_class")
    if cls is not None and cls not in _LLAMA_CLASSES:
        raise UnsupportedModelError(
            f"{folder}: tokenizer_class {cls!r} is not supported; spmbpe reproduces "
            f"transformers' LlamaTokenizer ({', '.join(sorted(_LLAMA_CLASSES))})"
        )
    proto = read_model_proto(model_path)
    n_model = len(proto)

    def token_text(name: str) -> Optional[str]:
        for source in (config, special_map):
            value = source.get(name)
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                return value
        return None

    # transformers' LlamaTokenizer defaults.
    legacy = config.get("legacy")
    legacy = True if legacy is None else bool(legacy)
    bos_text = token_text("bos_token") or "<s>"
    eos_text = token_text("eos_token") or "</s>"
    unk_text = token_text("unk_token") or "<unk>"
    pad_text = token_text("pad_token")
    additional = []
    for source in (special_map, config):
        for item in source.get("additional_special_tokens") or []:
            text = item.get("content") if isinstance(item, dict) else item
            if isinstance(text, str) and text not in additional:
                additional.append(text)

    added = _added_tokens(config, folder)
    by_content = {t.content: t for t in added}
    table = PieceTable(proto.arena, proto.offsets)
    # bos/eos/unk/pad are added tokens too (special, no stripping), with the
    # id sentencepiece gives their text.
    for text in (bos_text, eos_text, unk_text, pad_text, *additional):
        if text is not None and text not in by_content:
            found = table.find(text.encode("utf-8"))
            if found >= 0:
                by_content[text] = AddedToken(text, found, special=True)
    added = list(by_content.values())

    extra = [t for t in added if t.id >= n_model]
    options: Dict[str, object] = {}
    if extra:
        proto = _appended(proto, extra, folder)
        options["mergeable_limit"] = n_model
    table = PieceTable(proto.arena, proto.offsets)

    def id_of(text: Optional[str]) -> Optional[int]:
        if text is None:
            return None
        if text in by_content:
            return by_content[text].id
        found = table.find(text.encode("utf-8"))
        return found if found >= 0 else None

    options.update(
        bos_id=id_of(bos_text),
        eos_id=id_of(eos_text),
        unk_id=id_of(unk_text),
        pad_id=id_of(pad_text),
        add_bos=bool(config.get("add_bos_token", True)) and id_of(bos_text) is not None,
        add_eos=bool(config.get("add_eos_token", False)) and id_of(eos_text) is not None,
        # Legacy runs sentencepiece with the model's own add_dummy_prefix;
        # non-legacy turns that off and prefixes by its add_prefix_space.
        add_prefix_space=(
            bool(proto.normalizer_or_default.add_dummy_prefix)
            if legacy
            else bool(config.get("add_prefix_space", True))
        ),
        prefix_scheme="after_each_special" if legacy else "once",
        reference="huggingface",
        added_tokens=added,
        hf_special_tokens=[t for t in (bos_text, eos_text, unk_text, pad_text, *additional) if t],
        hf_unk_token=unk_text,
    )
    return tokenizer_from_model_proto(proto, model_path, **options)


def _read_json(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except json.JSONDecodeError as e:
        raise ModelFormatError(path, e.pos, f"not valid JSON: {e.msg} (line {e.lineno})") from None
    except UnicodeDecodeError as e:
        raise ModelFormatError(path, e.start, "not valid UTF-8") from None
    if not isinstance(value, dict):
        raise ModelFormatError(path, 0, "expected a JSON object")
    return value


def _added_tokens(config: dict, folder: str) -> List[AddedToken]:
    decoder = config.get("added_tokens_decoder") or {}
    if not isinstance(decoder, dict):
        raise ModelFormatError(
            os.path.join(folder, "tokenizer_config.json"), None, "added_tokens_decoder is not an object"
        )
    out = []
    for key, entry in decoder.items():
        where = f"added_tokens_decoder[{key!r}]"
        try:
            token_id = int(key)
        except ValueError:
            raise ModelFormatError(
                os.path.join(folder, "tokenizer_config.json"), None, f"{where}: the key is not an id"
            ) from None
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise ModelFormatError(
                os.path.join(folder, "tokenizer_config.json"), None, f"{where} has no content string"
            )
        if entry.get("single_word"):
            raise NotImplementedError(
                f"{folder}: added token {entry['content']!r} has single_word=true, which "
                f"spmbpe does not implement"
            )
        out.append(
            AddedToken(
                entry["content"],
                token_id,
                special=bool(entry.get("special", False)),
                lstrip=bool(entry.get("lstrip", False)),
                rstrip=bool(entry.get("rstrip", False)),
            )
        )
    return out


def _appended(proto, extra: List[AddedToken], folder: str):
    """The model proto with added tokens past its last piece appended (HF
    gives them the next ids; they are never merge results)."""
    n = len(proto)
    expected = n
    pieces: List[bytes] = []
    types = bytearray()
    for token in sorted(extra, key=lambda t: t.id):
        if token.id != expected:
            raise ModelFormatError(
                os.path.join(folder, "tokenizer_config.json"),
                None,
                f"added token {token.content!r} has id {token.id}, but the ids after the "
                f"model's {n} pieces must be consecutive (expected {expected})",
            )
        pieces.append(token.content.encode("utf-8"))
        types.append(TokenType.CONTROL if token.special else TokenType.USER_DEFINED)
        expected += 1
    arena = proto.arena + b"".join(pieces)
    offsets = array("q", proto.offsets)
    total = offsets[-1]
    for p in pieces:
        total += len(p)
        offsets.append(total)
    scores = array("f", proto.scores)
    scores.extend([NEVER_MERGE] * len(pieces))
    clone = type(proto).__new__(type(proto))
    for name in type(proto).__slots__:
        setattr(clone, name, getattr(proto, name))
    clone.arena, clone.offsets, clone.scores = arena, offsets, scores
    clone.types = bytes(proto.types) + bytes(types)
    return clone
