"""The cyclic garbage collector held off while many objects are made at once."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """The cyclic GC held off (when `pause` and it is on) for the block.
    Each container made counts toward the next collection, and a collection
    now and then visits every object made so far: a batch of 700,000 texts
    ran about 1,000 of them, a fifth of a two-thread batch's time, and
    parsing Mistral's tokenizer.json (59,000 merge rules, each a list) a
    fifth of its time.  Held off, what was made meanwhile is looked at once,
    by the next collection.  (A process-wide switch, as timeit's: another
    thread's garbage waits until the block ends.)"""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
