"""The spmbpe command line (also ``python -m spmbpe``).

    spmbpe encode [INPUT ...]     token ids of each document (txt, jsonl, npy, bin)
    spmbpe count [INPUT ...]      token totals per input and overall
    spmbpe decode [INPUT ...]     ids back to text (txt, jsonl, npy, bin)
    spmbpe info [MODEL]           what a tokenizer file holds

    echo "Hello world" | spmbpe encode              # bundled mistral-v1: 22557 1526
    spmbpe encode --model tokenizer.model --format npy --output corpus.npy a.txt b.jsonl

Inputs are text files (one document per line), JSONL files (one document
per object, its ``--field``) or standard input; gzip-compressed ones (a
``.gz`` name, or data starting with the gzip magic bytes, standard input
too) are decompressed as they are read. Errors are one line on
standard error, ``spmbpe: error: ...``, naming the file and line; exit code
1 (2 for a bad option or model), 130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ._cli_decode import cmd_decode
from ._cli_info import cmd_info
from ._cli_progress import Progress
from ._cli_common import CliError, load_model, need_numpy, optional_numpy
from ._cli_read import Batch, DocumentReader, input_size
from ._arrays import ARRAY_FORMATS, ArrayOutput, array_dtype, array_metadata, meta_path
from ._atomic import OutputError, atomic_output, discard_all
from ._signals import Interrupted, handling_signals

__all__ = ["main"]

_ARRAY_FORMATS = ARRAY_FORMATS
_TEXT_FORMATS = ("txt", "jsonl")


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    with handling_signals():
        try:
            return _run(args)
        finally:
            discard_all()


def _run(args: argparse.Namespace) -> int:
    """Runs the command; every failure is one line on standard error."""
    try:
        return int(args.run(args) or 0)
    except CliError as e:
        discard_all()
        _error(str(e))
        return e.code
    except OutputError as e:
        discard_all()
        _error(str(e))
        return 1
    except (Interrupted, KeyboardInterrupt) as e:
        discard_all()
        # A sharded run keeps its complete shards (_encode_arrays says so).
        kept = getattr(e, "kept", None) or "no partial output was left"
        _error(f"interrupted; {kept}", prefix="spmbpe")
        return 128 + e.signum if isinstance(e, Interrupted) else 130
    except BrokenPipeError:
        discard_all()
        # The reader of standard output went away (| head): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except OSError as e:
        discard_all()
        where = f"{e.filename}: " if e.filename else ""
        _error(f"{where}{e.strerror or e}")
        return 1
    except MemoryError:
        discard_all()
        _error("out of memory (try a smaller --batch-size)")
        return 1


# ---------------------------------------------------------------- arguments


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spmbpe",
        description="SentencePiece-BPE tokenization with the ids of sentencepiece, llama.cpp and "
        "HuggingFace.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"spmbpe {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    encode = commands.add_parser(
        "encode",
        help="token ids of each document (txt, jsonl, npy, bin)",
        description="Token ids of each document of the inputs, in input order: text files (one "
        "document per line), .jsonl files (one document per object) or standard input, each "
        "possibly gzip-compressed.",
    )
    _add_inputs(encode)
    _add_model(encode)
    _add_encoding(encode)
    encode.add_argument(
        "--format", choices=_TEXT_FORMATS + _ARRAY_FORMATS, default=None,
        help="txt: space-separated ids, a line per document; jsonl: a JSON array per document; "
        "npy: one flat .npy array of all ids + OUT.docs.npy (document starts); bin: raw "
        "little-endian ids + a Megatron .idx index (nanoGPT/Megatron). Default: from the "
        "--output extension, else txt",
    )
    encode.add_argument(
        "--output", "-o", metavar="PATH",
        help="output file (txt/jsonl: default standard output; npy/bin/ds: required). Its extension "
        "names the format unless --format is given; another extension is an error. Written under a "
        "temporary name and renamed when complete",
    )
    encode.add_argument(
        "--shard-size", type=_size, metavar="TOKENS",
        help="npy/bin: cut the output into shards of at most TOKENS tokens, at document "
        "boundaries (suffixes K, M, G: 10^3, 10^6, 10^9): OUT-00000.npy, OUT-00001.npy, ...",
    )
    encode.add_argument(
        "--resume", action="store_true",
        help="continue an interrupted sharded run from its last complete shard: the same command "
        "with --resume checks that the settings, inputs and tokenizer are the run's, says what it "
        "skips (shards, documents, input records) and counts progress from there",
    )
    encode.set_defaults(run=_cmd_encode)

    count = commands.add_parser(
        "count",
        help="token totals per input and overall",
        description="Prints, for each input, its tokens, documents and bytes (the UTF-8 bytes of "
        "the documents' text: no line ends, JSON syntax or compression), and a total line when "
        "there are several inputs.",
    )
    _add_inputs(count)
    _add_model(count)
    _add_encoding(count)
    count.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    count.set_defaults(run=_cmd_count)

    decode = commands.add_parser(
        "decode",
        help="ids back to text",
        description="Text of token ids: txt (space-separated ids, a line per document), jsonl (a "
        "JSON array per line), npy (with OUT.docs.npy beside it, else one document) or bin "
        "(with its .idx). Prints a line per document.",
    )
    decode.add_argument(
        "inputs", nargs="*", metavar="INPUT",
        help="id files (default: standard input, txt); txt and jsonl ones may be gzip-compressed "
        "(.gz, or the gzip magic bytes)",
    )
    _add_model(decode)
    decode.add_argument(
        "--input-format", choices=("auto", "txt", "jsonl", "npy", "bin"), default="auto",
        help="how to read the inputs (default: from the extension, a .gz ending left out, else txt)",
    )
    decode.add_argument(
        "--format", choices=_TEXT_FORMATS, default="txt",
        help="txt: the text of each document on a line; jsonl: {FIELD: text} per line (safe for "
        "texts with newlines)",
    )
    decode.add_argument("--field", default="text", help="jsonl output: the field name (default: text)")
    decode.add_argument("--output", "-o", metavar="PATH", help="output file (default: standard output)")
    decode.add_argument("--skip-special", action="store_true", help="leave out control and unknown ids")
    decode.set_defaults(run=cmd_decode)

    info = commands.add_parser(
        "info",
        help="what a tokenizer file holds",
        description="Format, vocabulary size, special tokens, prefix scheme, normalizer, BOS/EOS "
        "defaults, fingerprint and whether the exact chunked fast path applies.",
    )
    info.add_argument(
        "model", nargs="?", default="mistral-v1", metavar="MODEL",
        help="tokenizer file or folder, or a bundled name (default: mistral-v1)",
    )
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(run=cmd_info)
    return parser


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "inputs", nargs="*", metavar="INPUT",
        help="text files (one document per line) or .jsonl files (one object per line); none or "
        "'-': standard input. Gzip input (a .gz name such as corpus.jsonl.gz, or any input, "
        "standard input too, that starts with the gzip magic bytes) is decompressed as it is "
        "read, like zcat",
    )


def _add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", "-m", default="mistral-v1", metavar="PATH|NAME",
        help="tokenizer file or folder (.gguf, .model, tokenizer.json, HF folder) or a bundled name "
        "(default: mistral-v1)",
    )


def _add_encoding(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--special", choices=("all", "none"), default="none",
        help="all: special tokens spelled in the text become their ids; none (default): text stays "
        "text, so a corpus containing '</s>' gives no control id",
    )
    p.add_argument("--add-special-tokens", action="store_true", help="add BOS/EOS as the model says")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="encoding threads (default: all cores)")
    p.add_argument(
        "--input-format", choices=("auto", "txt", "jsonl"), default="auto",
        help="auto (default): .jsonl/.ndjson files (also .jsonl.gz, .ndjson.gz) are JSONL, "
        "anything else (and stdin) text",
    )
    p.add_argument("--field", default="text", help="JSONL: the field holding the text (default: text)")
    p.add_argument(
        "--errors", choices=("strict", "replace", "skip"), default="strict",
        help="invalid UTF-8: strict (default) stops naming the file and line; replace puts U+FFFD "
        "in its place; skip leaves the document out",
    )
    p.add_argument(
        "--batch-size", type=_size, default=2 << 20, metavar="BYTES",
        help="input bytes per batch handed to the encoder (default 2M; memory grows with it)",
    )
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="a progress line on standard error: documents, MB and tokens read, and documents/s, "
        "MB/s and tokens/s (default: when standard error is a terminal). encode --output also "
        "prints a final summary line of the same figures; --no-progress silences both",
    )


def _size(text: str) -> int:
    units = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
    t = text.strip().lower()
    scale = 1
    if t and t[-1] in units:
        scale = units[t[-1]]
        t = t[:-1]
    try:
        value = int(float(t) * scale) if "." in t else int(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1000000, 100M, 2G)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text!r}")
    return value


# ---------------------------------------------------------------- helpers


def _error(message: str, prefix: str = "spmbpe: error") -> None:
    line = " ".join(message.split("\n"))
    try:
        sys.stderr.write(f"{prefix}: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _note(message: str) -> None:
    sys.stderr.write(f"spmbpe: {message}\n")
    sys.stderr.flush()


def _check_threads(args: argparse.Namespace) -> None:
    if args.threads is not None and args.threads < 1:
        raise CliError("--threads must be at least 1", 2)


def _progress(args: argparse.Namespace, paths: List[str], *, summary: bool = False) -> Progress:
    """The progress line (``--progress``; default: when standard error is a
    terminal) and, when `summary` (output to a file), the final summary
    line, unless ``--no-progress``."""
    sizes = [input_size(p) for p in (paths or ["-"])]
    total = None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[arg-type]
    enabled = args.progress if args.progress is not None else _isatty(sys.stderr)
    return Progress(bool(enabled), total, summary=summary and args.progress is not False)


def _advance(progress: Progress, batch: Batch, documents: int, tokens: int) -> None:
    progress.skipped(batch.skipped_bytes, 0)
    progress.update(documents, batch.nbytes - batch.skipped_bytes, tokens, batch.file_bytes, batch.compressed)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# ---------------------------------------------------------------- encoding


class _Encoder:
    """Encodes one batch: ``(ids, offsets)`` as NumPy arrays (uint32 ids,
    int64 starts + total) when NumPy is there, else ``(lists, None)``."""

    def __init__(self, tok: Any, args: argparse.Namespace, np: Any) -> None:
        self.tok = tok
        self.special = args.special
        self.threads = args.threads
        self.np = np
        self.add = bool(args.add_special_tokens)
        self.bos = tok.bos_id if self.add and tok.add_bos else None
        self.eos = tok.eos_id if self.add and tok.add_eos else None

    def __call__(self, batch: Batch) -> Tuple[Any, Any]:
        try:
            return self._encode(batch.texts)
        except ValueError as e:  # bad text (a bug would be another error)
            raise CliError(f"{batch.source}: {e}") from None

    def _encode(self, texts: List[str]) -> Tuple[Any, Any]:
        np = self.np
        if np is None:
            lists = self.tok.encode_batch(
                texts, special=self.special, add_special_tokens=self.add, num_threads=self.threads
            )
            return lists, None
        if not texts:
            return np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
        ids, offsets = self.tok.encode_batch(
            texts, special=self.special, num_threads=self.threads, return_numpy=True, dtype=np.uint32
        )
        if self.bos is None and self.eos is None:
            return ids, offsets
        # BOS/EOS around every document, as encode(add_special_tokens=True),
        # in a few vectorised passes.
        extra = (self.bos is not None) + (self.eos is not None)
        n = len(offsets) - 1
        new_offsets = offsets + np.arange(n + 1, dtype=np.int64) * extra
        out = np.empty(int(new_offsets[-1]), dtype=ids.dtype)
        keep = np.ones(len(out), dtype=bool)
        if self.bos is not None:
            out[new_offsets[:-1]] = self.bos
            keep[new_offsets[:-1]] = False
        if self.eos is not None:
            out[new_offsets[1:] - 1] = self.eos
            keep[new_offsets[1:] - 1] = False
        out[keep] = ids
        return out, new_offsets


def _pipeline(encoder: _Encoder, reader: DocumentReader, threads: Optional[int]) -> Iterator[Tuple[Batch, Any, Any]]:
    """(batch, ids, offsets) in input order.

    A reader thread reads and splits the input and hands each batch to the
    encoding pool; up to two batches encode at once (so the threads have
    work while one batch's last texts finish) and at most `workers + 1`
    batches wait, which bounds memory. The caller writes in the meantime;
    a pause in the input (a pipe) does not hold back what was read."""
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
            yield (batch, *item.result())
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


class _TextFormatter:
    """txt/jsonl lines of a batch; with NumPy, each id's decimal text comes
    from a table (no int -> str conversion per token)."""

    def __init__(self, fmt: str, vocab_size: int, np: Any) -> None:
        self.fmt = fmt
        self.table = np.array([str(i) for i in range(vocab_size)], dtype=object) if np is not None else None

    def __call__(self, ids: Any, offsets: Any) -> bytes:
        if offsets is None:
            docs: Any = ([str(i) for i in doc] for doc in ids)
        else:
            assert self.table is not None
            strs = self.table[ids].tolist()
            off = offsets.tolist()
            docs = (strs[off[i] : off[i + 1]] for i in range(len(off) - 1))
        if self.fmt == "txt":
            lines = [" ".join(doc) for doc in docs]
        else:
            lines = ["[" + ",".join(doc) + "]" for doc in docs]
        if not lines:
            return b""
        lines.append("")
        return "\n".join(lines).encode("ascii")


def _n_tokens(ids: Any, offsets: Any) -> int:
    return int(offsets[-1]) if offsets is not None else sum(map(len, ids))


def _n_docs(ids: Any, offsets: Any) -> int:
    return len(offsets) - 1 if offsets is not None else len(ids)


def _output_format(args: argparse.Namespace) -> str:
    """--format, else the --output extension (txt without --output)."""
    if args.format is not None:
        return str(args.format)
    if not args.output:
        return "txt"
    name = os.path.basename(args.output)
    ext = os.path.splitext(name)[1].lower().lstrip(".")
    if ext in _TEXT_FORMATS + _ARRAY_FORMATS:
        return ext
    known = ", ".join("." + f for f in _TEXT_FORMATS + _ARRAY_FORMATS)
    raise CliError(
        f"--output {args.output}: unknown output extension {('.' + ext) if ext else '(none)'}; "
        f"name a known one ({known}) or give --format", 2
    )


def _cmd_encode(args: argparse.Namespace) -> int:
    fmt = _output_format(args)
    _check_threads(args)
    if fmt in _ARRAY_FORMATS:
        if not args.output:
            raise CliError(f"--format {fmt} needs --output PATH", 2)
        np = need_numpy(f"--format {fmt}")
    else:
        if args.shard_size is not None:
            raise CliError(f"--shard-size applies to --format {'|'.join(_ARRAY_FORMATS)}", 2)
        np = optional_numpy()
    if args.resume and (fmt not in _ARRAY_FORMATS or args.shard_size is None):
        raise CliError(
            f"--resume continues a sharded run: it needs --format {'|'.join(_ARRAY_FORMATS)} and --shard-size", 2
        )
    tok = load_model(args.model)
    reader = DocumentReader(
        args.inputs, input_format=args.input_format, field=args.field, errors=args.errors,
        batch_bytes=args.batch_size,
    )
    reader.check_inputs()
    encoder = _Encoder(tok, args, np)
    if fmt in _ARRAY_FORMATS:
        return _encode_arrays(args, fmt, tok, reader, encoder, np)

    progress = _progress(args, args.inputs, summary=bool(args.output))
    formatter = _TextFormatter(fmt, tok.vocab_size, np)
    with atomic_output(args.output) as out:
        for batch, ids, offsets in _pipeline(encoder, reader, args.threads):
            out.write(formatter(ids, offsets))
            _advance(progress, batch, _n_docs(ids, offsets), _n_tokens(ids, offsets))
    progress.finish()
    _report_skipped(reader)
    return 0


def _report_skipped(reader: DocumentReader) -> None:
    if reader.skipped:
        _note(f"skipped {reader.skipped:,} documents that are not valid UTF-8")


def _encode_arrays(
    args: argparse.Namespace, fmt: str, tok: Any, reader: DocumentReader, encoder: _Encoder, np: Any
) -> int:
    dtype = array_dtype(tok.vocab_size, fmt, np)
    meta = array_metadata(
        tok, args.model, fmt, dtype,
        {
            "special": args.special,
            "add_special_tokens": bool(args.add_special_tokens),
            "input_format": args.input_format,
            "field": args.field,
            "errors": args.errors,
        },
        [{"path": p, "bytes": input_size(p)} for p in (args.inputs or ["-"])],
        args.shard_size,
    )
    resume = _resume_state(args, fmt, meta) if args.resume else None
    if resume is not None and resume.get("complete"):
        _note(f"{meta_path(args.output, fmt)}: that run is already complete; nothing to do")
        return 0
    progress = _progress(args, args.inputs, summary=True)
    if resume is not None and resume["shards"]:
        kept = resume["shards"]
        reader.skip_records = int(kept[-1]["records"])
        documents = sum(int(s["documents"]) for s in kept)
        progress.resume_from(documents, sum(int(s["tokens"]) for s in kept))
        _note(
            f"--resume: skipping {len(kept):,} complete shards ({documents:,} documents, "
            f"{reader.skip_records:,} input records) of {meta_path(args.output, fmt)}; "
            f"continuing with shard {len(kept):,}"
        )
    writer = ArrayOutput(args.output, fmt, dtype, args.shard_size, meta, np, resume)
    try:
        for batch, ids, offsets in _pipeline(encoder, reader, args.threads):
            writer.write(ids, offsets, batch.doc_records, batch.records)
            _advance(progress, batch, len(offsets) - 1, int(offsets[-1]))
        writer.close(reader.records)
    except (Interrupted, KeyboardInterrupt) as e:
        if args.shard_size is not None and writer.shards:
            e.kept = (  # type: ignore[union-attr]
                f"kept {len(writer.shards):,} complete shards ({writer.committed_documents:,} documents) "
                f"in {writer.meta_path}; run the same command with --resume to continue"
            )
        raise
    finally:
        writer.discard()
    progress.finish()
    if writer.replaced:
        names = ", ".join(os.path.basename(p) for p in writer.replaced)
        _note(f"replaced {len(writer.replaced)} files that an earlier run wrote under {args.output}: {names}")
    _report_skipped(reader)
    return 0


_RESUME_KEYS = ("spmbpe_version", "tokenizer_fingerprint", "format", "dtype", "settings", "inputs", "shard_size")


def _resume_state(args: argparse.Namespace, fmt: str, meta: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The metadata of the run to continue (None: there is none, start
    afresh), checked against this run's settings and files."""
    path = meta_path(args.output, fmt)
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
    folder = os.path.dirname(os.path.abspath(args.output))
    for shard in old.get("shards", []):
        for key in ("ids", "index"):
            if not os.path.isfile(os.path.join(folder, shard[key])):
                raise CliError(f"--resume: shard file {shard[key]} listed in {path} is missing")
    return old


# ---------------------------------------------------------------- count


def _cmd_count(args: argparse.Namespace) -> int:
    _check_threads(args)
    np = optional_numpy()
    tok = load_model(args.model)
    reader = DocumentReader(
        args.inputs, input_format=args.input_format, field=args.field, errors=args.errors,
        batch_bytes=args.batch_size,
    )
    reader.check_inputs()
    encoder = _Encoder(tok, args, np)
    progress = _progress(args, args.inputs)
    rows: Dict[str, List[int]] = {}
    for batch, ids, offsets in _pipeline(encoder, reader, args.threads):
        tokens, docs = _n_tokens(ids, offsets), _n_docs(ids, offsets)
        row = rows.setdefault(batch.source, [0, 0, 0])
        row[0] += tokens
        row[1] += docs
        row[2] += batch.text_bytes  # of the documents' text, not of the file
        _advance(progress, batch, docs, tokens)
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
    _report_skipped(reader)
    return 0
