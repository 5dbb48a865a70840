"""spmbpe.ray on a local Ray instance of 2 CPUs: docs/api.md's own example,
run as it is written there, finishes (its pool leaves a CPU to the reads, an
explicit ``concurrency=8`` is fitted with a warning), and the arrays
``write_arrays`` writes are byte for byte those of the ``spmbpe encode``
command the example names; sharded, with ``special="all"``, each document's
``encode`` ids in the order of the input.

Ray starts once, in one child process (its own session, killed as a group
when it runs past the time limit: a hang fails the tests instead of blocking
the run), which runs every Ray check and reports each as a JSON line."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import spmbpe

# Ray's start and stop cost about 10 s of CPU: these checks are in the long
# run (python -m pytest --long).
pytestmark = pytest.mark.long

ROOT = pathlib.Path(__file__).parent.parent
DATA = pathlib.Path(__file__).parent / "data"
GGUF = DATA / "ggml-vocab-llama-spm.gguf"
MODEL = DATA / "mistral-v1.model"  # the docs example's "tokenizer.model"
TIME_LIMIT = 300  # seconds for Ray's start and every check (about 30 s on a busy 2-core machine)
RAY_INIT = "ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)"


def docs_example():
    """docs/api.md's Ray Data example, with ``ray.init()`` made a local
    instance of 2 CPUs, and the command line its comment says it equals."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    after = text[text.index("**Ray Data**"):]
    start = after.index("```python\n") + len("```python\n")
    code = after[start : after.index("```", start)]
    assert code.count("ray.init()") == 1 and "spmbpe.ray.write_arrays(" in code and ".tokenize(" in code, code
    (cli,) = [line[len("# == "):] for line in code.splitlines() if line.startswith("# == spmbpe ")]
    return code.replace("ray.init()", RAY_INIT), cli


_CHILD = textwrap.dedent(
    """
    import json, os, sys, time, traceback, warnings
    import ray.data
    import spmbpe, spmbpe.ray

    example, docs_folder, model, text, out = sys.argv[1:6]
    ray.data.DataContext.get_current().enable_progress_bars = False


    def check(name, run):
        started = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                report = {"value": run()}
            except Exception as e:
                report = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        report["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        report["seconds"] = round(time.monotonic() - started, 1)
        print(json.dumps({name: report}), flush=True)


    def run_docs_example():
        os.chdir(docs_folder)
        exec(compile(example, "docs/api.md", "exec"), {"__name__": "__main__"})  # its ray.init(num_cpus=2)


    def sharded():
        tok = spmbpe.load(model)
        ds = ray.data.read_text(text, drop_empty_lines=False)
        return spmbpe.ray.write_arrays(ds, tok, out + "/ray.npy", batch_size=256, add_special_tokens=True,
                                       special="all", shard_size=4000)


    def pools_that_cannot_run():
        # Refused or fitted when called, before anything runs.
        tok = spmbpe.load(model)
        ds = ray.data.read_text(text, drop_empty_lines=False)
        errors = []
        for options in ({"num_threads": 2}, {"concurrency": 0}, {"concurrency": (3, 2)}):
            try:
                spmbpe.ray.tokenize(ds, tok, **options)
            except ValueError as e:
                errors.append(str(e))
        spmbpe.ray.tokenize(ds, tok, concurrency=(3, 8))  # a warning: starting 1
        return errors


    try:
        check("docs", run_docs_example)
        if ray.is_initialized():
            check("sharded", sharded)
            check("pools", pools_that_cannot_run)
    finally:
        ray.shutdown()
    """
)


def _lines(name, count):
    lines = (DATA / "corpus" / name).read_text(encoding="utf-8").split("\n")[:count]
    return [line.replace("\r", "") for line in lines]


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory):
    """Every Ray check in one child process: {check: its report}, and the
    folders it wrote in."""
    assert importlib.util.find_spec("ray") is not None, "Ray is not installed (the test extra installs it)"
    root = tmp_path_factory.mktemp("ray")
    # The docs example's files: tokenizer.model and corpus/ (two files).
    docs = root / "docs"
    (docs / "corpus").mkdir(parents=True)
    shutil.copyfile(MODEL, docs / "tokenizer.model")
    first = _lines("en_botchan.txt", 150) + ["", "a </s> b <s>", "   "] + _lines("code_py.txt", 100)
    second = _lines("multi_ja.txt", 150) + _lines("multi_ru.txt", 100)
    (docs / "corpus" / "a.txt").write_text("\n".join(first) + "\n", encoding="utf-8")
    (docs / "corpus" / "b.txt").write_text("\n".join(second) + "\n", encoding="utf-8")
    # The sharded run's one file.
    lines = first + second
    text = root / "corpus.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")

    example, cli = docs_example()
    args = [sys.executable, "-c", _CHILD, example, str(docs), str(GGUF), str(text), str(root)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIME_LIMIT)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        hung = True
    reports = {}
    for line in out.splitlines():
        if line.startswith("{"):
            reports.update(json.loads(line))
    if hung:
        pytest.fail(f"Ray did not finish in {TIME_LIMIT} s (a hang); checks done: {list(reports)}; "
                    f"its log: {err[-3000:]}")
    assert proc.returncode == 0 and "docs" in reports, err[-4000:]
    return {"reports": reports, "root": root, "docs": docs, "cli": cli, "lines": lines, "documents": [first, second]}


def _report(ray_run, name):
    report = ray_run["reports"].get(name)
    assert report is not None, f"the {name!r} check did not run"
    assert "error" not in report, report["traceback"]
    return report


def test_the_docs_example_finishes_on_two_cpus_fitting_its_concurrency(ray_run):
    report = _report(ray_run, "docs")
    # tokenize(ds, tok, concurrency=8) on 2 CPUs: 8 workers would hold both
    # CPUs and starve the reads (Ray then waits forever); fitted to 1, said.
    (warning,) = [w for w in report["warnings"] if "spmbpe.ray" in w]
    assert warning.startswith("RuntimeWarning") and "concurrency=8" in warning, warning
    assert "2 CPUs" in warning and "starting 1" in warning, warning
    # (write_arrays, without concurrency, sized its pool itself: no warning.)


def test_the_docs_example_writes_what_its_command_line_writes(ray_run):
    _report(ray_run, "docs")
    docs, cli = ray_run["docs"], ray_run["cli"]
    # The command the example's comment names, in a copy of its folder.
    here = ray_run["root"] / "command"
    here.mkdir()
    shutil.copytree(docs / "corpus", here / "corpus")
    shutil.copyfile(docs / "tokenizer.model", here / "tokenizer.model")
    words = shlex.split(cli)
    assert words[:2] == ["spmbpe", "encode"], cli
    args = [m for w in words[1:] for m in (sorted(str(p.relative_to(here)) for p in here.glob(w)) if "*" in w else [w])]
    result = subprocess.run([sys.executable, "-m", "spmbpe", *args], capture_output=True, cwd=here, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    for name in ("corpus.npy", "corpus.docs.npy"):
        assert (docs / name).read_bytes() == (here / name).read_bytes(), name
    ray_meta = json.loads((docs / "corpus.npy.meta.json").read_text())
    cli_meta = json.loads((here / "corpus.npy.meta.json").read_text())
    for key in ("tokenizer_fingerprint", "format", "dtype", "documents", "tokens", "complete"):
        assert ray_meta[key] == cli_meta[key], key
    tok = spmbpe.load(MODEL)
    documents = [line for doc in ray_run["documents"] for line in doc]
    assert ray_meta["documents"] == len(documents)
    ids, starts = np.load(docs / "corpus.npy"), np.load(docs / "corpus.docs.npy")
    rows = [ids[a:b].tolist() for a, b in zip(starts[:-1], starts[1:])]
    assert rows == [tok.encode(t, add_special_tokens=True) for t in documents]


def test_the_docs_example_tokenizes_into_parquet(ray_run):
    _report(ray_run, "docs")
    pq = pytest.importorskip("pyarrow.parquet")  # Ray Data's own dependency
    table = pq.read_table(ray_run["docs"] / "ids")
    tok = spmbpe.load(MODEL)
    documents = [line for doc in ray_run["documents"] for line in doc]
    # Ray's writer names its files by task: compare the rows as a multiset.
    got = sorted(table.column("input_ids").to_pylist())
    assert got == sorted(tok.encode(t) for t in documents)


def test_sharded_output_equals_the_command_line(ray_run):
    report = _report(ray_run, "sharded")
    assert not [w for w in report["warnings"] if "spmbpe.ray" in w]  # a pool sized by itself
    root, lines = ray_run["root"], ray_run["lines"]
    cli = [sys.executable, "-m", "spmbpe", "encode", "--model", str(GGUF), "--format", "npy",
           "--output", str(root / "cli.npy"), "--add-special-tokens", "--special", "all",
           "--shard-size", "4000", str(root / "corpus.txt")]
    result = subprocess.run(cli, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    cli_files = sorted(p.name[3:] for p in root.glob("cli*"))
    ray_files = sorted(p.name[3:] for p in root.glob("ray*"))
    # -00000.npy + -00000.docs.npy, -00001.npy, ..., .npy.meta.json
    assert cli_files == ray_files and len(cli_files) >= 5, (cli_files, ray_files)
    for suffix in cli_files:
        if suffix != ".npy.meta.json":
            assert (root / f"ray{suffix}").read_bytes() == (root / f"cli{suffix}").read_bytes(), suffix
    ray_meta = json.loads((root / "ray.npy.meta.json").read_text())
    cli_meta = json.loads((root / "cli.npy.meta.json").read_text())
    for key in ("tokenizer_fingerprint", "vocab_size", "bos_id", "eos_id", "format", "dtype",
                "documents", "tokens", "complete", "shard_size"):
        assert ray_meta[key] == cli_meta[key], key
    assert [s["documents"] for s in ray_meta["shards"]] == [s["documents"] for s in cli_meta["shards"]]
    assert len(ray_meta["shards"]) > 1  # the shard boundaries were exercised
    tok = spmbpe.load(GGUF)
    assert ray_meta["tokenizer_fingerprint"] == tok.fingerprint
    assert report["value"] == {"documents": len(lines), "tokens": cli_meta["tokens"]}

    # Each document's ids, in the input's order (not only the CLI's bytes).
    rows = []
    for shard in ray_meta["shards"]:
        ids = np.load(root / shard["ids"])
        starts = np.load(root / shard["index"])
        assert ids.dtype == np.uint16
        rows += [ids[a:b].tolist() for a, b in zip(starts[:-1], starts[1:])]
    assert rows == [tok.encode(t, special="all", add_special_tokens=True) for t in lines]


def test_a_pool_the_cluster_cannot_run_is_refused_or_fitted_at_once(ray_run):
    report = _report(ray_run, "pools")
    threads, zero, backwards = report["value"]
    # num_threads=2: one worker would hold both CPUs; the error names both.
    assert "num_threads=2" in threads and "2 CPUs" in threads, threads
    assert "concurrency" in zero and "0" in zero and "(3, 2)" in backwards
    # (3, 8): the 3 started up front are fitted to the 1 that fits.
    (warning,) = report["warnings"]
    assert "concurrency=(3, 8)" in warning and "3 workers" in warning and "starting 1" in warning, warning
