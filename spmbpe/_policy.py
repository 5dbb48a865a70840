"""The checks on a call's arguments that every encode path shares: the
``special=`` policy, the text, sampling, thread counts."""

from __future__ import annotations

import os
from typing import AbstractSet, Collection, FrozenSet, Optional, Tuple, Union

__all__ = [
    "SpecialPolicy", "special_policy", "check_text", "surrogate_error", "check_surrogates", "sampling", "text_seed",
]

#: ``special=``: "raise", "all", "none", or the special token texts allowed.
SpecialPolicy = Union[str, Collection[str]]

_NONE_ALLOWED: FrozenSet[str] = frozenset()


def special_policy(special: SpecialPolicy) -> Tuple[bool, Optional[FrozenSet[str]]]:
    """(whether special tokens are matched, the allowed ones or None for all).

    "raise" (the default of encode, as tiktoken's disallowed_special="all"):
    matched, none allowed -- a special token spelled in untrusted text is an
    error (DisallowedSpecialError names it and the ways out), never a silent
    control id."""
    if isinstance(special, str):
        if special == "raise":
            return True, _NONE_ALLOWED
        if special == "all":
            return True, None
        if special == "none":
            return False, None
        raise ValueError(
            f"special must be 'raise', 'all', 'none' or a collection of token texts, not {special!r}"
        )
    if isinstance(special, (AbstractSet, list, tuple, frozenset)):
        allowed = frozenset(special)
        for item in allowed:
            if not isinstance(item, str):
                raise TypeError(f"special= collections hold token texts (str), not {item!r}")
        return True, allowed
    raise TypeError(
        f"special must be 'raise', 'all', 'none' or a collection of token texts, not "
        f"{type(special).__name__}"
    )


def check_text(text: object) -> str:
    if type(text) is str:
        return text
    if isinstance(text, str):
        return str(text)
    raise TypeError(f"text must be str, not {type(text).__name__}")


def surrogate_error(text: str) -> ValueError:
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return ValueError(
                f"text contains a lone surrogate {ch!r} at position {i}, which is not "
                f"valid Unicode and cannot be encoded as UTF-8"
            )
    return ValueError("text cannot be encoded as UTF-8")


def check_surrogates(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise surrogate_error(text) from None


def sampling(alpha: float, seed: Optional[int]) -> Tuple[float, int]:
    """The checked dropout probability and a 64-bit seed (random when None)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be a number from 0 to 1, not {alpha!r}")
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, not {type(seed).__name__}")
    return float(alpha), seed & 0xFFFFFFFFFFFFFFFF


def text_seed(seed: int, index: int) -> int:
    """Text `index`'s seed in a sampled batch: independent of how the batch
    is split among threads."""
    return (seed + index * 0xD1B54A32D192ED03) & 0xFFFFFFFFFFFFFFFF
