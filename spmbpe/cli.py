"""The spmbpe command line: ``spmbpe encode`` (also ``python -m spmbpe``).

    echo "Hello world" | spmbpe encode              # ids of each line, bundled mistral-v1
    spmbpe encode --model tokenizer.model a.txt b.txt
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterator, List, Optional, TextIO

__all__ = ["main"]

_BATCH = 4096  # lines handed to encode_batch at once


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="spmbpe", description="SentencePiece-BPE tokenization.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    encode = commands.add_parser(
        "encode",
        help="print the token ids of each input line",
        description="Prints the ids of each input line, space-separated, one line per input line.",
    )
    encode.add_argument("inputs", nargs="*", metavar="INPUT", help="text files (default: standard input)")
    encode.add_argument(
        "--model", default="mistral-v1",
        help="tokenizer file or folder (.gguf, .model, tokenizer.json, HF folder) or a bundled "
             "name (default: mistral-v1)",
    )
    encode.add_argument(
        "--special", choices=("all", "none"), default="none",
        help="match special tokens spelled in the text (default: none: text stays text)",
    )
    encode.add_argument("--add-special-tokens", action="store_true", help="add BOS/EOS as the model says")
    encode.add_argument("--threads", type=int, default=None, help="encoding threads (default: all cores)")
    args = parser.parse_args(argv)

    import spmbpe

    try:
        tok = spmbpe.load(args.model)
    except (OSError, spmbpe.SpmbpeError, NotImplementedError) as e:
        print(f"spmbpe: cannot load the model: {e}", file=sys.stderr)
        return 2
    if args.threads is not None and args.threads < 1:
        print("spmbpe: --threads must be at least 1", file=sys.stderr)
        return 2
    out = sys.stdout
    try:
        for name, stream in _inputs(args.inputs):
            for batch in _batches(name, stream):
                for ids in tok.encode_batch(
                    batch, special=args.special, add_special_tokens=args.add_special_tokens,
                    num_threads=args.threads,
                ):
                    out.write(" ".join(map(str, ids)))
                    out.write("\n")
        out.flush()
    except _InputError as e:
        print(f"spmbpe: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    return 0


class _InputError(Exception):
    pass


def _inputs(paths: List[str]) -> Iterator:
    if not paths:
        yield "<stdin>", sys.stdin.buffer
        return
    for path in paths:
        try:
            f = open(path, "rb")
        except OSError as e:
            raise _InputError(f"cannot read {path}: {e.strerror}") from None
        with f:
            yield path, f


def _batches(name: str, stream) -> Iterator[List[str]]:
    batch: List[str] = []
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _InputError(f"{name}, line {number}: invalid UTF-8 at byte {e.start}") from None
        # One document per line: the line ending (\n or \r\n) is not text.
        if line.endswith("\n"):
            line = line[:-2] if line.endswith("\r\n") else line[:-1]
        batch.append(line)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
