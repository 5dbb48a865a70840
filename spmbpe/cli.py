"""The spmbpe command line (its program, console script and ``python -m
spmbpe``, is spmbpe/__main__.py); docs/cli.md is its reference, with the
one-line errors and exit codes this module turns every failure into.

The layers: this module parses the arguments and turns every failure into
one line; _cli_encode runs encode and count (_cli_read reads documents,
_cli_progress reports), _cli_decode and _cli_info the other commands; the
files themselves are written by _arrays (shared with spmbpe.ray) through
_atomic, with _signals deciding where an interrupt takes effect."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from ._arrays import ARRAY_FORMATS
from ._atomic import OutputError, discard_all
from ._cli_common import CliError
from ._cli_decode import cmd_decode
from ._cli_encode import OUTPUT_FORMATS, TEXT_FORMATS, cmd_count, cmd_encode
from ._cli_info import cmd_info
from ._cli_read import DOCUMENT_MODES
from ._signals import Interrupted, handling_signals

__all__ = ["main"]


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    with handling_signals():
        try:
            return _run(args)
        finally:
            discard_all()


def _run(args: argparse.Namespace) -> int:
    """Runs the command; every failure is one line on standard error (main
    then removes what the run left unfinished)."""
    try:
        return int(args.run(args) or 0)
    except CliError as e:
        _error(str(e))
        return e.code
    except OutputError as e:
        _error(str(e))
        return 1
    except (Interrupted, KeyboardInterrupt) as e:
        # A sharded run keeps its complete shards (_encode_arrays says so).
        kept = getattr(e, "kept", None) or "no partial output was left"
        _error(f"interrupted; {kept}", prefix="spmbpe")
        return 128 + e.signum if isinstance(e, Interrupted) else 130
    except BrokenPipeError:
        # The reader of standard output went away (| head): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        _error(f"{where}{e.strerror or e}")
        return 1
    except MemoryError:
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
    _add_encode(commands)
    _add_count(commands)
    _add_decode(commands)
    _add_info(commands)
    return parser


def _add_encode(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    encode = commands.add_parser(
        "encode",
        help="token ids of each document (txt, jsonl, npy, bin, ds)",
        description="Token ids of each document of the inputs, in input order: text files (a "
        "document per line, paragraph or file: --documents), .jsonl files (a document per object, "
        "or per key: --json-keys) or standard input, each possibly gzip-compressed.",
    )
    _add_inputs(encode)
    _add_model(encode)
    _add_encoding(encode)
    encode.add_argument(
        "--format", choices=OUTPUT_FORMATS, default=None,
        help="txt: space-separated ids, a line per document; jsonl: a JSON array per document; "
        "npy: OUT.npy, one flat .npy array of all ids (uint16, or uint32 past 65,536 ids), + "
        "OUT.docs.npy (int64 document starts and the total); bin: Megatron-LM's indexed dataset, "
        "OUT.bin + OUT.idx, byte for byte as megatron-core's IndexedDatasetBuilder writes it "
        "(uint16 below 65,500 ids, else int32, as its DType.optimal_dtype); the .bin alone is "
        "nanoGPT's flat file (numpy.memmap(OUT.bin, dtype=numpy.uint16)); ds: datatrove's tokenized "
        "files, OUT.ds + OUT.ds.index (uint64 document ends), as its TokenizedFile writes them. "
        "Each array output has its metadata in OUT.EXT.meta.json. Default: from the --output "
        "extension, else txt",
    )
    encode.add_argument(
        "--output", "-o", metavar="PATH",
        help="output file (txt/jsonl: default standard output; npy/bin/ds: required). Its extension "
        "names the format unless --format is given; another extension is an error. Written under a "
        "temporary name and renamed when complete; missing folders are created",
    )
    encode.add_argument(
        "--shard-size", type=_size, metavar="TOKENS",
        help="npy/bin/ds: cut the output into shards of at most TOKENS tokens, at document "
        "boundaries (suffixes K, M, G: 10^3, 10^6, 10^9): OUT-00000.npy, OUT-00001.npy, ..., each "
        "a data set of its own in its format (a longer document is a shard of its own)",
    )
    encode.add_argument(
        "--resume", action="store_true",
        help="continue an interrupted sharded run from its last complete shard: the same command "
        "with --resume checks that the settings, inputs and tokenizer are the run's, says what it "
        "skips (shards, documents, input records) and counts progress from there",
    )
    encode.set_defaults(run=cmd_encode)


def _add_count(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    count.set_defaults(run=cmd_count)


def _add_decode(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    decode = commands.add_parser(
        "decode",
        help="ids back to text",
        description="Text of token ids: txt (space-separated ids, a line per document), jsonl (a "
        "JSON array per line), npy (with OUT.docs.npy beside it, else one document), bin (with "
        "Megatron's .idx, else a flat nanoGPT file: one document), ds (with datatrove's .ds.index), "
        "or an array output by its name or metadata file. Prints a line per document.",
    )
    decode.add_argument(
        "inputs", nargs="*", metavar="INPUT",
        help="id files (default: standard input, txt); txt and jsonl ones may be gzip-compressed "
        "(.gz, or the gzip magic bytes)",
    )
    _add_model(decode)
    decode.add_argument(
        "--input-format", choices=("auto", "txt", "jsonl") + ARRAY_FORMATS, default="auto",
        help="how to read the inputs (default: from the extension, a .gz ending left out, else txt). "
        "An array output is read by the name it was written under (OUT.npy, also when a sharded run "
        "wrote OUT-00000.npy, ...) or by its metadata file (OUT.npy.meta.json): every shard it lists, "
        "in order",
    )
    decode.add_argument(
        "--format", choices=TEXT_FORMATS, default="txt",
        help="txt: the text of each document on a line; jsonl: {FIELD: text} per line (safe for "
        "texts with newlines)",
    )
    decode.add_argument("--field", default="text", help="jsonl output: the field name (default: text)")
    decode.add_argument("--output", "-o", metavar="PATH", help="output file (default: standard output; missing folders are created)")
    decode.add_argument("--skip-special", action="store_true", help="leave out control and unknown ids")
    decode.set_defaults(run=cmd_decode)


def _add_info(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "inputs", nargs="*", metavar="INPUT",
        help="text files (a document per line, unless --documents says otherwise) or .jsonl "
        "files (one object per line); none or '-': standard input. Gzip input (a .gz name such as corpus.jsonl.gz, or any input, "
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
    p.add_argument(
        "--add-special-tokens", action="store_true",
        help="add BOS/EOS around every document as the model says (encode(add_special_tokens=True)); "
        "with --prepend-bos/--append-eod each id is added once",
    )
    p.add_argument("--threads", type=int, default=None, metavar="N", help="encoding threads (default: the CPUs this process may use, or SPMBPE_NUM_THREADS)")
    p.add_argument(
        "--input-format", choices=("auto", "txt", "jsonl"), default="auto",
        help="auto (default): .jsonl/.ndjson files (also .jsonl.gz, .ndjson.gz) are JSONL, "
        "anything else (and stdin) text",
    )
    p.add_argument("--field", default="text", help="JSONL: the field holding the text (default: text)")
    p.add_argument(
        "--json-keys", type=_keys, metavar="KEY,KEY", default=None,
        help="JSONL: several fields, comma-separated, each a document of its own (Megatron's "
        "--json-keys). encode writes an array output per key, named OUT_KEY.EXT (-o corpus.bin "
        "--json-keys text,title: corpus_text.bin "
        "+ .idx and corpus_title.bin + .idx; Megatron's preprocess_data names them "
        "PREFIX_KEY_document); count prints a row per input and key. One key is --field",
    )
    p.add_argument(
        "--documents", choices=DOCUMENT_MODES, default="line",
        help="how text input is cut into documents: line (default): each line; paragraph: runs of "
        "lines separated by blank (or whitespace-only) lines, joined with newlines; file: each input "
        "file whole, its text as is. JSONL input has a document per object",
    )
    p.add_argument(
        "--skip-empty", action="store_true",
        help="leave out documents whose text is empty (a blank line is otherwise an empty document, "
        "with no ids but BOS/EOS, and an entry in the index)",
    )
    p.add_argument(
        "--append-eod", action="store_true",
        help="the model's EOS id after every document, as an end-of-document marker (Megatron's "
        "--append-eod, nanoGPT's EOT), whatever the model adds by itself; an empty document becomes "
        "[EOS] (Megatron gives an empty one none: use --skip-empty too for its exact output)",
    )
    p.add_argument(
        "--prepend-bos", action="store_true",
        help="the model's BOS id before every document, whatever the model adds by itself",
    )
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


def _keys(text: str) -> List[str]:
    keys = text.split(",")
    if not all(keys):
        raise argparse.ArgumentTypeError(f"not a comma-separated list of keys: {text!r}")
    if len(set(keys)) != len(keys):
        raise argparse.ArgumentTypeError(f"a key named twice: {text!r}")
    return keys


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
