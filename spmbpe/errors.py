"""Exceptions raised by spmbpe.

Every error spmbpe raises on bad input derives from :class:`SpmbpeError`, and
also from the built-in type a caller would catch without knowing spmbpe
(``ValueError`` for bad data, ``FileNotFoundError`` for a missing path), so
existing ``except ValueError`` blocks keep working.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "SpmbpeError", "VocabularyError", "ModelFormatError", "UnsupportedModelError", "UnsupportedFeatureError",
    "DisallowedSpecialError", "InvalidTokenIdError",
]


class SpmbpeError(Exception):
    """Base class of every exception spmbpe raises on purpose."""


class VocabularyError(SpmbpeError, ValueError):
    """A vocabulary that cannot be used: empty, scores of the wrong length,
    an id out of range, a BOS/EOS/UNK id that is not a piece."""


class ModelFormatError(SpmbpeError, ValueError):
    """A tokenizer file that is truncated, corrupt or not of the format it
    claims; ``path`` and ``offset`` (a byte offset, or ``None`` where the
    problem has no position) say where."""

    def __init__(self, path: object, offset: Optional[int], message: str) -> None:
        self.path = None if path is None else str(path)
        self.offset = offset
        self.reason = message
        where = self.path if self.path is not None else "<bytes>"
        if offset is not None:
            where = f"{where} at byte offset {offset}"
        super().__init__(f"{where}: {message}")


class UnsupportedModelError(SpmbpeError, ValueError):
    """A well-formed tokenizer file of a kind spmbpe does not implement
    (a GGUF vocabulary that is not ``llama``/SPM-BPE, a Unigram model, ...)."""


class UnsupportedFeatureError(UnsupportedModelError, NotImplementedError):
    """A tokenizer file that uses an option spmbpe does not implement
    (BPE-dropout, ``single_word`` added tokens, another pre-tokenizer, ...).
    Also a ``NotImplementedError``, which these errors were before."""


class DisallowedSpecialError(SpmbpeError, ValueError):
    """The text spells a special token that the ``special=`` policy does not
    allow; ``token`` is its text and ``offset`` its character offset;
    ``index``: in a batch, the index of the text (else None)."""

    def __init__(self, token: str, offset: int, index: Optional[int] = None) -> None:
        self.token = token
        self.offset = offset
        self.index = index
        where = "the text" if index is None else f"texts[{index}]"
        super().__init__(
            f"{where} contains the special token {token!r} at character offset "
            f"{offset}, which the special= policy does not allow (the default, "
            f"special='raise', keeps untrusted text from becoming control ids). To "
            f"encode it as its token id, pass special='all' or include {token!r} in "
            f"the allowed collection; to encode it as plain text, pass "
            f"special='none' (or use encode_ordinary)."
        )


class InvalidTokenIdError(SpmbpeError, IndexError, ValueError):
    """A token id outside ``[0, vocab_size)``; ``token_id`` is the id."""

    def __init__(self, token_id: object, vocab_size: int) -> None:
        self.token_id = token_id
        self.vocab_size = vocab_size
        super().__init__(
            f"invalid token id {token_id!r}: ids must be in [0, {vocab_size})"
        )
