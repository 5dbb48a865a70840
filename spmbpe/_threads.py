"""How many threads a batch uses, and the worker pool that runs them.

The default is the number of CPUs this process may actually use: its CPU
affinity and its cgroup's CPU quota (a container's ``--cpus``), not the
machine's core count; docs/api.md says how to override it.

One pool serves every tokenizer of the process, with as many threads as the
largest count asked for up to the available CPUs (a thread beyond them would
only wait for a core); a forked child starts a pool of its own."""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator, Optional

__all__ = ["available_cpus", "default_threads", "get_num_threads", "set_num_threads", "thread_count", "worker_pool"]

_ENV = "SPMBPE_NUM_THREADS"
_setting: Optional[int] = None

_lock = threading.Lock()
_pool: Optional[ThreadPoolExecutor] = None
_pool_size = 0
_pool_pid = 0


def _cgroup_quota(root: str = "/sys/fs/cgroup") -> Optional[float]:
    """CPUs the cgroup quota allows (None: no quota, or none to be read)."""
    try:
        with open(os.path.join(root, "cpu.max"), encoding="ascii") as f:
            quota, period = f.read().split()[:2]
        if quota != "max" and int(period) > 0:
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us"), encoding="ascii") as f:
            quota_us = int(f.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us"), encoding="ascii") as f:
            period_us = int(f.read())
        if quota_us > 0 and period_us > 0:
            return quota_us / period_us
    except (OSError, ValueError):
        pass
    return None


def available_cpus() -> int:
    """CPUs this process may run on: its affinity, capped by a cgroup quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)


def _positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, not {value!r}")
    return value


def set_num_threads(n: Optional[int]) -> None:
    """The default thread count of ``encode_batch`` and the transformers-style
    call for this process (None: back to ``SPMBPE_NUM_THREADS`` or the
    available CPUs)."""
    global _setting
    _setting = None if n is None else _positive(n, "the number of threads")


def default_threads() -> int:
    """``set_num_threads``'s value, else ``SPMBPE_NUM_THREADS``, else the
    available CPUs."""
    if _setting is not None:
        return _setting
    env = os.environ.get(_ENV, "").strip()
    if env:
        try:
            return _positive(int(env), _ENV)
        except ValueError:
            raise ValueError(f"{_ENV} must be a positive integer, not {env!r}") from None
    return available_cpus()


get_num_threads = default_threads


def thread_count(num_threads: Optional[int]) -> int:
    """The threads of one call: `num_threads`, else the default."""
    if num_threads is None:
        return default_threads()
    return _positive(num_threads, "num_threads")


def _shared_pool(threads: int) -> ThreadPoolExecutor:
    global _pool, _pool_size, _pool_pid
    with _lock:
        if _pool_pid != os.getpid():  # a forked child: the parent's threads are not here
            _pool, _pool_size, _pool_pid = None, 0, os.getpid()
        if _pool is None or _pool_size < threads:
            # A smaller pool is dropped, not shut down: a call may still be
            # using it; its threads end once it is collected.
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="spmbpe")
            _pool_size = threads
        return _pool


@contextmanager
def worker_pool(threads: int) -> Iterator[ThreadPoolExecutor]:
    """A pool with room for `threads` workers: the shared pool up to the
    available CPUs, else one for this call only, shut down at the end."""
    if threads <= available_cpus():
        yield _shared_pool(threads)
        return
    pool = ThreadPoolExecutor(threads, thread_name_prefix="spmbpe-call")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True)
