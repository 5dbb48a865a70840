"""The command line's progress line on standard error: documents, MB of
input read (of the total when known), tokens and tokens per second.

For gzip input the MB are those of the decompressed text, and the share of
the total is that of the compressed files read (their sizes on disk are the
total): ``12.3 MB of text (1.9/4.0 MB of input files, 48%)``."""

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
        self.bytes = 0  # of (decompressed) text
        self.file_bytes = 0  # of the input files (compressed ones: compressed)
        self.compressed = False  # whether any input was gzip
        self.tokens = 0
        self.width = 0

    def update(
        self,
        documents: int,
        nbytes: int,
        tokens: int,
        file_bytes: Optional[int] = None,
        compressed: bool = False,
    ) -> None:
        """`nbytes` of text read, `file_bytes` of the input file (compressed
        bytes when `compressed`; default `nbytes`)."""
        self.documents += documents
        self.bytes += nbytes
        self.file_bytes += nbytes if file_bytes is None else file_bytes
        self.compressed = self.compressed or compressed
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
        if self.compressed:
            files = f"{self.file_bytes / 1e6:,.1f}"
            if self.total_bytes:
                share = min(100.0, 100 * self.file_bytes / self.total_bytes)
                files += f"/{self.total_bytes / 1e6:,.1f} MB of input files, {share:.0f}%"
            else:
                files += " MB of input"
            size = f"{mb:,.1f} MB of text ({files})"
        elif self.total_bytes:
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
