"""The command line's progress line and final summary on standard error, as
Megatron-LM's preprocessing tools log them (``Processed N documents (D
docs/s, M MB/s)``); docs/cli.md, ``--progress``, says what they show.

For gzip input the MB are those of the decompressed text, and the share of
the total is that of the compressed files read (their sizes on disk are the
total).  A resumed run counts the kept shards and skipped input from the
start, and its rates measure this run's own work."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

__all__ = ["Progress", "isatty"]


class Progress:
    """Updated after every batch. When `enabled`, prints a line on standard
    error at most every 0.2 s on a terminal (redrawn in place), every second
    elsewhere (a line of its own), and a final one; when only `summary`,
    prints the final line alone."""

    def __init__(self, enabled: bool, total_bytes: Optional[int] = None, summary: bool = False) -> None:
        self.enabled = enabled
        self.summary = summary or enabled
        self.stream: TextIO = sys.stderr
        self.total_bytes = total_bytes
        self.tty = enabled and isatty(self.stream)
        self.interval = 0.2 if self.tty else 1.0
        self.start = time.monotonic()
        self.last = 0.0
        self.documents = 0
        self.bytes = 0  # of (decompressed) input
        self.file_bytes = 0  # of the input files (compressed ones: compressed)
        self.compressed = False  # whether any input was gzip
        self.tokens = 0
        # What a resumed run had done before (not in its rates).
        self.base_documents = 0
        self.base_bytes = 0
        self.base_tokens = 0
        self.width = 0

    def resume_from(self, documents: int, tokens: int) -> None:
        """Counts start at the `documents` and `tokens` of the kept shards;
        the input skipped meanwhile is counted as it is passed over."""
        self.documents += documents
        self.tokens += tokens
        self.base_documents += documents
        self.base_tokens += tokens

    def skipped(self, nbytes: int) -> None:
        """Input passed over (resume): in the totals, not in the rates."""
        self.bytes += nbytes
        self.base_bytes += nbytes

    def update(self, documents: int, nbytes: int, tokens: int, file_bytes: int, compressed: bool) -> None:
        """`nbytes` of input read, `file_bytes` of the input file (compressed
        bytes when `compressed`)."""
        self.documents += documents
        self.bytes += nbytes
        self.file_bytes += file_bytes
        self.compressed = self.compressed or compressed
        self.tokens += tokens
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._draw(now, final=False)

    def finish(self) -> None:
        if self.summary:
            self._draw(time.monotonic(), final=True)

    def line(self, now: float, final: bool = False) -> str:
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
        docs_rate = (self.documents - self.base_documents) / elapsed
        mb_rate = (self.bytes - self.base_bytes) / 1e6 / elapsed
        tokens_rate = (self.tokens - self.base_tokens) / elapsed
        head = "spmbpe: done: " if final else "spmbpe: "
        return (
            f"{head}{self.documents:,} documents, {size}, {self.tokens:,} tokens in {_clock(elapsed)} "
            f"({docs_rate:,.0f} documents/s, {mb_rate:,.1f} MB/s, {tokens_rate:,.0f} tokens/s)"
        )

    def _draw(self, now: float, final: bool) -> None:
        text = self.line(now, final)
        try:
            if self.tty:
                pad = " " * max(0, self.width - len(text))
                self.width = len(text)
                self.stream.write("\r" + text + pad + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = self.summary = False


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
