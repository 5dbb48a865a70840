"""encode_batch as users call it (issue 23): what is not a batch, errors that
name the text at fault, and how many threads it takes and keeps."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading

import pytest

import spmbpe
from spmbpe import _threads

GGUF = os.path.join(os.path.dirname(__file__), "data", "ggml-vocab-llama-spm.gguf")


@pytest.fixture(scope="module", params=["mistral-v1", GGUF])
def tok(request):
    return spmbpe.load(request.param)


@pytest.mark.parametrize("not_a_batch", ["abc", b"abc", bytearray(b"abc")])
def test_a_str_is_not_a_batch(tok, not_a_batch):
    with pytest.raises(TypeError, match="list of texts.*use encode"):
        tok.encode_batch(not_a_batch)


@pytest.mark.parametrize("special", ["all", "none"])
def test_errors_name_the_text_at_fault(tok, special):
    with pytest.raises(ValueError, match=r"texts\[1\]: .*lone surrogate .* at position 1"):
        tok.encode_batch(["ok", "x\ud800"], special=special)
    with pytest.raises(TypeError, match=r"texts\[2\] must be str, not NoneType"):
        tok.encode_batch(["ok", "fine", None], special=special)
    with pytest.raises(TypeError, match=r"texts\[0\] must be str, not int"):
        tok.encode_batch([3], special=special, return_numpy=True)
    # The good batch still works, and an empty one is empty.
    assert tok.encode_batch(["ok", "fine"], special=special) == [tok.encode(t, special=special) for t in ("ok", "fine")]
    assert tok.encode_batch([]) == []


def test_the_default_honours_cpu_affinity():
    code = (
        "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
        "import spmbpe; print(spmbpe.get_num_threads())"
    )
    env = {k: v for k, v in os.environ.items() if k != "SPMBPE_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "1"


def test_a_cgroup_quota_caps_the_cpus(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert _threads._cgroup_quota(str(tmp_path)) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _threads._cgroup_quota(str(tmp_path)) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert _threads._cgroup_quota(str(v1)) == 0.5
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert _threads._cgroup_quota(str(v1)) is None


def test_the_environment_and_the_setting(monkeypatch):
    monkeypatch.delenv("SPMBPE_NUM_THREADS", raising=False)
    assert spmbpe.get_num_threads() == _threads.available_cpus()
    monkeypatch.setenv("SPMBPE_NUM_THREADS", "3")
    assert spmbpe.get_num_threads() == 3
    monkeypatch.setenv("SPMBPE_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="SPMBPE_NUM_THREADS"):
        spmbpe.get_num_threads()
    try:
        spmbpe.set_num_threads(5)
        assert spmbpe.get_num_threads() == 5  # the setting wins over the environment
        with pytest.raises(ValueError, match="positive integer"):
            spmbpe.set_num_threads(0)
    finally:
        spmbpe.set_num_threads(None)
    monkeypatch.delenv("SPMBPE_NUM_THREADS")
    assert spmbpe.get_num_threads() == _threads.available_cpus()


def test_no_pool_outlives_its_use():
    tok = spmbpe.load("mistral-v1")
    texts = ["Hello world, line %d" % i for i in range(4000)]
    expected = tok.encode_batch(texts, num_threads=1)
    assert tok.encode_batch(texts, num_threads=200) == expected
    # More threads than CPUs: a pool for that call only, gone after it.
    assert not [t for t in threading.enumerate() if t.name.startswith("spmbpe-call")]
    assert tok.encode_batch(texts, num_threads=2) == expected
    # The encoding threads: the shared pool's ("spmbpe_N") and any call's
    # (not the command line's writer, which an earlier test may have left).
    def encoding_threads():
        return [t for t in threading.enumerate() if t.name.startswith(("spmbpe_", "spmbpe-call"))]

    assert len(encoding_threads()) <= _threads.available_cpus()
    del tok
    assert len(encoding_threads()) <= _threads.available_cpus()


def _collections_during(call):
    """How many cyclic-GC collections ran while `call` ran."""
    runs = []

    def count(phase, info):
        if phase == "start":
            runs.append(info["generation"])

    gc.callbacks.append(count)
    try:
        call()
    finally:
        gc.callbacks.remove(count)
    return len(runs)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_batch_of_lists_holds_the_gc_off_and_restores_it(tok, threads):
    """30,000 lists of ids would trigger dozens of collections (each list
    counts toward the next); the batch holds the GC off while it makes them
    -- at most the one collection that follows -- and leaves it as it found
    it, on errors too.  The ids are those of encoding each text alone."""
    texts = [f"line {i} of the batch" for i in range(30_000)]
    assert gc.isenabled()
    got = []
    assert _collections_during(lambda: got.extend(tok.encode_batch(texts, num_threads=threads))) <= 2
    assert got[:3] + got[-2:] == [tok.encode(t) for t in texts[:3] + texts[-2:]]
    assert gc.isenabled()
    with pytest.raises(TypeError, match=r"texts\[2\]"):
        tok.encode_batch(["a", "b", 3] * 10_000, num_threads=threads)
    assert gc.isenabled()
    gc.disable()
    try:
        tok.encode_batch(texts[:100], num_threads=threads)
        assert not gc.isenabled()
    finally:
        gc.enable()
    # (The NumPy result makes no lists: nothing to hold off.)
