"""The quick run and the long run of the suite.

``python -m pytest`` is the quick run: every kind of check (each reference,
each format, the command line, threads, errors) with a few hypothesis
examples per property and a sample of each golden set that a live reference
has to compute.  ``python -m pytest --long`` is the long run: it adds the
tests marked ``long`` (packaging in fresh environments, mypy on the whole
package, Ray, datasets) and gives each property test its full number of
examples and each golden check its whole set.

conftest.py sets ``LONG`` from ``--long`` before any test module is
imported, so module-level ``examples(...)`` and ``sample(...)`` calls (in
``@settings`` and ``parametrize``) see it.
"""

from __future__ import annotations

import itertools
from typing import Callable, Hashable, List, Optional, Sequence, TypeVar

T = TypeVar("T")

LONG = False


def examples(n: int, quick: Optional[int] = None) -> int:
    """Examples of a property (hypothesis's, or a fuzzer's inputs): `n` in the
    long run; in the quick one `quick`, by default a tenth of `n` (at least
    5)."""
    if LONG:
        return n
    return quick if quick is not None else max(5, n // 10)


def sample(items: Sequence[T], n: int, kind: Optional[Callable[[T], Hashable]] = None) -> List[T]:
    """All of `items` in the long run; in the quick one about `n` of them,
    spread evenly from the first to the last of each `kind` of item (at
    least one of every kind), in their order.  The choice depends only on
    the items, so every quick run checks the same ones."""
    items = list(items)
    if LONG or len(items) <= n:
        return items
    groups: dict = {}
    for index, item in enumerate(items):
        groups.setdefault(kind(item) if kind else None, []).append(index)
    chosen = set()
    for indices in groups.values():
        share = max(1, round(n * len(indices) / len(items)))
        if share >= len(indices):
            chosen.update(indices)
            continue
        step = (len(indices) - 1) / max(1, share - 1)
        chosen.update(indices[round(i * step)] for i in range(share))
    return [items[i] for i in sorted(chosen)]


def combinations(*dimensions: Sequence) -> List[tuple]:
    """Every combination of one value from each dimension in the long run;
    in the quick one as many as the longest dimension has values, in which
    every value of every dimension occurs (rotated, so that two dimensions
    of one length do not always pair the same values)."""
    if LONG:
        return list(itertools.product(*dimensions))
    rows = max(map(len, dimensions))
    return [tuple(dim[(i + d * (i // len(dim))) % len(dim)] for d, dim in enumerate(dimensions)) for i in range(rows)]
