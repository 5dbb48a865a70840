"""How each reference turns ids back into text, chosen in one place.

The compiled decoder (``IdDecoder`` in ``_core.pyx``) renders ids by a small
set of rules; this module says which rules each reference follows:

* **llama.cpp** (GGUF), ``llama_detokenize`` in ``src/llama-vocab.cpp``:
  control and unknown pieces as their text (``unparse_special``, as
  ``common_detokenize`` asks by default) or nothing (``skip_special``);
  user-defined pieces as spelled; unused pieces as nothing; byte pieces as
  their byte. Only the *first id* loses one leading space (its
  ``remove_space``), whether it renders anything or not, so a skipped
  leading BOS leaves the next piece's space standing. Skipping specials
  (``remove_special``) also drops a leading BOS when the vocabulary adds
  one and a trailing EOS when it adds one, by id, whatever their type
  (``drops_ends``).
* **sentencepiece** (``.model``), ``DecodeSentencePiece`` in
  ``sentencepiece_processor.cc``: control pieces as nothing, unknown ones as
  `` ⁇ `` (its ``unk_surface``), user-defined and unused pieces as normal
  ones; while nothing has been decoded, a piece's leading ``▁`` comes off
  (with ``add_dummy_prefix`` or ``remove_extra_whitespaces``; a byte piece is
  never stripped); a run of byte pieces is decoded on its own, every byte of
  an invalid sequence becoming U+FFFD.
* **tokenizers** (``tokenizer.json``), the Llama decoder ``Sequence[Replace
  ▁ -> " ", ByteFallback, Fuse, Strip(" ", 1, 0)]``: every token's ``▁`` is a
  space, a run of byte tokens that is not valid UTF-8 is U+FFFD per byte, and
  one leading space comes off the whole text.
* **transformers4** (model folders, transformers 4's slow ``LlamaTokenizer``):
  one leading space off the first piece rendered; control and unknown pieces
  as their text.

``special_as_text=True`` renders control and unknown pieces as their text in
every reference (what spmbpe 0.1 did for ``.model`` files too).
"""

from __future__ import annotations

from typing import NamedTuple

from ._core import DECODE_CONSTANTS as _C

__all__ = ["DecodeRules", "decode_rules"]

#: sentencepiece's default TrainerSpec.unk_surface (" \u2047 ").
UNK_SURFACE = " \u2047 ".encode("utf-8")


class DecodeRules(NamedTuple):
    """The rules of one reference, packed for the compiled decoder;
    `drops_ends`: skip_special also leaves out a first id that is the BOS
    the vocabulary adds and a last id that is the EOS it adds."""

    packed: bytes
    surface: bytes
    drops_ends: bool = False


def _pack(
    control: int, unknown: int, unused: int, user_defined: int, strip: int, byte_runs: int,
    *, strip_count: int = 1, marker_in_special: bool = False, remove_extra_whitespaces: bool = False,
) -> bytes:
    # Field order: DecodeRules in _core.pyx.
    packed = bytes(
        [control, unknown, unused, user_defined, strip, strip_count, byte_runs,
         int(marker_in_special), int(remove_extra_whitespaces)]
    )
    assert len(packed) == _C["RULES_SIZE"]
    return packed


def decode_rules(
    decoder: str,
    *,
    add_prefix_space: bool,
    escape_spaces: bool = True,
    remove_extra_whitespaces: bool = False,
    special_as_text: bool = False,
) -> DecodeRules:
    """The decode rules of `decoder` (a planner's ``decoder``: "llama.cpp",
    "sentencepiece", "tokenizers", "transformers4") for a tokenizer that adds a dummy prefix
    (`add_prefix_space`) as ``▁`` (`escape_spaces`) or as a plain space."""
    # A plain-space prefix (no escape_whitespaces) stays: the references take
    # off only the space marker (sentencepiece) or the space it decodes to.
    strip_prefix = add_prefix_space and escape_spaces
    text, nothing = _C["RENDER_TEXT"], _C["RENDER_NOTHING"]
    normal = _C["RENDER_NORMAL"]
    if decoder == "llama.cpp":
        strip = _C["STRIP_FIRST_ID"] if strip_prefix else _C["STRIP_NONE"]
        packed = _pack(text, text, nothing, text, strip, _C["BYTES_RAW"])
        return DecodeRules(packed, b"", drops_ends=True)
    if decoder == "sentencepiece":
        control = text if special_as_text else nothing
        unknown = text if special_as_text else _C["RENDER_SURFACE"]
        stripping = add_prefix_space or remove_extra_whitespaces
        strip = _C["STRIP_WHILE_EMPTY"] if stripping else _C["STRIP_NONE"]
        packed = _pack(
            control, unknown, normal, normal, strip, _C["BYTES_EACH"],
            remove_extra_whitespaces=remove_extra_whitespaces,
        )
        return DecodeRules(packed, UNK_SURFACE)
    if decoder == "tokenizers":
        strip = _C["STRIP_OUTPUT"] if strip_prefix else _C["STRIP_NONE"]
        packed = _pack(text, text, normal, text, strip, _C["BYTES_RUN"], marker_in_special=True)
        return DecodeRules(packed, b"")
    if decoder == "transformers4":
        strip = _C["STRIP_FIRST_RENDERED"] if strip_prefix else _C["STRIP_NONE"]
        packed = _pack(text, text, normal, text, strip, _C["BYTES_RAW"])
        return DecodeRules(packed, b"")
    raise ValueError(f"no decode rules named {decoder!r}")
