"""Reading documents for the command line: text files (one document per
line), JSONL files (one document per object) or standard input, in batches
bounded in bytes so that memory stays bounded whatever the input size."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import BinaryIO, Iterator, List, Optional, Sequence, Tuple

from ._cli_common import CliError

__all__ = ["Batch", "DocumentReader", "input_format_of", "input_size"]

_BLOCK = 1 << 20  # bytes read at a time (a longer line is read whole)
_SURROGATE = re.compile("[\ud800-\udfff]")


class Batch:
    """Documents read together, from one input.

    `records` is the number of input records (lines) read from the start of
    the run up to the end of this batch; `doc_records[i]` the same count just
    after document i (what a sharded run records to resume from)."""

    __slots__ = ("source", "texts", "nbytes", "records", "doc_records")

    def __init__(
        self,
        source: str,
        texts: List[str],
        nbytes: int,
        records: int,
        doc_records: Sequence[int],
    ) -> None:
        self.source = source
        self.texts = texts
        self.nbytes = nbytes
        self.records = records
        self.doc_records = doc_records


def input_format_of(name: str, requested: str) -> str:
    """``txt`` or ``jsonl``: as requested, else from the file name."""
    if requested != "auto":
        return requested
    return "jsonl" if name.lower().endswith((".jsonl", ".ndjson")) else "txt"


def input_size(path: str) -> Optional[int]:
    """The size of a regular file, else None (pipes, standard input)."""
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if os.path.isfile(path) else None


class DocumentReader:
    """Documents of `paths` (``-`` or no path: standard input) in batches of
    about `batch_bytes` bytes of input, in input order.

    `errors` says what invalid UTF-8 does: ``strict`` raises CliError naming
    the file and line, ``replace`` puts U+FFFD in its place, ``skip`` leaves
    the document out (counted in `skipped`). `skip_records` input records
    (lines) are passed over unread first (``--resume``)."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        input_format: str = "auto",
        field: str = "text",
        errors: str = "strict",
        batch_bytes: int = 2 << 20,
        skip_records: int = 0,
    ) -> None:
        self.paths = list(paths) or ["-"]
        self.input_format = input_format
        self.field = field
        self.errors = errors
        self.batch_bytes = max(1, batch_bytes)
        self.skip_records = skip_records
        self.records = 0  # input records (lines) read so far, over all inputs
        self.skipped = 0  # documents left out (errors="skip")
        self._file_base = 0  # records before the current input

    def check_inputs(self) -> None:
        """Raises CliError for the first input that cannot be opened
        (before any output is started)."""
        for path in self.paths:
            if path == "-":
                continue
            if os.path.isdir(path):
                raise CliError(f"{path}: is a directory, not an input file")
            try:
                with open(path, "rb"):
                    pass
            except OSError as e:
                raise CliError(f"cannot read {path}: {e.strerror}") from None

    def __iter__(self) -> Iterator[Batch]:
        for path in self.paths:
            name = "<stdin>" if path == "-" else path
            fmt = input_format_of("" if path == "-" else path, self.input_format)
            self._file_base = self.records
            if path == "-":
                yield from self._batches(name, sys.stdin.buffer, fmt)
                continue
            try:
                f = open(path, "rb")
            except OSError as e:
                raise CliError(f"cannot read {path}: {e.strerror}") from None
            with f:
                yield from self._batches(name, f, fmt)

    # ------------------------------------------------------------ internals

    def _batches(self, name: str, stream: BinaryIO, fmt: str) -> Iterator[Batch]:
        texts: List[str] = []
        doc_records: List[int] = []
        nbytes = 0
        split = self._jsonl_docs if fmt == "jsonl" else self._text_docs
        for data, line_no in self._line_blocks(stream):
            nbytes += len(data)
            got, recs = split(name, data, line_no)
            texts.extend(got)
            doc_records.extend(range(line_no, line_no + len(got)) if recs is None else recs)
            if nbytes >= self.batch_bytes:
                yield Batch(name, texts, nbytes, self.records, doc_records)
                texts, doc_records, nbytes = [], [], 0
        yield Batch(name, texts, nbytes, self.records, doc_records)

    def _line_blocks(self, stream: BinaryIO) -> Iterator[Tuple[bytes, int]]:
        """Blocks of whole lines (bytes, each line ending in "\\n"; the last
        line of the input may lack it) and the global record number of the
        block's first line; lines still to skip (resume) are dropped here."""
        carry: List[bytes] = []  # the start of a line longer than a block
        # read1: what is there (up to a block), not a full block: a pipe that
        # pauses is encoded up to its last line meanwhile.
        read = getattr(stream, "read1", stream.read)
        size = min(_BLOCK, self.batch_bytes)
        while True:
            block = read(size)
            if not block:
                if carry:
                    carry.append(b"\n")
                    yield from self._skip(b"".join(carry))
                return
            cut = block.rfind(b"\n")
            if cut < 0:
                carry.append(block)  # one long line: read on until its end
                continue
            if carry:
                carry.append(block[: cut + 1])
                data = b"".join(carry)
            else:
                data = block[: cut + 1] if cut + 1 < len(block) else block
            carry = [block[cut + 1 :]] if cut + 1 < len(block) else []
            yield from self._skip(data)

    def _skip(self, data: bytes) -> Iterator[Tuple[bytes, int]]:
        n = data.count(b"\n")
        if self.skip_records:
            if n <= self.skip_records:
                self.skip_records -= n
                self.records += n
                return
            parts = data.split(b"\n", self.skip_records)
            self.records += self.skip_records
            self.skip_records = 0
            data = parts[-1]
            n = data.count(b"\n")
        line_no = self.records + 1
        self.records += n
        yield data, line_no

    def _text_docs(self, name: str, data: bytes, line_no: int) -> Tuple[List[str], Optional[List[int]]]:
        """Documents of a block of whole lines, and their record numbers
        (None: every line is a document)."""
        errors = "replace" if self.errors == "replace" else "strict"
        try:
            text = data.decode("utf-8", errors)
        except UnicodeDecodeError as e:
            if self.errors == "strict":
                bad_line = line_no + data.count(b"\n", 0, e.start)
                line_start = data.rfind(b"\n", 0, e.start) + 1
                raise CliError(
                    f"{self._location(name, bad_line)}: invalid UTF-8 at byte {e.start - line_start} "
                    f"of the line (--errors replace or skip to go on)"
                ) from None
            return self._text_docs_skipping(data, line_no)
        lines = text.split("\n")
        lines.pop()  # after the last "\n"
        if "\r" in text:
            lines = [s[:-1] if s.endswith("\r") else s for s in lines]
        return lines, None

    def _text_docs_skipping(self, data: bytes, line_no: int) -> Tuple[List[str], List[int]]:
        docs: List[str] = []
        recs: List[int] = []
        raw_lines = data.split(b"\n")
        raw_lines.pop()
        for i, raw in enumerate(raw_lines):
            try:
                s = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.skipped += 1
                continue
            docs.append(s[:-1] if s.endswith("\r") else s)
            recs.append(line_no + i)
        return docs, recs

    def _jsonl_docs(self, name: str, data: bytes, line_no: int) -> Tuple[List[str], Optional[List[int]]]:
        docs: List[str] = []
        recs: List[int] = []
        raw_lines = data.split(b"\n")
        raw_lines.pop()
        field = self.field
        for i, raw in enumerate(raw_lines):
            number = line_no + i
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if self.errors == "strict":
                    raise CliError(
                        f"{self._location(name, number)}: invalid UTF-8 at byte {e.start} of the line "
                        f"(--errors replace or skip to go on)"
                    ) from None
                if self.errors == "skip":
                    self.skipped += 1
                    continue
                line = raw.decode("utf-8", "replace")
            if not line.strip():
                continue  # a blank line is no document
            try:
                obj = json.loads(line)
            except ValueError as e:
                msg = getattr(e, "msg", str(e))
                raise CliError(f"{self._location(name, number)}: not JSON ({msg})") from None
            if not isinstance(obj, dict):
                raise CliError(
                    f"{self._location(name, number)}: a JSON {type(obj).__name__}, not an object "
                    f"with a {field!r} field"
                )
            if field not in obj:
                raise CliError(f"{self._location(name, number)}: the object has no {field!r} field (--field)")
            text = obj[field]
            if not isinstance(text, str):
                raise CliError(
                    f"{self._location(name, number)}: field {field!r} is a JSON "
                    f"{_json_type(text)}, not a string"
                )
            if "\\u" in line and _SURROGATE.search(text):
                # "\ud800" escapes decode to lone surrogates: not UTF-8 text.
                if self.errors == "strict":
                    raise CliError(
                        f"{self._location(name, number)}: field {field!r} holds a lone surrogate "
                        f"(not valid UTF-8; --errors replace or skip to go on)"
                    )
                if self.errors == "skip":
                    self.skipped += 1
                    continue
                text = _SURROGATE.sub("\ufffd", text)
            docs.append(text)
            recs.append(number)
        return docs, recs

    def _location(self, name: str, record: int) -> str:
        """'file, line N' for a global record number (lines of earlier
        inputs are subtracted)."""
        return f"{name}, line {record - self._file_base}"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"
