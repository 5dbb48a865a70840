"""Files that appear complete or not at all: each is written under a
temporary name in its own folder and renamed (``os.replace``) into place
once complete, with SIGINT/SIGTERM held off while the names change."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import IO, Any, Iterator, Optional

from ._signals import signals_held

__all__ = ["OutputError", "AtomicFile", "atomic_output", "discard_all", "write_json_atomically"]


class OutputError(Exception):
    """An output cannot be written as asked (a file that cannot be
    created, an id that does not fit the output's dtype, ...)."""


class AtomicFile:
    """A file written under a temporary name beside `path`; ``commit``
    renames it to `path`, ``discard`` removes it."""

    def __init__(self, path: str, mode: str = "wb") -> None:
        self.path = path
        folder, name = os.path.split(os.path.abspath(path))
        self.tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        try:
            self.file: IO[Any] = open(self.tmp, mode)
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
        _live.add(self)

    def finish(self) -> None:
        """Flushes to disk; the file stays under its temporary name."""
        if not self.file.closed:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()

    def commit(self) -> None:
        self.finish()
        with signals_held():
            os.replace(self.tmp, self.path)
            _live.discard(self)

    def discard(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass
        _live.discard(self)


_live: "set[AtomicFile]" = set()


def discard_all() -> None:
    """Removes every temporary file not yet committed (on any error or
    interruption)."""
    for f in list(_live):
        f.discard()


@contextmanager
def atomic_output(path: Optional[str]) -> Iterator[IO[bytes]]:
    """Where a text command writes: standard output, or `path` through an
    AtomicFile that is renamed into place only when the block completes
    (removed otherwise: no half-written output)."""
    if not path:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    sink = AtomicFile(path)
    try:
        yield sink.file
        sink.commit()
    finally:
        sink.discard()


def write_json_atomically(path: str, obj: object) -> None:
    f = AtomicFile(path, "w")
    json.dump(obj, f.file, indent=1)
    f.file.write("\n")
    f.commit()
