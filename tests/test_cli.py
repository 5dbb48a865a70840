"""The command line (`spmbpe encode|count|decode|info`, `python -m spmbpe`)
on real corpus files; every output format is compared with the API's ids.
Most runs call main() in this process (`run`); the program itself, as
`python -m spmbpe` in a process of its own, is run where the process
matters: its standard streams and exit status, signals, its environment."""

import errno
import io
import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import spmbpe
from spmbpe.cli import main

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
ROOT = Path(__file__).parent.parent
GGUF = str(DATA / "ggml-vocab-llama-spm.gguf")


def run_process(args, stdin=b"", cwd=ROOT):
    """`python -m spmbpe ARGS` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "spmbpe", *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=300
    )


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run(args, stdin=b"", cwd=ROOT):
    """main(ARGS) in this process (no interpreter start-up and imports each
    time), in `cwd`, with `stdin` as its standard input: its status and
    what it wrote to standard output and error, as run_process gives them
    (main() changes nothing in the process that calls it)."""
    saved = sys.stdin, sys.stdout, sys.stderr, os.getcwd()
    out, err = io.BytesIO(), io.BytesIO()
    streams = (io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", write_through=True))
    sys.stdin, sys.stdout, sys.stderr = streams
    os.chdir(cwd)
    try:
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code
        for stream in streams[1:]:
            stream.flush()
        return Result(code, out.getvalue(), err.getvalue())
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved[:3]
        os.chdir(saved[3])


def run_here(args, stdin=b"", *, capsysbinary, monkeypatch):
    """main() in this process (no interpreter start-up): for the checks of
    error messages; the subprocess runs above check the same paths."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main([str(a) for a in args])
    out, err = capsysbinary.readouterr()
    return Result(code, out, err)


def lines_of(path):
    """The documents of a text file as the command line reads it."""
    lines = Path(path).read_bytes().decode("utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [s[:-1] if s.endswith("\r") else s for s in lines]


def one_line_error(result, *parts):
    err = result.stderr.decode()
    assert result.returncode != 0
    assert err.startswith("spmbpe: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, err
    return err


def read_npy_output(stem):
    ids = np.load(f"{stem}.npy")
    starts = np.load(f"{stem}.docs.npy")
    return ids, starts


def read_megatron(stem):
    """A .bin/.idx pair read by the layout Megatron-LM's _IndexReader uses
    (megatron/core/datasets/indexed_dataset.py), written out here by hand
    rather than with spmbpe's reader."""
    raw = Path(f"{stem}.idx").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    version, code, n_seq, n_doc = struct.unpack_from("<QBQQ", raw, 9)
    assert version == 1 and n_doc == n_seq + 1
    dtype = {8: np.dtype("<u2"), 4: np.dtype("<i4")}[code]
    lengths = np.frombuffer(raw, "<i4", n_seq, 34)
    pointers = np.frombuffer(raw, "<i8", n_seq, 34 + 4 * n_seq)
    doc_idx = np.frombuffer(raw, "<i8", n_doc, 34 + 12 * n_seq)
    assert len(raw) == 34 + 12 * n_seq + 8 * n_doc
    assert doc_idx.tolist() == list(range(n_seq + 1))
    data = np.fromfile(f"{stem}.bin", dtype=dtype)
    docs = [data[p // dtype.itemsize : p // dtype.itemsize + n].tolist() for p, n in zip(pointers, lengths)]
    assert sum(map(len, docs)) == len(data)
    return dtype, docs


def split(ids, starts):
    starts = starts.tolist()
    return [ids[starts[i] : starts[i + 1]].tolist() for i in range(len(starts) - 1)]


@pytest.fixture(scope="module")
def v1():
    return spmbpe.load("mistral-v1")


@pytest.fixture(scope="module")
def corpus_inputs(tmp_path_factory):
    """A text file and a JSONL file of real corpus lines, and the documents
    of both in input order."""
    folder = tmp_path_factory.mktemp("inputs")
    text = CORPUS / "en_botchan.txt"
    ja = lines_of(CORPUS / "multi_ja.txt")[:3000]
    jsonl = folder / "ja.jsonl"
    with open(jsonl, "w", encoding="utf-8") as f:
        for i, line in enumerate(ja):
            f.write(json.dumps({"id": i, "body": line}, ensure_ascii=i % 2 == 0) + "\n")
            if i % 500 == 0:
                f.write("\n")  # blank lines are no documents
    return [str(text), str(jsonl)], lines_of(text) + ja


# ------------------------------------------------------------------ basics


def test_bundled_mistral_v1_is_the_fixture_model():
    bundled = spmbpe.load("mistral-v1")
    fixture = spmbpe.load(DATA / "mistral-v1.model")
    assert bundled.vocab_size == fixture.vocab_size == 32000
    # Reference row (sentencepiece, fixtures README): "Hello, world!".
    assert bundled.encode("Hello, world!") == [22557, 28725, 1526, 28808]
    text = (CORPUS / "en_botchan.txt").read_text(encoding="utf-8")[:20000]
    assert bundled.encode(text) == fixture.encode(text)


def test_the_bundled_model_ships_its_licence_notice():
    notice = Path(spmbpe.__file__).parent / "data" / "NOTICE-mistral-v1.txt"
    assert "Apache License, Version 2.0" in notice.read_text(encoding="utf-8")


def test_encode_stdin_prints_ids_per_line():
    result = run_process(["encode"], b"Hello world\n\nHello, world!\r\n")
    assert result.returncode == 0, result.stderr
    # sentencepiece's ids for these lines (the second is empty).
    assert result.stdout.decode().splitlines() == ["22557 1526", "", "22557 28725 1526 28808"]
    assert result.stderr == b""  # no progress line unless stderr is a terminal


def test_console_script_matches_python_m(console_script):
    # The script beside this interpreter (conftest.py), not one on PATH.
    result = subprocess.run([console_script, "encode"], input=b"Hello world\n", capture_output=True, timeout=300,
                            env={k: v for k, v in os.environ.items() if k != "PATH"})
    assert result.returncode == 0 and result.stdout == b"22557 1526\n"


_BLAS_PROBE = """
import os, runpy, sys
sys.argv = ["spmbpe", "info"]
try:
    runpy.run_module("spmbpe", run_name="__main__", alter_sys=True)
except SystemExit as e:
    assert e.code == 0, e.code
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.parametrize("preset", [None, "3"])
def test_the_program_keeps_numpy_to_one_blas_thread_unless_told(preset):
    # NumPy's OpenBLAS starts a spinning thread per core at import, which
    # took a core from the merging threads: the program (python -m spmbpe,
    # and the console script through the same function) asks for one,
    # unless the user set a number.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    result = subprocess.run([sys.executable, "-c", _BLAS_PROBE], capture_output=True, env=env, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines()[-1] == (preset or "1")


def test_the_console_script_is_console_main_and_main_leaves_the_environment(monkeypatch, capsys):
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name == "spmbpe"}
    assert scripts == {"spmbpe": "spmbpe.__main__:console_main"}
    # main() is also called from Python programs, whose NumPy it must not
    # set up.
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert main(["info"]) == 0
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    assert "mistral-v1" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["en_botchan.txt", "multi_ja.txt"])
def test_encode_files_equals_the_api(name):
    path = CORPUS / name
    result = run(["encode", "--model", DATA / "mistral-v3.model", path])
    assert result.returncode == 0, result.stderr
    tok = spmbpe.load(DATA / "mistral-v3.model")
    expected = [" ".join(map(str, tok.encode(line, special="none"))) for line in lines_of(path)]
    assert result.stdout.decode().split("\n")[:-1] == expected


def test_long_lines_crlf_and_a_last_line_without_newline(v1):
    long = " ".join(f"w{i % 97}" for i in range(20000))  # ~100 kB: many read blocks
    texts = ["a", long, "b c", "", "last"]
    result = run(["encode", "--batch-size", "1K", "--format", "jsonl"], f"a\r\n{long}\nb c\r\n\nlast".encode())
    assert result.returncode == 0, result.stderr
    assert [json.loads(s) for s in result.stdout.decode().splitlines()] == [v1.encode(t) for t in texts]


def test_special_tokens_are_text_unless_asked():
    plain = run(["encode", "--model", GGUF], b"a</s>b\n")
    special = run(["encode", "--model", GGUF, "--special", "all", "--add-special-tokens"], b"a</s>b\n")
    # llama.cpp golden rows for "a</s>b" (special=False / special=True, BOS).
    assert plain.stdout == b"263 829 29879 29958 29890\n"
    assert special.stdout == b"1 263 2 289\n"


# ------------------------------------------------------------------ formats


@pytest.fixture(scope="module")
def encoded(tmp_path_factory, corpus_inputs):
    """One run per output format over the same two inputs, with small
    batches (so documents cross many batch boundaries) on two threads."""
    inputs, _ = corpus_inputs
    out = tmp_path_factory.mktemp("encoded")
    common = ["--field", "body", "--threads", "2", "--batch-size", "64K"]
    results = {
        "txt": run(["encode", *common, "--output", out / "c.txt", *inputs]),
        "jsonl": run(["encode", *common, "--format", "jsonl", *inputs]),
        "npy": run(["encode", *common, "--output", out / "c.npy", *inputs]),
        "bin": run(["encode", *common, "--format", "bin", "--output", out / "c", *inputs]),
    }
    for fmt, result in results.items():
        assert result.returncode == 0, (fmt, result.stderr)
    return out, results


def test_every_output_format_equals_the_api(encoded, corpus_inputs, v1):
    out, results = encoded
    _, documents = corpus_inputs
    expected = [v1.encode(doc, special="none") for doc in documents]

    txt = (out / "c.txt").read_text().split("\n")
    assert txt.pop() == ""
    assert [list(map(int, line.split())) for line in txt] == expected

    assert [json.loads(line) for line in results["jsonl"].stdout.decode().splitlines()] == expected

    ids, starts = read_npy_output(out / "c")
    assert ids.dtype == np.uint16 and starts.dtype == np.int64
    assert starts[0] == 0 and starts[-1] == len(ids) and len(starts) == len(documents) + 1
    assert split(ids, starts) == expected

    dtype, docs = read_megatron(out / "c")
    assert dtype == np.uint16 and docs == expected
    assert np.array_equal(np.fromfile(out / "c.bin", dtype="<u2"), ids)  # what nanoGPT memory-maps


def test_metadata_beside_the_arrays(encoded, corpus_inputs, v1):
    out, _ = encoded
    _, documents = corpus_inputs
    n_tokens = sum(len(v1.encode(d, special="none")) for d in documents)
    for stem_files in (("c.npy", "c.docs.npy"), ("c.bin", "c.idx")):
        assert all((out / f).is_file() for f in stem_files)
    # Each output keeps its own metadata, named after it: the bin run
    # (which came last) did not overwrite the npy run's.
    assert not (out / "c.meta.json").exists()
    for fmt, ids_name, index_name in (("npy", "c.npy", "c.docs.npy"), ("bin", "c.bin", "c.idx")):
        meta = json.loads((out / f"c.{fmt}.meta.json").read_text())
        assert meta["spmbpe_version"] == spmbpe.__version__
        assert meta["tokenizer_fingerprint"] == v1.fingerprint
        assert meta["dtype"] == "uint16" and meta["format"] == fmt
        assert meta["documents"] == len(documents) and meta["tokens"] == n_tokens
        assert meta["complete"] is True
        assert meta["shards"] == [
            {"ids": ids_name, "index": index_name, "documents": len(documents), "tokens": n_tokens,
             "records": meta["shards"][0]["records"]}
        ]
    # No temporary file is left behind.
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_bos_eos_and_special_tokens_in_arrays(tmp_path, llama_spm):
    texts = ["a</s>b", "", "[INST] Hello world", "x" * 300]
    stdin = "\n".join(texts).encode() + b"\n"
    for special in ("none", "all"):
        result = run(["encode", "--model", GGUF, "--special", special, "--add-special-tokens",
                      "--format", "npy", "-o", tmp_path / special], stdin)
        assert result.returncode == 0, result.stderr
        ids, starts = read_npy_output(tmp_path / special)
        assert split(ids, starts) == [
            llama_spm.encode(t, special=special, add_special_tokens=True) for t in texts
        ]
    # llama.cpp's ids (golden rows): </s> is EOS only when asked.
    assert split(*read_npy_output(tmp_path / "all"))[0] == [1, 263, 2, 289]
    assert split(*read_npy_output(tmp_path / "none"))[0] == [1, 263, 829, 29879, 29958, 29890]


def test_a_vocabulary_beyond_uint16_gets_wider_ids(tmp_path):
    # mistral-v1's tokenizer.json with 38,000 more pieces and a special
    # token, id 70000, which --special all puts in the output.
    spec = json.loads((DATA / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    for i in range(32000, 70000):
        spec["model"]["vocab"][f"zzq{i}"] = i
    spec["added_tokens"].append({"id": 70000, "content": "<|big|>", "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": False, "special": True})
    model = tmp_path / "big.json"
    model.write_text(json.dumps(spec), encoding="utf-8")
    tok = spmbpe.load(model)
    texts = ["Hello <|big|> world", "plain text", ""]
    stdin = ("\n".join(texts) + "\n").encode()
    expected = [tok.encode(t, special="all") for t in texts]
    assert expected[0] == [22557, 28705, 70000, 1526]
    for fmt in ("npy", "bin"):
        result = run(["encode", "--model", model, "--special", "all", "--format", fmt, "-o", tmp_path / fmt], stdin)
        assert result.returncode == 0, result.stderr
    ids, starts = read_npy_output(tmp_path / "npy")
    assert ids.dtype == np.uint32 and split(ids, starts) == expected
    dtype, docs = read_megatron(tmp_path / "bin")
    assert dtype == np.dtype("<i4") and docs == expected  # Megatron has no uint32: int32
    assert json.loads((tmp_path / "bin.bin.meta.json").read_text())["dtype"] == "int32"
    decoded = run(["decode", "--model", model, tmp_path / "bin.bin"])
    assert decoded.stdout.decode().split("\n")[:-1] == texts


def test_shards_are_whole_documents_and_add_up(tmp_path, v1):
    path = CORPUS / "multi_ko.txt"
    docs = lines_of(path)[:4000]
    src = tmp_path / "ko.txt"
    src.write_text("\n".join(docs) + "\n", encoding="utf-8")
    expected = [v1.encode(d, special="none") for d in docs]
    result = run(["encode", "--format", "npy", "--shard-size", "20K", "--batch-size", "50K",
                  "-o", tmp_path / "ko.npy", src])
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "ko.npy.meta.json").read_text())
    assert meta["complete"] and meta["shard_size"] == 20000 and len(meta["shards"]) > 3
    got = []
    for k, shard in enumerate(meta["shards"]):
        assert shard["ids"] == f"ko-{k:05d}.npy" and shard["index"] == f"ko-{k:05d}.docs.npy"
        ids, starts = read_npy_output(tmp_path / f"ko-{k:05d}")
        assert len(ids) == shard["tokens"] and len(starts) == shard["documents"] + 1
        assert len(ids) <= 20000 or shard["documents"] == 1
        got.extend(split(ids, starts))
    assert got == expected
    assert meta["documents"] == len(docs)
    assert not (tmp_path / "ko.npy").exists()


def test_resume_after_sigterm_continues_from_the_last_shard(tmp_path, v1):
    docs = lines_of(CORPUS / "multi_de.txt")[:3000]
    data = ("\n".join(docs) + "\n").encode()
    half = data[: len(data) // 2]
    half = half[: half.rindex(b"\n") + 1]
    out = tmp_path / "de.npy"
    args = [sys.executable, "-m", "spmbpe", "encode", "--format", "npy", "--shard-size", "5000",
            "--batch-size", "8K", "-o", str(out)]
    # Standard input stays open after the first half: the run waits for more.
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdin.write(half)
    proc.stdin.flush()
    meta_file = tmp_path / "de.npy.meta.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if meta_file.exists() and len(json.loads(meta_file.read_text())["shards"]) >= 2:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert b"interrupted" in err and b"Traceback" not in err
    meta = json.loads(meta_file.read_text())
    assert meta["complete"] is False and len(meta["shards"]) >= 2
    # It says what it kept, and how to go on (not "no partial output").
    kept_docs = sum(s["documents"] for s in meta["shards"])
    assert err.decode().splitlines()[-1] == (
        f"spmbpe: interrupted; kept {len(meta['shards'])} complete shards ({kept_docs:,} documents) in "
        f"{meta_file}; run the same command with --resume to continue"
    )
    kept_shards, kept_records = len(meta["shards"]), meta["shards"][-1]["records"]
    # Only complete shards remain: no temporary file, every shard listed.
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in names if n.startswith(".") or n.endswith(".tmp")], names
    listed = sorted([s["ids"] for s in meta["shards"]] + [s["index"] for s in meta["shards"]])
    assert names == sorted(listed + ["de.npy.meta.json"])

    resumed = run(["encode", "--format", "npy", "--shard-size", "5000", "--batch-size", "8K",
                   "-o", out, "--resume"], data)
    assert resumed.returncode == 0, resumed.stderr
    meta = json.loads(meta_file.read_text())
    assert meta["complete"] is True and meta["documents"] == len(docs)
    # What it skipped, and counts that start from there: the summary's
    # documents and tokens are the whole output's, the MB all of the input.
    notes = resumed.stderr.decode().splitlines()
    assert notes[0] == (
        f"spmbpe: --resume: skipping {kept_shards} complete shards ({kept_docs:,} documents, "
        f"{kept_records:,} input records) of {meta_file}; continuing with shard {kept_shards}"
    )
    assert notes[-1].startswith(f"spmbpe: done: {len(docs):,} documents, {len(data) / 1e6:,.1f} MB, "
                                f"{meta['tokens']:,} tokens in "), notes[-1]
    got = []
    for shard in meta["shards"]:
        got.extend(split(*read_npy_output(tmp_path / shard["ids"][:-4])))
    assert got == [v1.encode(d, special="none") for d in docs]

    again = run(["encode", "--format", "npy", "--shard-size", "5000", "-o", out, "--resume"], data)
    assert again.returncode == 0 and b"already complete" in again.stderr
    other = run(["encode", "--format", "npy", "--shard-size", "5000", "-o", out, "--resume",
                 "--special", "all"], data)
    one_line_error(other, "--resume", "settings")


def _shard_docs(folder, stem):
    """The documents of every `stem-NNNNN.npy` shard in `folder`, read as a
    loader that globs the shards does (not through the metadata)."""
    docs = []
    for ids_file in sorted(folder.glob(f"{stem}-*.npy")):
        if not ids_file.name.endswith(".docs.npy"):
            docs.extend(split(*read_npy_output(str(ids_file)[:-4])))
    return docs


def test_a_new_run_replaces_every_file_an_earlier_run_wrote(tmp_path, v1):
    docs = lines_of(CORPUS / "multi_de.txt")[:1500]
    data = ("\n".join(docs) + "\n").encode()
    expected = [v1.encode(d, special="none") for d in docs]
    out = tmp_path / "de.npy"
    meta_file = tmp_path / "de.npy.meta.json"
    pattern = ["encode", "--format", "npy", "--batch-size", "8K", "-o", out]
    # Another output in the same folder, which no run under "de.npy" touches.
    assert run(["encode", "-o", tmp_path / "de.bin", "--batch-size", "8K"], data).returncode == 0
    bin_files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(bin_files) == ["de.bin", "de.bin.meta.json", "de.idx"]

    def files():
        return sorted(p.name for p in tmp_path.iterdir() if p.name not in bin_files)

    def listed(meta):
        return sorted([s["ids"] for s in meta["shards"]] + [s["index"] for s in meta["shards"]] + [meta_file.name])

    small = run([*pattern, "--shard-size", "2K"], data)
    assert small.returncode == 0, small.stderr
    first = json.loads(meta_file.read_text())
    assert len(first["shards"]) > 8 and _shard_docs(tmp_path, "de") == expected
    assert b"replaced" not in small.stderr

    large = run([*pattern, "--shard-size", "5K"], data)
    assert large.returncode == 0, large.stderr
    meta = json.loads(meta_file.read_text())
    assert meta["complete"] and 1 < len(meta["shards"]) < len(first["shards"])
    # Only the new run's files: no shard of the earlier run is left for a
    # loader that globs de-*.npy to read twice.
    assert files() == listed(meta)
    assert _shard_docs(tmp_path, "de") == expected
    assert f"replaced {2 * len(first['shards']) + 1} files".encode() in large.stderr
    assert b"de-00008.npy" in large.stderr

    whole = run(pattern, data)  # unsharded: one de.npy, no shard left
    assert whole.returncode == 0, whole.stderr
    assert files() == ["de.docs.npy", "de.npy", "de.npy.meta.json"]
    assert split(*read_npy_output(tmp_path / "de")) == expected

    again = run([*pattern, "--shard-size", "5K"], data)  # and back: no de.npy left
    assert again.returncode == 0, again.stderr
    assert files() == listed(json.loads(meta_file.read_text()))
    assert not out.exists() and _shard_docs(tmp_path, "de") == expected
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in bin_files} == bin_files


def test_the_metadata_of_earlier_versions_is_replaced_with_the_files_it_lists(tmp_path):
    # spmbpe 0.1.0 before this fix named the metadata after the stem alone
    # (de.meta.json, shared by de.npy and de.bin).
    out = tmp_path / "de.npy"
    assert run(["encode", "--shard-size", "10", "-o", out], b"one two three\n" * 20).returncode == 0
    meta = json.loads((tmp_path / "de.npy.meta.json").read_text())
    (tmp_path / "de.npy.meta.json").rename(tmp_path / "de.meta.json")
    (tmp_path / "de-00001.npy").rename(tmp_path / "de-old.npy")  # listed only by the metadata
    meta["shards"][1]["ids"] = "de-old.npy"
    (tmp_path / "de.meta.json").write_text(json.dumps(meta))
    (tmp_path / "other.meta.json").write_text(json.dumps(meta))  # another stem: kept
    result = run(["encode", "-o", out], b"x\n")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "de.docs.npy", "de.npy", "de.npy.meta.json", "other.meta.json"
    ]
    # A metadata file of the other format describes other files: kept.
    meta["format"] = "bin"
    (tmp_path / "de.meta.json").write_text(json.dumps(meta))
    assert run(["encode", "-o", out], b"x\n").returncode == 0
    assert (tmp_path / "de.meta.json").exists()


def test_a_rerun_that_fails_leaves_the_earlier_output_as_it_was(tmp_path):
    out = tmp_path / "o.npy"
    assert run(["encode", "--shard-size", "10", "-o", out], b"one two three\n" * 20).returncode == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len(before) > 5
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nbad \xc3( here\n")
    failed = run(["encode", "--shard-size", "10", "-o", out, bad])
    one_line_error(failed, f"{bad}, line 2")
    bad.unlink()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_an_interrupted_rerun_leaves_the_new_shards_and_none_of_the_earlier(tmp_path, v1):
    docs = lines_of(CORPUS / "multi_de.txt")[:3000]
    data = ("\n".join(docs) + "\n").encode()
    out = tmp_path / "de.npy"
    meta_file = tmp_path / "de.npy.meta.json"
    first = run(["encode", "--shard-size", "1K", "--batch-size", "8K", "-o", out], data)
    assert first.returncode == 0, first.stderr
    assert len(json.loads(meta_file.read_text())["shards"]) > 20
    half = data[: len(data) // 2]
    half = half[: half.rindex(b"\n") + 1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "spmbpe", "encode", "--shard-size", "5000", "--batch-size", "8K", "-o", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    proc.stdin.write(half)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        meta = json.loads(meta_file.read_text())
        if meta["shard_size"] == 5000 and len(meta["shards"]) >= 2:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    meta = json.loads(meta_file.read_text())
    assert meta["shard_size"] == 5000 and not meta["complete"] and len(meta["shards"]) >= 2
    listed = sorted([s["ids"] for s in meta["shards"]] + [s["index"] for s in meta["shards"]])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(listed + [meta_file.name])
    got = _shard_docs(tmp_path, "de")
    assert got == [v1.encode(d, special="none") for d in docs[: len(got)]]


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_leaves_no_output(tmp_path, signum, code):
    out = tmp_path / "x.bin"
    proc = subprocess.Popen(
        [sys.executable, "-m", "spmbpe", "encode", "--format", "bin", "-o", str(out), "--batch-size", "1K"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    proc.stdin.write(b"Hello world\n" * 2000)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    # Wait until it has written under its temporary names.
    while time.monotonic() < deadline and not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert list(tmp_path.iterdir()) == []
    assert err.decode().splitlines()[-1] == "spmbpe: interrupted; no partial output was left"


def _failing_fdatasync(fd):
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_an_output_goes_to_disk_while_it_is_written(tmp_path, v1, monkeypatch, capsysbinary):
    from spmbpe import _arrays

    synced = []  # the size of the file at each background write
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(os.fstat(fd).st_size), real(fd))[1])
    monkeypatch.setattr(_arrays, "_WRITEBACK_BYTES", 1)
    docs = lines_of(CORPUS / "multi_de.txt")[:2000]
    data = ("\n".join(docs) + "\n").encode()
    for fmt in ("bin", "npy", "ds"):
        synced.clear()
        out = tmp_path / f"o.{fmt}"
        result = run_here(["encode", "--batch-size", "4K", "-o", out], data, capsysbinary=capsysbinary,
                          monkeypatch=monkeypatch)
        assert result.returncode == 0, result.stderr
        # The ids went to disk while later batches were still to come.
        ids_file = tmp_path / f"o.{fmt}"
        assert synced and min(synced) < ids_file.stat().st_size / 2, fmt
        if fmt == "npy":
            got = split(*read_npy_output(str(tmp_path / "o")))
        elif fmt == "bin":
            got = read_megatron(str(tmp_path / "o"))[1]
        else:  # datatrove: uint16 ids, the uint64 end of each document
            ids = np.fromfile(tmp_path / "o.ds", dtype="<u2")
            ends = np.fromfile(tmp_path / "o.ds.index", dtype="<u8").tolist()
            got = split(ids, np.array([0] + ends))
        assert got == [v1.encode(d, special="none") for d in docs], fmt
        for p in tmp_path.iterdir():
            p.unlink()


def test_a_disk_error_while_an_output_goes_to_disk_is_a_one_line_error_and_leaves_no_output(
    tmp_path, monkeypatch, capsysbinary
):
    # The error of the background fdatasync is not lost: the run fails,
    # naming the file, and removes what it wrote.
    from spmbpe import _arrays

    monkeypatch.setattr(_arrays, "_WRITEBACK_BYTES", 1)
    monkeypatch.setattr(os, "fdatasync", _failing_fdatasync)
    out = tmp_path / "o.bin"
    result = run_here(["encode", "--batch-size", "1K", "-o", out], b"Hello world\n" * 2000,
                      capsysbinary=capsysbinary, monkeypatch=monkeypatch)
    err = one_line_error(result, "cannot write", "o.bin", os.strerror(errno.EIO))
    assert result.returncode == 1, err
    assert list(tmp_path.iterdir()) == []


def _encode_in_child(folder):
    out = os.path.join(folder, "child.bin")
    code = main(["encode", "-o", out, str(CORPUS / "multi_de.txt")])
    os._exit(code if os.path.getsize(out) > 0 else 99)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_writes_outputs_to_disk_with_a_thread_of_its_own(tmp_path, monkeypatch, capsysbinary):
    # The writeback thread of the parent does not exist in a child made by
    # fork: the child makes its own (else its first output would wait
    # forever for a thread that is not there).
    import multiprocessing

    from spmbpe import _arrays

    monkeypatch.setattr(_arrays, "_WRITEBACK_BYTES", 1)
    result = run_here(["encode", "--batch-size", "4K", "-o", tmp_path / "parent.bin", CORPUS / "multi_de.txt"],
                      capsysbinary=capsysbinary, monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    child = multiprocessing.get_context("fork").Process(target=_encode_in_child, args=(str(tmp_path),))
    child.start()
    child.join(60)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0
    assert (tmp_path / "child.bin").read_bytes() == (tmp_path / "parent.bin").read_bytes()


# ------------------------------------------------------------------ bad input


def test_a_missing_model_is_a_one_line_error():
    result = run_process(["encode", "--model", "no/such/model.gguf"], b"x\n")
    assert result.returncode == 2
    one_line_error(result, "no/such/model.gguf")


def test_invalid_utf8_names_the_input_and_line(tmp_path, v1):
    result = run_process(["encode"], b"fine\n\xff\xfe\n")
    assert result.returncode == 1
    one_line_error(result, "<stdin>, line 2")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"one\ntwo\nbad \xc3( here\nfour\n")
    good = tmp_path / "good.txt"
    good.write_bytes(b"first\n")
    out = tmp_path / "o.npy"
    result = run(["encode", "-o", out, good, bad])
    assert result.returncode == 1
    one_line_error(result, f"{bad}, line 3")
    assert sorted(tmp_path.iterdir()) == sorted([good, bad])  # no output, no temporary file

    replaced = run(["encode", "--errors", "replace", bad])
    assert replaced.returncode == 0
    expected = ["one", "two", "bad \ufffd( here", "four"]
    assert replaced.stdout.decode().splitlines() == [" ".join(map(str, v1.encode(t))) for t in expected]
    skipped = run(["encode", "--errors", "skip", "--format", "jsonl", bad])
    assert skipped.returncode == 0 and b"skipped 1 document" in skipped.stderr
    assert [json.loads(s) for s in skipped.stdout.decode().splitlines()] == [
        v1.encode(t) for t in ("one", "two", "four")
    ]


@pytest.mark.parametrize(
    "line, message",
    [
        (b"{not json}", "not JSON"),
        (b'{"body": "x"}', "no 'text' field"),
        (b'{"text": 3}', "field 'text' is a JSON number"),
        (b'["text"]', "not an object"),
        (b'{"text": "\\ud800"}', "lone surrogate"),
    ],
)
def test_bad_jsonl_names_the_file_and_line(tmp_path, line, message, capsysbinary, monkeypatch):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"text": "fine"}\n\n' + line + b"\n")
    result = run_here(["encode", path], capsysbinary=capsysbinary, monkeypatch=monkeypatch)
    assert result.returncode == 1
    one_line_error(result, f"{path}, line 3", message)


def test_a_missing_input_file_is_a_one_line_error(tmp_path):
    result = run(["encode", tmp_path / "nope.txt"])
    assert result.returncode == 1
    one_line_error(result, "nope.txt")


def test_bad_options_are_one_line_errors(capsysbinary, monkeypatch):
    def here(args):
        return run_here(args, b"x\n", capsysbinary=capsysbinary, monkeypatch=monkeypatch)

    result = here(["encode", "--format", "npy"])
    assert result.returncode == 2
    one_line_error(result, "--output")
    result = here(["encode", "--threads", "0"])
    assert result.returncode == 2
    one_line_error(result, "--threads")
    result = here(["encode", "--resume", "--format", "npy", "-o", "x.npy"])
    assert result.returncode == 2
    one_line_error(result, "--shard-size")


def test_an_unknown_output_extension_is_an_error(tmp_path, capsysbinary, monkeypatch):
    def here(args):
        return run_here(args, b"x\n", capsysbinary=capsysbinary, monkeypatch=monkeypatch)

    for name in ("out.npz", "out", "out.NPZ.gz"):
        result = here(["encode", "-o", tmp_path / name])
        assert result.returncode == 2
        one_line_error(result, "unknown output extension", ".txt, .jsonl, .npy, .bin, .ds", "--format")
    assert list(tmp_path.iterdir()) == []
    # --format says what to write whatever the name.
    result = here(["encode", "--format", "txt", "-o", tmp_path / "out.npz"])
    assert result.returncode == 0 and (tmp_path / "out.npz").read_bytes() == b"1318\n"


def test_output_folders_are_created_as_needed(tmp_path, v1, capsysbinary, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = ["Hello world", "", "The quick brown fox"]
    Path("docs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    Path("docs.jsonl").write_text("".join(json.dumps({"text": t, "title": t[::-1]}) + "\n" for t in lines),
                                  encoding="utf-8")

    def here(args):
        result = run_here(args, capsysbinary=capsysbinary, monkeypatch=monkeypatch)
        assert result.returncode == 0, result.stderr.decode()
        return result

    # The README's line, data/ not there yet.
    here(["encode", "-o", "data/train.bin", "--shard-size", "100M", "docs.txt"])
    assert sorted(p.name for p in Path("data").iterdir()) == ["train-00000.bin", "train-00000.idx", "train.bin.meta.json"]
    # Every other format and output, folders several deep.
    for fmt in ("txt", "jsonl", "npy", "bin", "ds"):
        here(["encode", "-o", f"out/{fmt}/deep/docs.{fmt}", "docs.txt"])
        assert Path(f"out/{fmt}/deep/docs.{fmt}").is_file()
        decoded = here(["decode", "--input-format", fmt, "-o", f"text/{fmt}/docs.txt", f"out/{fmt}/deep/docs.{fmt}"])
        assert decoded.stdout == b"" and Path(f"text/{fmt}/docs.txt").read_text(encoding="utf-8").splitlines() == lines
    here(["encode", "--json-keys", "text,title", "-o", "keys/corpus.npy", "docs.jsonl"])
    assert {p.name for p in Path("keys").iterdir()} >= {"corpus_text.npy", "corpus_title.npy"}
    assert np.load("keys/corpus_title.npy").tolist() == [i for t in lines for i in v1.encode(t[::-1])]


def test_an_output_folder_that_cannot_be_created_is_a_one_line_error(tmp_path, capsysbinary, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("docs.txt").write_text("Hello world\n", encoding="utf-8")
    Path("taken").write_text("a file, not a folder")
    before = sorted(p.name for p in tmp_path.iterdir())
    long_name = "x" * 300  # longer than a file name may be
    cases = [
        (["encode", "-o", "taken/train.bin", "docs.txt"], "cannot write taken/train.bin", "is not a folder"),
        (["encode", "-o", "taken/a/b/docs.txt", "docs.txt"], "cannot write taken/a/b/docs.txt", "is not a folder"),
        (["decode", "-o", "taken/x/docs.txt"], "cannot write taken/x/docs.txt", "is not a folder"),
        # new/ could be made, new/xxx... not: neither is left behind.
        (["encode", "-o", f"new/{long_name}/train.npy", "docs.txt"], "cannot create the folder", "new"),
    ]
    for args, *parts in cases:
        result = run_here(args, b"22557 1526\n", capsysbinary=capsysbinary, monkeypatch=monkeypatch)
        assert result.returncode == 1, args
        one_line_error(result, *parts)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, args


def test_a_failed_run_leaves_no_folder_it_made(tmp_path, capsysbinary, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("bad.txt").write_bytes(b"fine\nbad \xff here\n")
    for out in ("new/deep/out.npy", "new/deep/out.txt", "new/shards/out.bin"):
        result = run_here(["encode", "--shard-size", "10", "-o", out, "bad.txt"] if "shards" in out else
                          ["encode", "-o", out, "bad.txt"], capsysbinary=capsysbinary, monkeypatch=monkeypatch)
        one_line_error(result, "bad.txt, line 2")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"], out


# ------------------------------------------------------------------ count, decode, info


def test_count_per_file_and_total(corpus_inputs, v1):
    inputs, documents = corpus_inputs
    result = run(["count", "--field", "body", "--json", *inputs])
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout)
    n_text = len(lines_of(inputs[0]))
    per_file = [documents[:n_text], documents[n_text:]]
    for row, docs, path in zip(counts["inputs"], per_file, inputs):
        assert row["name"] == path and row["documents"] == len(docs)
        assert row["tokens"] == sum(len(v1.encode(d, special="none")) for d in docs)
        # The UTF-8 bytes of the documents' text, not the file's size (the
        # JSONL file's escapes, keys and line ends are not text).
        assert row["bytes"] == sum(len(d.encode("utf-8")) for d in docs)
    assert counts["inputs"][1]["bytes"] < os.path.getsize(inputs[1])
    assert counts["total"]["tokens"] == sum(r["tokens"] for r in counts["inputs"])
    table = run(["count", "--field", "body", "--add-special-tokens", *inputs])
    rows = [line.split() for line in table.stdout.decode().splitlines()]
    assert rows[0] == ["tokens", "documents", "bytes", "input"]
    assert rows[-1][3] == "total" and int(rows[-1][0]) == counts["total"]["tokens"] + len(documents)
    assert [r[3] for r in rows[1:3]] == inputs


def test_decode_round_trips_every_format(encoded, corpus_inputs):
    out, _ = encoded
    _, documents = corpus_inputs
    for name in ("c.txt", "c.npy", "c.bin"):
        result = run(["decode", out / name])
        assert result.returncode == 0, (name, result.stderr)
        assert result.stdout.decode().split("\n")[:-1] == documents, name
    ids_jsonl = out / "c.jsonl"
    ids_jsonl.write_bytes(run(["encode", "--format", "jsonl", CORPUS / "en_botchan.txt"]).stdout)
    result = run(["decode", "--format", "jsonl", ids_jsonl])
    assert [json.loads(s)["text"] for s in result.stdout.decode().splitlines()] == lines_of(CORPUS / "en_botchan.txt")


def test_decode_errors_name_the_line(capsysbinary, monkeypatch):
    def here(args, stdin):
        return run_here(args, stdin, capsysbinary=capsysbinary, monkeypatch=monkeypatch)

    one_line_error(here(["decode"], b"22557 1526\n22557 x\n"), "<stdin>, line 2", "'x'")
    one_line_error(here(["decode"], b"22557 1526\n\n99999\n"), "<stdin>, line 3", "99999")
    one_line_error(here(["decode", "--input-format", "jsonl"], b"[1, 2]\n{}\n"), "<stdin>, line 2", "array")
    result = here(["decode", "--skip-special", "--model", GGUF], b"1 15043 3186 2\n")
    # llama.cpp's llama_detokenize(remove_special=true): removing the leading
    # BOS also keeps the next piece's space (its remove_space = false).
    assert result.returncode == 0 and result.stdout == b" Hello world\n"
    result = here(["decode", "--skip-special", "--model", GGUF], b"15043 3186 2\n")
    assert result.returncode == 0 and result.stdout == b"Hello world\n"


def test_info_describes_the_model(llama_spm):
    result = run(["info", GGUF, "--json"])
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["vocab_size"] == 32000 and info["reference"] == "llama.cpp"
    assert info["bos"] == {"id": 1, "piece": "<s>"} and info["eos"] == {"id": 2, "piece": "</s>"}
    assert info["add_bos"] is True and info["add_eos"] is False
    assert info["prefix_scheme"] == "after_each_special" and info["array_dtype"] == "uint16"
    assert info["chunked_fast_path"] is True
    assert info["fingerprint"] == llama_spm.fingerprint
    assert [t["text"] for t in info["special_tokens"]] == ["<unk>", "<s>", "</s>"]
    text = run(["info", DATA / "mistral-v3.model"]).stdout.decode()
    assert "sentencepiece model" in text and "vocabulary size" in text and "identity" in text
    one_line_error(run(["info", "no/such.model"]), "no/such.model")


def test_info_names_each_references_format_and_its_normalizer(tmp_path):
    import gzip

    model = tmp_path / "nfkc.model"
    model.write_bytes(gzip.decompress((DATA / "trained" / "nmt-nfkc-en-1000.model.gz").read_bytes()))
    info = json.loads(run(["info", model, "--json"]).stdout)
    assert info["reference"] == "sentencepiece" and info["byte_fallback"] is False
    assert info["normalizer"].startswith("nmt_nfkc: applied;"), info["normalizer"]
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes((DATA / "mistral-v1.model").read_bytes())
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "LlamaTokenizer"}')
    info = json.loads(run(["info", folder, "--json"]).stdout)
    assert info["reference"] == "transformers" and "transformers 5's" in info["format"], info["format"]


def test_progress_goes_to_stderr_when_asked():
    result = run(["encode", "--progress", CORPUS / "en_botchan.txt"])
    assert result.returncode == 0
    last = result.stderr.decode().splitlines()[-1]
    assert "4,288 documents" in last and "0.3/0.3 MB (100%)" in last and "tokens/s" in last
    assert result.stdout.count(b"\n") == 4288


def test_the_summary_gives_documents_mb_and_tokens_per_second(tmp_path, v1):
    import re

    path = CORPUS / "en_botchan.txt"
    tokens = sum(len(v1.encode(d)) for d in lines_of(path))
    size = os.path.getsize(path) / 1e6
    for fmt in ("npy", "txt"):
        result = run(["encode", "-o", tmp_path / f"b.{fmt}", path])
        assert result.returncode == 0, result.stderr
        # Output to a file: a final summary line even without --progress.
        (line,) = result.stderr.decode().splitlines()
        found = re.fullmatch(
            rf"spmbpe: done: 4,288 documents, {size:.1f}/{size:.1f} MB \(100%\), {tokens:,} tokens in "
            r"(\d+):(\d\d):(\d\d) \(([\d,]+) documents/s, ([\d.,]+) MB/s, ([\d,]+) tokens/s\)",
            line,
        )
        assert found, line
        docs_rate, mb_rate, tokens_rate = (float(g.replace(",", "")) for g in found.groups()[3:])
        assert docs_rate > 0 and mb_rate > 0 and tokens_rate > docs_rate
        # The rates are of one elapsed time: tokens/s over documents/s is
        # tokens per document (to the rounding of the printed rates).
        assert abs(tokens_rate / docs_rate - tokens / 4288) < 0.01 * tokens / 4288 + 1
    quiet = run(["encode", "--no-progress", "-o", tmp_path / "q.npy", path])
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_outputs_go_to_disk_where_the_system_has_no_fdatasync(tmp_path, monkeypatch, capsysbinary):
    # macOS and Windows have no os.fdatasync: the background write is an fsync.
    from spmbpe import _arrays

    synced = []
    real = os.fsync
    monkeypatch.setattr(_arrays, "_WRITEBACK_BYTES", 1)
    monkeypatch.delattr(os, "fdatasync", raising=False)

    def fsync(fd):
        st = os.fstat(fd)
        synced.append((st.st_ino, st.st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "o.bin"
    result = run_here(["encode", "--batch-size", "4K", "-o", out, CORPUS / "multi_de.txt"],
                      capsysbinary=capsysbinary, monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    # (inode, size) at each sync: the ids file (renamed into place, the same
    # inode) was synced while later batches were still to come.
    final = out.stat()
    assert any(ino == final.st_ino and size < final.st_size / 2 for ino, size in synced), synced
