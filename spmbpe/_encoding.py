"""SpmTokenizer's encoding beyond the compiled ``encode`` (TokenizerBase,
``spmbpe/core/direct.pyx``): with offsets, and in batches on threads, as
lists, NumPy arrays or the flat buffers the command line and ``spmbpe.ray``
write."""

from __future__ import annotations

from typing import Any, Callable, FrozenSet, Iterable, List, Optional, Tuple, Union, cast

from . import _batch
from ._core import PieceTable, Plan, SpmCore, join_flat
from ._policy import SpecialPolicy, check_text, sampling, special_policy, surrogate_error
from ._threads import thread_count

__all__ = ["EncodingMixin"]


class EncodingMixin:
    """Mixed into SpmTokenizer (whose compiled base, TokenizerBase, gives the
    scans and the boundary tokens used here)."""

    _core: SpmCore
    _plan: Callable[..., Plan]
    _table: PieceTable
    _add_bos: bool
    _add_eos: bool
    _bos_id: Optional[int]
    _eos_id: Optional[int]
    _add_prefix_space: bool
    _all_one_segment: Callable[[List[Any], object], int]
    _line_block_prefix: Callable[[Union[bytes, bytearray], object], int]
    _plan_unit: Callable[..., Plan]
    _add_boundary_tokens: Callable[[List[int]], None]

    def encode_with_offsets(
        self,
        text: str,
        *,
        special: SpecialPolicy = "raise",
        add_special_tokens: bool = False,
    ) -> Tuple[List[int], List[Tuple[int, int]]]:
        """``encode`` with, for each id, the ``(start, end)`` character span
        of the original text it stands for.

        The dummy prefix takes no characters (a lone prefix id has an empty
        span); a piece that begins with a space marker covers that space;
        the byte pieces of one character all span that character; BOS/EOS
        added by `add_special_tokens` have empty spans at the ends.

        >>> tok.encode_with_offsets("Hello world")                # doctest: +SKIP
        ([15043, 3186], [(0, 5), (5, 11)])
        """
        include, allowed = special_policy(special)
        try:
            plan = self._plan(check_text(text), include, allowed, offsets=True)
            ids, starts, ends = self._core.encode_parts_offsets(plan)
        except UnicodeEncodeError:
            raise surrogate_error(text) from None
        spans = list(zip(starts, ends))
        if add_special_tokens:
            if self._add_bos:
                ids.insert(0, self._bos_id)  # type: ignore[arg-type]
                spans.insert(0, (0, 0))
            if self._add_eos:
                ids.append(self._eos_id)  # type: ignore[arg-type]
                spans.append((len(text), len(text)))
        return ids, spans

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        special: SpecialPolicy = "raise",
        add_special_tokens: bool = False,
        num_threads: Optional[int] = None,
        return_numpy: bool = False,
        dtype: object = None,
        enable_sampling: bool = False,
        alpha: float = 0.1,
        seed: Optional[int] = None,
    ) -> Any:
        """``[encode(t, ...) for t in texts]``, merged on `num_threads`
        threads (default: spmbpe.get_num_threads(), docs/api.md) with the
        GIL released.

        With ``return_numpy=True`` (NumPy needed), returns ``(ids, offsets)``:
        every id of every text in one flat ``uint32`` array (``dtype=
        numpy.uint16`` when the vocabulary fits), and the ``int64`` start of
        each text in it plus the total (``len(texts) + 1`` values), built
        without a Python int per token.  `enable_sampling`, `alpha`, `seed`:
        BPE-dropout as in ``encode``; text i draws from its own generator,
        seeded by (seed, i), so the result does not depend on the threads.

        >>> ids, offsets = tok.encode_batch(["Hello", "world"], return_numpy=True)  # doctest: +SKIP
        >>> ids[offsets[1]:offsets[2]]                                             # doctest: +SKIP
        array([3186], dtype=uint32)
        """
        include, allowed = special_policy(special)
        texts = _batch_list(texts)
        if return_numpy:
            np, dtype = _batch.numpy_dtype(dtype, len(self._table))
        sample_alpha, sample_seed = sampling(alpha, seed) if enable_sampling else (0.0, 0)
        texts, results, owners = self._run_batch(
            texts, special, include, allowed, num_threads, bool(return_numpy), sample_alpha, sample_seed
        )
        if return_numpy:
            bos = self._bos_id if add_special_tokens and self._add_bos else None
            eos = self._eos_id if add_special_tokens and self._add_eos else None
            return _batch.join_numpy(np, dtype, len(texts), owners, results, bos, eos)
        out = _batch.join_lists(results, owners)
        if add_special_tokens:
            for ids in out:
                self._add_boundary_tokens(ids)
        return out

    def _run_batch(
        self, texts: List[Any], special: SpecialPolicy, include: bool, allowed: Optional[FrozenSet[str]],
        num_threads: Optional[int], flat: bool, sample_alpha: float, sample_seed: int,
    ) -> Tuple[List[Any], List[Any], Optional[List[List[int]]]]:
        """encode_batch's merge: the texts, checked, and _batch.run_batch's result."""
        # No added token in any text: each is one segment, prefixed by the
        # rule the core is handed, which checks it is a str.  Else the texts
        # with one are planned (_plan_unit leaves the others whole).
        prefix_rule = self._all_one_segment(texts, special)
        plain = prefix_rule >= 0
        try:
            if not plain:
                texts = [check_text(t) for t in texts]
            results, owners = _batch.run_batch(
                self._core, self._plan_unit, plain, texts, include, allowed, thread_count(num_threads), flat,
                sample_alpha, sample_seed, prefix_rule if plain else int(self._add_prefix_space),
            )
        except (TypeError, ValueError) as e:
            raise _batch.text_error(texts, e) from None
        return texts, results, owners

    def encode_flat(
        self, texts: List[str], *, special: SpecialPolicy = "raise", num_threads: Optional[int] = None,
        bos_id: int = -1, eos_id: int = -1,
    ) -> Tuple[bytearray, bytearray]:
        """``encode_batch(texts, return_numpy=True)`` without NumPy, as
        bytearrays of native uint32 and int64 (what the command line and
        ``spmbpe.ray`` write arrays from), with `bos_id` before and `eos_id`
        after each text (-1: none)."""
        include, allowed = special_policy(special)
        texts, results, owners = self._run_batch(
            _batch_list(texts), special, include, allowed, num_threads, True, 0.0, 0
        )
        return cast(Tuple[bytearray, bytearray], join_flat(results, owners, len(texts), bos_id, eos_id))

    def encode_line_block(
        self, block: Union[bytes, bytearray], *, special: SpecialPolicy = "raise", num_threads: Optional[int] = None
    ) -> Optional[Tuple[bytearray, bytearray]]:
        """``encode_flat`` over the lines of `block` (UTF-8 bytes, each line
        ending with "\\n" and a "\\r" before it left out, as the command line
        reads text files) without a str per line.  None when the block must
        take encode_batch's way: an added token of a kind `special` splits
        out is in it, the planner decides every text, or a line failed
        (encode_batch then raises its error).  ValueError when the block is
        not UTF-8."""
        prefix = self._line_block_prefix(block, special)
        if prefix < 0:
            return None
        return _batch.encode_line_block(self._core, block, thread_count(num_threads), prefix)


def _batch_list(texts: Iterable[str]) -> List[Any]:
    """A batch's texts as a list; TypeError for one text (a str is
    iterable, but its characters are not a batch)."""
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError(
            f"encode_batch takes a list of texts, not a {type(texts).__name__}; for one text use encode"
        )
    return texts if type(texts) is list else list(texts)
