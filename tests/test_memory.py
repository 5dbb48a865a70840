"""Memory stays flat: many encodes on one tokenizer, many loads of fresh
ones, and the extension types free what they hold when dropped.

The CI sizes (200,000 encodes, 500 loads) take a few seconds; with
``SPMBPE_MEMORY_FULL=1`` the same tests run a million encodes and 5,000
loads and print the resident-set figures (``pytest -s``).
"""

from __future__ import annotations

import gc
import os
import sys
import weakref

import pytest

import spmbpe
from spmbpe import _testing

import long_run
from conftest import DATA_DIR, LLAMA_SPM_GGUF

FULL = os.environ.get("SPMBPE_MEMORY_FULL") == "1"


def _count(full, long, quick):
    """Repetitions: SPMBPE_MEMORY_FULL=1's, the long run's or the quick run's."""
    return full if FULL else long if long_run.LONG else quick

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
# Under tools/sanitize.sh, ASan's quarantine keeps freed memory resident.
rss_test = pytest.mark.skipif(bool(os.environ.get("SPMBPE_SANITIZED")), reason="RSS means nothing under ASan")


def rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def corpus_lines(n=2000):
    lines = []
    for name in ("en_botchan.txt", "multi_ja.txt", "multi_de.txt", "code_py.txt"):
        text = (DATA_DIR / "corpus" / name).read_text(encoding="utf-8")
        lines += [line for line in text.splitlines() if line.strip()][: n // 4]
    return lines


@rss_test
def test_encodes_keep_rss_flat():
    tok = spmbpe.load(LLAMA_SPM_GGUF)
    lines = corpus_lines()
    total = _count(1_000_000, 200_000, 100_000)
    warm = total // 10

    def run(count, start=0):
        for i in range(start, start + count):
            text = lines[i % len(lines)]
            kind = i % 50
            if kind == 0:
                tok.encode_with_offsets(text)
            elif kind == 1:
                tok.decode(tok.encode(text, special="none"))
            elif kind == 2:
                tok.encode_batch([text, text], num_threads=2)
            else:
                tok.encode(text + str(i % 997))  # new texts: the chunk caches turn over

    run(warm)
    before = rss_mb()
    run(total - warm, warm)
    after = rss_mb()
    print(f"\n{total} encodes: RSS {before:.1f} MB after {warm}, {after:.1f} MB at the end "
          f"(+{after - before:.1f} MB)")
    assert after - before < 16, f"RSS grew {after - before:.1f} MB over {total - warm} encodes"


@rss_test
@pytest.mark.parametrize("path", [LLAMA_SPM_GGUF, DATA_DIR / "mistral-v1.model"], ids=["gguf", "model"])
def test_loads_keep_rss_flat(path):
    loads = _count(5000, 120, 50)
    warm = loads // 10

    def run(count):
        for _ in range(count):
            tok = spmbpe.load(path)
            tok.encode("Hello world, once more.")
            tok.encode_batch(["a b", "c d"], num_threads=2)
            del tok

    run(warm)
    before = rss_mb()
    run(loads - warm)
    after = rss_mb()
    print(f"\n{loads} loads of {path.name}: RSS {before:.1f} MB after {warm}, {after:.1f} MB at the end "
          f"(+{after - before:.1f} MB)")
    assert after - before < 24, f"RSS grew {after - before:.1f} MB over {loads - warm} loads"


def test_dropped_tokenizer_is_collected():
    tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
    tok.encode_batch(["x y"] * 10, num_threads=2)
    core, table, ref = tok._core, tok._table, weakref.ref(tok)
    del tok
    gc.collect()
    assert ref() is None
    # Only `core`/`table` here (and getrefcount's argument) hold them now:
    # nothing else keeps the vocabulary alive (cdef classes take no weakref).
    assert sys.getrefcount(core) == 2
    assert sys.getrefcount(table) == 3  # core.table, and the two above


@rss_test
def test_failed_loads_keep_rss_flat(tmp_path):
    data = LLAMA_SPM_GGUF.read_bytes()
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(data[: len(data) // 2])
    count = _count(2000, 60, 30)

    def run(n):
        for _ in range(n):
            with pytest.raises(spmbpe.errors.ModelFormatError):
                spmbpe.load(bad)

    run(count // 10)
    before = rss_mb()
    run(count)
    after = rss_mb()
    assert after - before < 16


# ----------------------------------------------------------------- limits


def test_decode_of_very_long_id_lists():
    tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
    ids = tok.encode("Hello world, again and again. ")
    n = 3_000_000 // len(ids)
    long_ids = ids * n
    text = tok.decode(long_ids)
    # Only the first piece loses its dummy-prefix space.
    first = tok.decode(ids)
    again = tok.decode(ids + ids)[len(first):]
    assert text == first + again * (n - 1)
    np = pytest.importorskip("numpy")
    assert tok.decode(np.array(long_ids, dtype=np.int64)) == text
    assert tok.decode(iter(long_ids)) == text


def test_segment_limit_is_exported():
    from spmbpe._core import MAX_SEGMENT_BYTES

    # Every symbol index and byte offset of an escaped segment (3 bytes per
    # input byte, plus the prefix) fits an int32.
    assert 3 * MAX_SEGMENT_BYTES + 3 <= 2**31 - 1


# The real limit needs a 716 MB text (about 1 GB in all): with
# SPMBPE_BIG_TESTS=1 the test uses it; otherwise the core's limit is lowered
# (spmbpe._testing.limit_segment_bytes), which exercises the same checks.
_BIG = os.environ.get("SPMBPE_BIG_TESTS") == "1"


@pytest.mark.parametrize("entry", ["encode", "encode_batch", "encode_with_offsets"])
def test_text_beyond_the_segment_limit_raises(entry):
    from spmbpe._core import MAX_SEGMENT_BYTES

    tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
    limit = MAX_SEGMENT_BYTES
    if not _BIG:
        limit = 100_000
        _testing.limit_segment_bytes(tok._core, limit)
        at_limit = "a " * (limit // 2)  # exactly `limit` bytes: still taken, same ids
        assert tok.encode(at_limit) == spmbpe.load(DATA_DIR / "mistral-v1.model").encode(at_limit)
    text = "a" * (limit + 1)  # ASCII: its UTF-8 is the str's own buffer
    with pytest.raises(ValueError, match=f"{len(text)} UTF-8 bytes is longer than the {limit} bytes one merge can take"):
        if entry == "encode":
            tok.encode(text)
        elif entry == "encode_batch":
            tok.encode_batch(["x", text], num_threads=2)
        else:
            tok.encode_with_offsets(text)


@rss_test
def test_a_huge_text_does_not_pin_its_buffers():
    """A pooled workspace used to keep the buffers grown for one huge text
    (about 50 bytes per byte of it) for the tokenizer's lifetime."""
    ctypes = pytest.importorskip("ctypes")
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        pytest.skip("needs glibc's malloc_trim to see freed memory leave")

    def settled_rss():
        gc.collect()
        trim(0)
        return rss_mb()

    tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
    text = ("word " * 8 + "\n") * (16_000_000 // 41)  # ASCII: no UTF-8 copy of the str
    tok.encode("warm up the pool")
    before = settled_rss()
    assert len(tok.encode(text)) > 0
    after = settled_rss()
    print(f"\nencode of {len(text) / 1e6:.0f} MB: {after - before:.1f} MB retained")
    assert after - before < 32, f"{after - before:.1f} MB retained after one {len(text) / 1e6:.0f} MB text"


_LOAD_AFTER_A_LARGE_FREE = r"""
import json, sys
import spmbpe
from spmbpe import _hf_json, gguf, sentencepiece, tokenizer_json  # (what a load imports)
tokenizer_json._MAPPED_BYTES = int(sys.argv[2])
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
big = bytearray(30 << 20)  # freed, glibc's mmap threshold rises to its size (at
del big                    # most 32 MiB), as after reading a corpus's text
before = rss()
tok = spmbpe.load(sys.argv[1])
print(json.dumps(rss() - before))
"""


@rss_test
def test_a_tokenizer_json_read_into_its_own_mapping_leaves_no_heap_behind():
    """Mistral's 3.5 MB tokenizer.json read as a bytes object, after a large
    free, left its pages in glibc's heap: 1.7 MB more resident than the
    mapping that _file_bytes reads it into now (each in a fresh process)."""
    import platform
    import subprocess

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("the heap's thresholds measured are glibc's")
    path = str(DATA_DIR / "mistral-v1.tokenizer.json")

    def loaded_mb(mapped_from):
        out = subprocess.run([sys.executable, "-c", _LOAD_AFTER_A_LARGE_FREE, path, str(mapped_from)],
                             capture_output=True, text=True, check=True).stdout
        return int(out) / 2**20

    mapped, heaped = loaded_mb(1 << 20), loaded_mb(1 << 40)
    print(f"\ntokenizer.json loaded after a large free: {mapped:.2f} MB mapped, {heaped:.2f} MB as bytes")
    assert mapped < heaped - 1.0, (mapped, heaped)
