"""Token arrays on disk, in the layouts training code reads as is (npy,
Megatron's indexed dataset, datatrove's tokenized files; docs/cli.md says
what each file holds): written by ``spmbpe encode --format npy|bin|ds`` and
by ``spmbpe.ray.write_arrays`` alike, so both give the same bytes.

A new run under an output name replaces everything an earlier run wrote
under it, in the same signal-proof step that commits its first file: the
folder holds the earlier run, whole, or the new one's complete shards with
the new metadata, never a mix that a loader globbing ``OUT-*.npy`` would read
as one data set."""

from __future__ import annotations

import array
import ast
import bisect
import json
import mmap
import os
import re
import struct
import sys
from typing import IO, Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ._atomic import AtomicFile, OutputError, make_folder, write_json_atomically
from ._core import counting_le64, ends_le64, ids_le, lengths_le32, megatron_pointers
from ._signals import signals_held

__all__ = [
    "ARRAY_FORMATS", "ArrayOutput", "IdType", "as_id_buffers", "array_dtype", "array_metadata",
    "earlier_output_files", "meta_path", "output_paths", "output_stem", "read_megatron_index", "read_npy_header",
    "write_megatron_index", "IntFile", "LITTLE_ENDIAN", "MEGATRON_DTYPE_CODES", "NPY_HEADER_BYTES",
]


class _Layout(NamedTuple):
    ids: str  # suffix of the ids file
    docs: str  # suffix of the document index beside it


_LAYOUTS = {
    "npy": _Layout(".npy", ".docs.npy"),
    "bin": _Layout(".bin", ".idx"),
    "ds": _Layout(".ds", ".ds.index"),
}

#: The array formats, by name (the ``--format`` and the output's extension).
ARRAY_FORMATS = tuple(_LAYOUTS)

#: Bytes reserved for a streamed .npy header (magic, version, length, dict).
NPY_HEADER_BYTES = 128

# Megatron-LM's indexed dataset index, as megatron/core/datasets/
# indexed_dataset.py (_IndexWriter, _IndexReader) writes and reads it: the
# header, then i32[S] tokens per sequence, i64[S] byte offsets, i64[D] the
# document index (docs/cli.md, --format bin).  One document is one sequence
# here, so the document index is 0, 1, ..., S.
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint16": 8}
_MEGATRON_HEADER = struct.Struct("<9sQBQQ")  # 34 bytes

# Items per step when copying a spooled array: arrays of several MB made
# afresh each step cost the page faults of new memory.
_STEP = 1 << 16

# An output's ids go to disk in the background every this many bytes.
_WRITEBACK_BYTES = 8 << 20


class IdType(NamedTuple):
    """The integer type of an array output's ids, always little-endian."""

    name: str  # NumPy's name ("uint16"), in the metadata
    descr: str  # NumPy's little-endian descr ("<u2"), in a .npy header
    itemsize: int
    limit: int  # the largest id it holds


UINT16 = IdType("uint16", "<u2", 2, (1 << 16) - 1)
UINT32 = IdType("uint32", "<u4", 4, (1 << 32) - 1)
INT32 = IdType("int32", "<i4", 4, (1 << 31) - 1)


def array_dtype(vocab_size: int, fmt: str) -> IdType:
    """The ids' type: what the format's own writer picks for `vocab_size`."""
    if fmt == "bin":
        # megatron-core's DType.optimal_dtype: uint16 below 65,500 ids, else
        # int32 (its index has no uint32 code), what preprocess_data.py uses.
        if vocab_size < 65500:
            return UINT16
        if vocab_size > 1 << 31:
            raise OutputError(f"a vocabulary of {vocab_size} ids does not fit Megatron's int32")
        return INT32
    if fmt not in _LAYOUTS:
        raise ValueError(f"unknown array format {fmt!r} (known: {', '.join(ARRAY_FORMATS)})")
    # npy, and datatrove's token_size: 2 bytes while the ids fit uint16.
    return UINT16 if vocab_size <= 1 << 16 else UINT32


def as_id_buffers(data: Any, offsets: Any) -> Tuple[memoryview, memoryview]:
    """The core's (ids, offsets) bytearrays (native uint32 and int64) as
    the memoryviews ArrayOutput.write takes."""
    return memoryview(data).cast("I"), memoryview(offsets).cast("q")


def array_metadata(
    tok: Any, model: Optional[str], fmt: str, dtype: IdType, settings: Dict[str, Any],
    inputs: List[Dict[str, Any]], shard_size: Optional[int],
) -> Dict[str, Any]:
    """An array output's metadata, but for the counts and shards."""
    import spmbpe

    return {
        "spmbpe_version": spmbpe.__version__,
        "tokenizer_fingerprint": tok.fingerprint,
        "model": model,
        "vocab_size": tok.vocab_size,
        "bos_id": tok.bos_id,
        "eos_id": tok.eos_id,
        "format": fmt,
        "dtype": dtype.name,
        "settings": settings,
        "inputs": inputs,
        "shard_size": shard_size,
    }


def output_stem(output: str, fmt: str) -> str:
    ext = _LAYOUTS[fmt].ids
    return output[: -len(ext)] if output.endswith(ext) else output


def output_paths(output: str, fmt: str, shard: Optional[int]) -> Tuple[str, str]:
    """(ids file, document index file) of `output` (shard number or None)."""
    stem = output_stem(output, fmt)
    base = stem if shard is None else f"{stem}-{shard:05d}"
    layout = _LAYOUTS[fmt]
    return base + layout.ids, base + layout.docs


def meta_path(output: str, fmt: str) -> str:
    """The metadata file of an output, ``OUT.npy.meta.json``: named after the
    output itself, so that each output in a folder has its own."""
    return output_stem(output, fmt) + f"{_LAYOUTS[fmt].ids}.meta.json"


def _output_name_pattern(stem: str, fmt: str) -> "re.Pattern[str]":
    """The names of every file a run writes under `stem`: ids and index,
    unsharded or of any shard, and the metadata."""
    layout = _LAYOUTS[fmt]
    ids, index = re.escape(layout.ids), re.escape(layout.docs)
    name = re.escape(stem)
    return re.compile(rf"{name}(?:-[0-9]{{5,}})?(?:{ids}|{index})|{name}{ids}\.meta\.json")


def earlier_output_files(output: str, fmt: str, keep: Sequence[str] = ()) -> List[str]:
    """Paths of the files that earlier runs wrote under `output`, but for
    `keep`: found by name, and in the earlier metadata's list of shards."""
    stem = output_stem(output, fmt)
    folder = os.path.dirname(os.path.abspath(stem))
    pattern = _output_name_pattern(os.path.basename(stem), fmt)
    try:
        names = {n for n in os.listdir(folder) if pattern.fullmatch(n)}
    except FileNotFoundError:
        return []
    # Earlier versions named the metadata after the stem alone (OUT.npy and
    # OUT.bin overwrote each other's); it describes the format it names.
    legacy = stem + ".meta.json"
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
    """(descr, length, data offset) of a 1-d .npy file of integers (any
    header version), read without NumPy as NumPy's format.py documents it."""
    if f.read(6) != b"\x93NUMPY":
        raise ValueError("not a .npy file")
    version = f.read(2)
    if len(version) < 2 or version[0] not in (1, 2, 3):
        raise ValueError(f"unknown .npy version {tuple(version)}")
    size_format = "<H" if version[0] == 1 else "<I"
    size = f.read(struct.calcsize(size_format))
    if len(size) < struct.calcsize(size_format):
        raise ValueError("truncated .npy header")
    raw = f.read(struct.unpack(size_format, size)[0])
    try:
        header = ast.literal_eval(raw.decode("utf-8" if version[0] == 3 else "latin1"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        header = None
    if not isinstance(header, dict) or not {"descr", "fortran_order", "shape"} <= set(header):
        raise ValueError("its .npy header is not the dict of descr, fortran_order and shape")
    shape, descr = header["shape"], header["descr"]
    if not isinstance(shape, tuple) or len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 0:
        raise ValueError(f"an array of shape {shape!r}, not a flat array of ids")
    if not isinstance(descr, str) or _INT_DESCR.fullmatch(descr) is None:
        raise ValueError(f"an array of {descr!r}, not of integers")
    return descr, shape[0], f.tell()


#: A NumPy descr of an integer type: byte order, kind, size.
_INT_DESCR = re.compile(r"([<>|=]?)([iu])([1248])")

#: The little-endian descr of each integer type name (the metadata's dtype,
#: Megatron's dtype codes).
LITTLE_ENDIAN = {
    "uint8": "|u1", "int8": "|i1", "uint16": "<u2", "int16": "<i2",
    "uint32": "<u4", "int32": "<i4", "uint64": "<u8", "int64": "<i8",
}


class IntFile:
    """The integers a file holds from `offset` on, `count` of them (default:
    to its end) in the NumPy `descr` given, read through a memory map
    without NumPy: in place in the machine's byte order, else copied and
    swapped a slice at a time.  ``ints(a, b)``: the items a to b."""

    def __init__(self, path: str, descr: str, offset: int = 0, count: Optional[int] = None) -> None:
        parts = _INT_DESCR.fullmatch(descr)
        if parts is None:
            raise ValueError(f"not an integer type: {descr!r}")
        order, kind, size = parts.group(1), parts.group(2), int(parts.group(3))
        self.itemsize = size
        self._code = next(c for c in ("bhilq" if kind == "i" else "BHILQ") if array.array(c).itemsize == size)
        little = {"<": True, ">": False}.get(order, sys.byteorder == "little")
        self._swap = size > 1 and little != (sys.byteorder == "little")
        room = os.path.getsize(path) - offset
        n = max(room, 0) // size if count is None else count
        if n * size > room:
            raise ValueError(f"it holds {max(room, 0) // size} items of {size} bytes, not the {n} it should")
        self._bytes = memoryview(b"")
        if n:
            with open(path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._bytes = memoryview(self._map)[offset : offset + n * size]
        self._items: Optional[memoryview] = None
        if not self._swap:  # (a typecode of "bhilqBHILQ", which mypy cannot see)
            self._items = self._bytes.cast(self._code)  # type: ignore[call-overload, unused-ignore]
        self.length = n

    def __len__(self) -> int:
        return self.length

    def ints(self, start: int = 0, end: Optional[int] = None) -> List[int]:
        end = self.length if end is None else end
        if self._items is not None:
            got: List[int] = self._items[start:end].tolist()
            return got
        items = array.array(self._code)
        items.frombytes(self._bytes[start * self.itemsize : end * self.itemsize])
        items.byteswap()
        return items.tolist()


def write_megatron_index(out: IO[bytes], lengths_path: str, n: int, dtype: IdType) -> None:
    """Megatron's .idx for `n` documents of one sequence each, whose int32
    lengths are in the file `lengths_path` (layout: see MEGATRON_MAGIC)."""
    out.write(_MEGATRON_HEADER.pack(MEGATRON_MAGIC, 1, MEGATRON_DTYPE_CODES[dtype.name], n, n + 1))
    step = bytearray(4 * _STEP)
    with open(lengths_path, "rb") as f:
        while True:  # the lengths as they are
            got = f.readinto(step)
            if not got:
                break
            out.write(memoryview(step)[:got])
        f.seek(0)
        pointer = 0
        while True:  # each sequence's byte offset in the .bin
            got = f.readinto(step)
            if not got:
                break
            pointers, pointer = megatron_pointers(memoryview(step)[:got], dtype.itemsize, pointer)
            out.write(pointers)
    for start in range(0, n + 1, _STEP):  # the document index: 0, 1, ..., n
        out.write(counting_le64(start, min(_STEP, n + 1 - start)))


def read_megatron_index(path: str) -> Dict[str, Any]:
    """A Megatron .idx file's dtype name, and its sequence lengths, pointers
    and document index as lists of ints (read without NumPy)."""
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
    if os.path.getsize(path) != _MEGATRON_HEADER.size + 12 * s + 8 * d:
        raise ValueError("the index's length does not match its counts")
    at = _MEGATRON_HEADER.size
    return {
        "dtype": names[code],
        "lengths": IntFile(path, "<i4", at, s).ints(),
        "pointers": IntFile(path, "<i8", at + 4 * s, s).ints(),
        "document_index": IntFile(path, "<i8", at + 12 * s, d).ints(),
    }


class _Shard:
    """One shard being written: the ids, and the document index beside
    them (Megatron's per-document lengths are spooled until the counts that
    its header needs are known)."""

    def __init__(self, output: str, fmt: str, number: Optional[int], dtype: IdType) -> None:
        self.fmt = fmt
        self.dtype = dtype
        self.number = number
        self.ids_path, self.index_path = output_paths(output, fmt, number)
        self.ids = AtomicFile(self.ids_path)
        self.index = AtomicFile(self.index_path)
        self.tokens = 0
        self.documents = 0
        self.records = 0
        self.lengths: Optional[AtomicFile] = None
        if fmt == "npy":
            self.ids.file.write(bytes(NPY_HEADER_BYTES))
            self.index.file.write(bytes(NPY_HEADER_BYTES))
            self.index.file.write(bytes(8))  # the first document's start, 0
        elif fmt == "bin":
            self.lengths = AtomicFile(self.index_path + ".lengths")

    def add(self, ids: Any, offsets: Any, records: int) -> None:
        """Documents as ArrayOutput.write takes them."""
        try:
            self.ids.file.write(ids_le(ids, self.dtype.itemsize, self.dtype.limit))
        except OverflowError as e:
            raise OutputError(f"token id {e} does not fit {self.dtype.name}") from None
        self.ids.start_writeback(_WRITEBACK_BYTES)
        if self.fmt == "bin":
            assert self.lengths is not None
            try:
                self.lengths.file.write(lengths_le32(offsets))
            except OverflowError:
                raise OutputError("a document of more than 2^31-1 tokens does not fit Megatron's index") from None
        else:
            # npy: the start of each next document; datatrove: each
            # document's end (the same numbers, int64 and uint64).
            self.index.file.write(ends_le64(offsets, self.tokens))
        self.tokens += int(offsets[-1]) - int(offsets[0])
        self.documents += len(offsets) - 1
        self.records = records

    def finish(self) -> None:
        """Completes the files under their temporary names."""
        if self.fmt == "npy":
            self.ids.file.seek(0)
            self.ids.file.write(npy_header(self.dtype.descr, self.tokens))
            self.index.file.seek(0)
            self.index.file.write(npy_header("<i8", self.documents + 1))
        elif self.fmt == "bin":
            assert self.lengths is not None
            self.ids.start_writeback()  # the ids' last part goes to disk while the index is made
            # (A scratch file read back at once and removed: flushed, not
            # synced to disk.)
            self.lengths.file.flush()
            write_megatron_index(self.index.file, self.lengths.tmp, self.documents, self.dtype)
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


class ArrayOutput:
    """An array output: shards of whole documents, each committed when
    complete, and the metadata file rewritten after each.  `meta` holds all
    but the counts and shards (array_metadata); `resume` (the metadata of an
    earlier incomplete run) continues its shard list."""

    def __init__(
        self,
        output: str,
        fmt: str,
        dtype: IdType,
        shard_size: Optional[int],
        meta: Dict[str, Any],
        resume: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.output = output
        self.fmt = fmt
        self.dtype = dtype
        self.shard_size = shard_size
        self.meta = dict(meta)
        self.shards: List[Dict[str, Any]] = list(resume["shards"]) if resume else []
        self.current: Optional[_Shard] = None
        self.meta_path = meta_path(output, fmt)
        make_folder(output)  # now: a path that cannot be made fails before any encoding
        kept = [os.path.basename(self.meta_path)] if resume else []
        for shard in self.shards:
            kept += [shard["ids"], shard["index"]]
        #: Files of earlier runs that this run replaces (removed with its first commit).
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

    @property
    def committed_documents(self) -> int:
        """Documents in the shards committed so far."""
        return sum(int(s["documents"]) for s in self.shards)

    def write(self, ids: Any, offsets: Any, doc_records: Sequence[int], records: int) -> None:
        """Documents of one batch: flat `ids` (native uint32), `offsets` (n +
        1 starts, native int64), as encode_batch(return_numpy=True) gives them
        or as_id_buffers views them, and the input record count after each."""
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
                j = bisect.bisect_right(offsets, offsets[i] + room, i) - 1
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
            self.current = _Shard(self.output, self.fmt, number, self.dtype)
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
        at all) and marks the metadata complete."""
        if self.current is not None or not self.shards:
            self._shard().records = records
            self._close(complete=True)
        else:
            with signals_held():
                self._remove_stale()
                self._write_meta(True)

    def _remove_stale(self) -> None:
        """Removes the earlier runs' files (inside a signals_held block)."""
        while self._stale:
            try:
                os.unlink(self._stale[-1])
            except FileNotFoundError:
                pass
            except OSError as e:
                raise OutputError(f"cannot remove {self._stale[-1]} of an earlier run: {e.strerror}") from None
            self._stale.pop()

    def discard(self) -> None:
        if self.current is not None:
            self.current.discard()
            self.current = None
