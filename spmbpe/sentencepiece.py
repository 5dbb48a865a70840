"""Tokenizers from sentencepiece ``.model`` files: the ModelProto read into a
spec, its ids, normalizer and BOS/EOS as sentencepiece takes them; the
encoding and decoding rules are references/sentencepiece.py's."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Dict, Optional, Union

from ._core import PieceTable
from ._spm_model import NormalizerSpec, SpmModelProto, read_model_proto
from ._vocab import checked_id, indices_of
from .errors import ModelFormatError, UnsupportedModelError
from .spec import TokenizerSpec
from .tokens import TokenType

if TYPE_CHECKING:
    from ._normalizer import Normalizer

__all__ = ["read_model_proto_spec", "spec_from_model_proto"]

_MODEL_TYPES = {1: "Unigram", 2: "BPE", 3: "word", 4: "char"}


def read_model_proto_spec(path: Union[str, "os.PathLike[str]"]) -> TokenizerSpec:
    """The TokenizerSpec of a sentencepiece ``.model`` file."""
    path = os.fspath(path)
    return spec_from_model_proto(read_model_proto(path), path)


def spec_from_model_proto(
    proto: SpmModelProto, path: Optional[str] = None, **options: object
) -> TokenizerSpec:
    """The TokenizerSpec of a decoded ModelProto; `options` override the
    settings the file implies (the HF folder loader uses them).  A
    normalizer other than identity is applied as sentencepiece applies it
    (spmbpe._normalizer)."""
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
    try:
        text_normalizers = _text_normalizers(proto, normalizer)
        denormalizer = _denormalizer(proto)
    except ValueError as exc:
        # spmbpe._normalizer checks the precompiled character map's trie.
        raise ModelFormatError(path, None, f"{exc}") from None

    table = PieceTable(proto.arena, proto.offsets, utf8_checked=proto.pieces_checked())
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
        # A negative id: the model has no such piece.
        return checked_id(
            f"trainer_spec.{name}", int(value) if int(value) >= 0 else None, n,
            lambda message: ModelFormatError(path, None, message),
        )

    def control_id(value: int, name: str, piece: str) -> Optional[int]:
        # sentencepiece's bos_id()/eos_id()/pad_id() (sentencepiece_processor.cc):
        # the id of the trainer spec's piece text when that piece is a
        # control piece, whatever id the trainer spec gives (a model trained
        # with bos_id=-1 and control_symbols=["<s>"] has a BOS).  An id
        # outside the vocabulary is still a corrupt file.
        special_id(value, name)
        found = table.find(piece.encode("utf-8"))
        return found if 0 <= found < model_pieces and proto.types[found] == TokenType.CONTROL else None

    settings: Dict[str, object] = dict(
        bos_id=control_id(trainer.bos_id, "bos_id", trainer.bos_piece),
        eos_id=control_id(trainer.eos_id, "eos_id", trainer.eos_piece),
        unk_id=special_id(trainer.unk_id, "unk_id"),
        pad_id=control_id(trainer.pad_id, "pad_id", trainer.pad_piece),
        add_prefix_space=bool(normalizer.add_dummy_prefix),
        prefix_scheme="once",
        reference="sentencepiece",
        byte_fallback=bool(trainer.byte_fallback),
        normalizers=text_normalizers,
        denormalizer=denormalizer,
        # treat_whitespace_as_suffix changes only normalization (the marker
        # goes after words); sentencepiece decodes such ids as any others.
        escape_spaces=bool(normalizer.escape_whitespaces),
        # What sentencepiece decodes the unknown piece to (DecodeSentencePiece).
        unk_surface=str(trainer.unk_surface),
    )
    # sentencepiece adds BOS/EOS only when asked; for add_special_tokens=True
    # a bare model follows the Llama/Mistral convention: BOS, no EOS.
    settings["add_bos"] = settings["bos_id"] is not None
    settings["add_eos"] = False
    settings.update(options)
    return TokenizerSpec.build(table, proto.scores, proto.types, **settings)  # type: ignore[arg-type]


def _denormalizer(proto: SpmModelProto) -> Optional[Normalizer]:
    """The denormalizer_spec's rules for decoded text, or None."""
    spec = proto.denormalizer
    if spec is None or not spec.precompiled_charsmap:
        return None
    from ._normalizer import Normalizer

    return Normalizer(
        bytes(spec.precompiled_charsmap),
        add_dummy_prefix=False,
        remove_extra_whitespaces=False,
        escape_whitespaces=False,
    )


def _text_normalizers(
    proto: SpmModelProto, normalizer: NormalizerSpec
) -> Optional[Dict[bool, Normalizer]]:
    """sentencepiece's normalizer for this model, with and without the dummy
    prefix, or None when it changes nothing but the spaces and the prefix,
    which the core does itself at no cost."""
    if (
        not normalizer.precompiled_charsmap
        and not bool(normalizer.remove_extra_whitespaces)
        and bool(normalizer.escape_whitespaces)
        and not bool(proto.trainer.treat_whitespace_as_suffix)
    ):
        return None
    from ._normalizer import Normalizer

    user_defined = [proto.piece(i) for i in indices_of(proto.types, TokenType.USER_DEFINED)]
    return {
        prefix: Normalizer(
            bytes(normalizer.precompiled_charsmap),
            add_dummy_prefix=prefix,
            remove_extra_whitespaces=bool(normalizer.remove_extra_whitespaces),
            escape_whitespaces=bool(normalizer.escape_whitespaces),
            treat_whitespace_as_suffix=bool(proto.trainer.treat_whitespace_as_suffix),
            user_defined_symbols=user_defined,
        )
        for prefix in (True, False)
    }
