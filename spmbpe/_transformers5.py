"""Model folders as transformers 5 runs them (``reference="transformers"``).

transformers 5's ``AutoTokenizer`` gives a Llama/Mistral folder the
tokenizers-backed ``LlamaTokenizer``: whatever files the folder holds, it
builds one tokenizers pipeline (a BPE model with ranked merges, a Metaspace
pre-tokenizer, added tokens, a template post-processor) and encodes with it
alone.  This module builds the same pipeline, as the ``tokenizer.json``
object it would serialize to, and hands it to spmbpe's ``"tokenizers"``
reading (``spmbpe/tokenizer_json.py``); the compiled core needs nothing new.

Every rule below names its place in transformers 5.24, in the file
abbreviations (``tu_base``, ``tu_tok``, ``llama``, ``convert``) of
docs/references.md's "The rules", which lists them with the measurements
that pin them."""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from array import array
from types import FrameType
from typing import Any, Dict, List, Optional, Tuple, Union

from ._hf_json import LLAMA_CLASSES, LLAMA_DEFAULTS, SPECIAL_ATTRIBUTES, decoder_entries, read_json_object
from ._spm_model import SpmModelProto, read_model_proto
from .errors import ModelFormatError, UnsupportedFeatureError, UnsupportedModelError
from .spec import TokenizerSpec
from .tokenizer_json import (
    DerivedMerges, LazyVocab, MergesInFile, VocabInFile, read_tokenizer_json, spec_from_json,
)
from .tokens import TokenType

__all__ = ["read_transformers5_spec", "backend_json", "generate_merges"]

_MARKER = "\u2581"


def read_transformers5_spec(folder: str) -> TokenizerSpec:
    """The TokenizerSpec of the tokenizer transformers 5's
    ``AutoTokenizer.from_pretrained(folder)`` builds."""
    data = backend_json(folder, spell=False)
    spec = spec_from_json(data, folder, reference="transformers")
    # The "transformers" planner decodes with LlamaTokenizer's decoder, whose
    # Strip step is there exactly when the prefix is (a bare tokenizer.json
    # brings its own decoder: it must be that one).
    if data.get("decoder") != _decoder(spec.add_prefix_space):
        raise UnsupportedFeatureError(
            f"{folder}: the tokenizer.json decoder is not LlamaTokenizer's (Replace, ByteFallback, Fuse"
            f"{', Strip' if spec.add_prefix_space else ''}); load with reference='tokenizers' to read it as a file"
        )
    if _drops_characters(spec):
        _warn_dropped(folder)
    config_path = os.path.join(folder, "tokenizer_config.json")
    if not os.path.isfile(config_path):
        return spec
    config = read_json_object(config_path)
    # TokenizersBackend._decode: clean_up_tokenization_spaces is ignored for
    # a BPE model unless the config insists.
    if config.get("clean_up_tokenization_spaces") and config.get(
        "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"
    ):
        spec = dataclasses.replace(spec, reference_options={"clean_up_spaces": True})
    return _with_named_ids(spec, config, folder)


# The bytes a character's UTF-8 can hold (not C0, C1, F5..FF).
_UTF8_BYTES = [*range(0xC0), *range(0xC2, 0xF5)]


def _drops_characters(spec: TokenizerSpec) -> bool:
    """Whether the pipeline drops a character that is no piece: tokenizers'
    BPE (models/bpe merge_word) makes it its <0xNN> pieces when byte_fallback
    finds every one of them, else the unknown token, and else nothing."""
    if spec.unk_id is not None:
        return False
    if not spec.byte_fallback:
        return True
    return any(spec.table.find(f"<0x{b:02X}>".encode("ascii")) < 0 for b in _UTF8_BYTES)


def _warn_dropped(folder: str) -> None:
    """Tells the user, once per load, what transformers 5 does to characters
    outside the vocabulary."""
    how = "load with reference='sentencepiece' to keep them as the unknown id"
    if not os.path.isfile(os.path.join(folder, "tokenizer.model")):
        how += " (from the tokenizer.model this folder lacks)"
    # The caller's line, outside spmbpe, so that the default filter shows it
    # once per place that loads.
    level = 2  # (stacklevel 2 is the frame that called this one)
    caller: Optional[FrameType] = sys._getframe(1)
    package = os.path.dirname(os.path.abspath(__file__))
    while caller is not None and os.path.abspath(caller.f_code.co_filename).startswith(package + os.sep):
        caller, level = caller.f_back, level + 1
    warnings.warn(
        f"{folder}: characters outside this vocabulary are dropped, as transformers 5 drops them (its BPE "
        f"model has no unknown token, and the vocabulary no byte pieces for them), and their neighbours may "
        f"merge across the gap; {how}",
        UserWarning, stacklevel=level,
    )


def _with_named_ids(spec: TokenizerSpec, config: Dict[str, Any], folder: str) -> TokenizerSpec:
    """The spec with the bos/eos/unk/pad ids transformers 5 reports
    (``tok.bos_token_id``, ...): the config's named tokens, whether or not
    the template adds them (the tokenizer.json alone names only those it adds)."""
    named = _named_tokens(config, folder)

    def named_id(key: str, current: Optional[int]) -> Optional[int]:
        entry = named.get(key)
        if entry is None:
            return current
        found = spec.table.find(entry["content"].encode("utf-8"))
        return found if found >= 0 else current

    bos, eos = named_id("bos_token", spec.bos_id), named_id("eos_token", spec.eos_id)
    unk, pad = named_id("unk_token", spec.unk_id), named_id("pad_token", spec.pad_id)
    # The unknown token is a name only: LlamaTokenizer's BPE model has no
    # unk_token (backend_json), so a character that is neither a piece nor
    # byte pieces is dropped, not made this id.
    named_unk = unk if unk != spec.unk_id else None
    if (bos, eos, named_unk, pad) == (spec.bos_id, spec.eos_id, None, spec.pad_id):
        return spec
    return dataclasses.replace(spec, bos_id=bos, eos_id=eos, named_unk_id=named_unk, pad_id=pad)


def _decoder(strip: bool) -> Dict[str, Any]:
    """llama LlamaTokenizer.__init__'s decoder."""
    steps: List[Dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": _MARKER}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if strip:
        steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": steps}


def _entry(content: str, token_id: Optional[int] = None, *, special: bool, normalized: bool,
           lstrip: bool = False, rstrip: bool = False, single_word: bool = False) -> Dict[str, Any]:
    """An added token as tokenizers serializes it."""
    return {"id": token_id, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


def _token_entry(value: Any, where: str, special_default: bool) -> Dict[str, Any]:
    """An AddedToken(**dict) from a config value (tu_base _from_pretrained):
    a string is special and not normalized; a dict keeps its flags, and
    tokenizers' default for a missing ``normalized`` is ``not special``."""
    if isinstance(value, str):
        return _entry(value, special=special_default, normalized=not special_default)
    if not isinstance(value, dict) or not isinstance(value.get("content"), str):
        raise ModelFormatError(where, None, f"not a token (a string or an object with 'content'): {value!r:.100}")
    special = bool(value.get("special", special_default))
    return _entry(
        value["content"], special=special, normalized=bool(value.get("normalized", not special)),
        lstrip=bool(value.get("lstrip", False)), rstrip=bool(value.get("rstrip", False)),
        single_word=bool(value.get("single_word", False)),
    )


def backend_json(folder: str, spell: bool = True) -> Dict[str, Any]:
    """The ``tokenizer.json`` object of the pipeline transformers 5 builds
    for `folder` (``tokenizer.backend_tokenizer.to_str()``).  Unless
    `spell`, merges derived from a ``tokenizer.model`` are a DerivedMerges,
    and a tokenizer.json's merges and vocabulary are left in the file, for
    compiled code to read."""
    config_path = os.path.join(folder, "tokenizer_config.json")
    json_path = os.path.join(folder, "tokenizer.json")
    has_config = os.path.isfile(config_path)
    config = read_json_object(config_path) if has_config else {}
    cls = config.get("tokenizer_class")
    if not has_config and os.path.isfile(json_path):
        # No config: AutoTokenizer falls back to TokenizersBackend, which
        # runs the file as it is (tu_tok TokenizersBackend.__init__,
        # TokenizerFast.from_file).
        return _tokenizer_json(json_path, spell)
    # A malformed config is a format error whatever its class.
    _named_tokens(config, folder)
    if "added_tokens_decoder" in config and not isinstance(config["added_tokens_decoder"], dict):
        raise ModelFormatError(config_path, None, "added_tokens_decoder is not an object")
    if not isinstance(cls, str) or cls not in LLAMA_CLASSES:
        # Without a Llama class, AutoTokenizer 5.24 builds TokenizersBackend
        # with a generic sentencepiece conversion (merges by score, a Split
        # pre-tokenizer on user-defined pieces): not reproduced here.
        raise UnsupportedModelError(
            f"{folder}: tokenizer_class {cls!r}; spmbpe reproduces transformers 5's LlamaTokenizer "
            f"({', '.join(sorted(LLAMA_CLASSES))}) and a bare tokenizer.json (load with "
            f"reference='transformers4', 'sentencepiece' or 'tokenizers' for the other readings)"
        )

    vocab, merges, post_processor, model_pieces, file_added = _pipeline_source(folder, spell)
    # llama LlamaTokenizer.__init__: legacy defaults to False there (4.x
    # treated an absent key as True); add_prefix_space None means True.
    legacy = config.get("legacy", False)
    add_prefix_space = config.get("add_prefix_space")
    add_prefix_space = True if add_prefix_space is None else bool(add_prefix_space)
    # tu_base _get_prepend_scheme.
    scheme = ("always" if legacy else "first") if add_prefix_space else "never"

    added = _added_tokens(folder, config, vocab, model_pieces, file_added, json_path)
    named = _named_tokens(config, folder)
    if post_processor is None:
        # tu_tok update_post_processor: add_bos_token/add_eos_token, both
        # False when absent (TokenizersBackend.__init__ kwargs.get(..., False)).
        post_processor = _template(config, named, vocab, added)

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": _MARKER, "prepend_scheme": scheme, "split": False},
        "post_processor": post_processor,
        "decoder": _decoder(add_prefix_space),
        # llama: BPE(vocab, merges, fuse_unk=True, byte_fallback=True), no unk_token.
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


def _pipeline_source(
    folder: str, spell: bool
) -> Tuple[Any, Any, Optional[Dict[str, Any]], List[Tuple[str, int]], Optional[List[Any]]]:
    """What the pipeline takes from the folder's files: the vocabulary, the
    merges, the post-processor (None: the config's template), the model's
    CONTROL/USER_DEFINED pieces, the tokenizer.json's added tokens (None
    without one)."""
    json_path = os.path.join(folder, "tokenizer.json")
    model_path = os.path.join(folder, "tokenizer.model")
    if os.path.isfile(json_path):
        # tu_base _from_pretrained: with a tokenizer.json the config's
        # add_bos_token/add_eos_token are dropped, and (tu_tok
        # convert_to_native_format) only the file's vocab, merges and
        # post-processor are kept; LlamaTokenizer rebuilds the rest.
        file_data = _tokenizer_json(json_path, spell)
        file_model = file_data.get("model")
        if not isinstance(file_model, dict):
            raise ModelFormatError(json_path, None, "no 'model' object: not a tokenizers tokenizer.json")
        vocab = file_model.get("vocab")
        if isinstance(vocab, list):
            vocab = {(item[0] if isinstance(item, list) else item): i for i, item in enumerate(vocab)}
        if not isinstance(vocab, (dict, LazyVocab)):
            raise ModelFormatError(json_path, None, "model.vocab is missing")
        return vocab, file_model.get("merges"), file_data.get("post_processor"), [], file_data.get("added_tokens") or []
    if os.path.isfile(model_path):
        proto = read_model_proto(model_path)
        # convert SentencePieceExtractor.extract: {piece: id} (a repeated
        # piece keeps its last id), merges from the vocabulary alone.
        model_vocab = _ModelVocab(proto)
        merges: Any
        if spell:
            vocab = model_vocab.spell()
            merges = [[a, b] for a, b in generate_merges(vocab)]
        else:
            vocab = model_vocab
            merges = DerivedMerges(lambda: [[a, b] for a, b in generate_merges(model_vocab.spell())])
        # ... and every CONTROL and USER_DEFINED piece becomes an added
        # token (special for CONTROL), matched on the raw text.  (Kinds as
        # ints: an enum member's comparison per piece is slow.)
        added_kinds = {int(TokenType.CONTROL), int(TokenType.USER_DEFINED)}
        model_pieces = [(proto.piece(i), kind) for i, kind in enumerate(proto.types) if kind in added_kinds]
        return vocab, merges, None, model_pieces, None
    raise UnsupportedModelError(
        f"{folder}: neither tokenizer.json nor tokenizer.model; transformers 5's LlamaTokenizer reads one of them"
    )


class _ModelVocab(LazyVocab):
    """A tokenizer.model's pieces as the vocabulary convert makes of them
    ({piece: id}, a repeated piece keeping its last id), which
    spec_from_json takes as the reader's arena, with no str per piece."""

    def __init__(self, proto: SpmModelProto) -> None:
        super().__init__()
        self._proto = proto

    def _read_pieces(self) -> Optional[Tuple[bytes, "array[int]"]]:
        return self._proto.packed_pieces()

    def spell(self) -> Dict[str, Any]:
        pieces = self._proto.pieces
        return dict(zip(pieces, range(len(pieces))))


def _named_tokens(config: Dict[str, Any], folder: str) -> Dict[str, Optional[Dict[str, Any]]]:
    """bos/eos/unk/... as the config (or LlamaTokenizer's defaults) names
    them; with no added_tokens_decoder, special_tokens_map.json overrides."""
    where = os.path.join(folder, "tokenizer_config.json")
    named: Dict[str, Optional[Dict[str, Any]]] = {}
    for key in SPECIAL_ATTRIBUTES:
        value = config.get(key, LLAMA_DEFAULTS.get(key))
        named[key] = None if value is None or value == "" else _token_entry(value, where, True)
    if "added_tokens_decoder" not in config:
        map_path = os.path.join(folder, "special_tokens_map.json")
        if os.path.isfile(map_path):
            for key, value in read_json_object(map_path).items():
                if key in named and value:
                    entry = _token_entry(value, map_path, True)
                    entry["special"] = True  # tu_base: value.pop("special"); AddedToken(..., special=True)
                    named[key] = entry
    return named


def _tokenizer_json(json_path: str, spell: bool) -> Dict[str, Any]:
    """A folder's tokenizer.json; its merges and vocabulary left in the
    file (read by spec_from_json) unless `spell`."""
    data = read_tokenizer_json(json_path)
    model = data.get("model")
    if spell and isinstance(model, dict):
        for key in ("merges", "vocab"):
            if isinstance(model.get(key), (MergesInFile, VocabInFile)):
                model[key] = model[key].spell()
    return data


def _explicit_added(
    folder: str, config: Dict[str, Any], file_added: Any, json_path: str
) -> List[Tuple[int, Dict[str, Any]]]:
    """The added tokens the folder lists, by id: the config's
    added_tokens_decoder, or (older saves) added_tokens.json and the
    tokenizer.json's own."""
    where = os.path.join(folder, "tokenizer_config.json")
    explicit: List[Tuple[int, Dict[str, Any]]] = []
    if "added_tokens_decoder" in config:
        explicit += [(i, _token_entry(value, where, False)) for i, value in decoder_entries(config, where)]
    else:
        # tu_base _from_pretrained, the pre-4.34 layout: added_tokens.json
        # gives {text: id}; a text is special when it is a named special
        # token of the config or in its extra_special_tokens.
        named = _named_tokens(config, folder)
        specials = {e["content"] for e in named.values() if e is not None}
        specials.update(e["content"] for e in _extra_special_entries(config, "tokenizer_config.json") or ())
        tokens_path = os.path.join(folder, "added_tokens.json")
        if os.path.isfile(tokens_path):
            for text, token_id in read_json_object(tokens_path).items():
                if not isinstance(token_id, int) or isinstance(token_id, bool):
                    raise ModelFormatError(tokens_path, None, f"the id of {text!r} is not an integer")
                special = text in specials
                explicit.append((token_id, _entry(text, special=special, normalized=not special)))
        if file_added is not None:
            # ... and tokenizer.json's own added_tokens.
            entries = file_added or []
            for item in entries if isinstance(entries, list) else []:
                if isinstance(item, dict) and isinstance(item.get("id"), int):
                    explicit.append((item["id"], _token_entry(item, json_path, True)))
    explicit.sort(key=lambda pair: pair[0])
    return explicit


def _added_tokens(folder: str, config: Dict[str, Any], vocab: Union[Dict[str, int], LazyVocab],
                  model_pieces: List[Tuple[str, int]], file_added: Any, json_path: str) -> List[Dict[str, Any]]:
    """The backend's added tokens, in the order transformers adds them
    (the first token of a text wins; tokenizers' add_tokens ignores a
    repeat)."""
    where = os.path.join(folder, "tokenizer_config.json")
    explicit = _explicit_added(folder, config, file_added, json_path)

    out: List[Dict[str, Any]] = []
    seen: Dict[str, Dict[str, Any]] = {}
    next_id = len(vocab)

    def add(entry: Dict[str, Any], special_again: bool = False) -> None:
        nonlocal next_id
        if not entry["content"]:
            return
        if entry["content"] in seen:
            if special_again:
                # TokenizersBackend._post_init: tokenizers' add_special_tokens
                # makes a text already added (a USER_DEFINED piece, say)
                # special, its flags unchanged.
                seen[entry["content"]]["special"] = True
            return
        token_id = vocab.get(entry["content"])
        if token_id is None:
            # tokenizers AddedVocabulary.add_tokens: the next id past the
            # vocabulary and the added tokens so far, whatever id the
            # config gives (transformers 4 kept that one).
            token_id = next_id
            next_id += 1
        entry = dict(entry, id=token_id)
        seen[entry["content"]] = entry
        out.append(entry)

    # The model's CONTROL and USER_DEFINED pieces are the extra special
    # tokens (convert SentencePieceExtractor.extract), unless the config
    # lists its own (tu_base __init__): then only those are added.
    extra = _extra_special_entries(config, where)
    for _, entry in explicit:
        add(entry)
    if extra is None:
        for piece, kind in model_pieces:
            add(_entry(piece, special=kind == TokenType.CONTROL, normalized=False))
    for named_entry in _named_tokens(config, folder).values():
        if named_entry is not None:
            add(dict(named_entry, special=True), special_again=True)
    for entry in extra or ():
        # (With a tokenizer.json, transformers 5.25 leaves a text the file
        # already has as it is.)
        add(entry, special_again=file_added is None)
    return sorted(out, key=lambda e: e["id"])


def _extra_special_entries(config: Dict[str, Any], where: str) -> Optional[List[Dict[str, Any]]]:
    """The config's extra special tokens (tu_base: extra_special_tokens, or
    the older additional_special_tokens; a dict's values), special; None
    when it names none."""
    key = "extra_special_tokens" if "extra_special_tokens" in config else "additional_special_tokens"
    extra = config.get(key)
    if isinstance(extra, dict):
        extra = list(extra.values())
    if not isinstance(extra, list):
        return None
    return [dict(_token_entry(t, where, True), special=True) for t in extra if t]


def _template(config: Dict[str, Any], named: Dict[str, Optional[Dict[str, Any]]],
              vocab: Union[Dict[str, int], LazyVocab], added: List[Dict[str, Any]]) -> Dict[str, Any]:
    """tu_tok update_post_processor's TemplateProcessing: BOS first when
    add_bos_token, EOS last when add_eos_token (a missing token turns its
    flag off)."""
    ids = {e["content"]: e["id"] for e in added}  # (over the vocabulary's)
    bos, eos = named["bos_token"], named["eos_token"]
    ends = [
        entry["content"] if config.get(flag, False) and entry is not None else None
        for entry, flag in ((bos, "add_bos_token"), (eos, "add_eos_token"))
    ]

    def sequence(name: str, type_id: int) -> List[Dict[str, Any]]:
        items: List[Dict[str, Any]] = [{"Sequence": {"id": name, "type_id": type_id}}]
        if ends[0] is not None:
            items.insert(0, {"SpecialToken": {"id": ends[0], "type_id": type_id}})
        if ends[1] is not None:
            items.append({"SpecialToken": {"id": ends[1], "type_id": type_id}})
        return items

    specials = {c: {"id": c, "ids": [ids[c] if c in ids else vocab.get(c)], "tokens": [c]}
                for c in ends if c is not None}
    return {"type": "TemplateProcessing", "single": sequence("A", 0),
            "pair": sequence("A", 0) + sequence("B", 1), "special_tokens": specials}


def generate_merges(vocab: Dict[str, int]) -> List[Tuple[str, str]]:
    """The merges transformers 5 derives from a vocabulary with no merges
    (tu_base generate_merges without scores): every split of every piece
    into two pieces, ordered by the merged piece's id, then the length of
    the left and of the right part, then the ids of the two parts."""
    rules: List[Tuple[int, int, int, int, int, str, str]] = []
    append, find = rules.append, vocab.get
    for piece, merged_id in vocab.items():
        size = len(piece)
        for k in range(1, size):
            left = piece[:k]
            left_id = find(left)
            if left_id is not None:
                right = piece[k:]
                right_id = find(right)
                if right_id is not None:
                    append((merged_id, k, size - k, left_id, right_id, left, right))
    rules.sort()
    return [(r[5], r[6]) for r in rules]
