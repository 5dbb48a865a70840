"""Tokenizers from HuggingFace model folders as transformers 4's slow
``LlamaTokenizer`` reads them: ``tokenizer.model``, and from
``tokenizer_config.json`` ``legacy`` (absent means true, as transformers 4
treats it), the ``added_tokens_decoder`` entries, bos/eos/unk/pad and
``add_bos_token``/``add_eos_token``.  What they do is docs/behaviour.md's;
the encoding and decoding rules are references/transformers4.py's."""

from __future__ import annotations

import dataclasses
import os
from array import array
from typing import Any, Dict, List, Optional, Tuple

from ._core import PieceTable
from ._hf_json import (
    LLAMA_CLASSES, LLAMA_DEFAULTS, SPECIAL_ATTRIBUTES, added_token, decoder_entries, json_id, read_optional_json_object,
)
from ._spm_model import SpmModelProto, read_model_proto
from ._vocab import piece_offsets
from .errors import ModelFormatError, UnsupportedModelError
from .sentencepiece import spec_from_model_proto
from .spec import TokenizerSpec
from .tokens import NEVER_MERGE, AddedToken, TokenType

__all__ = ["read_transformers4_spec"]



def read_transformers4_spec(folder: str) -> TokenizerSpec:
    """The TokenizerSpec of a model folder holding ``tokenizer.model``."""
    model_path = os.path.join(folder, "tokenizer.model")
    config_path = os.path.join(folder, "tokenizer_config.json")
    config = read_optional_json_object(config_path)
    cls = config.get("tokenizer_class")
    if cls is not None and (not isinstance(cls, str) or cls not in LLAMA_CLASSES):
        raise UnsupportedModelError(
            f"{folder}: tokenizer_class {cls!r} is not supported; spmbpe reproduces "
            f"transformers' LlamaTokenizer ({', '.join(sorted(LLAMA_CLASSES))})"
        )
    proto = read_model_proto(model_path)
    n_model = len(proto)
    legacy = config.get("legacy")
    legacy = True if legacy is None else bool(legacy)
    specials, additional, added = _config_tokens(config, folder)

    # Special tokens that are not added tokens yet become ones: with their
    # piece's id, or appended after everything else (PreTrainedTokenizer's
    # __init__ -> _add_tokens(all_special_tokens_extended)).
    by_content: Dict[str, AddedToken] = {t.content: t for t in added}
    table = PieceTable(proto.arena, proto.offsets)
    vocab_size = n_model + sum(1 for t in added if table.find(t.content.encode("utf-8")) < 0)
    special_list: List[AddedToken] = []
    for token in [t for t in specials.values() if t is not None] + additional:
        if token.content in {t.content for t in special_list}:
            continue
        special_list.append(token)
        if token.content in by_content:
            continue
        found = table.find(token.content.encode("utf-8"))
        if found < 0:
            found = vocab_size
            vocab_size += 1
        by_content[token.content] = AddedToken(
            token.content, found, special=True, lstrip=token.lstrip, rstrip=token.rstrip
        )
    added = list(by_content.values())

    extra = [t for t in added if t.id >= n_model]
    options: Dict[str, object] = {}
    if extra:
        proto = _appended(proto, extra, folder)
        options["mergeable_limit"] = n_model
    table = PieceTable(proto.arena, proto.offsets)

    def id_of(name: str) -> Optional[int]:
        token = specials[name]
        return None if token is None else by_content[token.content].id

    options.update(
        bos_id=id_of("bos_token"),
        eos_id=id_of("eos_token"),
        unk_id=id_of("unk_token"),
        pad_id=id_of("pad_token"),
        add_bos=bool(config.get("add_bos_token", True)) and id_of("bos_token") is not None,
        add_eos=bool(config.get("add_eos_token", False)) and id_of("eos_token") is not None,
        # Legacy runs sentencepiece with the model's own add_dummy_prefix;
        # non-legacy turns that off and prefixes by its add_prefix_space.
        add_prefix_space=(
            bool(proto.normalizer_or_default.add_dummy_prefix)
            if legacy
            else bool(config.get("add_prefix_space", True))
        ),
        prefix_scheme="after_each_special" if legacy else "once",
        reference="transformers4",
        added_tokens=added,
        # (spmbpe/references/transformers4.py's options.)
        reference_options=dict(
            special_tokens=[t.content for t in special_list],
            additional_special_tokens=[t.content for t in additional],
            # What LlamaTokenizer's decoding reads (a null add_prefix_space
            # is false there).
            add_prefix_space=bool(config.get("add_prefix_space", True)),
            clean_up_spaces=bool(config.get("clean_up_tokenization_spaces", False)),
            unk_token=specials["unk_token"].content if specials["unk_token"] is not None else "<unk>",
        ),
        model_pieces=n_model,
    )
    return spec_from_model_proto(proto, model_path, **options)


def _config_tokens(
    config: Dict[str, Any], folder: str
) -> Tuple[Dict[str, Optional[AddedToken]], List[AddedToken], List[AddedToken]]:
    """The named special tokens, the additional ones and the added tokens,
    with transformers' precedence: the config (or LlamaTokenizer's
    defaults); when the config has no added_tokens_decoder (an older save),
    special_tokens_map.json overrides it and added_tokens.json lists the
    added tokens."""
    config_path = os.path.join(folder, "tokenizer_config.json")
    specials: Dict[str, Optional[AddedToken]] = {}
    for name in SPECIAL_ATTRIBUTES:
        specials[name] = _special(config.get(name, LLAMA_DEFAULTS.get(name)), config_path, name)
    additional = _special_list(config.get("additional_special_tokens"), config_path)
    if "added_tokens_decoder" in config:
        return specials, additional, _added_tokens(config, folder)
    map_path = os.path.join(folder, "special_tokens_map.json")
    for name, value in read_optional_json_object(map_path).items():
        if name == "additional_special_tokens":
            for token in _special_list(value, map_path):
                if token.content not in {t.content for t in additional}:
                    additional.append(token)
        elif name in specials:
            specials[name] = _special(value, map_path, name)
    return specials, additional, _legacy_added_tokens(folder, specials, additional)


def _special(value: object, path: str, name: str) -> Optional[AddedToken]:
    """A special token as the config spells it: a string, an AddedToken
    dict (its lstrip/rstrip apply), or null."""
    if value is None:
        return None
    if isinstance(value, str):
        return AddedToken(value, -1, special=True) if value else None
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return added_token(value, -1, f"{path} ({name})", special=True)
    raise ModelFormatError(path, None, f"{name} is neither a string nor a token object: {value!r}")


def _special_list(value: object, path: str) -> List[AddedToken]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ModelFormatError(path, None, "additional_special_tokens is not a list")
    out: List[AddedToken] = []
    for item in value:
        token = _special(item, path, "additional_special_tokens")
        if token is not None and token.content not in {t.content for t in out}:
            out.append(token)
    return out


def _legacy_added_tokens(
    folder: str, specials: Dict[str, Optional[AddedToken]], additional: List[AddedToken]
) -> List[AddedToken]:
    """added_tokens.json of older saves: {text: id}."""
    path = os.path.join(folder, "added_tokens.json")
    entries = read_optional_json_object(path)
    names = {t.content for t in specials.values() if t is not None} | {t.content for t in additional}
    out = []
    for text, value in entries.items():
        token_id = json_id(value)
        if token_id is None:
            raise ModelFormatError(path, None, f"the id of {text!r} is not an integer")
        out.append(added_token({"content": text}, token_id, path, special=text in names))
    return out


def _added_tokens(config: Dict[str, Any], folder: str) -> List[AddedToken]:
    config_path = os.path.join(folder, "tokenizer_config.json")
    out = []
    for token_id, entry in decoder_entries(config, config_path):
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise ModelFormatError(config_path, None, f"added_tokens_decoder[{str(token_id)!r}] has no content string")
        out.append(added_token(entry, token_id, folder))
    return out


def _appended(proto: SpmModelProto, extra: List[AddedToken], folder: str) -> SpmModelProto:
    """The model proto with the added tokens past its last piece appended
    (never merge results)."""
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
    offsets.extend(piece_offsets(map(len, pieces), offsets[-1])[1:])
    scores = array("f", proto.scores)
    scores.extend([NEVER_MERGE] * len(pieces))
    every_type = bytes(proto.types) + bytes(types)
    return dataclasses.replace(proto, arena=arena, offsets=offsets, scores=scores, types=every_type)
