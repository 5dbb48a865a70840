"""Tokenizers from sentencepiece ``.model`` files, with sentencepiece's rules.

sentencepiece is what runs a bare ``tokenizer.model``, so every rule here is
its own (``src/bpe_model.cc``, ``model_interface.cc``,
``sentencepiece_processor.cc``):

* only NORMAL, USER_DEFINED and UNUSED pieces are built by merges, and an
  UNUSED piece is split back into the halves that built it;
* USER_DEFINED pieces are matched in the normalized text, longest first at
  each position, and never merged with their neighbours; control pieces
  spelled in the text are plain text;
* without byte fallback, a run of unknown characters gives one ``<unk>``.
"""

from __future__ import annotations

import os
from typing import Optional, Union

from ._core import PieceTable
from ._spm_model import SpmModelProto, read_model_proto
from .errors import ModelFormatError, UnsupportedModelError
from .tokenizer import SpmTokenizer

__all__ = ["load_model_proto", "tokenizer_from_model_proto"]

_MODEL_TYPES = {1: "Unigram", 2: "BPE", 3: "word", 4: "char"}


def load_model_proto(path: Union[str, "os.PathLike[str]"]) -> SpmTokenizer:
    """A tokenizer from a sentencepiece ``.model`` file (a BPE model)."""
    path = os.fspath(path)
    return tokenizer_from_model_proto(read_model_proto(path), path)


def tokenizer_from_model_proto(
    proto: SpmModelProto, path: Optional[str] = None, **options: object
) -> SpmTokenizer:
    """A tokenizer from a decoded ModelProto; `options` override the
    SpmTokenizer settings the file implies (the HF folder loader uses them)."""
    where = path if path is not None else "<model proto>"
    trainer = proto.trainer
    model_type = int(trainer.model_type)
    if model_type != 2:
        name = _MODEL_TYPES.get(model_type, f"type {model_type}")
        raise UnsupportedModelError(
            f"{where}: a sentencepiece {name} model; spmbpe implements BPE models only "
            f"(model_type BPE)"
        )
    normalizer = proto.normalizer_or_default
    _check_normalizer(normalizer, trainer, where)

    table = PieceTable(proto.arena, proto.offsets)
    dup = table.first_duplicate
    # Pieces appended after the model's own (HF added tokens) may repeat a
    # piece's text: the added token keeps its own id.
    model_pieces = int(options.pop("model_pieces", len(table)))  # type: ignore[call-overload]
    if 0 <= dup < model_pieces:
        # sentencepiece refuses a model that defines a piece twice.
        first = table.find(table.piece_bytes(dup))
        raise ModelFormatError(
            path, None, f"piece {table.piece(dup)!r} is defined twice (ids {first} and {dup})"
        )
    n = len(table)

    def special_id(value: int, name: str) -> Optional[int]:
        value = int(value)
        if value < 0:
            return None
        if value >= n:
            raise ModelFormatError(path, None, f"trainer_spec.{name} {value} is not a piece id")
        return value

    settings = dict(
        bos_id=special_id(trainer.bos_id, "bos_id"),
        eos_id=special_id(trainer.eos_id, "eos_id"),
        unk_id=special_id(trainer.unk_id, "unk_id"),
        pad_id=special_id(trainer.pad_id, "pad_id"),
        add_prefix_space=bool(normalizer.add_dummy_prefix),
        prefix_scheme="once",
        reference="sentencepiece",
        byte_fallback=bool(trainer.byte_fallback),
    )
    # sentencepiece adds BOS/EOS only when asked; for add_special_tokens=True
    # a bare model follows the Llama/Mistral convention: BOS, no EOS.
    settings["add_bos"] = settings["bos_id"] is not None
    settings["add_eos"] = False
    settings.update(options)
    return SpmTokenizer._from_table(table, proto.scores, proto.types, **settings)


def _check_normalizer(normalizer, trainer, where: str) -> None:
    """Models whose normalizer spmbpe does not implement yet are refused
    rather than tokenized differently."""
    name = normalizer.name or "(unnamed)"
    if normalizer.precompiled_charsmap or name not in ("identity",):
        raise NotImplementedError(
            f"{where}: the sentencepiece normalizer {name!r} is not implemented yet; "
            f"spmbpe reads models with the 'identity' normalizer (Llama, Mistral)"
        )
    for field, wanted in (
        ("remove_extra_whitespaces", False),
        ("escape_whitespaces", True),
    ):
        if bool(getattr(normalizer, field)) != wanted:
            raise NotImplementedError(
                f"{where}: normalizer_spec.{field} = {not wanted} is not implemented yet"
            )
    if bool(trainer.treat_whitespace_as_suffix):
        raise NotImplementedError(
            f"{where}: trainer_spec.treat_whitespace_as_suffix = true is not implemented yet"
        )
