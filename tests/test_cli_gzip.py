"""The command line on gzip-compressed input: `spmbpe encode corpus.jsonl.gz`
gives what `zcat corpus.jsonl.gz | spmbpe encode` gives, for text and JSONL
input, files and standard input, single and concatenated members; a
truncated or corrupt stream is a one-line error that leaves no output.

Most runs call main() in this process (fast); a few run the command as a
subprocess, as a user would."""

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spmbpe.cli import main

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
ROOT = Path(__file__).parent.parent
MODEL = DATA / "mistral-v1.model"  # the bundled default, by its fixture file
REFERENCE = DATA / "mistral-v1.model.jsonl"  # {"text", "sp": sentencepiece's ids} rows


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def here(capsysbinary, monkeypatch):
    """main(args) in this process, `stdin` as standard input."""

    def run(args, stdin=b""):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main([str(a) for a in args])
        out, err = capsysbinary.readouterr()
        return Result(code, out, err)

    return run


def run(args, stdin=b""):
    return subprocess.run(
        [sys.executable, "-m", "spmbpe", *map(str, args)], input=stdin, capture_output=True, cwd=ROOT, timeout=120
    )


def ok(result):
    assert result.returncode == 0, result.stderr
    return result


def one_line_error(result, *parts):
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert err.startswith("spmbpe: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, err
    return err


def gz(data, **kw):
    return gzip.compress(data, mtime=0, **kw)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Plain files and their .gz twins: the texts of the sentencepiece
    reference rows as JSONL ("text") and, single-line ones, as text; real
    corpus lines as text and as JSONL ("body")."""
    folder = tmp_path_factory.mktemp("gz")
    rows = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines()]
    one_line = [r for r in rows if "\n" not in r["text"] and "\r" not in r["text"]]
    ja = CORPUS.joinpath("multi_ja.txt").read_text(encoding="utf-8").split("\n")[:800]
    files = {
        "ref.jsonl": "".join(json.dumps({"text": r["text"]}) + "\n" for r in rows).encode("utf-8"),
        "ref.txt": "".join(r["text"] + "\n" for r in one_line).encode("utf-8"),
        "botchan.txt": b"\n".join(CORPUS.joinpath("en_botchan.txt").read_bytes().split(b"\n")[:1500]) + b"\n",
        "ja.jsonl": "".join(json.dumps({"n": i, "body": t}, ensure_ascii=i % 2 == 0) + "\n"
                            for i, t in enumerate(ja)).encode("utf-8"),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
        (folder / (name + ".gz")).write_bytes(gz(data))
    expected = {"ref.jsonl": [r["sp"] for r in rows], "ref.txt": [r["sp"] for r in one_line]}
    return folder, files, expected


def ids_of(stdout):
    return [json.loads(line) for line in stdout.decode().splitlines()]


# ------------------------------------------------------------------ same ids


@pytest.mark.parametrize("name, extra", [
    ("ref.jsonl", []),
    ("ref.txt", []),
    ("botchan.txt", []),
    ("ja.jsonl", ["--field", "body"]),
])
def test_gzip_input_gives_the_ids_of_the_plain_file(inputs, here, name, extra):
    folder, _, expected = inputs
    common = ["encode", "--model", MODEL, "--format", "jsonl", "--batch-size", "16K", *extra]
    plain = ok(here([*common, folder / name]))
    packed = ok(here([*common, folder / (name + ".gz")]))
    assert packed.stdout == plain.stdout and plain.stdout.count(b"\n") > 100
    if name in expected:  # sentencepiece's own ids (tests/data), not only our plain run
        assert ids_of(packed.stdout) == expected[name]


def test_every_output_format_and_count_from_gzip(inputs, here, tmp_path):
    folder, files, expected = inputs
    src = [folder / "ref.txt.gz", folder / "ja.jsonl.gz"]
    plain_src = [folder / "ref.txt", folder / "ja.jsonl"]
    for fmt in ("npy", "bin"):
        ok(here(["encode", "--field", "body", "--format", fmt, "-o", tmp_path / f"gz.{fmt}", *src]))
        ok(here(["encode", "--field", "body", "--format", fmt, "-o", tmp_path / f"plain.{fmt}", *plain_src]))
        for suffix in ((".npy", ".docs.npy") if fmt == "npy" else (".bin", ".idx")):
            assert (tmp_path / f"gz{suffix}").read_bytes() == (tmp_path / f"plain{suffix}").read_bytes()
    ids, starts = np.load(tmp_path / "gz.npy"), np.load(tmp_path / "gz.docs.npy").tolist()
    n = len(expected["ref.txt"])
    assert [ids[starts[i] : starts[i + 1]].tolist() for i in range(n)] == expected["ref.txt"]
    meta = json.loads((tmp_path / "gz.bin.meta.json").read_text())
    assert meta["complete"] and [i["bytes"] for i in meta["inputs"]] == [os.path.getsize(p) for p in src]

    counted = json.loads(ok(here(["count", "--json", "--field", "body", *src])).stdout)
    plain = json.loads(ok(here(["count", "--json", "--field", "body", *plain_src])).stdout)
    assert [r["name"] for r in counted["inputs"]] == [str(p) for p in src]
    # Tokens, documents and bytes of text (decompressed) are those of the plain files.
    assert [{k: r[k] for k in ("tokens", "documents", "bytes")} for r in counted["inputs"]] == [
        {k: r[k] for k in ("tokens", "documents", "bytes")} for r in plain["inputs"]
    ]
    # bytes: the UTF-8 bytes of the documents' text (not of the file, and
    # not of the line ends or the JSON around the texts).
    ref_docs = files["ref.txt"].decode("utf-8").split("\n")[:-1]
    assert counted["inputs"][0]["bytes"] == sum(len(d.encode("utf-8")) for d in ref_docs)
    ja_docs = [json.loads(line)["body"] for line in files["ja.jsonl"].decode("utf-8").splitlines()]
    assert counted["inputs"][1]["bytes"] == sum(len(d.encode("utf-8")) for d in ja_docs)


def test_gzip_is_told_by_its_magic_bytes_and_input_format_still_applies(inputs, here, tmp_path):
    folder, files, expected = inputs
    disguised = tmp_path / "ref.jsonl"  # gzip data without the .gz name
    disguised.write_bytes(gz(files["ref.jsonl"]))
    assert ids_of(ok(here(["encode", "--format", "jsonl", disguised])).stdout) == expected["ref.jsonl"]
    odd_name = tmp_path / "rows.gz"  # .gz, but no .jsonl before it: text unless told
    odd_name.write_bytes(gz(files["ref.jsonl"]))
    as_jsonl = ok(here(["encode", "--format", "jsonl", "--input-format", "jsonl", odd_name]))
    assert ids_of(as_jsonl.stdout) == expected["ref.jsonl"]
    as_text = ok(here(["encode", "--format", "jsonl", odd_name]))
    assert len(ids_of(as_text.stdout)) == len(expected["ref.jsonl"])  # each JSON line encoded as text
    assert ids_of(as_text.stdout) != expected["ref.jsonl"]


def test_standard_input_gzip(inputs, here):
    folder, files, expected = inputs
    packed = gz(files["ref.jsonl"])
    got = ok(here(["encode", "--format", "jsonl", "--input-format", "jsonl", "-"], packed))
    assert ids_of(got.stdout) == expected["ref.jsonl"]
    # Through a real pipe (`cat corpus.txt.gz | spmbpe encode`).
    piped = ok(run(["encode", "--batch-size", "8K"], gz(files["botchan.txt"])))
    assert piped.stdout == ok(here(["encode", folder / "botchan.txt"])).stdout
    assert piped.stderr == b""
    assert ok(here(["encode"], gz(b"Hello world\n"))).stdout == b"22557 1526\n"  # reference ids


def test_concatenated_members_read_as_zcat_does(inputs, here, tmp_path):
    folder, files, expected = inputs
    rows = files["ref.jsonl"]
    cut = rows.index(b"\n", len(rows) // 3) + 40  # the second member starts inside a line
    multi = tmp_path / "multi.jsonl.gz"
    multi.write_bytes(gz(rows[:cut]) + gz(rows[cut:], compresslevel=1) + gz(b""))  # `cat a.gz b.gz c.gz`
    assert ids_of(ok(here(["encode", "--format", "jsonl", multi])).stdout) == expected["ref.jsonl"]
    assert ids_of(ok(here(["encode", "--format", "jsonl", "--input-format", "jsonl"], multi.read_bytes())).stdout) \
        == expected["ref.jsonl"]
    # gzip's zero padding after the last member is allowed, as by zcat.
    padded = tmp_path / "padded.txt.gz"
    padded.write_bytes((folder / "ref.txt.gz").read_bytes() + bytes(7))
    assert ok(here(["encode", "--format", "jsonl", padded])).stdout == \
        ok(here(["encode", "--format", "jsonl", folder / "ref.txt"])).stdout


def test_empty_gzip_inputs(here, tmp_path):
    empty = tmp_path / "empty.txt.gz"
    empty.write_bytes(gz(b""))
    nothing = tmp_path / "zero.jsonl.gz"  # a file of zero bytes
    nothing.write_bytes(b"")
    for path in (empty, nothing):
        result = ok(here(["encode", path]))
        assert result.stdout == b"" and result.stderr == b""
    assert ok(here(["encode"], gz(b""))).stdout == b""
    counted = json.loads(ok(here(["count", "--json", empty, nothing])).stdout)
    assert counted["total"] == {"tokens": 0, "documents": 0, "bytes": 0}
    ok(here(["encode", "--format", "npy", "-o", tmp_path / "out.npy", empty]))
    assert np.load(tmp_path / "out.npy").tolist() == [] and np.load(tmp_path / "out.docs.npy").tolist() == [0]


# ------------------------------------------------------------------ errors


def files_in(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("fmt", ["txt", "npy"])
def test_a_truncated_gzip_file_is_an_error_that_leaves_no_output(inputs, here, tmp_path, fmt):
    folder, files, _ = inputs
    packed = (folder / "botchan.txt.gz").read_bytes()
    bad = tmp_path / "cut.txt.gz"
    bad.write_bytes(packed[: len(packed) * 2 // 3])  # batches were encoded and written before the end
    before = files_in(tmp_path)
    result = here(["encode", "--batch-size", "8K", "--format", fmt, "-o", tmp_path / f"out.{fmt}", bad])
    err = one_line_error(result, f"{bad}: truncated gzip data", f"at byte {len(packed) * 2 // 3:,}",
                         "of the decompressed data")
    assert int(err.split("after line ")[1].split(" ")[0].replace(",", "")) > 500
    assert files_in(tmp_path) == before  # no output, no temporary file


def test_truncated_gzip_through_a_subprocess_and_stdin(inputs, here, tmp_path):
    folder, _, _ = inputs
    packed = (folder / "ja.jsonl.gz").read_bytes()
    out = tmp_path / "o.txt"
    result = run(["encode", "--field", "body", "--input-format", "jsonl", "--batch-size", "8K", "-o", out],
                 packed[:-20])
    one_line_error(result, "<stdin>: truncated gzip data")
    assert files_in(tmp_path) == []
    header_only = here(["encode"], packed[:5])  # not even a whole gzip header
    one_line_error(header_only, "<stdin>: truncated gzip data", "at byte 5")


def _bad_block_member():
    """A gzip member whose deflate data starts with block type 3 (invalid)."""
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x07" + bytes(20)


@pytest.mark.parametrize("case, message", [
    ("bad block", "corrupt gzip data (invalid block type)"),
    ("crc", "corrupt gzip data (CRC check failed"),
    ("length", "corrupt gzip data (Incorrect length of data produced)"),
    ("trailing", "corrupt gzip data (data after a gzip member that is not another gzip member)"),
    ("method", "corrupt gzip data (Unknown compression method)"),
])
def test_corrupt_gzip_data_is_an_error_that_leaves_no_output(inputs, here, tmp_path, case, message):
    folder, files, _ = inputs
    good = gz(files["botchan.txt"])
    data = {
        "bad block": good + _bad_block_member(),  # a second member that is broken
        "crc": good[:-8] + bytes([good[-8] ^ 1]) + good[-7:],
        "length": good[:-4] + bytes([good[-4] ^ 1]) + good[-3:],
        "trailing": good + b"trailing junk\n",
        "method": good[:2] + b"\x07" + good[3:],
    }[case]
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(data)
    before = files_in(tmp_path)
    result = here(["encode", "--batch-size", "8K", "--format", "bin", "-o", tmp_path / "out.bin", bad])
    err = one_line_error(result, str(bad), message, "of the decompressed data")
    if case != "method":  # the whole first member was good
        assert f"after line 1,500 (byte {len(files['botchan.txt']):,})" in err
    assert files_in(tmp_path) == before


def test_a_gz_name_on_data_that_is_not_gzip(here, tmp_path):
    fake = tmp_path / "plain.txt.gz"
    fake.write_bytes(b"Hello world\n")
    one_line_error(here(["encode", "-o", tmp_path / "o.txt", fake]), f"{fake}: not gzip data", "1f 8b")
    assert files_in(tmp_path) == ["plain.txt.gz"]


@pytest.mark.parametrize("fmt, lines", [
    ("txt", [b"one", b"two", b"bad \xc3( here", b"four"]),
    ("jsonl", [b'{"text": "one"}', b"", b'{"text": "bad \xc3( here"}', b'{"text": "four"}']),
])
def test_invalid_utf8_inside_gzip_names_the_line_and_the_decompressed_offset(here, tmp_path, fmt, lines):
    data = b"\n".join(lines) + b"\n"
    plain = tmp_path / f"bad.{fmt}"
    plain.write_bytes(data)
    packed = tmp_path / f"bad.{fmt}.gz"
    packed.write_bytes(gz(data))
    offset = data.index(b"\xc3")
    in_line = offset - (data.index(lines[2]))
    plain_err = one_line_error(here(["encode", plain]), f"{plain}, line 3: invalid UTF-8 at byte {in_line} of the line")
    err = one_line_error(
        here(["encode", "-o", tmp_path / "o.npy", packed]),
        f"{packed}, line 3: invalid UTF-8 at byte {in_line} of the line, byte {offset} of the decompressed data "
        "(--errors replace or skip to go on)",
    )
    assert "decompressed" not in plain_err and err.replace(str(packed), str(plain)).replace(
        f", byte {offset} of the decompressed data", "") == plain_err
    assert not (tmp_path / "o.npy").exists()
    for errors in ("replace", "skip"):
        a = ok(here(["encode", "--errors", errors, plain]))
        b = ok(here(["encode", "--errors", errors, packed]))
        documents = len(lines) - (fmt == "jsonl")  # (a blank JSONL line is no document)
        assert a.stdout == b.stdout and a.stdout.count(b"\n") == documents - (errors == "skip")


def test_invalid_utf8_deep_in_a_large_gzip_stream(inputs, here, tmp_path):
    folder, files, _ = inputs
    data = files["botchan.txt"]
    at = data.index(b"\n", len(data) - 5000) + 1  # a line far past the first read blocks
    bad = data[:at] + b"x\xff\n" + data[at:]
    path = tmp_path / "deep.txt.gz"
    path.write_bytes(gz(bad))
    line = data[:at].count(b"\n") + 1
    one_line_error(here(["encode", "--batch-size", "4K", path]),
                   f"{path}, line {line}: invalid UTF-8 at byte 1 of the line, byte {at + 1:,} of the decompressed data")


# ------------------------------------------------------------------ progress, decode


def test_progress_counts_the_compressed_bytes_against_the_file_size(inputs, here):
    folder, files, _ = inputs
    path = folder / "botchan.txt.gz"
    result = ok(here(["encode", "--progress", "--batch-size", "16K", path]))
    last = result.stderr.decode().splitlines()[-1]
    size = os.path.getsize(path) / 1e6
    text = len(files["botchan.txt"]) / 1e6
    assert "1,500 documents" in last, last
    assert f"{text:,.1f} MB of text ({size:,.1f}/{size:,.1f} MB of input files, 100%)" in last, last
    plain = ok(here(["encode", "--progress", folder / "botchan.txt"]))
    assert "MB of text" not in plain.stderr.decode() and "(100%)" in plain.stderr.decode()


def test_decode_reads_gzip_id_files(inputs, here, tmp_path):
    folder, files, _ = inputs
    texts = [line.rstrip("\r") for line in files["botchan.txt"].decode("utf-8").split("\n")[:-1]]  # CRLF file
    for fmt in ("txt", "jsonl"):
        ids = ok(here(["encode", "--format", fmt, folder / "botchan.txt"])).stdout
        path = tmp_path / f"ids.{fmt}.gz"
        path.write_bytes(gz(ids))
        assert ok(here(["decode", path])).stdout.decode("utf-8").split("\n")[:-1] == texts
        assert ok(here(["decode", "--input-format", fmt], gz(ids))).stdout.decode("utf-8").split("\n")[:-1] == texts
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes((tmp_path / "ids.txt.gz").read_bytes()[:-30])
    one_line_error(here(["decode", "-o", tmp_path / "back.txt", cut]), f"{cut}: truncated gzip data")
    assert not (tmp_path / "back.txt").exists()
    npy = tmp_path / "x.npy.gz"
    npy.write_bytes(gz(b"\x93NUMPY"))
    one_line_error(here(["decode", npy]), "npy input", "gzip")
