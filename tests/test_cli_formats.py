"""Array outputs in the layouts training code reads as is (issue 23, item
6), byte for byte against files that the tools' own writers wrote:
megatron-core's ``IndexedDatasetBuilder`` (.bin + .idx) and datatrove's
``TokenizedFile`` (.ds + .ds.index), in tests/data/formats/ (written by
tools/make_format_references.py; see VERSIONS there; the tests need
neither package). nanoGPT's flat file is
read the way its train.py reads it, with ``numpy.memmap``. Where
megatron-core or datatrove is importable, their readers read spmbpe's
files too. ``spmbpe decode`` reads every output back by the name it was
written under."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spmbpe
from spmbpe.cli import main

ROOT = Path(__file__).parent.parent
FORMATS = Path(__file__).parent / "data" / "formats"
CASES = json.loads((FORMATS / "cases.json").read_text(encoding="utf-8"))


def _wide_model(folder):
    """mistral-v1's tokenizer.json grown past 65,536 ids with a special token
    70000 (as tests/test_cli.py and tools/make_format_references.py build it)."""
    spec = json.loads((ROOT / "tests" / "data" / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    for i in range(32000, 70000):
        spec["model"]["vocab"][f"zzq{i}"] = i
    spec["added_tokens"].append({"id": 70000, "content": "<|big|>", "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": False, "special": True})
    path = folder / "wide.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


@pytest.fixture
def here(capsysbinary, monkeypatch):
    def call(args, stdin=b""):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main([str(a) for a in args])
        out, err = capsysbinary.readouterr()
        assert code == 0, err.decode()
        return out

    return call


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    return {
        name: _wide_model(folder) if case["model"] == "wide" else str(ROOT / case["model"])
        for name, case in CASES.items()
    }


def _documents(name, model):
    """The case's documents' ids, from the API (BOS/EOD as its flags say)."""
    case = CASES[name]
    tok = spmbpe.load(model)
    lines = (FORMATS / case["input"]).read_text(encoding="utf-8").split("\n")[:-1]
    flags = case["flags"]
    special = flags[flags.index("--special") + 1] if "--special" in flags else "none"
    add = "--add-special-tokens" in flags
    docs = []
    for line in lines:
        if "--skip-empty" in flags and not line:
            continue
        ids = tok.encode(line, special=special, add_special_tokens=add)
        docs.append(ids + [tok.eos_id] if "--append-eod" in flags else ids)
    return tok, docs


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("fmt, suffixes", [("bin", (".bin", ".idx")), ("ds", (".ds", ".ds.index"))])
def test_the_bytes_of_the_training_tools_own_writers(here, models, tmp_path, name, fmt, suffixes):
    case = CASES[name]
    here(["encode", "--model", models[name], *case["flags"], "-o", tmp_path / f"{name}.{fmt}", FORMATS / case["input"]])
    for suffix in suffixes:
        ours = (tmp_path / f"{name}{suffix}").read_bytes()
        assert ours == (FORMATS / f"{name}{suffix}").read_bytes(), suffix
    # And the references hold the documents' ids (not only the same bytes).
    tok, docs = _documents(name, models[name])
    dtype = np.dtype(json.loads((tmp_path / f"{name}.{fmt}.meta.json").read_text())["dtype"]).newbyteorder("<")
    flat = np.fromfile(FORMATS / f"{name}{suffixes[0]}", dtype=dtype).tolist()
    assert flat == [i for d in docs for i in d]
    assert dtype.itemsize == (2 if tok.vocab_size < 65500 else 4)
    # decode reads it back by the name it was written under.
    text = here(["decode", "--model", models[name], "--format", "jsonl", tmp_path / f"{name}.{fmt}"])
    assert [json.loads(line)["text"] for line in text.decode().splitlines()] == [tok.decode(d) for d in docs]


@pytest.mark.parametrize("step", [1, 2, 5])
def test_the_megatron_index_is_the_same_when_written_in_many_steps(here, models, tmp_path, monkeypatch, step):
    # The .idx is written from the spooled lengths a fixed number of
    # documents at a time (buffers made once): with steps of a few documents
    # the offsets carried from step to step must give megatron-core's bytes.
    from spmbpe import _arrays

    monkeypatch.setattr(_arrays, "_STEP", step)
    for name in ("plain", "eod", "wide"):
        here(["encode", "--model", models[name], *CASES[name]["flags"], "-o", tmp_path / f"{name}.bin",
              FORMATS / CASES[name]["input"]])
        assert (tmp_path / f"{name}.idx").read_bytes() == (FORMATS / f"{name}.idx").read_bytes(), name


# Runs of the command line, one after the other in one fresh process (a
# process each would cost more than the runs), with NumPy importable or not.
# Each run's standard output goes to a file of its own (file descriptor 1,
# as a shell would redirect it); after each, whether NumPy was imported.
_RUNS = r"""
import json, os, sys
if sys.argv[1] == "without-numpy":
    sys.modules["numpy"] = None  # import numpy raises ImportError
from spmbpe.cli import main
report = os.fdopen(os.dup(1), "w")
for args, stdout in json.loads(sys.argv[2]):
    sys.stdout.flush()
    with open(stdout, "wb") as f:
        os.dup2(f.fileno(), 1)
    code = main(args)
    sys.stdout.flush()
    print(json.dumps([code, sys.modules.get("numpy") is not None]), file=report, flush=True)
"""


def _runs_in_one_process(tmp_path, runs, numpy=False):
    """[(standard output, NumPy imported)] of each argument list of `runs`."""
    outs = [tmp_path / f"stdout.{i}" for i in range(len(runs))]
    plan = json.dumps([([str(a) for a in args], str(out)) for args, out in zip(runs, outs)])
    result = subprocess.run([sys.executable, "-c", _RUNS, "with-numpy" if numpy else "without-numpy", plan],
                            capture_output=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    reports = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [code for code, _ in reports] == [0] * len(runs), result.stderr.decode()
    return [(out.read_bytes(), imported) for out, (_, imported) in zip(outs, reports)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_are_written_without_numpy(here, models, tmp_path, name):
    # Plain text goes through the core's line blocks; JSONL too (the lines
    # of its texts' UTF-8), or through encode_batch's flat result, joined
    # without NumPy, for a block that cannot go as lines.  Both give the training tools' own bytes (.bin,
    # .ds), a run's with NumPy (.npy) and the API's ids (txt, jsonl); BOS/EOD
    # where the case asks.
    case = CASES[name]
    lines = (FORMATS / case["input"]).read_text(encoding="utf-8").split("\n")[:-1]
    jsonl = tmp_path / "input.jsonl"
    jsonl.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf-8")
    here(["encode", "--model", models[name], *case["flags"], "-o", tmp_path / "with.npy", FORMATS / case["input"]])
    arrays = (("bin", (".bin", ".idx")), ("ds", (".ds", ".ds.index")), ("npy", (".npy", ".docs.npy")))
    runs = []
    for k, source in enumerate((FORMATS / case["input"], jsonl)):
        runs += [["encode", "--model", models[name], *case["flags"], "-o", tmp_path / f"out{k}.{fmt}", source]
                 for fmt, _ in arrays]
        runs += [["encode", "--model", models[name], *case["flags"], "--format", fmt, source] for fmt in ("txt", "jsonl")]
    outs = iter(_runs_in_one_process(tmp_path, runs))
    tok, docs = _documents(name, models[name])
    for k, source in enumerate((FORMATS / case["input"], jsonl)):
        for fmt, suffixes in arrays:
            next(outs)
            for suffix in suffixes:
                expected = FORMATS / f"{name}{suffix}" if fmt != "npy" else tmp_path / f"with{suffix}"
                assert (tmp_path / f"out{k}{suffix}").read_bytes() == expected.read_bytes(), (source.name, suffix)
        # The text outputs: a line of ids per document, as the API gives them.
        for fmt in ("txt", "jsonl"):
            lines = next(outs)[0].decode("ascii").splitlines()
            if fmt == "txt":
                assert [[int(i) for i in line.split()] for line in lines] == docs, source.name
            else:
                assert [json.loads(line) for line in lines] == docs, source.name


def test_encoding_does_not_import_numpy(tmp_path):
    # NumPy's import was 40-60 ms of a command-line run over a 40 MB file.
    lines = (FORMATS / "botchan.txt").read_text(encoding="utf-8").split("\n")[:-1]
    jsonl = tmp_path / "botchan.jsonl"
    jsonl.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf-8")
    runs = [(source, fmt) for source in (FORMATS / "botchan.txt", jsonl) for fmt in ("bin", "npy", "ds", "txt", "jsonl")]
    # (In one process: the first run that imports NumPy is the one named.)
    imported = _runs_in_one_process(tmp_path, [["encode", "--append-eod", "-o", tmp_path / f"o.{fmt}", source]
                                               for source, fmt in runs], numpy=True)
    for (source, fmt), (_, numpy_imported) in zip(runs, imported):
        assert not numpy_imported, (source.name, fmt)


def test_a_count_needs_no_numpy(tmp_path):
    tok = spmbpe.load("mistral-v1")
    lines = (FORMATS / "botchan.txt").read_text(encoding="utf-8").split("\n")[:-1]
    [(out, _)] = _runs_in_one_process(tmp_path, [["count", "--json", FORMATS / "botchan.txt"]])
    total = json.loads(out)["total"]
    assert total["tokens"] == sum(len(tok.encode(line)) for line in lines)
    assert total["documents"] == len(lines)


def test_decode_reads_every_array_format_without_numpy(here, models, tmp_path):
    # npy, bin/idx and ds are simple formats: decode reads them in a process
    # where NumPy cannot be imported, the training tools' own files
    # (megatron-core's .bin/.idx, datatrove's .ds/.ds.index) as much as
    # spmbpe's, 2- and 4-byte ids, and .npy files NumPy wrote in another
    # byte order or header version.
    expected = {}
    for name in ("eod", "wide"):
        tok, docs = _documents(name, models[name])
        texts = [tok.decode(d) for d in docs]
        expected[name] = {FORMATS / f"{name}.bin": texts, FORMATS / f"{name}.ds": texts}
    tok, docs = _documents("eod", models["eod"])
    texts = [tok.decode(d) for d in docs]
    flat = [i for d in docs for i in d]
    flags = CASES["eod"]["flags"]
    here(["encode", "--model", models["eod"], *flags, "-o", tmp_path / "own.npy", FORMATS / "botchan.txt"])
    here(["encode", "--model", models["eod"], *flags, "--shard-size", "60", "-o", tmp_path / "shards.npy",
          FORMATS / "botchan.txt"])
    (tmp_path / "flat.bin").write_bytes((FORMATS / "eod.bin").read_bytes())  # nanoGPT's: no index
    (tmp_path / "solo.npy").write_bytes((tmp_path / "own.npy").read_bytes())  # no .docs.npy: one document
    starts = np.cumsum([0] + [len(d) for d in docs])
    np.save(tmp_path / "big.npy", np.array(flat, dtype=">u2"))
    np.save(tmp_path / "big.docs.npy", starts.astype(">i8"))
    with open(tmp_path / "v2.npy", "wb") as f:
        np.lib.format.write_array(f, np.array(flat, dtype="<u4"), version=(2, 0))
    with open(tmp_path / "v2.docs.npy", "wb") as f:
        np.lib.format.write_array(f, starts.astype("<u8"), version=(2, 0))
    expected["eod"].update({
        tmp_path / "own.npy": texts,
        tmp_path / "shards.npy": texts,  # by the name it was written under
        tmp_path / "shards.npy.meta.json": texts,
        tmp_path / "flat.bin": [tok.decode(flat)],
        tmp_path / "solo.npy": [tok.decode(flat)],
        tmp_path / "big.npy": texts,
        tmp_path / "v2.npy": texts,
    })
    assert len(json.loads((tmp_path / "shards.npy.meta.json").read_text())["shards"]) > 3
    outs = _runs_in_one_process(tmp_path, [["decode", "--model", models[name], "--format", "jsonl", *files]
                                           for name, files in expected.items()])
    for (name, files), (out, _) in zip(expected.items(), outs):
        got = [json.loads(line)["text"] for line in out.decode("utf-8").splitlines()]
        assert got == [t for texts in files.values() for t in texts], name


def test_an_npy_file_that_is_no_flat_array_of_ids_is_a_one_line_error(capsysbinary, tmp_path):
    np.save(tmp_path / "square.npy", np.zeros((2, 2), dtype=np.uint16))
    np.save(tmp_path / "floats.npy", np.zeros(3, dtype=np.float32))
    np.save(tmp_path / "short.npy", np.arange(100, dtype=np.uint16))
    (tmp_path / "short.npy").write_bytes((tmp_path / "short.npy").read_bytes()[:-10])
    (tmp_path / "text.npy").write_bytes(b"not an array")
    for name, part in (("square", "shape (2, 2)"), ("floats", "'<f4', not of integers"),
                       ("short", "not the 100 it should"), ("text", "not a .npy file")):
        code = main(["decode", str(tmp_path / f"{name}.npy")])
        err = capsysbinary.readouterr().err.decode()
        assert code == 1 and err.count("\n") == 1 and f"{name}.npy: cannot read it as npy" in err, err
        assert part in err, err


def test_nanogpt_reads_the_bin_file_with_numpy_memmap(here, tmp_path):
    # nanoGPT's data/openwebtext/prepare.py writes each document's ids and
    # then the EOT id into one flat uint16 file; train.py reads it with
    # np.memmap(path, dtype=np.uint16, mode="r").
    tok = spmbpe.load("mistral-v1")
    lines = (FORMATS / "botchan.txt").read_text(encoding="utf-8").split("\n")[:-1]
    here(["encode", "--append-eod", "-o", tmp_path / "train.bin", FORMATS / "botchan.txt"])
    data = np.memmap(tmp_path / "train.bin", dtype=np.uint16, mode="r")
    assert data.tolist() == [i for line in lines for i in tok.encode(line) + [tok.eos_id]]
    # get_batch's windows: x = data[i:i+block], y = data[i+1:i+1+block].
    block = 64
    x, y = data[10 : 10 + block].astype(np.int64), data[11 : 11 + block].astype(np.int64)
    assert (x[1:] == y[:-1]).all()


def test_sharded_outputs_read_back_by_the_name_they_were_written_under(here, tmp_path):
    tok = spmbpe.load("mistral-v1")
    lines = (FORMATS / "botchan.txt").read_text(encoding="utf-8").split("\n")[:-1]
    for fmt in ("npy", "bin", "ds"):
        out = tmp_path / f"s.{fmt}"
        here(["encode", "--shard-size", "60", "-o", out, FORMATS / "botchan.txt"])
        meta = json.loads((tmp_path / f"s.{fmt}.meta.json").read_text())
        assert len(meta["shards"]) > 5 and not out.exists()
        for name in (out, tmp_path / f"s.{fmt}.meta.json"):
            text = here(["decode", "--format", "jsonl", name])
            assert [json.loads(line)["text"] for line in text.decode().splitlines()] == lines, (fmt, name)
        # Each shard is a data set of its own in its format.
        first = here(["decode", "--format", "jsonl", tmp_path / meta["shards"][0]["ids"]])
        assert len(first.decode().splitlines()) == meta["shards"][0]["documents"]


def test_decode_of_a_missing_or_foreign_output_is_a_one_line_error(capsysbinary, monkeypatch, tmp_path):
    bad = tmp_path / "x.npy.meta.json"
    bad.write_text('{"format": "zip"}')
    for args, part in ((["decode", tmp_path / "nope.npy"], "no such file"),
                       (["decode", bad], "not the metadata of an spmbpe array output")):
        code = main([str(a) for a in args])
        err = capsysbinary.readouterr().err.decode()
        assert code == 1 and err.startswith("spmbpe: error: ") and part in err and err.count("\n") == 1, err


# ------------------------------------------------------------------ the tools' own readers, when installed


def test_megatron_core_reads_the_bin_output(here, tmp_path):
    pytest.importorskip("torch")
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    tok, docs = _documents("eod", "mistral-v1")
    here(["encode", "--append-eod", "--skip-empty", "-o", tmp_path / "m.bin", FORMATS / "botchan.txt"])
    dataset = indexed.IndexedDataset(str(tmp_path / "m"))
    assert len(dataset) == len(docs)
    assert [dataset[i].tolist() for i in range(len(dataset))] == docs
    assert dataset.document_indices.tolist() == list(range(len(docs) + 1))


def test_datatrove_reads_the_ds_output(here, tmp_path):
    pytest.importorskip("torch")
    dataset_module = pytest.importorskip("datatrove.utils.dataset")
    tok, docs = _documents("eod", "mistral-v1")
    here(["encode", "--append-eod", "--skip-empty", "-o", tmp_path / "d.ds", FORMATS / "botchan.txt"])
    seq_len = 31
    dataset = dataset_module.DatatroveFileDataset(str(tmp_path / "d.ds"), seq_len, token_size=2, return_positions=True)
    flat = [i for d in docs for i in d]
    starts = set(np.cumsum([0] + [len(d) for d in docs]).tolist())
    assert len(dataset) == len(flat) // (seq_len + 1) > 5
    for item in range(len(dataset)):
        first = item * (seq_len + 1)
        got = dataset[item]
        assert got["input_ids"].tolist() == flat[first : first + seq_len + 1]
        # datatrove's positions: from 0 at the window's start, and again
        # after each document end it reads from the .ds.index.
        expected, at = [], first
        for g in range(first, first + seq_len + 1):
            at = g if g in starts else at
            expected.append(g - at)
        assert got["positions"].tolist() == expected, item
