"""Decoding: the rules the compiled decoder follows, and a tokenizer's decoder.

The compiled decoder (``IdDecoder``, ``spmbpe/core/decode.pyx``) renders ids
by a small set of rules; each reference module (``spmbpe/references/``) says
which rules it follows (its ``decode_rules(spec)``, keyed by
``special_as_text``: control and unknown pieces as their text in every
reference), packed here."""

from __future__ import annotations

import codecs

from typing import TYPE_CHECKING, Dict, Iterable, List, NamedTuple, Optional, Protocol, Sequence, Tuple

from ._core import DECODE_CONSTANTS as C
from ._core import IdDecoder, PieceTable, SpmCore, decode_ids
from ._vocab import SPECIAL_TYPES
from .tokens import AddedToken

if TYPE_CHECKING:
    from .spec import TokenizerSpec

__all__ = ["C", "DecodeRules", "Decoder", "DecodingMixin", "StreamingDecoder", "TextCleanup", "TextTransform", "pack", "remove_extra_whitespaces"]


class TextTransform(Protocol):
    """What decode applies to its whole text: a denormalizer, TextCleanup."""

    def normalize(self, text: str) -> str: ...


class DecodeRules(NamedTuple):
    """The rules of one reference, packed for the compiled decoder;
    `drops_ends`: skip_special also leaves out a first id that is the BOS
    the vocabulary adds and a last id that is the EOS it adds; `roles`: the
    ROLE_* bits of each id, for segmented rules; `skip`: the ids that
    skip_special leaves out, where the reference does not skip by type;
    `spelling`: each id's text where the reference spells some ids other
    than the vocabulary does (segmented rules); `clean_up`: transformers'
    ``clean_up_tokenization_spaces`` after the denormalizer."""

    packed: bytes
    surface: bytes
    drops_ends: bool = False
    roles: Optional[bytes] = None
    skip: Optional[bytes] = None
    spelling: Optional[PieceTable] = None
    clean_up: bool = False


class TextCleanup:
    """transformers' ``clean_up_tokenization`` (PreTrainedTokenizerBase,
    with ``clean_up_tokenization_spaces``), after `before` (a denormalizer)
    when given; like one, it reads the text as a whole."""

    __slots__ = ("_before",)

    _REPLACEMENTS = (
        (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
        (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
    )

    def __init__(self, before: Optional[TextTransform] = None) -> None:
        self._before = before

    def normalize(self, text: str) -> str:
        if self._before is not None:
            text = self._before.normalize(text)
        for old, new in self._REPLACEMENTS:
            text = text.replace(old, new)
        return text


def pack(
    control: int, unknown: int, unused: int, user_defined: int, strip: int, byte_runs: int,
    *, strip_count: int = 1, marker_in_special: bool = False, remove_extra_whitespaces: bool = False,
    segments: bool = False, legacy_space: bool = False, first_strip: bool = False, join_spaces: bool = False,
) -> bytes:
    """The rules as the compiled decoder reads them: how control, unknown,
    unused and user-defined pieces render (C["RENDER_*"]), which leading
    space comes off (C["STRIP_*"]), how byte pieces join (C["BYTES_*"])."""
    # Field order: DecodeRules in core/decode.pyx.
    packed = bytes(
        [control, unknown, unused, user_defined, strip, strip_count, byte_runs,
         int(marker_in_special), int(remove_extra_whitespaces), int(segments), int(legacy_space),
         int(first_strip), int(join_spaces)]
    )
    assert len(packed) == C["RULES_SIZE"]
    return packed


def remove_extra_whitespaces(spec: "TokenizerSpec") -> bool:
    """Whether the model's normalizer collapses whitespace (sentencepiece's
    decode then strips a leading space too)."""
    return spec.normalizers is not None and bool(spec.normalizers[True].remove_extra_whitespaces)


class Decoder:
    """How one tokenizer turns ids back into text: its reference's rules
    over its core; `skip_table` marks the ids skip_special leaves out
    wherever they are, `skip_ends` the ids left out as a sequence's first
    and last one (-1: none); `transform` applies to the whole text."""

    __slots__ = ("core", "rules", "skip_table", "skip_ends", "transform")

    def __init__(
        self, core: SpmCore, rules: Dict[bool, DecodeRules], spec: "TokenizerSpec",
        added: Sequence[AddedToken], ends: Tuple[Optional[int], Optional[int]],
    ) -> None:
        self.core = core
        self.rules = rules
        skip_table = rules[False].skip
        if skip_table is None:
            skip = bytearray(spec.types.translate(SPECIAL_TYPES))
            for token in added:
                if token.special:
                    skip[token.id] = 1
            skip_table = bytes(skip)
        self.skip_table = skip_table
        # llama_detokenize's remove_special also drops a leading BOS and a
        # trailing EOS that the vocabulary adds (`ends`), by id.
        drops = rules[False].drops_ends
        self.skip_ends = tuple(-1 if i is None or not drops else i for i in ends)
        transform: Optional[TextTransform] = spec.denormalizer
        if rules[False].clean_up:
            transform = TextCleanup(transform)
        self.transform = transform

    def _skipping(self, skip_special: bool) -> Tuple[Optional[bytes], int, int]:
        if not skip_special:
            return None, -1, -1
        return self.skip_table, self.skip_ends[0], self.skip_ends[1]

    def decode_bytes(self, ids: Iterable[int], skip_special: bool, special_as_text: bool) -> bytes:
        rules = self.rules[special_as_text]
        skip, lead, tail = self._skipping(skip_special)
        return decode_ids(self.core, ids, rules.packed, skip, rules.surface, lead, tail, rules.roles, rules.spelling)

    def decode(self, ids: Iterable[int], skip_special: bool, errors: str, special_as_text: bool) -> str:
        text = self.decode_bytes(ids, skip_special, special_as_text).decode("utf-8", errors)
        if self.transform is not None:
            text = self.transform.normalize(text)
        return text

    def id_decoder(self, skip_special: bool, special_as_text: bool) -> IdDecoder:
        """A compiled decoder fed ids a few at a time (a streaming decoder's)."""
        rules = self.rules[special_as_text]
        skip, lead, tail = self._skipping(skip_special)
        return IdDecoder(self.core, rules.packed, skip, rules.surface, lead, tail, rules.roles, rules.spelling)


class StreamingDecoder:
    """Text of a sequence of ids, given one id at a time.

    ``add_token(id)`` returns the text that id completes: only whole UTF-8
    characters (a character spelled by several ``<0xNN>`` byte pieces comes
    out with its last byte), with the dummy prefix removed from the first
    piece exactly as ``decode`` removes it.  ``flush()`` returns the rest (an
    incomplete character becomes U+FFFD under ``errors="replace"``) and starts
    a new sequence.  For any ids,
    ``"".join(d.add_token(i) for i in ids) + d.flush() == tok.decode(ids)``.
    Where decode works on the whole text (a ``denormalizer_spec``,
    ``clean_up_tokenization_spaces``, transformers 4's legacy spaces before
    a special token), text waits for ``flush()`` or the next special token
    as docs/api.md, "Streaming decode", says."""

    __slots__ = ("_decoder", "_utf8", "_held", "_denormalizer")

    def __init__(
        self,
        decoder: Decoder,
        *,
        skip_special: bool = False,
        errors: str = "replace",
        special_as_text: bool = False,
    ) -> None:
        codecs.lookup_error(errors)  # LookupError now, not at the first id
        # The compiled decoder keeps the reference's state between ids (a
        # leading space to strip, a byte run, an id left out if it comes last).
        self._decoder = decoder.id_decoder(skip_special, special_as_text)
        self._denormalizer = decoder.transform
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)
        self._held: List[str] = []

    def add_token(self, id: int) -> str:
        """The text `id` completes (``""`` while a character is incomplete)."""
        text = self._utf8.decode(self._decoder.feed((id,)))
        if self._denormalizer is not None:
            self._held.append(text)
            return ""
        return text

    def flush(self) -> str:
        """The rest of the text, then a fresh start (the next id is a first piece)."""
        text = self._utf8.decode(self._decoder.finish(), final=True)
        if self._denormalizer is not None:
            text = self._denormalizer.normalize("".join(self._held) + text)
        self._utf8.reset()
        self._held = []
        return text


class DecodingMixin:
    """Mixed into SpmTokenizer: decoding, by its Decoder."""

    _decoder: Decoder

    def streaming_decoder(
        self, *, skip_special: bool = False, errors: str = "replace", special_as_text: bool = False
    ) -> "StreamingDecoder":
        """A decoder fed one id at a time: ``add_token(id)`` returns the text
        completed so far (whole characters only), ``flush()`` the rest; the
        pieces joined equal ``decode(ids, skip_special=..., errors=...,
        special_as_text=...)``.

        >>> d = tok.streaming_decoder()                              # doctest: +SKIP
        >>> d.add_token(15043), d.add_token(3186), d.flush()         # doctest: +SKIP
        ('Hello', ' world', '')
        """
        return StreamingDecoder(
            self._decoder, skip_special=skip_special, errors=errors, special_as_text=special_as_text
        )

    def decode_bytes(
        self, ids: Iterable[int], *, skip_special: bool = False, special_as_text: bool = False
    ) -> bytes:
        """The UTF-8 bytes `ids` stand for, before ``decode``'s final step
        (byte pieces may split a character where the reference leaves bytes
        as they are: llama.cpp, transformers 4)."""
        return self._decoder.decode_bytes(ids, skip_special, special_as_text)

    def decode(
        self,
        ids: Iterable[int],
        *,
        skip_special: bool = False,
        errors: str = "replace",
        special_as_text: bool = False,
    ) -> str:
        """The text of `ids`, as the tokenizer's reference decodes them (its
        module's ``decode_rules``, ``spmbpe/references/``; docs/behaviour.md,
        "Decoding", has each reference's rules).

        `skip_special` leaves out control and unknown ids and special added
        tokens (for a GGUF also a first BOS and a last EOS the file adds,
        whatever their type); `special_as_text` renders control and unknown
        pieces as their text whatever the reference does. Bytes that are not
        valid UTF-8 follow `errors` (``str.decode``) where the reference
        leaves them as they are.

        >>> tok.decode([15043, 3186])                            # doctest: +SKIP
        'Hello world'
        """
        return self._decoder.decode(ids, skip_special, errors, special_as_text)
