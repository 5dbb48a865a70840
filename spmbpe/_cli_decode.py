"""``spmbpe decode``: token ids (txt, jsonl, npy, bin, ds) back to text, without NumPy."""

from __future__ import annotations

import argparse
import io
import json
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ._cli_common import CliError, load_model
from ._cli_read import InputStream, gzip_named
from ._arrays import ARRAY_FORMATS, LITTLE_ENDIAN, IntFile, array_dtype, read_megatron_index, read_npy_header
from ._atomic import atomic_output

__all__ = ["cmd_decode"]

_BY_EXTENSION = {".npy": "npy", ".bin": "bin", ".ds": "ds", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def _metadata_of(path: str) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(path, metadata) when `path` names an array output by its metadata
    file or by the name it was written under (also when sharded)."""
    if path == "-":
        return None
    if path.endswith(".meta.json"):
        meta_file = path
    elif os.path.isfile(path + ".meta.json") and not os.path.isfile(path):
        meta_file = path + ".meta.json"
    else:
        return None
    try:
        with open(meta_file, "r", encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise CliError(f"cannot read {path}: no such file") from None
    except (OSError, ValueError) as e:
        raise CliError(f"{meta_file}: not spmbpe output metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") not in ARRAY_FORMATS or not isinstance(meta.get("shards"), list):
        raise CliError(f"{meta_file}: not the metadata of an spmbpe array output")
    return meta_file, meta


def _output_documents(name: str, meta_file: str, meta: Dict[str, Any], tok: Any) -> Iterator[Tuple[str, List[int]]]:
    """The documents of every shard an array output's metadata lists, in
    order (an incomplete run: those of its complete shards)."""
    folder = os.path.dirname(os.path.abspath(meta_file))
    fmt = meta["format"]
    shards = meta["shards"]
    for number, shard in enumerate(shards):
        ids_name = shard.get("ids") if isinstance(shard, dict) else None
        if not isinstance(ids_name, str) or os.path.basename(ids_name) != ids_name:
            raise CliError(f"{meta_file}: shard {number} has no ids file name")
        path = os.path.join(folder, ids_name)
        where = name if len(shards) == 1 else f"{name} ({ids_name})"
        yield from _array_documents(where, path, fmt, tok, meta.get("dtype"))


def cmd_decode(args: argparse.Namespace) -> int:
    tok = load_model(args.model)
    paths = args.inputs or ["-"]
    for path in paths:
        if path != "-" and not os.path.isfile(path) and _metadata_of(path) is None:
            raise CliError(f"cannot read {path}: " + ("is a directory" if os.path.isdir(path) else "no such file"))
    field = args.field
    with atomic_output(args.output) as out:
        for path in paths:
            name = "<stdin>" if path == "-" else path
            meta = _metadata_of(path)
            if meta is not None:
                docs = _output_documents(name, *meta, tok)
            else:
                fmt = args.input_format
                if fmt == "auto":
                    ext = os.path.splitext(path[:-3] if gzip_named(path) else path)[1].lower()
                    fmt = _BY_EXTENSION.get(ext, "txt")
                if fmt in ARRAY_FORMATS and gzip_named(path):
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
                lines.append(text if args.format == "txt" else json.dumps({field: text}, ensure_ascii=False))
                size += len(lines[-1])
                if size >= 1 << 20:
                    out.write("".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))
                    lines, size = [], 0
            out.write("".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))
    return 0


def _id_documents(name: str, path: str, fmt: str, tok: Any) -> Iterator[Tuple[str, List[int]]]:
    """(location, ids) of each document of an id file."""
    if fmt in ARRAY_FORMATS:
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


def _array_documents(
    name: str, path: str, fmt: str, tok: Any, dtype_name: Optional[str] = None
) -> Iterator[Tuple[str, List[int]]]:
    """The documents of one array file and the index beside it (without
    one: a single document), read without NumPy."""
    if path == "-":
        raise CliError(f"{fmt} input must be a file, not standard input", 2)
    suffix = "." + fmt
    stem = path[: -len(suffix)] if path.endswith(suffix) else path
    bounds: Optional[List[Tuple[int, int]]]
    try:
        if fmt == "npy":
            ids = _npy(path)
            starts_path = stem + ".docs.npy"
            starts = _npy(starts_path).ints() if os.path.isfile(starts_path) else [0, len(ids)]
            bounds = list(zip(starts[:-1], starts[1:]))
        elif fmt == "bin":
            index_path = stem + ".idx"
            if os.path.isfile(index_path):
                index = read_megatron_index(index_path)
                ids = IntFile(path, LITTLE_ENDIAN[index["dtype"]])
                seq_starts = []
                for pointer in index["pointers"]:
                    if pointer % ids.itemsize:
                        raise ValueError(f"a sequence starts at byte {pointer}, inside an id")
                    seq_starts.append(pointer // ids.itemsize)
                seq_ends = [a + n for a, n in zip(seq_starts, index["lengths"])]
                doc_idx = index["document_index"]
                # A document is the sequences from its entry to the next
                # (one each, as spmbpe and preprocess_data write them).
                bounds = []
                for a, b in zip(doc_idx[:-1], doc_idx[1:]):
                    if not 0 <= a <= b <= len(seq_starts):
                        raise ValueError("its document index runs past its sequences")
                    if a == b:
                        bounds.append((0, 0))
                        continue
                    if any(seq_starts[k + 1] != seq_ends[k] for k in range(a, b - 1)):
                        raise ValueError("a document's sequences are not contiguous")
                    bounds.append((seq_starts[a], seq_ends[b - 1]))
            else:
                # A bare nanoGPT-style .bin: one document.
                ids = IntFile(path, _descr(dtype_name or array_dtype(tok.vocab_size, "bin").name))
                bounds = [(0, len(ids))]
        else:
            ids = IntFile(path, _descr(dtype_name or array_dtype(tok.vocab_size, "ds").name))
            index_path = path + ".index"
            ends = IntFile(index_path, "<u8").ints() if os.path.isfile(index_path) else [len(ids)]
            bounds = list(zip([0] + ends[:-1], ends))
    except (OSError, ValueError) as e:
        raise CliError(f"{name}: cannot read it as {fmt}: {e}") from None
    for a, b in bounds:
        if not 0 <= a <= b <= len(ids):
            raise CliError(f"{name}: its document boundaries run past its {len(ids)} ids")
    for i, (a, b) in enumerate(bounds):
        yield f"document {i + 1}", ids.ints(a, b)


def _npy(path: str) -> IntFile:
    with open(path, "rb") as f:
        descr, n, offset = read_npy_header(f)
    return IntFile(path, descr, offset, n)


def _descr(dtype_name: str) -> str:
    """The little-endian descr of an array output's dtype (its metadata's)."""
    try:
        return LITTLE_ENDIAN[dtype_name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dtype {dtype_name!r}") from None
