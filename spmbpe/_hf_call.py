"""``tok(texts, padding=..., truncation=..., return_tensors="np")``: the call
transformers' tokenizers answer (``PreTrainedTokenizerBase.__call__``,
transformers 4.x, for single sequences), for preprocessing code written for
them; docs/api.md, "transformers-style call", says where the two differ."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from ._policy import SpecialPolicy

__all__ = ["BatchEncoding", "call"]


_PADDING = {
    False: None, "do_not_pad": None, None: None,
    True: "longest", "longest": "longest",
    "max_length": "max_length",
}
_TRUNCATION = {
    False: False, "do_not_truncate": False,
    True: True, "longest_first": True, "only_first": True,
}


class BatchEncoding(dict):  # type: ignore[type-arg]
    """The result of ``tok(...)``: a dict (``"input_ids"``,
    ``"attention_mask"``) whose keys are also attributes, as transformers'
    ``BatchEncoding``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def call(
    self: Any,
    text: Union[str, Sequence[str]],
    *,
    add_special_tokens: bool = True,
    padding: Union[bool, str] = False,
    truncation: Union[bool, str, None] = None,
    max_length: Optional[int] = None,
    pad_to_multiple_of: Optional[int] = None,
    padding_side: str = "right",
    truncation_side: str = "right",
    pad_token_id: Optional[int] = None,
    return_tensors: Optional[str] = None,
    return_attention_mask: bool = True,
    special: SpecialPolicy = "all",
    num_threads: Optional[int] = None,
) -> BatchEncoding:
    """What a transformers tokenizer's call returns, for code written for
    one: a dict (keys also attributes) of ``input_ids`` and
    ``attention_mask``; lists, or 2-D int64 arrays with
    ``return_tensors="np"``.  BOS/EOS are added by default (as
    transformers does); `padding` is ``True``/``"longest"`` or
    ``"max_length"``, with the vocabulary's pad id or `pad_token_id`;
    `truncation` cuts text ids so that a row has at most `max_length` ids.

    >>> tok(["Hello", "Hello world"], padding=True, pad_token_id=0)["input_ids"]  # doctest: +SKIP
    [[1, 15043, 0], [1, 15043, 3186]]
    """
    # (SpmTokenizer.__call__ is this function: `self` is the tokenizer.)
    single = isinstance(text, str)
    if single:
        texts: List[str] = [text]  # type: ignore[list-item]
    elif isinstance(text, (list, tuple)):
        texts = list(text)
    else:
        raise TypeError(
            f"text must be a str or a list of str, not {type(text).__name__} "
            f"(pairs of texts are not supported)"
        )
    pad_to, truncate = _checked(padding, truncation, max_length, pad_to_multiple_of, padding_side,
                                truncation_side, return_tensors)
    pad_id = self.pad_id if pad_token_id is None else self._valid_id(pad_token_id)
    if pad_to is not None and pad_id is None:
        raise ValueError(
            "padding needs a pad id, and this vocabulary has none: pass pad_token_id= (for "
            "example tok.eos_id or tok.unk_id), as transformers asks for tokenizer.pad_token"
        )

    rows = self.encode_batch(texts, special=special, num_threads=num_threads)
    bos = [self.bos_id] if add_special_tokens and self.add_bos else []
    eos = [self.eos_id] if add_special_tokens and self.add_eos else []
    if truncate:
        assert max_length is not None
        rows = _truncated(rows, max_length - len(bos) - len(eos), max_length, truncation_side)
    if bos or eos:
        rows = [bos + r + eos for r in rows]

    width = None
    if pad_to == "longest":
        width = max((len(r) for r in rows), default=0)
    elif pad_to == "max_length":
        width = max_length
    if width is not None and pad_to_multiple_of is not None and width % pad_to_multiple_of:
        width += pad_to_multiple_of - width % pad_to_multiple_of
    rows, masks = _padded(rows, width, pad_id, padding_side)
    if return_tensors in ("np", "pt"):
        out_ids, out_mask = _tensors(rows, masks, return_tensors)
    elif single:
        out_ids, out_mask = rows[0], masks[0]
    else:
        out_ids, out_mask = rows, masks
    result = BatchEncoding(input_ids=out_ids)
    if return_attention_mask:
        result["attention_mask"] = out_mask
    return result


def _checked(
    padding: Union[bool, str], truncation: Union[bool, str, None], max_length: Optional[int],
    pad_to_multiple_of: Optional[int], padding_side: str, truncation_side: str, return_tensors: Optional[str],
) -> Tuple[Optional[str], bool]:
    """The call's options checked: (how to pad: None, "longest" or
    "max_length"; whether to truncate)."""
    if padding not in _PADDING:
        raise ValueError(f"padding must be True, False, 'longest', 'max_length' or 'do_not_pad', not {padding!r}")
    pad_to = _PADDING[padding]
    if truncation is None:
        # transformers: a max_length without padding turns truncation on.
        truncate = max_length is not None and pad_to is None
    elif truncation in _TRUNCATION:
        truncate = _TRUNCATION[truncation]
    else:
        raise ValueError(
            f"truncation must be True, False, 'longest_first', 'only_first' or 'do_not_truncate', "
            f"not {truncation!r}"
        )
    for name, side in (("padding_side", padding_side), ("truncation_side", truncation_side)):
        if side not in ("right", "left"):
            raise ValueError(f"{name} must be 'right' or 'left', not {side!r}")
    if return_tensors not in (None, "np", "pt"):
        raise ValueError(f"return_tensors must be None, 'np' or 'pt', not {return_tensors!r}")
    if return_tensors == "pt":
        try:
            import torch  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            raise ImportError(
                "return_tensors='pt' needs PyTorch, which is not installed: pip install torch, "
                "or ask for return_tensors='np' (NumPy) or None (lists)"
            ) from None
    if max_length is not None and (not isinstance(max_length, int) or max_length < 0):
        raise ValueError(f"max_length must be a non-negative integer, not {max_length!r}")
    if (truncate or pad_to == "max_length") and max_length is None:
        what = "truncation" if truncate else "padding='max_length'"
        raise ValueError(f"{what} needs max_length= (spmbpe does not know the model's maximum length)")
    if pad_to_multiple_of is not None and (not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of < 1):
        raise ValueError(f"pad_to_multiple_of must be a positive integer, not {pad_to_multiple_of!r}")
    return pad_to, truncate


def _truncated(rows: List[List[int]], room: int, max_length: int, side: str) -> List[List[int]]:
    """The rows cut to `room` ids on `side` (what max_length leaves beside
    BOS/EOS)."""
    if room < 0:
        raise ValueError(
            f"max_length={max_length} leaves no room for the {max_length - room} special "
            f"tokens added to each text"
        )
    return [r if len(r) <= room else (r[:room] if side == "right" else r[len(r) - room :]) for r in rows]


def _padded(
    rows: List[List[int]], width: Optional[int], pad_id: Optional[int], side: str
) -> Tuple[List[List[Any]], List[List[int]]]:
    """The rows padded to `width` (None: as they are) on `side`, and their
    attention masks."""
    if width is None:
        return rows, [[1] * len(r) for r in rows]
    masks = []
    padded: List[List[Any]] = []
    for r in rows:
        fill = max(0, width - len(r))
        if side == "right":
            padded.append(r + [pad_id] * fill)
            masks.append([1] * len(r) + [0] * fill)
        else:
            padded.append([pad_id] * fill + r)
            masks.append([0] * fill + [1] * len(r))
    return padded, masks


def _tensors(rows: List[List[Any]], masks: List[List[int]], kind: str) -> Tuple[Any, Any]:
    """The ids and masks as 2-D int64 arrays (NumPy) or tensors (PyTorch)."""
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        raise ValueError(
            f"the texts have different lengths and return_tensors={kind!r} needs one: pass "
            "padding=True (with pad_token_id= when the vocabulary has no pad id) or truncation"
        )
    shape = (len(rows), lengths.pop() if lengths else 0)
    if kind == "pt":
        import torch

        return (torch.tensor(rows, dtype=torch.int64).reshape(shape),
                torch.tensor(masks, dtype=torch.int64).reshape(shape))
    import numpy as np

    return np.array(rows, dtype=np.int64).reshape(shape), np.array(masks, dtype=np.int64).reshape(shape)
