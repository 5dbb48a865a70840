"""Writing the command line's outputs without ever leaving a half-written
file: every file is written under a temporary name in its own folder and
renamed (``os.replace``) once complete, with SIGINT/SIGTERM held off while
the names change.

Array outputs (``--format npy|bin``), for ``--output OUT.npy`` / ``OUT.bin``:

- ``OUT.npy``: every id of every document in input order, one flat ``.npy``
  array (``uint16`` when the vocabulary has at most 65,536 ids, else
  ``uint32``); ``OUT.docs.npy``: ``int64``, the start of each document in it
  plus the total (documents + 1 values).
- ``OUT.bin``: the same ids as raw little-endian integers (``uint16``, else
  ``int32``: Megatron has no ``uint32`` code), what nanoGPT reads with
  ``numpy.memmap(path, dtype=numpy.uint16)``; ``OUT.idx``: Megatron-LM's
  ``MMIDIDX`` index (see write_megatron_index).
- ``OUT.npy.meta.json`` / ``OUT.bin.meta.json``: spmbpe version, tokenizer
  fingerprint, settings, dtype, document and token counts, the shards and
  whether the run is complete. It is named after the output itself, so that
  ``OUT.npy`` and ``OUT.bin`` in one folder each keep their own.

With ``--shard-size N`` the arrays are cut at document boundaries into
shards of at most N tokens (a longer document is a shard of its own):
``OUT-00000.npy`` + ``OUT-00000.docs.npy``, ``OUT-00001.npy``, ... (or
``.bin`` + ``.idx``); the metadata file is rewritten after every shard, so
an interrupted run keeps its complete shards and ``--resume`` goes on from
there.

A new run under an output name replaces everything an earlier run wrote
under it (the files its metadata lists, and any file named as this module
names outputs: ``OUT.npy``, ``OUT-00007.docs.npy``, ...). The earlier files
are removed in the same signal-proof step that commits the new run's first
file, so the folder holds either the earlier run, whole, or the new one's
complete shards with the new metadata: never a mix that a loader globbing
``OUT-*.npy`` would read as one data set. A run that fails before its first
file is complete leaves the earlier output as it was.
"""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import sys
from contextlib import contextmanager
from typing import IO, Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ._cli_common import CliError

__all__ = [
    "Interrupted",
    "on_signal",
    "signals_held",
    "AtomicFile",
    "ArrayOutput",
    "output_paths",
    "write_megatron_index",
    "read_megatron_index",
    "read_npy_header",
    "NPY_HEADER_BYTES",
]

#: Bytes reserved for a streamed .npy header (magic, version, length, dict).
NPY_HEADER_BYTES = 128

# Megatron-LM's indexed dataset index, as megatron/core/datasets/
# indexed_dataset.py (_IndexWriter.__enter__/write, _IndexReader) writes and
# reads it; all integers little-endian:
#   9 bytes  b"MMIDIDX\x00\x00"
#   u64      version, 1
#   u8       dtype code (DType: uint8 1, int8 2, int16 3, int32 4, int64 5,
#            float64 6, float32 7, uint16 8)
#   u64      sequence count S
#   u64      document count D (the length of the document index: documents + 1)
#   i32[S]   tokens per sequence
#   i64[S]   byte offset of each sequence in the .bin file
#   i64[D]   document index: the first sequence of each document, then S
# One document is one sequence here, so the document index is 0, 1, ..., S.
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint16": 8}
_MEGATRON_HEADER = struct.Struct("<9sQBQQ")  # 34 bytes

_COPY = 1 << 20  # items per step when copying a spooled array


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived (`signum`); exit code 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_held = 0  # depth of signals_held blocks
_pending: Optional[int] = None  # a signal that arrived inside one


def on_signal(signum: int, frame: object) -> None:
    """SIGINT/SIGTERM handler: raises Interrupted, or once the current
    signals_held block is over. Later signals are ignored, so that the
    cleanup that follows is not cut short."""
    global _pending
    for s in (signal.SIGINT, signal.SIGTERM):
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
            raise CliError(f"cannot write {path}: {e.strerror}") from None
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


@contextmanager
def output_stream(path: Optional[str]) -> Iterator[IO[bytes]]:
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


def discard_all() -> None:
    """Removes every temporary file not yet committed (on any error or
    interruption)."""
    for f in list(_live):
        f.discard()


def write_json_atomically(path: str, obj: object) -> None:
    f = AtomicFile(path, "w")
    json.dump(obj, f.file, indent=1)
    f.file.write("\n")
    f.commit()


def output_paths(output: str, fmt: str, shard: Optional[int]) -> Tuple[str, str]:
    """(ids file, boundaries/index file) of `output` (shard number or None)."""
    stem = output_stem(output, fmt)
    base = stem if shard is None else f"{stem}-{shard:05d}"
    if fmt == "npy":
        return base + ".npy", base + ".docs.npy"
    return base + ".bin", base + ".idx"


def output_stem(output: str, fmt: str) -> str:
    ext = "." + fmt
    return output[: -len(ext)] if output.endswith(ext) else output


def meta_path(output: str, fmt: str) -> str:
    """The metadata file of an output: named after the output itself
    (``OUT.npy.meta.json``), so that each output in a folder has its own."""
    return output_stem(output, fmt) + f".{fmt}.meta.json"


def _shared_meta_path(output: str, fmt: str) -> str:
    # Earlier versions named the metadata after the stem alone, so that
    # OUT.npy and OUT.bin overwrote each other's; such a file describes the
    # run of the format it names.
    return output_stem(output, fmt) + ".meta.json"


def _output_name_pattern(stem: str, fmt: str) -> "re.Pattern[str]":
    """The names (in the output's folder) of every file a run writes under
    `stem`: ids and index, unsharded or of any shard, and the metadata."""
    ids, index = ("npy", "docs\\.npy") if fmt == "npy" else ("bin", "idx")
    name = re.escape(stem)
    return re.compile(
        rf"{name}(?:-[0-9]{{5,}})?\.(?:{ids}|{index})|{name}\.{fmt}\.meta\.json"
    )


def earlier_output_files(output: str, fmt: str, keep: Sequence[str] = ()) -> List[str]:
    """Paths of the files that earlier runs wrote under `output` (format
    `fmt`), but for the names in `keep`: what a new run must replace.
    Found by name, and from the earlier metadata's list of shards."""
    stem = output_stem(output, fmt)
    folder = os.path.dirname(os.path.abspath(stem))
    pattern = _output_name_pattern(os.path.basename(stem), fmt)
    try:
        names = {n for n in os.listdir(folder) if pattern.fullmatch(n)}
    except FileNotFoundError:
        return []
    legacy = _shared_meta_path(output, fmt)
    for path in (meta_path(output, fmt), legacy):
        try:
            with open(path, "r", encoding="utf-8") as f:
                old = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(old, dict) or old.get("format") != fmt:
            continue
        if path == legacy:
            names.add(os.path.basename(legacy))
        for shard in old.get("shards") or []:
            for key in ("ids", "index"):
                name = shard.get(key) if isinstance(shard, dict) else None
                if isinstance(name, str) and os.path.basename(name) == name and name:
                    if os.path.exists(os.path.join(folder, name)):
                        names.add(name)
    return [os.path.join(folder, n) for n in sorted(names - set(keep))]


def npy_header(descr: str, n: int) -> bytes:
    """A version 1.0 .npy header for a 1-d array of `n` items, padded to
    NPY_HEADER_BYTES so it can be written after the data."""
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
    room = NPY_HEADER_BYTES - 10
    if len(text) + 1 > room:  # pragma: no cover - needs 10^80 items
        raise ValueError("array too long for the reserved .npy header")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", room) + (text.ljust(room - 1) + "\n").encode("latin1")


def read_npy_header(f: IO[bytes]) -> Tuple[str, int, int]:
    """(descr, length, data offset) of a 1-d .npy file (any header size)."""
    import numpy as np

    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if len(shape) != 1:
        raise ValueError(f"a {len(shape)}-d array, not a flat array of ids")
    return dtype.str, shape[0], f.tell()


class _Shard:
    """One shard being written: ids, and the boundaries (npy) or the
    per-document lengths to index (bin) spooled beside them."""

    def __init__(self, output: str, fmt: str, number: Optional[int], np: Any, dtype: Any) -> None:
        self.np = np
        self.fmt = fmt
        self.dtype = dtype
        self.number = number
        self.ids_path, self.index_path = output_paths(output, fmt, number)
        self.ids = AtomicFile(self.ids_path)
        self.index = AtomicFile(self.index_path)
        self.tokens = 0
        self.documents = 0
        self.records = 0
        if fmt == "npy":
            self.ids.file.write(bytes(NPY_HEADER_BYTES))
            self.index.file.write(bytes(NPY_HEADER_BYTES))
            self.index.file.write(np.zeros(1, dtype="<i8").tobytes())
            self.lengths: Optional[AtomicFile] = None
        else:
            # Document lengths wait in a spool file until the index header
            # (which needs the counts first) can be written.
            self.lengths = AtomicFile(self.index_path + ".lengths")

    def add(self, ids: Any, offsets: Any, records: int) -> None:
        """Documents whose ids are `ids`, starting at `offsets` (n + 1)."""
        np = self.np
        n = len(offsets) - 1
        ids.astype(self.dtype, copy=False).tofile(self.ids.file)
        if self.fmt == "npy":
            (offsets[1:] - offsets[0] + self.tokens).astype("<i8", copy=False).tofile(self.index.file)
        else:
            lengths = np.diff(offsets)
            if n and int(lengths.max()) > 0x7FFFFFFF:
                raise CliError("a document of more than 2^31-1 tokens does not fit Megatron's index")
            lengths.astype("<i4").tofile(self.lengths.file)  # type: ignore[union-attr]
        self.tokens += int(offsets[-1] - offsets[0])
        self.documents += n
        self.records = records

    def finish(self) -> None:
        """Completes the files under their temporary names."""
        np = self.np
        if self.fmt == "npy":
            self.ids.file.seek(0)
            self.ids.file.write(npy_header(np.dtype(self.dtype).str, self.tokens))
            self.index.file.seek(0)
            self.index.file.write(npy_header("<i8", self.documents + 1))
        else:
            assert self.lengths is not None
            self.lengths.finish()
            write_megatron_index(
                self.index.file, self.lengths.tmp, self.documents, np.dtype(self.dtype).name, np
            )
            self.lengths.discard()
        self.ids.finish()
        self.index.finish()

    def commit(self) -> None:
        self.ids.commit()
        self.index.commit()

    def discard(self) -> None:
        for f in (self.ids, self.index, self.lengths):
            if f is not None:
                f.discard()

    def entry(self) -> Dict[str, Any]:
        return {
            "ids": os.path.basename(self.ids_path),
            "index": os.path.basename(self.index_path),
            "documents": self.documents,
            "tokens": self.tokens,
            "records": self.records,
        }


def write_megatron_index(out: IO[bytes], lengths_path: str, n: int, dtype_name: str, np: Any) -> None:
    """Megatron's .idx for `n` documents of one sequence each, whose int32
    lengths are in the file `lengths_path` (layout: see MEGATRON_MAGIC)."""
    itemsize = np.dtype(dtype_name).itemsize
    out.write(_MEGATRON_HEADER.pack(MEGATRON_MAGIC, 1, MEGATRON_DTYPE_CODES[dtype_name], n, n + 1))
    with open(lengths_path, "rb") as f:
        while True:
            chunk = f.read(4 * _COPY)
            if not chunk:
                break
            out.write(chunk)
    pointer = 0
    with open(lengths_path, "rb") as f:
        while True:
            lengths = np.fromfile(f, dtype="<i4", count=_COPY)
            if not len(lengths):
                break
            ends = np.cumsum(lengths, dtype=np.int64) * itemsize + pointer
            starts = np.concatenate(([pointer], ends[:-1])).astype("<i8")
            starts.tofile(out)
            pointer = int(ends[-1])
    for start in range(0, n + 1, _COPY):
        np.arange(start, min(n + 1, start + _COPY), dtype="<i8").tofile(out)


def read_megatron_index(path: str) -> Dict[str, Any]:
    """The parts of a Megatron .idx file: dtype name, sequence lengths,
    pointers and document index (NumPy arrays)."""
    import numpy as np

    with open(path, "rb") as f:
        head = f.read(_MEGATRON_HEADER.size)
        if len(head) < _MEGATRON_HEADER.size:
            raise ValueError("too short for a Megatron index")
        magic, version, code, s, d = _MEGATRON_HEADER.unpack(head)
        if magic != MEGATRON_MAGIC or version != 1:
            raise ValueError("not a Megatron MMIDIDX index (version 1)")
        names = {v: k for k, v in MEGATRON_DTYPE_CODES.items()}
        if code not in names:
            raise ValueError(f"unknown dtype code {code}")
        lengths = np.fromfile(f, dtype="<i4", count=s)
        pointers = np.fromfile(f, dtype="<i8", count=s)
        doc_idx = np.fromfile(f, dtype="<i8", count=d)
        if len(doc_idx) != d or f.read(1):
            raise ValueError("the index's length does not match its counts")
    return {"dtype": names[code], "lengths": lengths, "pointers": pointers, "document_index": doc_idx}


class ArrayOutput:
    """``--format npy|bin`` output: shards of whole documents, each
    committed when complete, and the metadata file rewritten after each.

    `meta` holds everything but the counts and shards; `resume` (the
    metadata of an earlier incomplete run) continues its shard list.
    Whatever else earlier runs left under the output name (`replaced`) is
    removed when the first shard is committed (see the module's text)."""

    def __init__(
        self,
        output: str,
        fmt: str,
        dtype: Any,
        shard_size: Optional[int],
        meta: Dict[str, Any],
        np: Any,
        resume: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.output = output
        self.fmt = fmt
        self.dtype = dtype
        self.limit = np.iinfo(dtype).max
        self.shard_size = shard_size
        self.np = np
        self.meta = dict(meta)
        self.shards: List[Dict[str, Any]] = list(resume["shards"]) if resume else []
        self.current: Optional[_Shard] = None
        self.meta_path = meta_path(output, fmt)
        kept = [os.path.basename(self.meta_path)] if resume else []
        for shard in self.shards:
            kept += [shard["ids"], shard["index"]]
        #: Files of earlier runs that this run replaces (removed with its
        #: first commit).
        self.replaced: List[str] = earlier_output_files(output, fmt, kept)
        # The metadata file itself is not removed: this run's own replaces it
        # (os.replace) right after, so a reader always finds one.
        self._stale = [p for p in self.replaced if os.path.abspath(p) != os.path.abspath(self.meta_path)]

    @property
    def documents(self) -> int:
        done: int = sum(s["documents"] for s in self.shards)
        return done + (self.current.documents if self.current else 0)

    @property
    def tokens(self) -> int:
        done: int = sum(s["tokens"] for s in self.shards)
        return done + (self.current.tokens if self.current else 0)

    def write(self, ids: Any, offsets: Any, doc_records: Sequence[int], records: int) -> None:
        """Documents of one batch: flat `ids`, `offsets` (n + 1 starts),
        and the input record count after each document."""
        np = self.np
        if len(ids) and int(ids.max()) > self.limit:
            raise CliError(f"token id {int(ids.max())} does not fit {np.dtype(self.dtype).name}")
        n = len(offsets) - 1
        i = 0
        while i < n:
            shard = self._shard()
            if self.shard_size is None:
                j = n
            else:
                room = self.shard_size - shard.tokens
                # Whole documents that fit; a first document longer than a
                # shard makes a shard of its own.
                j = int(np.searchsorted(offsets[i:], offsets[i] + room, side="right")) - 1 + i
                if j == i:
                    if shard.documents:
                        self._close()
                        continue
                    j = i + 1
            shard.add(ids[offsets[i] : offsets[j]], offsets[i : j + 1], doc_records[j - 1])
            i = j
            if self.shard_size is not None and shard.tokens >= self.shard_size:
                self._close()

    def _shard(self) -> _Shard:
        if self.current is None:
            number = None if self.shard_size is None else len(self.shards)
            self.current = _Shard(self.output, self.fmt, number, self.np, self.dtype)
        return self.current

    def _close(self, complete: bool = False) -> None:
        shard = self.current
        assert shard is not None
        shard.finish()
        with signals_held():
            self._remove_stale()
            shard.commit()
            self.shards.append(shard.entry())
            self.current = None
            self._write_meta(complete)

    def _write_meta(self, complete: bool) -> None:
        meta = dict(self.meta)
        meta.update(
            documents=sum(s["documents"] for s in self.shards),
            tokens=sum(s["tokens"] for s in self.shards),
            shards=self.shards,
            complete=complete,
        )
        write_json_atomically(self.meta_path, meta)

    def close(self, records: int) -> None:
        """Commits the last shard (an empty one when there was no document
        at all) and marks the metadata complete; `records`: the input
        records read in all."""
        if self.current is not None or not self.shards:
            self._shard().records = records
            self._close(complete=True)
        else:
            with signals_held():
                self._remove_stale()
                self._write_meta(True)

    def _remove_stale(self) -> None:
        """Removes the earlier runs' files (inside the signals_held block
        that commits this run's first file)."""
        while self._stale:
            try:
                os.unlink(self._stale[-1])
            except FileNotFoundError:
                pass
            except OSError as e:
                raise CliError(f"cannot remove {self._stale[-1]} of an earlier run: {e.strerror}") from None
            self._stale.pop()

    def discard(self) -> None:
        if self.current is not None:
            self.current.discard()
            self.current = None
