"""encode_batch's scheduling: the batch cut into groups of work, the groups
run on a shared thread pool (or one BatchJob), the results joined.  The
tokenizer checks the call's arguments and hands over its core and its
planner's ``plan``; nothing here knows which reference is planned."""

from __future__ import annotations

from array import array
from contextlib import contextmanager
from itertools import accumulate
from typing import Any, Callable, FrozenSet, Iterator, List, Optional, Tuple, Union, cast

from ._core import BatchJob, Plan, SpmCore, batch_shape, batch_slices, join_flat
from ._gc import gc_paused
from ._policy import check_surrogates, check_text, text_seed
from ._threads import worker_pool
from .errors import DisallowedSpecialError

__all__ = ["run_batch", "encode_line_block", "join_lists", "join_numpy", "numpy_dtype"]

#: A planner's plan(text, include_special, allowed).
PlanFunction = Callable[[str, bool, Optional[FrozenSet[str]]], Plan]

# The least characters worth a thread's call (smaller batches are not split
# further; the GIL handoff costs more).
_MIN_SHARE = 1 << 14
# The most texts in one group of _batch_groups.
_MAX_GROUP = 2048
# What _run_job returns when the job refused its batch (BatchJob.start).
_REFUSED = object()

# BatchJob units per thread: enough that a thread starting late or meeting
# slower text still ends close to the others.
_UNITS_PER_THREAD = 16


def run_batch(
    core: SpmCore,
    plan: PlanFunction,
    plain: bool,
    texts: List[str],
    include: bool,
    allowed: Optional[FrozenSet[str]],
    threads: int,
    flat: bool,
    sample_alpha: float,
    sample_seed: int,
    prefix: int,
) -> Tuple[List[Any], Optional[List[List[int]]]]:
    """The core's results for the batch's groups, and for each group the
    index of the text each unit belongs to (None: every unit a whole text,
    in order).  `plain`: the texts need no planning (one segment each)."""
    # Sampled texts are never cut (sentencepiece draws over whole texts).
    cut = not sample_alpha
    # The common batch, nothing to plan, is one job over the texts as they
    # are stored (on one thread too), unless it is small or a long text must
    # be cut for the threads.  Past _MAX_GROUP texts the job itself reads
    # whether one must be cut, and refuses the batch if so.
    one_job = False
    job_reads_shape = plain and not sample_alpha and len(texts) > _MAX_GROUP
    if plain and not job_reads_shape:
        share, longest, several = batch_shape(texts, threads * 4, _MIN_SHARE, _MAX_GROUP)
        one_job = several and not _cuts_long_texts(core, cut and threads > 1, share, longest)
    groups: List[List[Any]] = []
    owners: Optional[List[List[int]]] = None
    if not one_job and not job_reads_shape:
        groups, owners = _batch_groups(core, plan, texts, include, allowed, threads, cut)
    # (Sampling seeds each text by its index in the batch.)
    starts = list(accumulate((len(g) for g in groups), initial=0)) if sample_alpha else []

    def encode_group(k: int) -> Any:
        # Planning holds the GIL; merging (most of the work) does not,
        # so one thread plans while the others merge.
        units = groups[k]
        if plain:
            plans = units  # (the core takes a text for the plan of one text part)
        else:
            plans = [plan(unit, include, allowed) if type(unit) is str else unit for unit in units]
        if sample_alpha:
            indices = owners[k] if owners is not None else range(starts[k], starts[k + 1])
            seeds = array("Q", [text_seed(sample_seed, index) for index in indices])
            return core.encode_parts_batch(plans, flat, sample_alpha, seeds, prefix)
        return core.encode_parts_batch(plans, flat, 0.0, None, prefix)

    with _surrogates_named(texts), gc_paused(not flat):
        if job_reads_shape:
            cut_parts = threads * 4 if cut and threads > 1 and core.chunked else 0
            result = _encode_job(core, texts, threads, flat, 0.0, None, prefix, cut_parts)
            if result is not _REFUSED:
                return [result], None
            # (A long text to cut for the threads, or a text that is not a
            # str: the groups' way, which cuts the one or names the other.)
            groups, owners = _batch_groups(core, plan, texts, include, allowed, threads, cut)
        if not one_job and (threads <= 1 or len(groups) < 2):
            results = [encode_group(k) for k in range(len(groups))]
        elif plain:
            # Nothing to plan under the GIL: all units in one job that the
            # threads share (BatchJob).
            units = texts if owners is None else [unit for group in groups for unit in group]
            indices = range(len(texts)) if owners is None else [i for owner in owners for i in owner]
            seeds = array("Q", [text_seed(sample_seed, i) for i in indices]) if sample_alpha else None
            results = [_encode_job(core, units, threads, flat, sample_alpha, seeds, prefix)]
            owners = None if owners is None else [list(indices)]
        else:
            with worker_pool(min(threads, len(groups))) as pool:
                results = list(pool.map(encode_group, range(len(groups))))
    return results, owners


@contextmanager
def _surrogates_named(texts: List[Any]) -> Iterator[None]:
    """A text that is no UTF-8 (a lone surrogate) fails in the core as a
    UnicodeEncodeError: raised instead as check_surrogates' ValueError."""
    try:
        yield
    except UnicodeEncodeError:
        for t in texts:
            check_surrogates(t)
        raise


def join_lists(results: List[Any], owners: Optional[List[List[int]]]) -> List[List[int]]:
    """One list of ids per text from the groups' results."""
    out: List[List[int]] = []
    if owners is None:
        # Every unit is a whole text, in order.
        for result in results:
            out.extend(result)
        return out
    last = -1
    for indices, result in zip(owners, results):
        for index, ids in zip(indices, result):
            if index == last:
                out[-1].extend(ids)  # the next piece of a text cut in pieces
            else:
                out.append(ids)
                last = index
    return out


def _encode_job(
    core: SpmCore, units: List[Any], threads: int, flat: bool, alpha: float,
    seeds: Optional["array[int]"], prefix: int, cut_parts: int = 0,
) -> Any:
    """encode_parts_batch(units, ...) merged by `threads` threads, this one
    included, sharing one BatchJob.  With `cut_parts`, _REFUSED when the job
    refuses the batch (BatchJob.start)."""
    result = _run_job(core, threads, flat, lambda job: job.start(
        units, threads * _UNITS_PER_THREAD, alpha, seeds, prefix, cut_parts, _MIN_SHARE))
    if result is _REFUSED:
        return result
    if result is None:
        # A text failed: the one-thread call raises the error it would.
        result = core.encode_parts_batch(units, flat, alpha, seeds, prefix)
    return result


def encode_line_block(
    core: SpmCore, block: Union[bytes, bytearray], threads: int, prefix: int
) -> Optional[Tuple[bytearray, bytearray]]:
    """The lines of `block` (BatchJob.start_lines), each one segment with
    the dummy prefix by the PREFIX_* rule `prefix`, merged by `threads`
    threads: as SpmTokenizer.encode_line_block returns them."""
    result = _run_job(core, threads, True, lambda job: job.start_lines(block, threads * _UNITS_PER_THREAD, prefix))
    return cast(Optional[Tuple[bytearray, bytearray]], result)


def _run_job(core: SpmCore, threads: int, flat: bool, start: Callable[[BatchJob], Optional[bool]]) -> Any:
    """One BatchJob merged by `threads` threads, this one included: `start`
    gives it its texts while the helpers wake.  BatchJob.lead's result, or
    _REFUSED when the job refused the batch."""
    job = BatchJob(core)
    try:
        if threads <= 1:
            if start(job) is False:
                return _REFUSED
            return job.lead(flat)
        with worker_pool(threads - 1) as pool:
            for _ in range(threads - 1):
                pool.submit(job.work)
            if start(job) is False:
                return _REFUSED
            return job.lead(flat)
    finally:
        job.close()


def _batch_groups(
    core: SpmCore, plan: PlanFunction, texts: List[str], include: bool,
    allowed: Optional[FrozenSet[str]], threads: int, cut: bool,
) -> Tuple[List[List[Any]], Optional[List[List[int]]]]:
    """The batch as groups of work of about an equal share of the
    characters, one thread's call to the core each, in text order, and the
    owners as run_batch returns them (None: consecutive slices of `texts`).
    With `cut`, on several threads, a text larger than two shares is planned
    here and cut at exact chunk boundaries (SpmCore.split_points), so that
    one large document keeps every thread busy."""
    if not texts:
        return [], None
    if threads <= 1:
        return [texts], None
    share, longest, stops = batch_slices(texts, threads * 4, _MIN_SHARE, _MAX_GROUP)
    if not _cuts_long_texts(core, cut, share, longest):
        # Consecutive slices, each filling its share (at most _MAX_GROUP texts).
        return [texts[a:b] for a, b in zip([0] + stops, stops)], None
    groups = []
    owners: List[List[int]] = []
    group: List[Any] = []
    owner: List[int] = []
    size = 0
    for index, text in enumerate(texts):
        if len(text) > 2 * share:
            units: List[Any] = _cut_plan(core, plan(check_text(text), include, allowed), share)
        else:
            units = [text]
        for unit in units:
            group.append(unit)
            owner.append(index)
            size += len(unit) if type(unit) is str else unit.size
            if size >= share or len(group) >= _MAX_GROUP:
                groups.append(group)
                owners.append(owner)
                group, owner, size = [], [], 0
    if group:
        groups.append(group)
        owners.append(owner)
    return groups, owners


def _cuts_long_texts(core: SpmCore, cut: bool, share: int, longest: int) -> bool:
    """Whether a batch's long texts (longer than two shares) are cut at
    exact chunk boundaries for the threads, as BatchJob.start decides too."""
    return cut and core.chunked and longest > 2 * share


def _cut_plan(core: SpmCore, plan: Plan, share: int) -> List[Plan]:
    """A plan cut into consecutive plans of about `share` characters whose
    ids, joined, are the ids of the whole: long segments are cut where no
    merge can cross (the first piece keeps the prefix and skip).  (Offsets
    are not kept: a batch has none.)"""
    out = [Plan()]
    size = 0
    for index, part in enumerate(plan.parts()):
        if not plan.is_text(index):
            out[-1].add_token(part[0])  # (token_id, start, end)
            size += 1
            continue
        text, prefix, skip = part[0], bool(part[1]), int(part[2])
        cuts = core.split_points(text, prefix, -(-len(text) // share)) if len(text) > share else []
        starts = [0] + cuts
        ends = cuts + [len(text)]
        for k, (a, b) in enumerate(zip(starts, ends)):
            if size >= share:
                out.append(Plan())
                size = 0
            if k == 0:
                out[-1].add_text(text[a:b], prefix, skip)
            else:
                out[-1].add_text(text[a:b], False)
            size += b - a
    return [piece for piece in out if len(piece)]


def numpy_dtype(dtype: object, vocab_size: int) -> Tuple[Any, Any]:
    """NumPy and the checked dtype of encode_batch(return_numpy=True)."""
    import numpy as np

    dtype = np.dtype(np.uint32 if dtype is None else dtype)  # type: ignore[call-overload]  # any object: np.dtype rejects a non-dtype
    allowed = [np.dtype(t) for t in (np.uint32, np.uint16, np.int32, np.int64, np.uint64)]
    if dtype not in allowed:
        raise ValueError(f"dtype must be one of numpy.uint32, uint16, int32, int64, uint64, not {dtype}")
    if vocab_size - 1 > np.iinfo(cast(Any, dtype)).max:
        raise ValueError(f"a vocabulary of {vocab_size} ids does not fit numpy.{dtype}")
    return np, dtype


def join_numpy(
    np: Any, dtype: Any, n_texts: int, owners: Optional[List[List[int]]],
    results: List[Tuple[bytearray, Any]], bos_id: Optional[int], eos_id: Optional[int],
) -> Any:
    """encode_batch's NumPy result from the groups' flat ids and offsets,
    with `bos_id`/`eos_id` (when not None) around each text; one job's
    result alone is not copied (the arrays share the core's buffers)."""
    data, offsets = join_flat(results, owners, n_texts, _or_none(bos_id), _or_none(eos_id))
    return np.frombuffer(data, dtype=np.uint32).astype(dtype, copy=False), np.frombuffer(offsets, dtype=np.int64)


def _or_none(token_id: Optional[int]) -> int:
    return -1 if token_id is None else token_id  # join_flat's "none"


def text_error(texts: List[Any], error: Exception) -> Exception:
    """The error of a batch call, naming the index of the text at fault:
    the first that is not a str or holds a lone surrogate (`error` itself
    when no text is at fault, or when it names one already)."""
    if isinstance(error, DisallowedSpecialError):
        # The first text that spells the token where the error says.
        for index, text in enumerate(texts):
            if isinstance(text, str) and text.startswith(error.token, error.offset):
                return DisallowedSpecialError(error.token, error.offset, index)
        return error
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            return TypeError(f"texts[{index}] must be str, not {type(text).__name__}")
        try:
            check_surrogates(text)
        except ValueError as bad:
            return ValueError(f"texts[{index}]: {bad}")
    return error
