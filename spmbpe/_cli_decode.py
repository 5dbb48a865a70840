"""``spmbpe decode``: token ids (txt, jsonl, npy, bin) back to text."""

from __future__ import annotations

import argparse
import io
import json
import os
from typing import Any, Iterator, List, Tuple

from ._cli_common import CliError, load_model, need_numpy
from ._cli_read import InputStream, gzip_named
from ._arrays import read_megatron_index, read_npy_header
from ._atomic import atomic_output

__all__ = ["cmd_decode"]


def cmd_decode(args: argparse.Namespace) -> int:
    tok = load_model(args.model)
    paths = args.inputs or ["-"]
    for path in paths:
        if path != "-" and not os.path.isfile(path):
            raise CliError(f"cannot read {path}: " + ("is a directory" if os.path.isdir(path) else "no such file"))
    field = args.field
    with atomic_output(args.output) as out:
        for path in paths:
            name = "<stdin>" if path == "-" else path
            fmt = args.input_format
            if fmt == "auto":
                ext = os.path.splitext(path[:-3] if gzip_named(path) else path)[1].lower()
                fmt = {".npy": "npy", ".bin": "bin", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(ext, "txt")
            if fmt in ("npy", "bin") and gzip_named(path):
                raise CliError(f"{name}: {fmt} input is memory-mapped and cannot be gzip-compressed; "
                               f"decompress it first")
            docs = _id_documents(name, path, fmt, tok)
            lines = []
            size = 0
            for where, ids in docs:
                try:
                    text = tok.decode(ids, skip_special=args.skip_special)
                except (ValueError, IndexError, TypeError) as e:
                    raise CliError(f"{name}, {where}: {e}") from None
                line = text if args.format == "txt" else json.dumps({field: text}, ensure_ascii=False)
                lines.append(line)
                size += len(line)
                if size >= 1 << 20:
                    out.write(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
                    lines, size = [], 0
            if lines:
                out.write(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    return 0


def _id_documents(name: str, path: str, fmt: str, tok: Any) -> Iterator[Tuple[str, List[int]]]:
    """(location, ids) of each document of an id file."""
    if fmt in ("npy", "bin"):
        yield from _array_documents(name, path, fmt, tok)
        return
    # Plain or gzip (a .gz name or the gzip magic bytes), decompressed as read.
    stream = io.BufferedReader(InputStream(path), 1 << 16)
    try:
        for number, raw in enumerate(stream, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise CliError(f"{name}, line {number}: not UTF-8 text") from None
            if fmt == "txt":
                try:
                    ids = [int(t) for t in line.split()]
                except ValueError:
                    bad = next(t for t in line.split() if not t.lstrip("-").isdigit())
                    raise CliError(f"{name}, line {number}: not a token id: {bad[:40]!r}") from None
            else:
                if not line.strip():
                    continue
                try:
                    ids = json.loads(line)
                except ValueError as e:
                    raise CliError(f"{name}, line {number}: not JSON ({getattr(e, 'msg', e)})") from None
                if not isinstance(ids, list) or not all(type(i) is int for i in ids):
                    raise CliError(f"{name}, line {number}: not a JSON array of token ids")
            yield f"line {number}", ids
    finally:
        stream.close()  # not standard input itself


def _array_documents(name: str, path: str, fmt: str, tok: Any) -> Iterator[Tuple[str, List[int]]]:
    np = need_numpy(f"decoding {fmt}")
    if path == "-":
        raise CliError(f"{fmt} input must be a file, not standard input", 2)
    stem = path[: -len(fmt) - 1] if path.endswith("." + fmt) else path
    try:
        if fmt == "npy":
            with open(path, "rb") as f:
                descr, n, offset = read_npy_header(f)
            ids = np.memmap(path, dtype=np.dtype(descr), mode="r", offset=offset, shape=(n,)) if n else np.zeros(0, np.uint32)
            starts_path = stem + ".docs.npy"
            starts = np.load(starts_path, mmap_mode="r") if os.path.isfile(starts_path) else np.array([0, n])
        else:
            index_path = stem + ".idx"
            if os.path.isfile(index_path):
                index = read_megatron_index(index_path)
                dtype = np.dtype(index["dtype"]).newbyteorder("<")
                item = dtype.itemsize
                starts = np.concatenate((index["pointers"] // item, [(int(index["pointers"][-1]) // item + int(index["lengths"][-1])) if len(index["lengths"]) else 0]))
            else:
                # A bare nanoGPT-style .bin: one document.
                dtype = np.dtype("<u2" if tok.vocab_size <= 1 << 16 else "<i4")
                starts = None
            size = os.path.getsize(path) // dtype.itemsize
            ids = np.memmap(path, dtype=dtype, mode="r") if size else np.zeros(0, dtype)
            if starts is None:
                starts = np.array([0, size])
    except (OSError, ValueError) as e:
        raise CliError(f"{name}: cannot read it as {fmt}: {e}") from None
    starts = np.asarray(starts).tolist()
    if starts and starts[-1] > len(ids):
        raise CliError(f"{name}: its document boundaries run past its {len(ids)} ids")
    for i in range(len(starts) - 1):
        yield f"document {i + 1}", ids[starts[i] : starts[i + 1]].tolist()
