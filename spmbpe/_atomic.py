"""Files that appear complete or not at all: each is written under a
temporary name in its own folder and renamed (``os.replace``) into place
once complete, with SIGINT/SIGTERM held off while the names change.  A
missing folder is created (``-o data/train.bin``), and removed again, if
still empty, when the run fails."""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import IO, Any, Iterator, List, Optional

from ._signals import signals_held

__all__ = ["OutputError", "AtomicFile", "atomic_output", "discard_all", "make_folder", "write_json_atomically"]


class OutputError(Exception):
    """An output cannot be written as asked (a file that cannot be
    created, an id that does not fit the output's dtype, ...)."""


class AtomicFile:
    """A file written under a temporary name beside `path`; ``commit``
    renames it to `path`, ``discard`` removes it."""

    def __init__(self, path: str, mode: str = "wb") -> None:
        self.path = path
        make_folder(path)
        folder, name = os.path.split(os.path.abspath(path))
        self.tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        try:
            self.file: IO[Any] = open(self.tmp, mode)
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
        self._handed = 0  # bytes handed to the disk so far (start_writeback)
        self._writeback: Optional["Future[None]"] = None
        _live.add(self)

    def start_writeback(self, every: int = 0) -> None:
        """Has a background thread write what the file holds so far to disk
        (fdatasync) once `every` more bytes are there, unless one is still at
        it, so that finish()'s fsync has only the last part left; its error is
        raised by the next call or by finish()."""
        pending = self._writeback
        if pending is not None:
            if not pending.done():
                return
            self._wait_writeback()
        size = self.file.tell()
        if size - self._handed < max(every, 1):
            return
        self.file.flush()
        self._handed = size
        self._writeback = _writeback_thread().submit(_sync_data, self.file.fileno())

    def _wait_writeback(self) -> None:
        pending, self._writeback = self._writeback, None
        if pending is not None:
            try:
                pending.result()
            except OSError as e:
                raise OutputError(f"cannot write {self.path}: {e.strerror or e}") from None

    def finish(self) -> None:
        """Flushes to disk; the file stays under its temporary name."""
        if not self.file.closed:
            self.file.flush()
            self._wait_writeback()
            try:
                os.fsync(self.file.fileno())
            except OSError as e:
                raise OutputError(f"cannot write {self.path}: {e.strerror or e}") from None
            self.file.close()

    def commit(self) -> None:
        self.finish()
        with signals_held():
            os.replace(self.tmp, self.path)
            _live.discard(self)

    def discard(self) -> None:
        try:
            self._wait_writeback()  # before the descriptor it syncs is closed
        except OutputError:
            pass
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
_made: List[str] = []  # folders created for outputs, outermost first
_writer: Optional[ThreadPoolExecutor] = None
_writer_lock = threading.Lock()


def make_folder(path: str) -> None:
    """Creates the folder that the file `path` goes into, with its parents;
    OutputError if it cannot be made (and none of them is left behind)."""
    folder = os.path.dirname(os.path.abspath(path))
    missing: List[str] = []
    while not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise OutputError(f"cannot write {path}: {folder} is not a folder")
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    made: List[str] = []
    try:
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if os.path.isdir(folder):
                    continue  # another process made it meanwhile
                raise
            made.append(folder)
    except OSError as e:
        _remove_empty(made)
        raise OutputError(f"cannot create the folder {folder} for {path}: {e.strerror or e}") from None
    _made.extend(made)


def _remove_empty(folders: List[str]) -> None:
    for folder in reversed(folders):
        try:
            os.rmdir(folder)  # only if empty: a folder that received files stays
        except OSError:
            pass


def _sync_data(fd: int) -> None:
    # fdatasync where the system has it (not macOS, not Windows), else fsync.
    sync = getattr(os, "fdatasync", None) or os.fsync
    sync(fd)


def _writeback_thread() -> ThreadPoolExecutor:
    """The one thread that writes outputs to disk in the background."""
    global _writer
    with _writer_lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(1, thread_name_prefix="spmbpe-writeback")
        return _writer


def _forget_writeback_thread() -> None:
    # A forked child has no copy of the thread: its first output makes one.
    global _writer, _writer_lock
    _writer, _writer_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_writeback_thread)


def discard_all() -> None:
    """Removes every temporary file not yet committed (on any error or
    interruption), and the folders made for outputs that stayed empty."""
    for f in list(_live):
        f.discard()
    _remove_empty(_made)
    _made.clear()


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
