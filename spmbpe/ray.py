"""Tokenizing a Ray Data dataset, on one machine or a cluster (``pip install
spmbpe[ray]``); docs/api.md, "Ray Data", says how (the tokenizer's pickle
shipped once per worker of an actor pool; ``write_arrays`` writing with the
command line's own writer, ``spmbpe/_arrays.py``) and has the example that
tests/test_ray.py runs.  A batch's ids are an Arrow list column built from
``encode_batch(..., return_numpy=True)``, with no Python int per token."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from .tokenizer import SpecialPolicy, SpmTokenizer

if TYPE_CHECKING:
    import ray.data

__all__ = ["tokenize", "write_arrays"]


@dataclass(eq=False, repr=False)
class _Encode:
    """The map_batches callable: one per worker, holding its tokenizer."""

    tok: SpmTokenizer
    column: str
    output_column: str
    special: SpecialPolicy
    add_special_tokens: bool
    num_threads: Optional[int]

    def __call__(self, batch: Any) -> Any:
        import numpy as np
        import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

        texts = batch.column(self.column).to_pylist()
        if texts:
            ids, offsets = self.tok.encode_batch(
                texts, special=self.special, add_special_tokens=self.add_special_tokens,
                num_threads=self.num_threads, return_numpy=True,
            )
        else:
            ids, offsets = np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
        column = pa.LargeListArray.from_arrays(pa.array(offsets, type=pa.int64()), pa.array(ids))
        return pa.table({self.output_column: column})


def tokenize(
    ds: "ray.data.Dataset",
    tokenizer: Union[SpmTokenizer, str, "os.PathLike[str]"],
    *,
    column: str = "text",
    output_column: str = "input_ids",
    special: SpecialPolicy = "none",
    add_special_tokens: bool = False,
    batch_size: int = 4096,
    concurrency: Union[int, Tuple[int, int], None] = None,
    num_threads: int = 1,
) -> "ray.data.Dataset":
    """A dataset of one column, `output_column`: the ids of each row's
    `column` of `ds` (an Arrow list of ``uint32``), in the order of `ds`.

    `tokenizer`: an SpmTokenizer, or what ``spmbpe.load`` takes (read here,
    on the driver: the workers need not see the file).  `special` and
    `add_special_tokens` as ``encode`` (the defaults are the command line's:
    text stays text, no BOS/EOS).  `concurrency`: workers in the actor pool
    (an int, or ``(min, max)`` to autoscale); each uses `num_threads`
    encoding threads and reserves as many CPUs.  The pool is fitted to the
    cluster's CPUs, leaving one to the reads, as docs/api.md describes (Ray
    is started with ``ray.init()`` first if it is not running).
    """
    tok = tokenizer if isinstance(tokenizer, SpmTokenizer) else _load(tokenizer)
    compute = _actor_pool(concurrency, num_threads)
    out = ds.map_batches(
        _Encode,
        fn_constructor_kwargs=dict(
            tok=tok, column=column, output_column=output_column, special=special,
            add_special_tokens=add_special_tokens, num_threads=num_threads,
        ),
        batch_format="pyarrow",
        batch_size=batch_size,
        num_cpus=num_threads,
        compute=compute,
    )
    # Rows come out in the order of `ds` (the arrays' order is the input's).
    out.context.execution_options.preserve_order = True
    return out


def write_arrays(
    ds: "ray.data.Dataset",
    tokenizer: Union[SpmTokenizer, str, "os.PathLike[str]"],
    output: Union[str, "os.PathLike[str]"],
    *,
    fmt: Optional[str] = None,
    column: str = "text",
    special: SpecialPolicy = "none",
    add_special_tokens: bool = False,
    shard_size: Optional[int] = None,
    batch_size: int = 4096,
    concurrency: Union[int, Tuple[int, int], None] = None,
    num_threads: int = 1,
) -> Dict[str, int]:
    """Tokenizes `column` of `ds` on the workers (:func:`tokenize`) and
    writes the ids, gathered on the driver in the order of `ds`, as ``spmbpe
    encode --format npy|bin|ds --output OUTPUT`` does (docs/cli.md), with
    its metadata file, replacing whatever an earlier run wrote under that
    name; with `shard_size`, shards of at most that many tokens at document
    boundaries.  `fmt` defaults to the extension of `output`.  Returns the
    document and token counts.
    """
    import numpy as np

    from ._arrays import ARRAY_FORMATS, ArrayOutput, array_dtype, array_metadata
    from ._atomic import OutputError

    tok = tokenizer if isinstance(tokenizer, SpmTokenizer) else _load(tokenizer)
    output = os.fspath(output)
    if fmt is None:
        fmt = os.path.splitext(output)[1].lstrip(".").lower()
    if fmt not in ARRAY_FORMATS:
        raise ValueError(
            f"fmt must be one of {', '.join(map(repr, ARRAY_FORMATS))} (or the extension of output), "
            f"not {fmt!r}"
        )
    dtype = array_dtype(tok.vocab_size, fmt)
    meta = array_metadata(
        tok, None if isinstance(tokenizer, SpmTokenizer) else os.fspath(tokenizer), fmt, dtype,
        {
            "special": special if isinstance(special, str) else sorted(special),
            "add_special_tokens": bool(add_special_tokens),
            "column": column,
        },
        [{"ray_dataset": True}],
        shard_size,
    )
    tokenized = tokenize(
        ds, tok, column=column, output_column="input_ids", special=special,
        add_special_tokens=add_special_tokens, batch_size=batch_size, concurrency=concurrency,
        num_threads=num_threads,
    )
    writer = ArrayOutput(output, fmt, dtype, shard_size, meta)
    documents = 0
    try:
        batch: Any
        for batch in tokenized.iter_batches(batch_format="pyarrow", batch_size=None):
            lists = batch.column("input_ids").combine_chunks()
            n = len(lists)
            if n == 0:
                continue
            offsets = lists.offsets.to_numpy().astype(np.int64)
            ids = lists.values.to_numpy()[offsets[0] : offsets[-1]]
            offsets -= offsets[0]
            low, high = (int(ids.min()), int(ids.max())) if len(ids) else (0, 0)
            if low < 0 or high > dtype.limit:
                raise OutputError(f"token id {high if high > dtype.limit else low} does not fit {dtype.name}")
            ids = np.ascontiguousarray(ids, dtype=np.uint32)  # what ArrayOutput.write takes
            writer.write(ids, offsets, range(documents + 1, documents + n + 1), documents + n)
            documents += n
        writer.close(documents)
    finally:
        writer.discard()
    return {"documents": writer.documents, "tokens": writer.tokens}


#: CPUs a pool leaves free: the read tasks (and those of a Ray writer after
#: ``tokenize``) run there.  A pool whose workers hold every CPU starves
#: them, and Ray Data waits for input forever, saying nothing
#: ("backpressured:tasks (ResourceBudget)" in its log).
_FREE_CPUS = 1


def _actor_pool(concurrency: Union[int, Tuple[int, int], None], num_threads: int) -> Any:
    """The ActorPoolStrategy of ``tokenize``'s workers, fitted to the
    cluster's CPUs so that `_FREE_CPUS` stay for the read tasks."""
    import ray
    from ray.data import ActorPoolStrategy

    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int, not {num_threads!r}")
    bounds: Tuple[Any, ...] = concurrency if isinstance(concurrency, tuple) else (concurrency, concurrency)
    if concurrency is not None and not (
        len(bounds) == 2 and all(type(b) is int for b in bounds) and 1 <= bounds[0] <= bounds[1]
    ):
        raise ValueError(f"concurrency must be a positive int or a pair (min, max) of them, not {concurrency!r}")
    if not ray.is_initialized():
        ray.init()  # as Ray Data does when a dataset first runs (RAY_ADDRESS, else a local instance)
    resources: Dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call, unused-ignore]
    cpus = int(resources.get("CPU", 0))
    fits = (cpus - _FREE_CPUS) // num_threads  # workers beside the read tasks
    if fits < 1:
        raise ValueError(
            f"num_threads={num_threads}: a worker reserves {_cpus(num_threads)}, and the cluster's "
            f"{_cpus(cpus)} leave {max(cpus - _FREE_CPUS, 0)} beside the {_cpus(_FREE_CPUS)} left for reading "
            f"(give fewer num_threads, or a cluster with more CPUs)"
        )
    if concurrency is None:
        return ActorPoolStrategy(min_size=1, max_size=fits)
    low, high = bounds
    if low > fits:
        # Ray starts a pool's minimum before any read: more workers than fit
        # would hold every CPU and wait forever.
        warnings.warn(
            f"spmbpe.ray: concurrency={concurrency!r} starts {low} workers of {_cpus(num_threads)} up front, but "
            f"the cluster's {_cpus(cpus)} run {fits} beside the {_cpus(_FREE_CPUS)} left for reading: "
            f"starting {fits}",
            RuntimeWarning,
            stacklevel=3,
        )
        low = fits
        high = fits if isinstance(concurrency, int) else high
    if low == high:
        return ActorPoolStrategy(size=low)
    # Ray Data grows an autoscaling pool only within the CPUs its other
    # operators leave it (its default pool is 1 to unbounded).
    return ActorPoolStrategy(min_size=low, max_size=high)


def _cpus(n: int) -> str:
    return f"{n} CPU" if n == 1 else f"{n} CPUs"


def _load(path: Union[str, "os.PathLike[str]"]) -> SpmTokenizer:
    from .loading import load

    return load(path)
