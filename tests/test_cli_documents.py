"""What a document is on the command line (issue 23, item 5): a line, a
paragraph or a file of text input, one or several JSONL fields, empty ones
left out or kept, with BOS/EOD around them; each run's ids compared with
the API's ``encode`` of the documents as the test cuts them itself, and
each setting recorded in the metadata and checked by --resume."""

import gzip
import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe._cli_common import CliError
from spmbpe._core import jsonl_field_lines, jsonl_fields
from spmbpe.cli import main

from long_run import examples

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def here(capsysbinary, monkeypatch):
    """main() in this process, on `stdin`."""

    def call(args, stdin=b""):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main([str(a) for a in args])
        out, err = capsysbinary.readouterr()
        return Result(code, out, err)

    return call


def ok(result):
    assert result.returncode == 0, result.stderr.decode()
    return result


def one_line_error(result, *parts):
    err = result.stderr.decode()
    assert result.returncode != 0
    assert err.startswith("spmbpe: error: ") and err.count("\n") == 1, err
    for part in parts:
        assert part in err, err


@pytest.fixture(scope="module")
def v1():
    return spmbpe.load("mistral-v1")


def docs_of(stdout):
    return [json.loads(line) for line in stdout.decode().splitlines()]


def npy_docs(stem):
    ids, starts = np.load(f"{stem}.npy"), np.load(f"{stem}.docs.npy").tolist()
    return [ids[a:b].tolist() for a, b in zip(starts[:-1], starts[1:])]


def paragraphs(text):
    """Paragraphs as the test reads them: runs of lines between lines that
    are empty or only whitespace, joined with "\\n" (line ends without \\r)."""
    lines = [s[:-1] if s.endswith("\r") else s for s in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    out, current = [], []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


# ------------------------------------------------------------------ empty documents


def test_skip_empty_leaves_out_empty_documents_only(here, v1, tmp_path):
    stdin = b"a\n\nb c\n   \n\r\nlast"
    kept = ok(here(["encode", "--format", "jsonl", "--skip-empty"], stdin))
    # "   " is not empty (its spaces are tokens); "" and "\r\n" lines are.
    assert docs_of(kept.stdout) == [v1.encode(t) for t in ("a", "b c", "   ", "last")]
    assert kept.stderr.decode() == "spmbpe: left out 2 empty documents (--skip-empty)\n"
    every = ok(here(["encode", "--format", "jsonl"], stdin))
    assert docs_of(every.stdout) == [v1.encode(t) for t in ("a", "", "b c", "   ", "", "last")]

    ok(here(["encode", "--skip-empty", "-o", tmp_path / "e.npy"], stdin))
    assert npy_docs(tmp_path / "e") == [v1.encode(t) for t in ("a", "b c", "   ", "last")]
    meta = json.loads((tmp_path / "e.npy.meta.json").read_text())
    assert meta["settings"]["skip_empty"] is True and meta["documents"] == 4

    jsonl = b'{"text": "x"}\n{"text": ""}\n{"text": "y"}\n'
    got = ok(here(["encode", "--format", "jsonl", "--input-format", "jsonl", "--skip-empty"], jsonl))
    assert docs_of(got.stdout) == [v1.encode("x"), v1.encode("y")]
    counted = json.loads(ok(here(["count", "--json", "--skip-empty"], stdin)).stdout)
    assert counted["total"]["documents"] == 4


# ------------------------------------------------------------------ paragraphs and files


def test_paragraphs_are_runs_of_lines_between_blank_lines(here, v1, tmp_path):
    lines = (CORPUS / "en_botchan.txt").read_text(encoding="utf-8").split("\n")[:600]
    # Blank lines (empty, spaces, several in a row) after every few lines.
    blanks = ["", "  ", "\t", ""]
    text = "".join(line + "\n" + ("\n".join(blanks[: i % 4 + 1]) + "\n" if i % 3 == 2 else "")
                   for i, line in enumerate(lines))[:30000]
    first = tmp_path / "a.txt"
    first.write_text(text, encoding="utf-8", newline="")
    second = tmp_path / "b.txt.gz"  # gzip, CRLF, blank lines of spaces, no final newline
    tail = "para one\r\nstill one\r\n \t \r\n\r\npara two\r\n\r\n\r\nthree"
    second.write_bytes(gzip.compress(tail.encode()))
    expected = paragraphs(text) + ["para one\nstill one", "para two", "three"]
    assert len(expected) > 50
    got = ok(here(["encode", "--documents", "paragraph", "--format", "jsonl", "--batch-size", "4K", first, second]))
    assert docs_of(got.stdout) == [v1.encode(p) for p in expected]
    # A paragraph does not run on into the next input.
    joined = ok(here(["encode", "--documents", "paragraph", "--format", "jsonl", first, first]))
    assert len(docs_of(joined.stdout)) == 2 * len(paragraphs(text))


def test_a_paragraph_with_invalid_utf8_is_left_out_whole(here, v1):
    stdin = b"one\ntwo\n\nbad \xff here\nsame para\n\nfour\n"
    got = ok(here(["encode", "--documents", "paragraph", "--format", "jsonl", "--errors", "skip"], stdin))
    assert docs_of(got.stdout) == [v1.encode("one\ntwo"), v1.encode("four")]
    assert b"skipped 1 documents" in got.stderr
    one_line_error(here(["encode", "--documents", "paragraph"], stdin), "<stdin>, line 4", "invalid UTF-8")


def test_one_document_per_file(here, v1, tmp_path):
    files = []
    for i, name in enumerate(("en_botchan.txt", "multi_ja.txt", "code_py.txt")):
        data = (CORPUS / name).read_bytes()[: 5000 + 3000 * i]
        data = data[: data.rfind(b"\n") - 3]  # the text as is: no final newline here
        path = tmp_path / f"{i}.txt"
        path.write_bytes(data)
        files.append(path)
    packed = tmp_path / "3.txt.gz"
    packed.write_bytes(gzip.compress(b"gzip\r\ntext\n"))
    empty = tmp_path / "4.txt"
    empty.write_bytes(b"")
    files += [packed, empty]
    texts = [p.read_bytes().decode("utf-8") for p in files[:3]] + ["gzip\r\ntext\n", ""]
    got = ok(here(["encode", "--documents", "file", "--format", "jsonl", *files]))
    assert docs_of(got.stdout) == [v1.encode(t) for t in texts]
    skipped = ok(here(["encode", "--documents", "file", "--skip-empty", "-o", tmp_path / "f.npy", *files]))
    assert npy_docs(tmp_path / "f") == [v1.encode(t) for t in texts[:4]], skipped.stderr

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nfine\nbad \xc3( here\n")
    one_line_error(here(["encode", "--documents", "file", files[0], bad]), f"{bad}, line 3", "invalid UTF-8")
    got = ok(here(["encode", "--documents", "file", "--errors", "skip", "--format", "jsonl", bad, files[2]]))
    assert docs_of(got.stdout) == [v1.encode(texts[2])]
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text('{"text": "a"}\n')
    one_line_error(here(["encode", "--documents", "file", jsonl]), "--documents file", "JSONL")


# ------------------------------------------------------------------ several JSONL keys


def test_several_json_keys_write_an_output_per_key(here, v1, tmp_path):
    ja = (CORPUS / "multi_ja.txt").read_text(encoding="utf-8").split("\n")[:300]
    rows = [{"id": i, "text": t, "title": f"title {i}", "extra": 1} for i, t in enumerate(ja)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    for fmt, layout in (("npy", None), ("bin", None)):
        ok(here(["encode", "--json-keys", "text,title", "--format", fmt, "-o", tmp_path / f"c.{fmt}", src]))
    # Megatron's preprocess_data writes PREFIX_KEY_document.bin/.idx per key;
    # spmbpe OUT_KEY.EXT.
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("c"))
    assert names == sorted(
        [f"c_{k}{s}" for k in ("text", "title") for s in (".npy", ".docs.npy", ".npy.meta.json")]
        + [f"c_{k}{s}" for k in ("text", "title") for s in (".bin", ".idx", ".bin.meta.json")]
    )
    for key in ("text", "title"):
        assert npy_docs(tmp_path / f"c_{key}") == [v1.encode(r[key]) for r in rows]
        meta = json.loads((tmp_path / f"c_{key}.npy.meta.json").read_text())
        assert meta["settings"]["json_key"] == key and meta["settings"]["json_keys"] == ["text", "title"]
        flat = np.fromfile(tmp_path / f"c_{key}.bin", dtype="<u2").tolist()
        assert flat == [i for r in rows for i in v1.encode(r[key])]
    counted = json.loads(ok(here(["count", "--json", "--json-keys", "text,title", src])).stdout)
    assert [r["name"] for r in counted["inputs"]] == [f"{src} [text]", f"{src} [title]"]
    assert counted["inputs"][1]["tokens"] == sum(len(v1.encode(r["title"])) for r in rows)
    assert counted["inputs"][1]["bytes"] == sum(len(r["title"].encode()) for r in rows)

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "title": "b"}\n{"text": "a"}\n')
    one_line_error(here(["encode", "--json-keys", "text,title", "-o", tmp_path / "x.npy", bad]),
                   f"{bad}, line 2", "no 'title' field", "--json-keys")
    one_line_error(here(["encode", "--json-keys", "text,title", src]), "--json-keys", "an output per key")
    one_line_error(here(["encode", "--json-keys", "text,title", "--resume", "--shard-size", "1K",
                         "-o", tmp_path / "x.npy", src]), "--resume", "--json-keys")
    assert not list(tmp_path.glob("x*"))


# ------------------------------------------------------------------ BOS and EOD


@pytest.mark.parametrize("fmt", ["jsonl", "npy", "bin", "ds"])
def test_append_eod_and_prepend_bos(here, v1, tmp_path, fmt):
    texts = ["Hello world", "", "a</s>b"]
    stdin = ("\n".join(texts) + "\n").encode()
    bos, eos = v1.bos_id, v1.eos_id
    cases = {
        ("--append-eod",): [v1.encode(t) + [eos] for t in texts],
        ("--prepend-bos",): [[bos] + v1.encode(t) for t in texts],
        ("--prepend-bos", "--append-eod"): [[bos] + v1.encode(t) + [eos] for t in texts],
        # mistral-v1 adds BOS by itself: --add-special-tokens + --prepend-bos adds it once.
        ("--add-special-tokens", "--prepend-bos", "--append-eod"): [[bos] + v1.encode(t) + [eos] for t in texts],
        ("--append-eod", "--skip-empty"): [v1.encode(t) + [eos] for t in texts if t],
    }
    for flags, expected in cases.items():
        if fmt == "jsonl":
            got = docs_of(ok(here(["encode", "--format", "jsonl", *flags], stdin)).stdout)
        else:
            out = tmp_path / f"o.{fmt}"
            ok(here(["encode", *flags, "-o", out], stdin))
            got = _array_docs(out, fmt)
            meta = json.loads((tmp_path / f"o.{fmt}.meta.json").read_text())
            assert meta["settings"]["append_eod"] == ("--append-eod" in flags)
            assert meta["settings"]["prepend_bos"] == ("--prepend-bos" in flags)
        assert got == expected, flags


def _array_docs(out, fmt):
    stem = str(out)[: -len(fmt) - 1]
    if fmt == "npy":
        return npy_docs(stem)
    if fmt == "bin":
        raw = Path(stem + ".idx").read_bytes()
        n = int.from_bytes(raw[18:26], "little")
        lengths = np.frombuffer(raw, "<i4", n, 34)
        pointers = np.frombuffer(raw, "<i8", n, 34 + 4 * n)
        data = np.fromfile(out, dtype="<u2")
        return [data[p // 2 : p // 2 + m].tolist() for p, m in zip(pointers, lengths)]
    ids = np.fromfile(out, dtype="<u2")
    ends = np.fromfile(stem + ".ds.index", dtype="<u8").tolist()
    return [ids[a:b].tolist() for a, b in zip([0] + ends[:-1], ends)]


# ------------------------------------------------------------------ resume


def _cut_after(folder, stem, fmt, keep):
    """Makes a complete sharded run look interrupted after `keep` shards:
    its metadata as the run rewrote it then, the later shards gone."""
    meta_file = folder / f"{stem}.{fmt}.meta.json"
    meta = json.loads(meta_file.read_text())
    assert len(meta["shards"]) > keep + 1
    for shard in meta["shards"][keep:]:
        (folder / shard["ids"]).unlink()
        (folder / shard["index"]).unlink()
    meta["shards"] = meta["shards"][:keep]
    meta["documents"] = sum(s["documents"] for s in meta["shards"])
    meta["tokens"] = sum(s["tokens"] for s in meta["shards"])
    meta["complete"] = False
    meta_file.write_text(json.dumps(meta))
    return meta


def _resumed_as_whole(here, tmp_path, flags, inputs):
    """A sharded .ds run of `inputs` whole, and one cut after 3 shards and
    resumed: the resumed run's files must be the whole run's bytes (the
    metadata aside).  (the cut folder, its metadata after the cut, the
    resumed run's result)."""
    whole = tmp_path / "whole"
    cut = tmp_path / "cut"
    whole.mkdir()
    cut.mkdir()
    ok(here(["encode", *flags, "-o", whole / "o.ds", *inputs]))
    ok(here(["encode", *flags, "-o", cut / "o.ds", *inputs]))
    meta = _cut_after(cut, "o", "ds", 3)
    resumed = ok(here(["encode", *flags, "--resume", "-o", cut / "o.ds", *inputs]))
    assert sorted(p.name for p in cut.iterdir()) == sorted(p.name for p in whole.iterdir())
    for p in whole.iterdir():
        if not p.name.endswith(".meta.json"):
            assert (cut / p.name).read_bytes() == p.read_bytes(), p.name
    return cut, meta, resumed


@pytest.mark.parametrize("mode", ["paragraph", "file", "line"])
def test_resume_gives_the_bytes_of_an_uninterrupted_run(here, tmp_path, mode):
    folder = tmp_path / "in"
    folder.mkdir()
    text = (CORPUS / "multi_de.txt").read_text(encoding="utf-8")[:60000]
    text = text.replace(". ", ".\n\n", 200)  # paragraphs of a few lines
    inputs = []
    for i in range(6):
        path = folder / f"{i}.txt"
        path.write_text(text[i * 10000 : (i + 1) * 10000], encoding="utf-8")
        inputs.append(path)
    flags = ["--documents", mode, "--skip-empty", "--append-eod", "--shard-size", "1500", "--batch-size", "2K",
             "--format", "ds"]
    cut, meta, resumed = _resumed_as_whole(here, tmp_path, flags, inputs)
    records = meta["shards"][-1]["records"]
    assert resumed.stderr.decode().splitlines()[0] == (
        f"spmbpe: --resume: skipping 3 complete shards ({meta['documents']:,} documents, {records:,} "
        f"input records) of {cut / 'o.ds.meta.json'}; continuing with shard 3"
    )
    # Another document definition is another run: --resume refuses it.
    changed = [f for f in flags if f != "--skip-empty"]
    _cut_after(cut, "o", "ds", 2)
    one_line_error(here(["encode", *changed, "--resume", "-o", cut / "o.ds", *inputs]), "--resume", "settings")


@pytest.mark.parametrize("odd", [False, True], ids=["line blocks", "some lines json.loads's"])
def test_resume_of_jsonl_input_gives_the_bytes_of_an_uninterrupted_run(here, tmp_path, odd):
    # JSONL documents go as line blocks of their texts, with blank lines (no
    # document, but a record) between; `odd` puts in lines that are not
    # plain, and texts with line ends, which go as strs. The records each
    # shard ends at must bring a resumed run to the same bytes.
    lines = (CORPUS / "multi_de.txt").read_text(encoding="utf-8").splitlines()[:600]
    folder = tmp_path / "in"
    folder.mkdir()
    inputs = []
    for i in range(3):
        path = folder / f"{i}.jsonl"
        rows = []
        for k, line in enumerate(lines[i * 200 : (i + 1) * 200]):
            if k % 7 == 3:
                rows.append("")
            row = {"text": line}
            if odd and k % 11 == 5:
                row["score"] = float("nan")
            if odd and k % 13 == 6:
                row["text"] = line + "\n" + line
            rows.append(json.dumps(row))
        path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
        inputs.append(path)
    flags = ["--append-eod", "--shard-size", "1500", "--batch-size", "2K", "--format", "ds"]
    _resumed_as_whole(here, tmp_path, flags, inputs)
    # And the documents are live sentencepiece's ids of each JSONL text (the
    # command line's default model is Mistral v1's .model), then the EOS.
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))
    texts = [json.loads(r)["text"] for path in inputs for r in path.read_text(encoding="utf-8").splitlines() if r]
    single = tmp_path / "single.ds"
    ok(here(["encode", "--append-eod", "-o", single, *inputs]))
    assert _array_docs(single, "ds") == [sp.encode(t) + [sp.eos_id()] for t in texts]


# ------------------------------------------------------------------ JSONL lines: compiled, json.loads for the rest


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_space = st.sampled_from(["", " ", "\t", "\r", "  ", "\u00a0", "\u3000", "\x0b"])


def _other_escapes(draw, line):
    """`line` with, at random, its \\u escapes in upper case and its "/"
    escaped (JSON's, which json.dumps does not write)."""
    if draw(st.booleans()):
        line = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), line)
    if draw(st.booleans()):
        line = line.replace("/", "\\/")
    return line


@st.composite
def _jsonl_line(draw):
    obj = draw(st.dictionaries(st.sampled_from(["text", "meta", "id"]) | st.text(max_size=3), _json_values, max_size=4))
    if draw(st.booleans()):
        obj["text"] = draw(st.text() | st.sampled_from(["\ud800", "a\udfffb", "\U0001f600", "x\\u0041"]))
    value = obj if draw(st.sampled_from(["object", "object", "object", "other"])) == "object" else draw(_json_values)
    separators = draw(st.sampled_from([None, (",", ":")]))
    line = json.dumps(value, ensure_ascii=draw(st.booleans()), separators=separators)
    if re.search("[\ud800-\udfff]", line):  # a lone surrogate is not UTF-8: escaped, as JSON writes it
        line = json.dumps(value, ensure_ascii=True, separators=separators)
    # What json.dumps does not write but JSON allows: escapes in upper case or
    # of "/", whitespace around the structure, a field given twice (the last
    # wins), a value nested deeper than the compiled reader goes.
    line = _other_escapes(draw, line)
    if draw(st.booleans()):
        ws = draw(st.sampled_from([" ", "\t", "\r", "  \t"]))
        line = line.replace(", ", "," + ws).replace(": ", ws + ":" + ws)
    if line.startswith("{") and draw(st.booleans()):
        first = json.dumps(draw(st.text(max_size=3) | st.integers() | st.just("\ud83d\ude00")))
        line = '{"text": ' + first + ("," if len(line) > 2 else "") + line[1:]
    if line.startswith("{") and draw(st.integers(0, 9)) == 0:
        depth = draw(st.integers(60, 70))
        line = '{"deep": ' + "[" * depth + "]" * depth + ("," if len(line) > 2 else "") + line[1:]
    cut = draw(st.sampled_from(["none", "none", "none", "truncate", "twice"]))
    if cut == "truncate":
        line = line[: draw(st.integers(0, len(line)))]
    elif cut == "twice":
        line = line + draw(_space) + line
    return draw(_space) + line + draw(_space)


def _reference_docs(reader, name, raw_lines):
    """Each line (bytes) decoded as --errors says, then through json.loads
    (DocumentDecoder.json_texts): the documents, or the error's message;
    `reader` (a DocumentDecoder) counts what it skips."""
    docs = []
    offset = 0
    try:
        for number, raw in enumerate(raw_lines, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if reader.errors == "strict":
                    return str(reader.bad_utf8(name, number, e.start, offset + e.start))
                line = None if reader.errors == "skip" else raw.decode("utf-8", "replace")
                reader.skipped += line is None
            offset += len(raw) + 1
            if line is None or not line.strip():
                continue
            texts = reader.json_texts(name, number, line)
            if texts is not None:
                docs.append((number, texts))
    except CliError as e:
        return str(e)
    return docs


@settings(max_examples=examples(600), deadline=None)
@given(lines=st.lists(_jsonl_line(), min_size=1, max_size=6), errors=st.sampled_from(["strict", "replace", "skip"]),
       fields=st.sampled_from([None, ["text", "meta"], ["meta"]]),
       bad=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 60),
                              st.sampled_from([b"\xff", b"\xc3(", b"\xe3\x81", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])),
                    max_size=2))
def test_jsonl_lines_read_as_json_loads_reads_them(lines, errors, fields, bad):
    # A block's plain lines are read by compiled code (core/jsonl.pyx), and
    # a line that is not one plain object (other values, extra data, a lone
    # surrogate, a missing field) json.loads's way, in its place; a line
    # that is not UTF-8 (`bad` bytes put in) as --errors says. Documents and
    # errors must be json.loads's, line by line.
    from spmbpe._cli_read import DocumentReader

    reader, reference = (
        DocumentReader(["x.jsonl"], input_format="jsonl", field="text", fields=fields, errors=errors,
                       batch_bytes=1 << 20, documents="line", skip_empty=False).decoder
        for _ in range(2)
    )
    reader.file_base = reference.file_base = 0
    raw_lines = [line.replace("\n", " ").encode("utf-8") for line in lines]
    for index, at, junk in bad:
        raw = raw_lines[index % len(raw_lines)]
        at = min(at, len(raw))
        raw_lines[index % len(raw_lines)] = raw[:at] + junk + raw[at:]
    data = b"".join(raw + b"\n" for raw in raw_lines)
    expected = _reference_docs(reference, "x.jsonl", raw_lines)
    try:
        columns = reader.jsonl_docs("x.jsonl", data, 1, 0)
    except CliError as e:
        assert str(e) == expected
        return
    got = [(number, [column[0][k] for column in columns]) for k, number in enumerate(columns[0][1])]
    assert all(column[1] == columns[0][1] for column in columns)
    assert got == expected
    assert reader.skipped == reference.skipped


_plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _plain_jsonl_line(draw):
    obj = draw(st.dictionaries(st.sampled_from(["id", "url"]) | st.text(max_size=3), _plain_values, max_size=3))
    obj["text"] = draw(st.text() | st.sampled_from(["", "\U0001f600 a/b", "tab\there", 'q"uote\\', "\x00\x1f"]))
    obj["meta"] = draw(st.text(max_size=8))
    ws = st.sampled_from(["", " ", "\t", "\r", "  \t"])
    separators = (draw(ws) + "," + draw(ws), draw(ws) + ":" + draw(ws))  # JSON's whitespace around them
    line = _other_escapes(draw, json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=separators))
    if draw(st.booleans()):
        first = draw(st.sampled_from(['"earlier"', "12", '[1, {"a": null}]', '"\\u00e9"']))
        line = '{"text": ' + first + ', "meta": ' + first + ", " + line[1:]  # given again below: the last wins
    space = st.sampled_from(["", " ", "\t", "\r", " \r"])
    return draw(space) + line + draw(space)


@settings(max_examples=examples(500), deadline=None)
@given(lines=st.lists(_plain_jsonl_line(), min_size=1, max_size=8), blank=st.integers(0, 8),
       fields=st.sampled_from([["text"], ["text", "meta"], ["meta"]]))
def test_plain_jsonl_lines_are_read_by_compiled_code_as_json_loads_reads_them(lines, blank, fields):
    # Every line is the plain case: the compiled reader takes the block, and
    # its strings are json.loads's, byte for byte.
    lines = list(lines)
    lines.insert(blank % (len(lines) + 1), " \t\r")  # a blank line: no document, but a line
    block = "".join(line + "\n" for line in lines).encode("utf-8")
    columns, indices, refused = jsonl_fields(block, [f.encode() for f in fields], 0)
    assert refused == []
    expected = [(i, json.loads(line)) for i, line in enumerate(lines) if line.strip()]
    assert indices == [i for i, _ in expected]
    for k, field in enumerate(fields):
        assert columns[k] == [obj[field] for _, obj in expected]


# A string's plain bytes are taken 8 at a time: what ends or escapes a run
# ('"', "\\", a control character, and what lies past it) is put at every
# offset of those 8 bytes, and near the line's end.
_STOPS = ['"', "\\", "\n", "\x01", "\x1f", "/", "\u00e9", "\u2581", "\U0001f600", "\x7f", " "]


@settings(max_examples=examples(400), deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 17), st.sampled_from(_STOPS)), max_size=8),
       tail=st.integers(0, 17), ascii_only=st.booleans(), slash=st.booleans(), key=st.integers(0, 17))
def test_strings_read_8_bytes_at_a_time_are_the_json_loads_strings(runs, tail, ascii_only, slash, key):
    text = "".join("abcdefghijklmnopq"[:n] + stop for n, stop in runs) + "xyz" * tail
    name = "k" * key
    line = json.dumps({name: text[::-1], "text": text}, ensure_ascii=ascii_only)
    if slash:
        line = line.replace("/", "\\/")
    for block in (line.encode("utf-8") + b"\n", (line + " " * (tail % 9)).encode("utf-8") + b"\n"):
        assert jsonl_fields(block, [b"text", name.encode()], 0) == ([[text], [text[::-1]]], [0], [])
        # A control character left raw in the text is refused, wherever it is.
        raw = block.replace(b"yz", b"y\x02z", 1)
        if raw != block:
            assert jsonl_fields(raw, [b"text"], 0)[2] == [(0, raw[:-1].decode("utf-8"))]


def test_the_compiled_jsonl_reader_hands_back_what_is_not_plain():
    # Each of these is read json.loads's way (its document or its error),
    # in its place among the documents.
    for line in [b'{"text": 3}', b'{"text": "\\ud800"}', b'{"text": "\\udc00x"}', b'{"text": "a"} x', b'[1]',
                 b'{"text": NaN}', b'{"a": -Infinity, "text": "x"}', b'{"text": "a",}', b'{"text": "a\x01"}',
                 b'{"meta": "m"}', b'{}', b'{"text": "a"', b'{"text": "\\x41"}', b'{"text": 01}',
                 b'{"a": [1,], "text": "x"}', b'{"a": ' + b"[" * 65 + b"]" * 65 + b', "text": "x"}',
                 "\u3000".encode(), b'\x0b{"text": "a"}']:
        text = line.decode("utf-8")
        assert jsonl_fields(line + b"\n", [b"text"], 0) == ([[None]], [0], [(0, text)]), line
        # Only that line: the plain lines around it are read here.
        block = b'{"text": "fine"}\n \n' + line + b'\n{"text": "too"}\n'
        assert jsonl_fields(block, [b"text"], 0) == ([["fine", None, "too"]], [0, 2, 3], [(1, text)]), line


@pytest.mark.parametrize("number", ["0", "-0", "12", "1.5", "1e5", "1E+5", "-2.5e-3", "1e400", "01", "1.", ".5", "1e",
                                    "1e+", "-", "+1", "0x1", "1.5.2", "--1"])
def test_the_compiled_jsonl_reader_takes_a_number_where_json_loads_does(number):
    line = ('{"n": ' + number + ', "text": "x"}').encode()
    try:
        json.loads(line)
        valid = True
    except ValueError:
        valid = False
    assert (jsonl_fields(line + b"\n", [b"text"], 0) == ([["x"]], [0], [])) is valid


@settings(max_examples=examples(300), deadline=None)
@given(lines=st.lists(_plain_jsonl_line(), min_size=1, max_size=8),
       fields=st.sampled_from([["text"], ["text", "meta"], ["meta"]]))
def test_plain_jsonl_lines_as_lines_of_their_texts(lines, fields):
    # jsonl_field_lines: each field's texts as lines of UTF-8, the texts
    # json.loads gives; None only when a text holds a line end.
    block = "".join(line + "\n" for line in lines).encode("utf-8")
    keys = [f.encode() for f in fields]
    columns, indices, refused = jsonl_fields(block, keys, 0)
    assert refused == []
    got = jsonl_field_lines(block, keys, 10)
    if any("\n" in t or "\r" in t for column in columns for t in column):
        assert got is None
        return
    assert got is not None
    texts_by_field, numbers = got
    assert list(numbers) == [10 + i for i in indices]
    assert [bytes(t) for t in texts_by_field] == [
        "".join(t + "\n" for t in column).encode("utf-8") for column in columns
    ]


def test_jsonl_field_lines_refuses_a_block_with_a_line_that_is_not_plain():
    assert jsonl_field_lines(b'{"text": "a"}\n{"text": NaN}\n', [b"text"], 1) is None
    assert jsonl_field_lines(b'{"text": "a\\nb"}\n', [b"text"], 1) is None
    assert jsonl_field_lines(b'{"text": "a\\u000db"}\n', [b"text"], 1) is None
    texts, numbers = jsonl_field_lines(b'\n{"text": "a"}\n \n{"text": "\\u00e9"}\n', [b"text"], 5)
    assert texts == [bytearray("a\n\u00e9\n".encode())] and list(numbers) == [6, 8]


@st.composite
def _jsonl_file_line(draw):
    """A line of a JSONL file: plain, with a line end in its text, not
    plain (json.loads's way), or blank."""
    kind = draw(st.sampled_from(["plain", "plain", "plain", "line end", "not plain", "blank"]))
    text = draw(st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r"), max_size=12))
    if kind == "line end":
        text += draw(st.sampled_from(["\n", "\r", "\r\n"])) + text
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\t"]))
    line = json.dumps({"text": text, "meta": text[::-1]}, ensure_ascii=draw(st.booleans()))
    if kind == "not plain":
        line = line[:-1] + ', "score": NaN}'
    return line


@settings(max_examples=examples(150), deadline=None)
@given(lines=st.lists(_jsonl_file_line(), min_size=1, max_size=30), batch_bytes=st.integers(16, 400),
       fields=st.sampled_from([None, ["text", "meta"]]))
def test_a_jsonl_file_read_in_batches_gives_json_loads_documents(lines, batch_bytes, fields):
    # Batches of blocks, each read as lines of texts (a LineBlock per field)
    # or as strs, in any mix: the documents and their records are
    # json.loads's, in order.
    import tempfile

    from spmbpe._cli_read import DocumentReader, LineBlock

    names = fields or ["text"]
    expected = [(number, [json.loads(line)[f] for f in names])
                for number, line in enumerate(lines, 1) if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
        reader = DocumentReader([str(path)], input_format="jsonl", fields=fields, batch_bytes=batch_bytes)
        got = []
        for batch in reader:
            columns = [c.strings() if isinstance(c, LineBlock) else list(c) for c in batch.columns]
            for k, number in enumerate(batch.column_records[0]):
                got.append((number, [column[k] for column in columns]))
            assert all(list(r) == list(batch.column_records[0]) for r in batch.column_records)
    assert got == expected
