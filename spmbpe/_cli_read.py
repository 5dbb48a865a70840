"""Reading documents for the command line: text files (one document per
line), JSONL files (one document per object) or standard input, in batches
bounded in bytes so that memory stays bounded whatever the input size.

Any input may be gzip-compressed (InputStream): a name ending in ``.gz``,
or data that starts with the gzip magic bytes ``1f 8b`` (standard input
too), is decompressed as it is read, never whole."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import stat
import sys
import zlib
from array import array
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator, List, Optional, Sequence, Tuple, cast

from ._cli_common import CliError
from ._core import count_newlines, jsonl_field_lines, jsonl_fields, read_buffer, utf8_valid_prefix

__all__ = [
    "Batch", "LineBlock", "DOCUMENT_MODES", "DocumentDecoder", "DocumentReader", "InputStream", "GZIP_MAGIC",
    "gzip_named", "input_format_of", "input_size",
]

_BLOCK = 1 << 20  # bytes read at a time (a longer line is read whole)
_SURROGATE = re.compile("[\ud800-\udfff]")
# The JSON type of a value json.loads made, but for str and dict ("object").
_JSON_TYPES = {type(None): "null", bool: "boolean", int: "number", float: "number", list: "array"}

GZIP_MAGIC = b"\x1f\x8b"


def gzip_named(path: str) -> bool:
    """Whether the name of `path` says gzip (ends in .gz)."""
    return path != "-" and path.lower().endswith(".gz")


def _not_gzip(name: str) -> CliError:
    return CliError(
        f"{name}: not gzip data (the name ends in .gz, but the file does not start with the gzip "
        f"magic bytes 1f 8b)"
    )


class _Source:
    """The bytes of an open binary stream, its first two (`head`, read to
    tell gzip data) given back first; `count`: the bytes handed out so far
    (for gzip input: the compressed position)."""

    def __init__(self, f: IO[bytes], own: bool) -> None:
        self._f = f
        self._read: Callable[[int], bytes] = getattr(f, "read1", f.read)
        # (Every binary file object has readinto, though IO[bytes] does not say so.)
        self._readinto: Callable[[memoryview], int] = getattr(f, "readinto1", None) or cast(Any, f).readinto
        self.own = own
        head = b""
        while len(head) < 2:
            got = self._read(2 - len(head))
            if not got:
                break
            head += got
        self.head = head
        self._pending = head
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        if self._pending:
            data = self._pending if n < 0 else self._pending[:n]
            self._pending = self._pending[len(data) :]
        elif n < 0:
            data = self._f.read()
        else:
            data = self._read(n)
        self.count += len(data)
        return data

    def readinto(self, view: memoryview) -> int:
        """read(len(view)) into `view`, straight from the file."""
        if self._pending:
            n = min(len(view), len(self._pending))
            view[:n] = self._pending[:n]
            self._pending = self._pending[n:]
        else:
            n = self._readinto(view)
        self.count += n
        return n

    def seek(self, n: int) -> int:
        raise io.UnsupportedOperation("seek")  # gzip reading never seeks back

    def close(self) -> None:
        if self.own:
            self._f.close()


def _stdin() -> IO[bytes]:
    """Standard input as an unbuffered file: a reader thread blocked inside
    sys.stdin.buffer when an interrupt ends the run holds its lock, which the
    interpreter then cannot take at exit (SIGABRT); a raw read holds none."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return sys.stdin.buffer  # replaced by a non-file stream (tests)
    return open(fd, "rb", buffering=0, closefd=False)


class InputStream(io.RawIOBase):
    """One input (a path, or ``-``: standard input), plain or gzip, as
    bytes: ``read1(n)`` returns up to `n` bytes, as soon as some are there
    (b"" at the end); also a raw stream for io.BufferedReader.  Gzip input
    is decompressed as it is read, concatenated members one after the other
    as zcat does.  `position()`: the bytes of the input file read so far
    (compressed bytes for gzip), what progress measures against the file
    size."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.label = "<stdin>" if path == "-" else path
        f: IO[bytes]
        if path == "-":
            f = _stdin()
        else:
            try:
                f = open(path, "rb")
            except OSError as e:
                raise CliError(f"cannot read {path}: {e.strerror}") from None
        try:
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        except (OSError, ValueError, io.UnsupportedOperation):
            regular = False
        try:
            self._src = _Source(f, own=path != "-")
        except BaseException:
            if path != "-":
                f.close()
            raise
        head = self._src.head
        named = gzip_named(path)
        if named and head and head != GZIP_MAGIC:
            self._src.close()
            raise _not_gzip(self.label)
        self.compressed = named or head == GZIP_MAGIC
        self._gz = gzip.GzipFile(fileobj=self._src, mode="rb") if self.compressed else None
        # A regular file fills whole blocks; a pipe gives what has arrived
        # (its lines are encoded while it pauses).
        self._fill = regular
        self.decompressed = 0  # bytes of decompressed data returned (gzip)
        self.lines = 0  # and the line ends in them

    def position(self) -> int:
        return self._src.count

    def read1(self, n: int = -1) -> bytes:
        if self._gz is None:
            return self._src.read(n)
        if n < 0:
            n = _BLOCK
        parts: List[bytes] = []
        got = 0
        try:
            # Up to n bytes (a pipe: what has arrived), counted as they come,
            # so that an error says how far the good data went.
            while got < n:
                chunk = self._gz.read1(n - got)
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
                self.decompressed += len(chunk)
                self.lines += chunk.count(b"\n")
                if not self._fill:
                    break
        except EOFError:
            raise CliError(
                f"{self.label}: truncated gzip data: the input ends at byte {self._src.count:,} "
                f"inside a compressed stream, {self._where()}"
            ) from None
        except (zlib.error, gzip.BadGzipFile) as e:
            detail = str(e)
            if detail.startswith("Error ") and ": " in detail:
                detail = detail.split(": ", 1)[1]  # zlib's "Error -3 while decompressing data: "
            elif detail.startswith("Not a gzipped file"):
                detail = "data after a gzip member that is not another gzip member"
            raise CliError(
                f"{self.label}: corrupt gzip data ({detail}) in the first {self._src.count:,} bytes "
                f"of the input, {self._where()}"
            ) from None
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _where(self) -> str:
        return f"after line {self.lines:,} (byte {self.decompressed:,}) of the decompressed data"

    def readinto(self, b: Any) -> int:
        """read1(len(b)) into `b` (plain input straight from the file)."""
        view = memoryview(b).cast("B")
        if self._gz is None:
            return self._src.readinto(view)
        data = self.read1(len(view))
        view[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if self.closed:
            return
        # (getattr: also from IOBase.__del__ after __init__ raised.)
        gz: Optional[gzip.GzipFile] = getattr(self, "_gz", None)
        src: Optional[_Source] = getattr(self, "_src", None)
        try:
            if gz is not None:
                gz.close()
        finally:
            if src is not None:
                src.close()
            super().close()


class LineBlock:
    """The documents of a run of whole lines of text input, one per line
    (without its "\\n" and a "\\r" before it), kept as the UTF-8 bytes read:
    the encoder hands them to the merge as they are (a str per line costs
    more than merging a short line); `strings()` gives them as strs."""

    __slots__ = ("data", "count", "_strings")

    def __init__(self, data: bytes, newlines: Optional[int] = None) -> None:
        """`newlines`: how many "\\n" `data` holds, when already counted."""
        self.data = data
        if newlines is None:
            newlines = count_newlines(data)
        self.count = newlines + (not data.endswith(b"\n") and len(data) > 0)
        self._strings: Optional[List[str]] = None

    def strings(self) -> List[str]:
        if self._strings is None:
            text = self.data.decode("utf-8")
            lines = text.split("\n")
            tail = lines.pop()  # after the last "\n": a last line without one, kept as is
            if "\r" in text:
                lines = [s[:-1] if s.endswith("\r") else s for s in lines]
            if tail:
                lines.append(tail)
            self._strings = lines
        return self._strings

    def text_bytes(self) -> int:
        """UTF-8 bytes of the documents' text."""
        data = self.data
        return len(data) - data.count(b"\n") - data.count(b"\r\n")

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[str]:
        return iter(self.strings())

    def __getitem__(self, index: Any) -> Any:
        return self.strings()[index]


@dataclass(eq=False)
class Batch:
    """Documents read together, from one input: `columns`, one list (or
    LineBlock) per JSONL key; `column_records`, the input records (lines, or
    files with ``documents="file"``) read from the start of the run just
    after each document, what a sharded run resumes from; `records`, the
    same at the end of the batch; `nbytes`, the bytes of (decompressed)
    input covered, of which `skipped_bytes` were passed over (``--resume``)."""

    source: str
    columns: List[Any]
    nbytes: int
    records: int
    column_records: List[List[int]]
    file_bytes: int  # of the input file read meanwhile (compressed ones for gzip)
    compressed: bool
    skipped_bytes: int

    def text_bytes(self, column: int = 0) -> int:
        """UTF-8 bytes of the text of a column's documents, measured when
        asked (count), not for every batch."""
        docs = self.columns[column]
        if isinstance(docs, LineBlock):
            return docs.text_bytes()
        return len("".join(docs).encode("utf-8"))


#: How text input is cut into documents (``--documents``).
DOCUMENT_MODES = ("line", "paragraph", "file")


def input_format_of(name: str, requested: str) -> str:
    """``txt`` or ``jsonl``: as requested, else from the file name (a .gz
    ending left out: x.jsonl.gz is JSONL)."""
    if requested != "auto":
        return requested
    base = name.lower()
    if base.endswith(".gz"):
        base = base[:-3]
    return "jsonl" if base.endswith((".jsonl", ".ndjson")) else "txt"


def input_size(path: str) -> Optional[int]:
    """The size of a regular file (compressed, for gzip), else None (pipes,
    standard input)."""
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if os.path.isfile(path) else None


class DocumentDecoder:
    """The documents of blocks of whole lines of one input, as the
    DocumentReader's options say; errors name the input and the line."""

    def __init__(self, fields: List[str], errors: str, documents: str) -> None:
        self.fields = fields
        self.field = fields[0]
        self.field_keys = [f.encode("utf-8") for f in fields]  # as core/jsonl.pyx compares them
        self.errors = errors
        self.documents = documents
        self.skipped = 0  # documents left out (errors="skip")
        self.file_base = 0  # records before the current input
        self.compressed = False  # whether the current input is gzip
        self._paragraph: List[str] = []  # lines of the paragraph read so far
        self._paragraph_bad = False  # one of them is not UTF-8 (errors="skip")
        self._paragraph_end = 0  # the record of its last line

    def bad_utf8(self, name: str, record: int, in_line: int, offset: int) -> CliError:
        """The error for invalid UTF-8 at byte `in_line` of a line, byte
        `offset` of the (decompressed) input."""
        where = f", byte {offset:,} of the decompressed data" if self.compressed else ""
        return CliError(
            f"{self.location(name, record)}: invalid UTF-8 at byte {in_line} of the line{where} "
            f"(--errors replace or skip to go on)"
        )

    def text_docs(self, name: str, data: bytes, line_no: int, offset: int) -> Tuple[List[str], List[int]]:
        """Documents of a block of whole lines, and their record numbers."""
        lines, clean = self._text_lines(name, data, line_no, offset)
        if self.documents == "line":
            if clean:
                return lines, range(line_no, line_no + len(lines))  # type: ignore[return-value]
            kept = [(s, line_no + i) for i, s in enumerate(lines) if s is not None]
            self.skipped += len(lines) - len(kept)
            return [s for s, _ in kept], [r for _, r in kept]
        docs: List[str] = []
        recs: List[int] = []
        for i, line in enumerate(lines):
            if line is not None and not line.strip():
                self.end_paragraph(docs, recs)
                continue
            if line is None:
                self._paragraph_bad = True
            else:
                self._paragraph.append(line)
            self._paragraph_end = line_no + i
        return docs, recs

    def end_paragraph(self, docs: List[str], recs: List[int]) -> None:
        """Ends the paragraph read so far: its lines joined with "\\n"."""
        if self._paragraph_bad:
            self.skipped += 1
        elif self._paragraph:
            docs.append("\n".join(self._paragraph))
            recs.append(self._paragraph_end)
        self._paragraph = []
        self._paragraph_bad = False

    def _text_lines(self, name: str, data: bytes, line_no: int, offset: int) -> Tuple[List[Optional[str]], bool]:
        """The lines of a block of whole lines, without their line ends,
        and whether all are UTF-8; None for a line that is not
        (errors="skip")."""
        errors = "replace" if self.errors == "replace" else "strict"
        try:
            text = data.decode("utf-8", errors)
        except UnicodeDecodeError as e:
            if self.errors == "strict":
                bad_line = line_no + data.count(b"\n", 0, e.start)
                line_start = data.rfind(b"\n", 0, e.start) + 1
                raise self.bad_utf8(name, bad_line, e.start - line_start, offset + e.start) from None
            return self._text_lines_skipping(data), False
        lines = text.split("\n")
        lines.pop()  # after the last "\n"
        if "\r" in text:
            lines = [s[:-1] if s.endswith("\r") else s for s in lines]
        return lines, True  # type: ignore[return-value]

    def _text_lines_skipping(self, data: bytes) -> List[Optional[str]]:
        lines: List[Optional[str]] = []
        raw_lines = data.split(b"\n")
        raw_lines.pop()
        for raw in raw_lines:
            try:
                s = raw.decode("utf-8")
            except UnicodeDecodeError:
                lines.append(None)
                continue
            lines.append(s[:-1] if s.endswith("\r") else s)
        return lines

    def jsonl_docs(
        self, name: str, data: bytes, line_no: int, offset: int, known_utf8: bool = False
    ) -> List[Tuple[List[str], List[int]]]:
        """The documents of a block of JSONL lines, a column per field: the
        plain lines read by compiled code (core/jsonl.pyx), any other one by
        json.loads, in its place, which raises its error."""
        columns, numbers, refused = jsonl_fields(
            data if known_utf8 else self._utf8_jsonl(name, data, line_no, offset), self.field_keys, line_no
        )
        if refused:
            left_out = set()
            for position, line in refused:
                number = numbers[position]
                # A line that only Unicode calls whitespace is blank too.
                texts = self.json_texts(name, number, line) if line.strip() else None
                if texts is None:
                    left_out.add(position)
                    continue
                for column, text in zip(columns, texts):
                    column[position] = text
            if left_out:
                kept = [p for p in range(len(numbers)) if p not in left_out]
                columns = [[column[p] for p in kept] for column in columns]
                numbers = [numbers[p] for p in kept]
        # (No None is left in the columns; the columns share `numbers`, which
        # the caller copies.)
        return [(cast(List[str], texts), numbers) for texts in columns]

    def _utf8_jsonl(self, name: str, data: bytes, line_no: int, offset: int) -> bytes:
        """A block of JSONL lines as valid UTF-8, as --errors says: a line
        that is not UTF-8 raises (strict, after the lines before it, which
        may raise their own error first), takes U+FFFD for its bad bytes
        (replace), or is left out as a blank line is (skip)."""
        valid = utf8_valid_prefix(data)
        if valid == len(data):
            return data
        if self.errors == "replace":
            # ("\n" is never part of a UTF-8 sequence: the lines stay whole.)
            return data.decode("utf-8", "replace").encode("utf-8")
        if self.errors == "strict":
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                line_start = data.rfind(b"\n", 0, e.start) + 1
                self.jsonl_docs(name, data[:line_start], line_no, offset)  # their errors come first
                bad_line = line_no + data.count(b"\n", 0, line_start)
                raise self.bad_utf8(name, bad_line, e.start - line_start, offset + e.start) from None
            return data
        raw_lines = data.split(b"\n")
        raw_lines.pop()  # after the last "\n"
        for i, raw in enumerate(raw_lines):
            if utf8_valid_prefix(raw) != len(raw):
                raw_lines[i] = b""
                self.skipped += 1
        raw_lines.append(b"")
        return b"\n".join(raw_lines)

    def json_texts(self, name: str, number: int, line: str) -> Optional[List[str]]:
        """The texts of the fields of one JSONL line (None: left out)."""
        try:
            obj = json.loads(line)
        except ValueError as e:
            msg = getattr(e, "msg", str(e))
            raise CliError(f"{self.location(name, number)}: not JSON ({msg})") from None
        if not isinstance(obj, dict):
            raise CliError(
                f"{self.location(name, number)}: a JSON {type(obj).__name__}, not an object "
                f"with a {self.field!r} field"
            )
        texts = []
        for field in self.fields:
            if field not in obj:
                option = "--json-keys" if len(self.fields) > 1 else "--field"
                raise CliError(f"{self.location(name, number)}: the object has no {field!r} field ({option})")
            text = obj[field]
            if not isinstance(text, str):
                raise CliError(
                    f"{self.location(name, number)}: field {field!r} is a JSON "
                    f"{_JSON_TYPES.get(type(text), 'object')}, not a string"
                )
            if "\\u" in line and _SURROGATE.search(text):
                # "\ud800" escapes decode to lone surrogates: not UTF-8 text.
                if self.errors == "strict":
                    raise CliError(
                        f"{self.location(name, number)}: field {field!r} holds a lone surrogate "
                        f"(not valid UTF-8; --errors replace or skip to go on)"
                    )
                if self.errors == "skip":
                    self.skipped += 1
                    return None
                text = _SURROGATE.sub("\ufffd", text)
            texts.append(text)
        return texts

    def location(self, name: str, record: int) -> str:
        """'file, line N' for a global record number."""
        return f"{name}, line {record - self.file_base}"

    def whole_file(self, name: str, data: bytes, record: int) -> Tuple[List[str], List[int]]:
        """The document of a whole file's bytes (``documents="file"``) and
        its record: none when it is not UTF-8 (errors="skip")."""
        try:
            return [data.decode("utf-8", "replace" if self.errors == "replace" else "strict")], [record]
        except UnicodeDecodeError as e:
            if self.errors == "strict":
                line = self.file_base + data.count(b"\n", 0, e.start) + 1
                line_start = data.rfind(b"\n", 0, e.start) + 1
                raise self.bad_utf8(name, line, e.start - line_start, e.start) from None
            self.skipped += 1
            return [], []


class DocumentReader:
    """Documents of `paths` (``-`` or no path: standard input) in batches of
    about `batch_bytes` bytes of input, in input order, cut as the options
    of the same names say (docs/cli.md: ``--documents``, ``--field``,
    ``--json-keys``, ``--errors``, ``--skip-empty``); `skip_records` input
    records (lines; files with ``documents="file"``) are passed over unread
    first (``--resume``)."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        input_format: str = "auto",
        field: str = "text",
        fields: Optional[Sequence[str]] = None,
        errors: str = "strict",
        batch_bytes: int = 2 << 20,
        skip_records: int = 0,
        documents: str = "line",
        skip_empty: bool = False,
    ) -> None:
        if documents not in DOCUMENT_MODES:
            raise ValueError(f"documents must be one of {DOCUMENT_MODES}, not {documents!r}")
        self.paths = list(paths) or ["-"]
        self.input_format = input_format
        self.fields = list(fields) if fields else [field]
        self.decoder = DocumentDecoder(self.fields, errors, documents)
        self.batch_bytes = max(1, batch_bytes)
        self.skip_records = skip_records
        self.documents = documents
        self.skip_empty = skip_empty
        self.skipped_bytes = 0  # input bytes passed over (resume)
        self._skipped_reported = 0  # of which handed out in batches
        self.records = 0  # input records read so far, over all inputs
        self.empty = 0  # empty documents left out (skip_empty)

    @property
    def skipped(self) -> int:
        """Documents left out because they are not UTF-8 (errors="skip")."""
        return self.decoder.skipped

    @property
    def columns(self) -> int:
        return len(self.fields)

    def check_inputs(self) -> None:
        """CliError for the first input that cannot be opened, or that
        `documents` does not apply to (before any output is started)."""
        for path in self.paths:
            if self.documents != "line" and self._format(path) == "jsonl":
                raise CliError(
                    f"{path}: --documents {self.documents} applies to text input; JSONL input has a "
                    f"document per object"
                )
            if path == "-":
                continue
            if os.path.isdir(path):
                raise CliError(f"{path}: is a directory, not an input file")
            try:
                with open(path, "rb") as f:
                    # (Only a regular file is read here: what is read from a
                    # pipe would be lost.)
                    head = f.read(2) if gzip_named(path) and os.path.isfile(path) else b""
            except OSError as e:
                raise CliError(f"cannot read {path}: {e.strerror}") from None
            if head and head != GZIP_MAGIC:
                raise _not_gzip(path)
        if self.columns > 1 and any(self._format(p) != "jsonl" for p in self.paths):
            raise CliError("several JSONL keys need JSONL input (--input-format jsonl, or .jsonl files)", 2)

    def _format(self, path: str) -> str:
        return input_format_of("" if path == "-" else path, self.input_format)

    def __iter__(self) -> Iterator[Batch]:
        for path in self.paths:
            name = "<stdin>" if path == "-" else path
            fmt = self._format(path)
            self.decoder.file_base = self.records
            if self.documents == "file" and self.skip_records:
                # A file this run's earlier part encoded whole (resume).
                self.skip_records -= 1
                self.records += 1
                self.skipped_bytes += input_size(path) or 0
                continue
            stream = InputStream(path)
            try:
                if self.documents == "file":
                    yield self._whole_file(name, stream)
                else:
                    yield from self._batches(name, stream, fmt)
            finally:
                stream.close()

    # ------------------------------------------------------------ internals

    def _batch(
        self, name: str, stream: InputStream, columns: Sequence[Tuple[Any, Any]], nbytes: int,
        file_bytes: int,
    ) -> Batch:
        texts = [c[0] for c in columns]
        records = [c[1] for c in columns]
        if self.skip_empty:
            for k, (docs, recs) in enumerate(columns):
                if "" in docs:
                    keep = [i for i, t in enumerate(docs) if t]
                    self.empty += len(docs) - len(keep)
                    texts[k] = [docs[i] for i in keep]
                    records[k] = [recs[i] for i in keep]
        skipped = self.skipped_bytes - self._skipped_reported
        self._skipped_reported = self.skipped_bytes
        return Batch(name, texts, nbytes + skipped, self.records, records, file_bytes, stream.compressed, skipped)

    def _batches(self, name: str, stream: InputStream, fmt: str) -> Iterator[Batch]:
        columns: List[Tuple[List[str], List[int]]] = [([], []) for _ in self.fields]
        # Lines of text input stay bytes (LineBlock) while every block of the
        # batch is UTF-8 and each line is a document as it is; a block that
        # is not UTF-8 (errors="replace"/"skip") turns the batch into strs.
        bytes_ok = fmt != "jsonl" and self.documents == "line" and not self.skip_empty
        raw = bytes_ok
        # JSONL fields likewise, as lines of their texts' UTF-8 (a column's
        # parts and records), while every block is plain JSONL whose texts
        # hold no line end (jsonl_field_lines).
        fields_ok = fmt == "jsonl" and not self.skip_empty
        field_lines: List[Tuple[List[bytearray], "array[int]"]] = [([], array("q")) for _ in self.fields]
        blocks: List[bytes] = []
        first_line = 0  # the record of the first line of `blocks`
        newlines = 0  # in `blocks` (_skip counted them: a block's lines)
        nbytes = 0
        self.decoder.compressed = stream.compressed
        done = 0  # stream.position() at the last batch
        for data, line_no, offset in self._line_blocks(stream):
            nbytes += len(data)
            if raw and utf8_valid_prefix(data) == len(data):
                if not blocks:
                    first_line = line_no
                    newlines = 0
                blocks.append(data)
                newlines += self.records - line_no + 1
            elif fields_ok and (utf8 := utf8_valid_prefix(data) == len(data)) and (
                lines := jsonl_field_lines(data, self.decoder.field_keys, line_no)
            ) is not None:
                texts_by_field, numbers = lines
                for (parts, line_numbers), texts in zip(field_lines, texts_by_field):
                    parts.append(texts)
                    line_numbers.extend(numbers)
            else:
                if fmt == "jsonl":
                    if field_lines[0][1]:  # the batch so far as strs, before these
                        for (docs, recs), (parts, line_numbers) in zip(columns, field_lines):
                            docs.extend(LineBlock(b"".join(parts), len(line_numbers)).strings())
                            recs.extend(line_numbers)
                    # (UTF-8 already, where the check above found it.)
                    known_utf8 = fields_ok and utf8
                    fields_ok = False  # for the rest of the batch
                    field_lines = [([], array("q")) for _ in self.fields]
                    got = self.decoder.jsonl_docs(name, data, line_no, offset, known_utf8)
                else:
                    if blocks:  # the batch so far as strs, before these
                        joined = LineBlock(b"".join(blocks))
                        columns[0][0].extend(joined.strings())
                        columns[0][1].extend(range(first_line, first_line + len(joined)))
                        blocks = []
                    raw = False  # for the rest of the batch
                    got = [self.decoder.text_docs(name, data, line_no, offset)]
                for (docs, recs), (new_docs, new_recs) in zip(columns, got):
                    docs.extend(new_docs)
                    recs.extend(new_recs)
            if nbytes >= self.batch_bytes:
                position = stream.position()
                yield self._batch(name, stream, self._packed(blocks, first_line, newlines)
                                  or self._field_blocks(field_lines) or columns, nbytes, position - done)
                columns = [([], []) for _ in self.fields]
                blocks = []
                raw = bytes_ok
                fields_ok = fmt == "jsonl" and not self.skip_empty
                field_lines = [([], array("q")) for _ in self.fields]
                nbytes, done = 0, position
        if fmt != "jsonl" and self.documents == "paragraph":
            docs, recs = columns[0]
            self.decoder.end_paragraph(docs, recs)  # the input's last paragraph
        yield self._batch(name, stream, self._packed(blocks, first_line, newlines)
                          or self._field_blocks(field_lines) or columns, nbytes, stream.position() - done)

    @staticmethod
    def _field_blocks(field_lines: List[Tuple[List[bytearray], "array[int]"]]) -> Optional[List[Tuple[Any, Any]]]:
        """The batch's JSONL columns as LineBlocks of their texts' lines
        (None: no such lines, the documents are strs)."""
        if not field_lines[0][1]:
            return None
        return [(LineBlock(b"".join(parts), len(numbers)), numbers) for parts, numbers in field_lines]

    @staticmethod
    def _packed(
        blocks: List[Any], first_line: int, newlines: Optional[int] = None
    ) -> Optional[List[Tuple[Any, Any]]]:
        """The batch's one column as a LineBlock of `blocks` and its records
        (None: no blocks, the documents are strs); `newlines`: the "\\n" in
        them, when counted."""
        if not blocks:
            return None
        lines = LineBlock(blocks[0] if len(blocks) == 1 else b"".join(blocks), newlines)
        return [(lines, range(first_line, first_line + len(lines)))]

    def _whole_file(self, name: str, stream: InputStream) -> Batch:
        """The one document of a file (``documents="file"``)."""
        self.decoder.compressed = stream.compressed
        data = b"".join(iter(lambda: stream.read1(_BLOCK), b""))
        self.records += 1
        column = self.decoder.whole_file(name, data, self.records)
        return self._batch(name, stream, [column], len(data), stream.position())

    def _line_blocks(self, stream: InputStream) -> Iterator[Tuple[Any, int, int]]:
        """Blocks of whole lines (bytes or bytearray, each line ending in
        "\\n"; the last line of the input may lack it), the global record
        number of the block's first line and the block's byte offset in the
        (decompressed) input; lines still to skip (resume) are dropped here.
        Each block is read into a buffer of its own that goes on to the merge
        uncopied (a copy costs a pass over the text and its page faults); a
        read takes a batch's worth and a little more, so that a batch is
        mostly one block."""
        carry: List[Any] = []  # the parts of a line longer than a block
        tail = b""  # the start of the line the last block ended inside
        # (A pipe gives what has arrived, up to that: its lines are encoded
        # while it pauses.)
        size = self.batch_bytes + min(self.batch_bytes // 16, _BLOCK)
        offset = 0  # of the next block of lines
        while True:
            buf = read_buffer(len(tail) + size)
            buf[: len(tail)] = tail
            got = stream.readinto(memoryview(buf)[len(tail) :])
            if not got:
                if carry or tail:
                    yield from self._skip(b"".join(carry + [tail, b"\n"]), offset)
                return
            end = len(tail) + got
            cut = buf.rfind(b"\n", len(tail), end)
            if cut < 0:
                del buf[end:]
                carry.append(buf)  # one long line: read on until its end
                tail = b""
                continue
            tail = bytes(buf[cut + 1 : end])
            del buf[cut + 1 :]
            data: Any = buf
            if carry:
                carry.append(buf)
                data = b"".join(carry)
                carry = []
            yield from self._skip(data, offset)
            offset += len(data)

    def _skip(self, data: bytes, offset: int) -> Iterator[Tuple[bytes, int, int]]:
        n = count_newlines(data)
        if self.skip_records:
            if n <= self.skip_records:
                self.skip_records -= n
                self.records += n
                self.skipped_bytes += len(data)
                return
            parts = data.split(b"\n", self.skip_records)
            self.records += self.skip_records
            self.skip_records = 0
            offset += len(data) - len(parts[-1])
            self.skipped_bytes += len(data) - len(parts[-1])
            data = parts[-1]
            n = count_newlines(data)
        line_no = self.records + 1
        self.records += n
        yield data, line_no, offset
