"""SIGINT/SIGTERM for the command line and the array writers: the signal
becomes an exception (Interrupted) at a point where the writers can clean
up, never in the middle of the renames that complete an output."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

__all__ = ["Interrupted", "signals_held", "handling_signals"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived (`signum`); exit code 128 + signum.

    A BaseException, like KeyboardInterrupt: ``except Exception`` blocks on
    the way up do not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_held = 0  # depth of signals_held blocks
_pending: Optional[int] = None  # a signal that arrived inside one


def _on_signal(signum: int, frame: object) -> None:
    """Raises Interrupted now, or at the end of the current signals_held
    block. Later signals are ignored, so that the cleanup that follows is
    not cut short."""
    global _pending
    for s in _SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    if _held:
        _pending = signum
        return
    raise Interrupted(signum)


@contextmanager
def signals_held() -> Iterator[None]:
    """A block that SIGINT/SIGTERM do not cut short (the renames that
    complete an output are then all done or none): a signal that arrives
    meanwhile takes effect at its end."""
    global _held, _pending
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if not _held and _pending is not None:
            signum, _pending = _pending, None
            raise Interrupted(signum)


@contextmanager
def handling_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted inside the block (in the main
    thread; elsewhere the handlers stay as they are); the earlier handlers
    come back after it."""
    old: Dict[int, Any] = {}
    for s in _SIGNALS:
        try:
            old[s] = signal.signal(s, _on_signal)
        except (ValueError, OSError):  # not the main thread
            pass
    try:
        yield
    finally:
        for signum, handler in old.items():
            try:
                signal.signal(signum, handler)
            except (ValueError, OSError, TypeError):
                pass
