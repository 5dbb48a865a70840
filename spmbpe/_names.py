"""The names users of transformers and sentencepiece try first, each a thin
spelling of one method of SpmTokenizer (no second implementation); those
that are one of its methods or properties under a second name
(``convert_ids_to_tokens``, ``bos_token_id``, ...) are SpmTokenizer's own.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Sequence, Tuple, cast

__all__ = ["NamesMixin"]


class NamesMixin:
    """Mixed into SpmTokenizer; every method calls one of its own (hence
    ``self: Any``: this class holds none of them)."""

    # ------------------------------------------------------------ transformers

    def tokenize(self: Any, text: str, **options: Any) -> List[str]:
        """The pieces of ``encode(text, special="all", **options)``.

        >>> tok.tokenize("Hello world")                       # doctest: +SKIP
        ['▁Hello', '▁world']
        """
        # transformers' tokenize: special tokens in the text are tokens
        # unless the caller says otherwise (as the tok(...) call).
        options.setdefault("special", "all")
        return [str(self.id_to_piece(i)) for i in self.encode(text, **options)]

    def get_vocab(self: Any) -> Dict[str, int]:
        """Every piece and its id (a piece listed twice: its lowest id)."""
        vocab: Dict[str, int] = {}
        for i, piece in enumerate(self._table.pieces()):
            vocab.setdefault(piece, i)
        return vocab

    def decode_batch(self: Any, batch: Iterable[Iterable[int]], **options: Any) -> List[str]:
        """``[decode(ids, **options) for ids in batch]`` (tiktoken's name;
        transformers' ``batch_decode``)."""
        if isinstance(batch, (str, bytes)):
            raise TypeError(f"decode_batch takes a list of id lists, not a {type(batch).__name__}")
        return [self.decode(ids, **options) for ids in batch]

    def batch_decode(self: Any, sequences: Iterable[Iterable[int]], *, skip_special_tokens: bool = False) -> List[str]:
        """transformers' ``batch_decode``: ``decode_batch`` with its keyword."""
        return cast(List[str], self.decode_batch(sequences, skip_special=skip_special_tokens))

    # ------------------------------------------------------------ offsets

    def encode_batch_with_offsets(
        self, texts: Sequence[str], **options: Any
    ) -> List[Tuple[List[int], List[Tuple[int, int]]]]:
        """``encode_with_offsets`` of each text: (ids, character spans) per
        text."""
        if isinstance(texts, (str, bytes, bytearray)):
            raise TypeError(
                f"encode_batch_with_offsets takes a list of texts, not a {type(texts).__name__}"
            )
        tok: Any = self
        return [tok.encode_with_offsets(t, **options) for t in texts]
