"""spmbpe.ray on a local Ray instance: the arrays ``write_arrays`` writes are
byte for byte those of ``spmbpe encode --format npy`` on the same text
(sharded; bin files come from the same writer),
in the order of the input, each document's ``encode`` ids.

Ray runs in a child process (its own session, killed as a group if it
hangs), so no Ray instance outlives the test."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import spmbpe

DATA = pathlib.Path(__file__).parent / "data"
GGUF = DATA / "ggml-vocab-llama-spm.gguf"

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import ray, ray.data
    import spmbpe, spmbpe.ray

    model, text, out = sys.argv[1:4]
    # Two encoding actors, and CPUs left over for the read tasks.
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        tok = spmbpe.load(model)   # on the driver; the workers get its pickle
        ds = ray.data.read_text(text, drop_empty_lines=False)
        # One run (each costs seconds): sharded npy, BOS/EOS, special="all".
        counts = spmbpe.ray.write_arrays(ds, tok, out + "/ray.npy", concurrency=2, batch_size=256,
                                         add_special_tokens=True, special="all", shard_size=4000)
        print(json.dumps({"counts": counts}))
    finally:
        ray.shutdown()
    """
)


def _run(args, timeout, **options):
    """A child process in its own session, killed with its group on timeout."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **options)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray")
    lines = []
    for name in ("en_botchan.txt", "multi_ja.txt", "code_py.txt", "multi_ru.txt"):
        lines += (DATA / "corpus" / name).read_text(encoding="utf-8").split("\n")[:250]
    lines = [line.replace("\r", "") for line in lines]
    lines[5:5] = ["", "a </s> b <s>", "   "]
    path = root / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root, path, lines


def test_ray_output_equals_the_command_line(corpus):
    import ray  # the ray extra; the test extra installs it

    assert ray.__version__
    root, path, lines = corpus
    code, out, err = _run([sys.executable, "-c", _SCRIPT, str(GGUF), str(path), str(root)], timeout=600)
    assert code == 0, err[-4000:]
    result = json.loads(out.strip().splitlines()[-1])

    tok = spmbpe.load(GGUF)
    cli = [sys.executable, "-m", "spmbpe", "encode", "--model", str(GGUF), "--format", "npy",
           "--output", str(root / "cli.npy"), "--add-special-tokens", "--special", "all",
           "--shard-size", "4000", str(path)]
    code, _, err = _run(cli, timeout=300)
    assert code == 0, err
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
    assert ray_meta["tokenizer_fingerprint"] == tok.fingerprint
    assert result["counts"] == {"documents": len(lines), "tokens": cli_meta["tokens"]}

    # Each document's ids, in the input's order (not only the CLI's bytes).
    rows = []
    for shard in ray_meta["shards"]:
        ids = np.load(root / shard["ids"])
        starts = np.load(root / shard["index"])
        assert ids.dtype == np.uint16
        rows += [ids[a:b].tolist() for a, b in zip(starts[:-1], starts[1:])]
    assert rows == [tok.encode(t, special="all", add_special_tokens=True) for t in lines]
