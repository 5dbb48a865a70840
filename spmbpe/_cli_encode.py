"""The encoding commands, ``spmbpe encode`` and ``spmbpe count``: documents
(_cli_read) through the tokenizer on a pool of threads, in input order,
into text, array outputs (_arrays) or counts."""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ._arrays import ARRAY_FORMATS, ArrayOutput, array_dtype, array_metadata, as_id_buffers, meta_path, output_stem
from ._atomic import atomic_output
from ._cli_common import CliError, load_model, note
from ._cli_progress import Progress, isatty
from ._cli_read import Batch, DocumentReader, LineBlock, input_size
from ._core import format_ids, ids_around
from ._signals import Interrupted

__all__ = ["cmd_encode", "cmd_count", "TEXT_FORMATS", "OUTPUT_FORMATS"]

TEXT_FORMATS = ("txt", "jsonl")
#: Every --format of encode.
OUTPUT_FORMATS = TEXT_FORMATS + ARRAY_FORMATS

#: One column's ids: (flat ids, offsets), native uint32 and int64, as
#: memoryviews or NumPy arrays.
Encoded = Tuple[Any, Any]


def _reader(args: argparse.Namespace) -> DocumentReader:
    reader = DocumentReader(
        args.inputs, input_format=args.input_format, field=args.field, fields=args.json_keys,
        errors=args.errors, batch_bytes=args.batch_size, documents=args.documents,
        skip_empty=args.skip_empty,
    )
    reader.check_inputs()
    return reader


def _check_threads(args: argparse.Namespace) -> None:
    if args.threads is not None and args.threads < 1:
        raise CliError("--threads must be at least 1", 2)


def _progress(args: argparse.Namespace, *, summary: bool = False) -> Progress:
    """The progress line and, when `summary` (output to a file), the final
    summary line, as ``--progress``/``--no-progress`` say."""
    sizes = [input_size(p) for p in (args.inputs or ["-"])]
    total = None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[arg-type]
    enabled = args.progress if args.progress is not None else isatty(sys.stderr)
    return Progress(bool(enabled), total, summary=summary and args.progress is not False)


def _advance(progress: Progress, batch: Batch, documents: int, tokens: int) -> None:
    progress.skipped(batch.skipped_bytes)
    progress.update(documents, batch.nbytes - batch.skipped_bytes, tokens, batch.file_bytes, batch.compressed)


def _report(reader: DocumentReader) -> None:
    if reader.skipped:
        note(f"skipped {reader.skipped:,} documents that are not valid UTF-8")
    if reader.empty:
        note(f"left out {reader.empty:,} empty documents (--skip-empty)")


# ---------------------------------------------------------------- encoding


class Encoder:
    """Encodes the columns of one batch: ``(ids, offsets)`` each, as
    memoryviews (Encoded): lines of text go from the bytes read to the
    merge, other documents through encode_flat, and nothing needs NumPy (its
    import is a noticeable part of a short run's start-up).  BOS and EOS
    around each document as ``--add-special-tokens``, ``--prepend-bos`` and
    ``--append-eod`` say."""

    def __init__(self, tok: Any, args: argparse.Namespace) -> None:
        self.tok = tok
        self.special = args.special
        self.threads = args.threads
        add = bool(args.add_special_tokens)
        if args.prepend_bos and tok.bos_id is None:
            raise CliError("--prepend-bos: the model has no BOS id", 2)
        if args.append_eod and tok.eos_id is None:
            raise CliError("--append-eod: the model has no EOS id to end documents with", 2)
        # The ids, or -1 for none (as the compiled kernels take them).
        self.bos = tok.bos_id if (add and tok.add_bos) or args.prepend_bos else -1
        self.eos = tok.eos_id if (add and tok.add_eos) or args.append_eod else -1

    def __call__(self, batch: Batch) -> List[Encoded]:
        try:
            return [self._encode(texts) for texts in batch.columns]
        except ValueError as e:  # bad text (a bug would be another error)
            raise CliError(f"{batch.source}: {e}") from None

    def _encode(self, texts: Any) -> Encoded:
        if isinstance(texts, LineBlock):
            got = self.tok.encode_line_block(texts.data, special=self.special, num_threads=self.threads)
            if got is not None:
                if self.bos >= 0 or self.eos >= 0:  # as encode(add_special_tokens=True)
                    got = ids_around(*as_id_buffers(*got), self.bos, self.eos)
                return as_id_buffers(*got)
            texts = texts.strings()  # encode_batch's way (it raises what a line does)
        # encode_batch(return_numpy=True)'s result, BOS/EOS included, without NumPy.
        return as_id_buffers(*self.tok.encode_flat(
            texts, special=self.special, num_threads=self.threads, bos_id=self.bos, eos_id=self.eos
        ))


def pipeline(encoder: Encoder, reader: DocumentReader, threads: Optional[int]) -> Iterator[Tuple[Batch, List[Encoded]]]:
    """(batch, its encoded columns) in input order.  A reader thread hands
    each batch to the encoding pool, so a pause in the input (a pipe) does
    not hold back what was read; up to two batches encode at once (the
    threads have work while one batch's last texts finish) and at most
    `workers + 1` wait, which bounds memory."""
    workers = 1 if threads == 1 else 2
    pool = ThreadPoolExecutor(workers, thread_name_prefix="spmbpe-cli")
    handoff: "queue.Queue[Tuple[Optional[Batch], Any]]" = queue.Queue(maxsize=workers + 1)
    stop = threading.Event()

    def put(item: Tuple[Optional[Batch], Any]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in reader:
                if stop.is_set() or not put((batch, pool.submit(encoder, batch))):
                    return
        except BaseException as e:  # handed to the main thread, in order
            put((None, e))
            return
        put((None, None))

    thread = threading.Thread(target=produce, name="spmbpe-reader", daemon=True)
    thread.start()
    try:
        while True:
            batch, item = handoff.get()
            if batch is None:
                if item is not None:
                    raise item
                break
            yield batch, item.result()
        thread.join()
    finally:
        stop.set()
        while True:
            try:
                _, item = handoff.get_nowait()
            except queue.Empty:
                break
            if hasattr(item, "cancel"):
                item.cancel()
        pool.shutdown(wait=False, cancel_futures=True)


def _n_tokens(encoded: Encoded) -> int:
    ids, offsets = encoded
    return int(offsets[-1]) - int(offsets[0])


def _n_docs(encoded: Encoded) -> int:
    ids, offsets = encoded
    return len(offsets) - 1


def _settings(args: argparse.Namespace) -> Dict[str, Any]:
    """What decides the documents and their ids, for the metadata (and for
    --resume to check)."""
    return {
        "special": args.special,
        "add_special_tokens": bool(args.add_special_tokens),
        "prepend_bos": bool(args.prepend_bos),
        "append_eod": bool(args.append_eod),
        "input_format": args.input_format,
        "documents": args.documents,
        "skip_empty": bool(args.skip_empty),
        "field": args.field,
        "json_keys": args.json_keys,
        "errors": args.errors,
    }


def output_format(args: argparse.Namespace) -> str:
    """--format, else the --output extension (txt without --output)."""
    if args.format is not None:
        return str(args.format)
    if not args.output:
        return "txt"
    ext: str = os.path.splitext(os.path.basename(str(args.output)))[1].lower().lstrip(".")
    if ext in OUTPUT_FORMATS:
        return ext
    known = ", ".join("." + f for f in OUTPUT_FORMATS)
    raise CliError(
        f"--output {args.output}: unknown output extension {('.' + ext) if ext else '(none)'}; "
        f"name a known one ({known}) or give --format", 2
    )


def key_output(output: str, fmt: str, key: str) -> str:
    """The output of one of several --json-keys: OUT_KEY.EXT (Megatron's
    preprocess_data writes PREFIX_KEY_document.bin/.idx, one per key)."""
    return f"{output_stem(output, fmt)}_{key}.{fmt}"


def cmd_encode(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    _check_threads(args)
    keys = args.json_keys or []
    if fmt in ARRAY_FORMATS:
        if not args.output:
            raise CliError(f"--format {fmt} needs --output PATH", 2)
    else:
        if args.shard_size is not None:
            raise CliError(f"--shard-size applies to --format {'|'.join(ARRAY_FORMATS)}", 2)
        if len(keys) > 1:
            raise CliError(f"several --json-keys write an output per key: --format {'|'.join(ARRAY_FORMATS)}", 2)
    if args.resume and (fmt not in ARRAY_FORMATS or args.shard_size is None):
        raise CliError(
            f"--resume continues a sharded run: it needs --format {'|'.join(ARRAY_FORMATS)} and --shard-size", 2
        )
    if args.resume and len(keys) > 1:
        raise CliError("--resume continues the run of one output, not of several --json-keys", 2)
    tok = load_model(args.model)
    reader = _reader(args)
    encoder = Encoder(tok, args)
    if fmt in ARRAY_FORMATS:
        return _encode_arrays(args, fmt, tok, reader, encoder)

    progress = _progress(args, summary=bool(args.output))
    with atomic_output(args.output) as out:
        for batch, (encoded,) in pipeline(encoder, reader, args.threads):
            out.write(format_ids(*encoded, fmt == "jsonl"))  # ids in decimal, a line per document
            _advance(progress, batch, _n_docs(encoded), _n_tokens(encoded))
    progress.finish()
    _report(reader)
    return 0


def _encode_arrays(args: argparse.Namespace, fmt: str, tok: Any, reader: DocumentReader, encoder: Encoder) -> int:
    dtype = array_dtype(tok.vocab_size, fmt)
    settings = _settings(args)
    inputs = [{"path": p, "bytes": input_size(p)} for p in (args.inputs or ["-"])]
    keys = args.json_keys or []
    outputs = [args.output] if len(keys) < 2 else [key_output(args.output, fmt, k) for k in keys]
    metas = []
    for k, output in enumerate(outputs):
        own = dict(settings, json_key=keys[k]) if len(keys) > 1 else settings
        metas.append(array_metadata(tok, args.model, fmt, dtype, own, inputs, args.shard_size))
    resume = _resume_state(args.output, fmt, metas[0]) if args.resume else None
    if resume is not None and resume.get("complete"):
        note(f"{meta_path(args.output, fmt)}: that run is already complete; nothing to do")
        return 0
    progress = _progress(args, summary=True)
    if resume is not None and resume["shards"]:
        kept = resume["shards"]
        reader.skip_records = int(kept[-1]["records"])
        documents = sum(int(s["documents"]) for s in kept)
        progress.resume_from(documents, sum(int(s["tokens"]) for s in kept))
        note(
            f"--resume: skipping {len(kept):,} complete shards ({documents:,} documents, "
            f"{reader.skip_records:,} input records) of {meta_path(args.output, fmt)}; "
            f"continuing with shard {len(kept):,}"
        )
    writers: List[ArrayOutput] = []
    try:
        for output, meta in zip(outputs, metas):
            writers.append(ArrayOutput(output, fmt, dtype, args.shard_size, meta, resume))
        for batch, columns in pipeline(encoder, reader, args.threads):
            for writer, (ids, offsets), records in zip(writers, columns, batch.column_records):
                writer.write(ids, offsets, records, batch.records)
            _advance(progress, batch, sum(map(_n_docs, columns)), sum(map(_n_tokens, columns)))
        for writer in writers:
            writer.close(reader.records)
    except (Interrupted, KeyboardInterrupt) as e:
        kept_outputs = [w for w in writers if w.shards]
        if args.shard_size is not None and kept_outputs:
            said = "; ".join(
                f"kept {len(w.shards):,} complete shards ({w.committed_documents:,} documents) in {w.meta_path}"
                for w in kept_outputs
            )
            if len(writers) == 1:
                said += "; run the same command with --resume to continue"
            e.kept = said  # type: ignore[union-attr]
        raise
    finally:
        for writer in writers:
            writer.discard()
    progress.finish()
    for writer in writers:
        if writer.replaced:
            names = ", ".join(os.path.basename(p) for p in writer.replaced)
            note(f"replaced {len(writer.replaced)} files that an earlier run wrote under {writer.output}: {names}")
    _report(reader)
    return 0


_RESUME_KEYS = ("spmbpe_version", "tokenizer_fingerprint", "format", "dtype", "settings", "inputs", "shard_size")


def _resume_state(output: str, fmt: str, meta: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The metadata of the run to continue (None: start afresh), checked
    against this run's settings and files."""
    path = meta_path(output, fmt)
    try:
        with open(path, "r", encoding="utf-8") as f:
            old: Dict[str, Any] = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise CliError(f"--resume: cannot read {path}: {e}") from None
    for key in _RESUME_KEYS:
        if old.get(key) != meta[key]:
            raise CliError(
                f"--resume: {path} was written with another {key} ({old.get(key)!r}, now "
                f"{meta[key]!r}); run without --resume to start over"
            )
    folder = os.path.dirname(os.path.abspath(output))
    for shard in old.get("shards", []):
        for key in ("ids", "index"):
            if not os.path.isfile(os.path.join(folder, shard[key])):
                raise CliError(f"--resume: shard file {shard[key]} listed in {path} is missing")
    return old


# ---------------------------------------------------------------- count


def cmd_count(args: argparse.Namespace) -> int:
    _check_threads(args)
    tok = load_model(args.model)
    reader = _reader(args)
    encoder = Encoder(tok, args)
    progress = _progress(args)
    keys = args.json_keys or []
    rows: Dict[str, List[int]] = {}
    for batch, columns in pipeline(encoder, reader, args.threads):
        for k, encoded in enumerate(columns):
            tokens, docs = _n_tokens(encoded), _n_docs(encoded)
            # Several --json-keys: a row per input and key.
            name = f"{batch.source} [{keys[k]}]" if len(keys) > 1 else batch.source
            row = rows.setdefault(name, [0, 0, 0])
            row[0] += tokens
            row[1] += docs
            row[2] += batch.text_bytes(k)  # of the text, not of the file
        _advance(progress, batch, sum(map(_n_docs, columns)), sum(map(_n_tokens, columns)))
    progress.finish()
    total = [sum(r[i] for r in rows.values()) for i in range(3)]
    if args.json:
        obj = {
            "inputs": [{"name": k, "tokens": r[0], "documents": r[1], "bytes": r[2]} for k, r in rows.items()],
            "total": {"tokens": total[0], "documents": total[1], "bytes": total[2]},
        }
        sys.stdout.write(json.dumps(obj) + "\n")
    else:
        lines = [(["tokens", "documents", "bytes"], "input")]
        lines += [([str(v) for v in r], k) for k, r in rows.items()]
        if len(rows) > 1:
            lines.append(([str(v) for v in total], "total"))
        width = [max(len(r[i]) for r, _ in lines) for i in range(3)]
        for r, name in lines:
            sys.stdout.write(" ".join(r[i].rjust(width[i]) for i in range(3)) + f"  {name}\n")
    sys.stdout.flush()
    _report(reader)
    return 0
