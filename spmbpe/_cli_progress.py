"""The command line's progress line on standard error: documents, MB of
input read (of the total when known), tokens and tokens per second."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

__all__ = ["Progress"]


class Progress:
    """Updated after every batch; prints at most every `interval` seconds.
    On a terminal the line is redrawn in place, elsewhere (``--progress``
    into a file) each update is a line of its own."""

    def __init__(
        self,
        enabled: bool,
        total_bytes: Optional[int] = None,
        stream: Optional[TextIO] = None,
        interval: float = 0.2,
    ) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.total_bytes = total_bytes
        self.tty = enabled and _isatty(self.stream)
        self.interval = interval if self.tty else max(interval, 1.0)
        self.start = time.monotonic()
        self.last = 0.0
        self.documents = 0
        self.bytes = 0
        self.tokens = 0
        self.width = 0

    def update(self, documents: int, nbytes: int, tokens: int) -> None:
        self.documents += documents
        self.bytes += nbytes
        self.tokens += tokens
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._draw(now, final=False)

    def finish(self) -> None:
        if self.enabled:
            self._draw(time.monotonic(), final=True)

    def line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        mb = self.bytes / 1e6
        if self.total_bytes:
            size = f"{mb:,.1f}/{self.total_bytes / 1e6:,.1f} MB ({100 * self.bytes / self.total_bytes:.0f}%)"
        else:
            size = f"{mb:,.1f} MB"
        return (
            f"spmbpe: {self.documents:,} documents, {size}, {self.tokens:,} tokens, "
            f"{self.tokens / elapsed:,.0f} tokens/s, {mb / elapsed:,.1f} MB/s, {_clock(elapsed)}"
        )

    def _draw(self, now: float, final: bool) -> None:
        text = self.line(now)
        try:
            if self.tty:
                pad = " " * max(0, self.width - len(text))
                self.width = len(text)
                self.stream.write("\r" + text + pad + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
