"""The cyclic garbage collector held off while many objects are made at once."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """The cyclic GC held off (when `pause` and it is on) for the block:
    each container made counts toward the next collection, which visits
    every object made so far, so making many (a batch's lists, a
    tokenizer.json's merge rules) runs collection after collection; held
    off, they are looked at once.  (A process-wide switch, as timeit's:
    another thread's garbage waits until the block ends.)"""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
