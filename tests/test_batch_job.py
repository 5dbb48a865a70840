"""encode_batch on several threads: the shared BatchJob and the shared chunk cache.

A batch with nothing to plan (no added token to split out, no normalizer
stage in Python) is one BatchJob: units of texts that the threads take in
turn, merged without the GIL, listed by the calling thread.  Every thread
reads and fills one chunk cache.  Each path must give exactly the ids of
encoding every text alone, whatever the threads, units, cache size or
failures: the references' own ids (the llama.cpp and sentencepiece golden
files, live sentencepiece and tokenizers), and whole-segment merging for the
cases the references cannot be asked (small caches, failures, units).
"""

from __future__ import annotations

import array
import gc
import json
import sys
import threading
import time
from itertools import accumulate

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe import _testing
from spmbpe._core import BatchJob, batch_shape, batch_slices

from conftest import DATA_DIR, LLAMA_SPM_GGUF
from long_run import combinations, examples

MODEL = DATA_DIR / "mistral-v1.model"


def corpus_lines():
    lines = []
    for name in ("en_botchan.txt", "multi_ja.txt", "code_py.txt", "multi_ru.txt", "multi_ko.txt"):
        text = (DATA_DIR / "corpus" / name).read_text(encoding="utf-8")
        lines += [line for line in text.splitlines() if line.strip()][:400]
    return lines


LINES = corpus_lines()


def expected_ids(path, texts, **kw):
    ref = spmbpe.load(path)
    _testing.disable_chunking(ref._core)  # whole-segment merging, no cache: the references' algorithm
    return [ref.encode(t, **kw) for t in texts]


_FILES = {"model": (MODEL, "none"), "model-all": (MODEL, "all"), "gguf": (LLAMA_SPM_GGUF, "none"),
          "json": (DATA_DIR / "mistral-v1.tokenizer.json", "none")}


# (Each file with each number of threads in the long run; in the quick one
# each file and each number once.)
@pytest.mark.parametrize("name, threads", combinations(list(_FILES), [1, 2, 3, 5]))
def test_batch_equals_each_text_alone(name, threads):
    path, special = _FILES[name]
    texts = LINES + ["", " ", "a", "x" * 3000]
    want = expected_ids(path, texts, special=special)
    tok = spmbpe.load(path)  # fresh: the threads fill the cache together
    assert tok.encode_batch(texts, special=special, num_threads=threads) == want
    ids, offsets = tok.encode_batch(texts, special=special, num_threads=threads, return_numpy=True)
    assert offsets.tolist() == list(accumulate(map(len, want), initial=0))
    assert ids.tolist() == [i for w in want for i in w]


# A job over strs reads each as CPython stores it: ASCII, Latin-1 (one byte
# a character, not UTF-8), two and four bytes a character; the dummy prefix
# is read from the first character (the tokenizer.json's rule: none before
# " " or "▁").
_STORAGES = ["plain ascii", "caf\u00e9 cr\u00e8me", "\u65e5\u672c\u8a9e \u3067\u3059", "\U0001f999 llama",
             " lead", "\u2581lead", "\u00e9", "\U0001f600", "", "tail\u00ff"]


@pytest.mark.parametrize("path, threads", combinations([MODEL, LLAMA_SPM_GGUF, DATA_DIR / "mistral-v1.tokenizer.json"],
                                                      [1, 2]),
                         ids=lambda v: v.name if hasattr(v, "name") else str(v))
def test_a_job_reads_every_str_storage_and_leaves_no_utf8_on_the_texts(path, threads):
    texts = [t + f" {i}" if t else t for i in range(300) for t in _STORAGES] + LINES
    want = expected_ids(path, texts, special="none")
    tok = spmbpe.load(path)
    sizes = [sys.getsizeof(t) for t in texts]
    got = tok.encode_batch(texts, special="none", num_threads=threads)
    ids, offsets = tok.encode_batch(texts, special="none", num_threads=threads, return_numpy=True)
    # (CPython keeps the UTF-8 copy that PyUnicode_AsUTF8AndSize makes on a
    # str that is not ASCII: the job never asks for one.)
    assert [sys.getsizeof(t) for t in texts] == sizes
    assert got == want
    # The references themselves where they can be asked (the GGUF's are the
    # llama.cpp golden batches above).
    if path == MODEL:
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=str(MODEL))
        assert got == sp.encode(texts)
    elif str(path).endswith(".json"):
        from tokenizers import Tokenizer

        ref = Tokenizer.from_file(str(path))
        assert got == [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    assert ids.tolist() == [i for w in want for i in w] and offsets.tolist() == list(accumulate(map(len, want), initial=0))


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(texts=st.lists(st.text(alphabet="ab \u00e9\u3042\U0001f999\u2581", max_size=90), max_size=12),
       flat=st.booleans())
def test_a_job_over_strs_converts_them_as_python_does(texts, flat):
    # Runs of ASCII of every length around the 4, 8, 16 and 32 characters
    # the conversion takes at a time, in each storage: the job reading the
    # strs as stored gives the ids of the strs' own UTF-8 (encode_parts_batch
    # gathers PyUnicode_AsUTF8AndSize's).
    tok = spmbpe.load(MODEL)
    texts = [t.replace("a", "a" * 29) for t in texts]
    want = tok._core.encode_parts_batch(list(texts), flat, 0.0, None, True)
    job = BatchJob(tok._core)
    try:
        job.start(list(texts), 3, 0.0, None, True)
        got = job.lead(flat)
    finally:
        job.close()
    assert (tuple(bytes(x) for x in got) == tuple(bytes(x) for x in want)) if flat else got == want


@pytest.mark.parametrize("lead", ["\u00e9", "\u3042", "\U0001f999", "\u00e9 x\u00e9"])
def test_ascii_runs_of_every_length_after_a_wide_character(lead):
    # The conversion copies runs of ASCII 4, 8, 16 and 32 characters at a
    # time: a run that ends exactly at the text's end (or before another
    # wide character) at each of those steps.
    tok = spmbpe.load(MODEL)
    texts = [lead + "x" * k + tail for k in range(70) for tail in ("", "\u00e9", " \u3042")]
    want = tok._core.encode_parts_batch(list(texts), False, 0.0, None, True)
    job = BatchJob(tok._core)
    try:
        job.start(list(texts), 5, 0.0, None, True)
        assert job.lead(False) == want
    finally:
        job.close()


@pytest.mark.parametrize("threads", [1, 2])
def test_ids_as_many_as_utf8_bytes_fill_the_flat_result_exactly(threads):
    # Characters outside the vocabulary become one byte piece per UTF-8
    # byte, and the dummy prefix one more: the most ids a text can give,
    # which is what the flat result is sized for.
    tok = spmbpe.load(MODEL)
    texts = ["\U0001f999" * (i % 7) for i in range(20000)]
    want = expected_ids(MODEL, texts, special="none")
    assert all(len(w) == len(t.encode()) + 1 for t, w in zip(texts, want) if t)
    ids, offsets = tok.encode_batch(texts, special="none", num_threads=threads, return_numpy=True)
    assert ids.tolist() == [i for w in want for i in w] and offsets.tolist() == list(accumulate(map(len, want), initial=0))
    assert ids.flags.writeable and offsets[0] == 0


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("where", [0, 1999, -1])
def test_a_surrogate_in_a_job_is_named_with_its_text(threads, where):
    tok = spmbpe.load(MODEL)
    texts = [f"line {i} caf\u00e9" for i in range(4000)]
    texts[where] = "ab\ud800cd"
    with pytest.raises(ValueError, match=rf"texts\[{where % len(texts)}\]: .*lone surrogate .* at position 2"):
        tok.encode_batch(texts, special="none", num_threads=threads)
    with pytest.raises(ValueError, match=rf"texts\[{where % len(texts)}\]: .*lone surrogate .* at position 2"):
        tok.encode_batch(texts, special="none", num_threads=threads, return_numpy=True)


def test_a_list_changed_by_another_thread_during_a_batch():
    # The job takes a reference to every text first: another thread that
    # replaces texts in the list meanwhile changes nothing it reads (the
    # texts it replaced are not freed under the threads), and each result
    # is the ids of the text the list held when the batch began or of its
    # replacement.
    tok = spmbpe.load(MODEL)
    first = [f"first text number {i} \u00e9t\u00e9" for i in range(20000)]
    second = [f"\u65e5\u672c {i} second" for i in range(20000)]
    want = {t: tok.encode(t, special="none") for t in first + second}
    texts = list(first)
    stop = threading.Event()

    def churn():
        k = 0
        while not stop.is_set():
            i = k % len(texts)
            texts[i] = second[i] if texts[i] is first[i] else first[i]
            k += 1

    mutator = threading.Thread(target=churn)
    mutator.start()
    try:
        for _ in range(5):
            for ids, i in zip(tok.encode_batch(texts, special="none", num_threads=2), range(len(texts))):
                assert ids in (want[first[i]], want[second[i]])
    finally:
        stop.set()
        mutator.join()


def golden_rows(name):
    text = (DATA_DIR / name).read_bytes().decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(
    "path, golden, fields",
    [
        # llama.cpp's ids (special tokens as text, then parsed).
        (LLAMA_SPM_GGUF, "llama-spm.gguf.jsonl", {"none": "ids", "all": "ids_special"}),
        # sentencepiece's ids, for both .model files.
        (MODEL, "mistral-v1.model.jsonl", {"all": "sp"}),
        (DATA_DIR / "mistral-v3.model", "mistral-v3.model.jsonl", {"all": "sp"}),
    ],
    ids=["gguf-llama.cpp", "mistral-v1-sentencepiece", "mistral-v3-sentencepiece"],
)
def test_golden_batches_equal_the_references(path, golden, fields, threads):
    """Every golden text of a reference in one batch (over 100,000
    characters, so several threads share a BatchJob when nothing is to be
    planned), on a fresh tokenizer: the reference's ids, text by text."""
    rows = golden_rows(golden)
    texts = [row["text"] for row in rows]
    for special, field in fields.items():
        got = spmbpe.load(path).encode_batch(texts, special=special, num_threads=threads)
        assert got == [row[field] for row in rows]


@pytest.mark.parametrize("threads", [2, 3])
def test_corpus_batches_equal_live_references(threads):
    """The corpus lines through the shared job on fresh tokenizers: live
    sentencepiece on the .model, live tokenizers on the tokenizer.json."""
    import sentencepiece
    from tokenizers import Tokenizer

    assert not any("<s>" in line or "</s>" in line or "<unk>" in line for line in LINES)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(MODEL))
    assert spmbpe.load(MODEL).encode_batch(LINES, special="none", num_threads=threads) == sp.encode(LINES)
    json_path = DATA_DIR / "mistral-v1.tokenizer.json"
    ref = [e.ids for e in Tokenizer.from_file(str(json_path)).encode_batch(LINES, add_special_tokens=False)]
    assert spmbpe.load(json_path).encode_batch(LINES, special="none", num_threads=threads) == ref


def test_batch_takes_the_shared_job(monkeypatch):
    """The corpus batch is large enough for several groups, so with two
    threads it runs as a BatchJob (and a small one does not need to)."""
    from spmbpe import _batch

    tok = spmbpe.load(MODEL)
    calls = []
    original = _batch._encode_job  # (core, units, ...)
    monkeypatch.setattr(_batch, "_encode_job", lambda *a: calls.append(len(a[1])) or original(*a))
    tok.encode_batch(LINES, special="none", num_threads=2)
    tok.encode_batch(LINES[:3], special="none", num_threads=2)
    assert calls == [len(LINES)]


@pytest.mark.parametrize("units", [1, 2, 7, 10**6])
@pytest.mark.parametrize("helpers", [0, 1, 3])
def test_job_units_and_helpers(units, helpers):
    tok = spmbpe.load(MODEL)
    batch = LINES[:300] + [""] + LINES[300:600]
    want = tok._core.encode_parts_batch(batch, False, 0.0, None, True)
    want_flat = tok._core.encode_parts_batch(batch, True, 0.0, None, True)
    for flat in (False, True):
        job = BatchJob(tok._core)
        threads = [threading.Thread(target=job.work) for _ in range(helpers)]
        for t in threads:
            t.start()  # (before the texts: they wait for them)
        try:
            job.start(batch, units, 0.0, None, True)
            got = job.lead(flat)
        finally:
            job.close()
        for t in threads:
            t.join()
        if flat:
            assert bytes(got[0]) == bytes(want_flat[0]) and got[1] == want_flat[1]
        else:
            assert got == want
        job.work()  # a helper that comes after the end does nothing
    assert _testing.cache_info(tok._core)[1] > 0


def test_empty_job():
    tok = spmbpe.load(MODEL)
    job = BatchJob(tok._core)
    try:
        job.start([], 8)
        assert job.lead(False) == []
    finally:
        job.close()


def test_sampling_does_not_depend_on_threads():
    texts = LINES[:1500]
    tok = spmbpe.load(MODEL)
    one = tok.encode_batch(texts, enable_sampling=True, alpha=0.3, seed=5, num_threads=1)
    for threads in (2, 3):
        assert spmbpe.load(MODEL).encode_batch(
            texts, enable_sampling=True, alpha=0.3, seed=5, num_threads=threads) == one
    assert one != tok.encode_batch(texts, num_threads=1)  # (sampling did change ids)


def test_first_failing_text_raises_as_on_one_thread():
    """A text that cannot be merged stops the job; the error is the one the
    one-thread batch raises: for the first failing text."""
    texts = LINES[:900]
    texts[700] = "y " * 400   # fails too, later
    texts[200] = "x" * 900
    messages = []
    for threads in (1, 2, 3):
        tok = spmbpe.load(MODEL)
        _testing.limit_segment_bytes(tok._core, 600)
        with pytest.raises(ValueError) as info:
            tok.encode_batch(texts, special="none", num_threads=threads)
        messages.append(str(info.value))
        # The tokenizer is still usable, its workspaces given back.
        assert tok.encode("a b", special="none") == spmbpe.load(MODEL).encode("a b", special="none")
    assert messages[0] == messages[1] == messages[2]
    assert "900 UTF-8 bytes" in messages[0]


def test_large_documents_cut_for_threads():
    doc = (DATA_DIR / "corpus" / "multi_ja.txt").read_text(encoding="utf-8")
    code = (DATA_DIR / "corpus" / "code_py.txt").read_text(encoding="utf-8")[:100000]
    texts = [doc, "small one", code, LINES[5]]
    want = expected_ids(MODEL, texts, special="none")
    assert spmbpe.load(MODEL).encode_batch(texts, special="none", num_threads=2) == want
    ids, offsets = spmbpe.load(MODEL).encode_batch(texts, special="none", num_threads=3, return_numpy=True)
    assert ids.tolist() == [i for w in want for i in w]


def test_cache_fills_stops_and_is_swept_under_threads():
    """A small cache filled by threads at once: inserts stop when it is full
    (it stays bounded), ids stay exact, and a call that starts when no
    thread is encoding sweeps it (only the chunks found since it filled
    stay)."""
    tok = spmbpe.load(MODEL)
    _testing.limit_cache(tok._core, 1024, 16 * 1024)
    lines = [f"{line} {k}{k * 7919}" for k, line in enumerate(LINES)]
    # Texts of some kilobytes, merged without the GIL, so the calls overlap.
    docs = ["\n".join(lines[i:i + 40]) for i in range(0, len(lines), 40)]
    want = expected_ids(MODEL, docs, special="none")
    errors, seen = [], []
    done = threading.Event()

    def worker(k):
        try:
            for _ in range(3):
                if tok.encode_batch(docs[k::3], special="none", num_threads=2) != want[k::3]:
                    errors.append(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def monitor():
        while not done.is_set():
            seen.append(_testing.cache_info(tok._core))

    watcher = threading.Thread(target=monitor)
    watcher.start()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join()
    assert errors == []
    assert any(full for _, _, _, full in seen)
    seen = [info for info in seen if info[0]]  # (0, ...: before the first encode)
    # At most three quarters of the slots of a table at its largest size,
    # but each of the (at most 3 x 2) threads counts its inserts 16 at a
    # time, so the others may be up to 15 each behind.
    # (No entry is written past the 16 kB arena: tools/sanitize.sh runs this
    # test under AddressSanitizer.)
    assert seen and all(slots == 1024 and used <= 768 + 6 * 16 for slots, used, _, _ in seen)
    # (Capacity set again: a fresh cache, its lookup count zero.)  A call
    # with more new chunks than the cache holds leaves it full; after a
    # second call that finds ten of its words and none of the rest, the
    # next call, with no thread encoding, sweeps it first: what stays is
    # what the second call found (emptied wholesale, only "again" was
    # left), and "again".
    tok.cache_capacity = 512
    first = _letter_words(0, 2000)
    tok.encode_ordinary(" ".join(first))
    _, filled, _, full = _testing.cache_info(tok._core)
    assert full
    found = [w for w in first if _testing.cached_ids(tok._core, ("▁" + w).encode()) is not None][:10]
    assert len(found) == 10
    tok.encode_ordinary(" ".join(found + _letter_words(2000, 4000)))
    assert _testing.cache_info(tok._core)[1:4:2] == (filled, True)
    tok.encode_ordinary("again")
    _, used, _, full = _testing.cache_info(tok._core)
    assert not full and used == len(found) + 1
    assert _testing.cached_ids(tok._core, "▁again".encode()) == tok.encode_ordinary("again")
    assert all(_testing.cached_ids(tok._core, ("▁" + w).encode()) == tok.encode_ordinary(w) for w in found)
    assert all(_testing.cached_ids(tok._core, ("▁" + w).encode()) is None for w in first if w not in found)
    for doc, ids in zip(docs, want):
        assert tok.encode_ordinary(doc) == ids


def _letter_words(first, stop):
    """Distinct made-up words, a chunk each (letters: Mistral v1 merges no
    digit, so chunks are cut around them; and letters each two of which
    some piece holds side by side, else the kernel cuts a word there)."""
    return ["w" + "".join("adeiosntul"[int(d)] for d in f"{k * 31:05d}") for k in range(first, stop)]


def test_a_full_cache_keeps_what_serves_it_and_drops_the_rest():
    """A corpus larger than the cache: the cache keeps the chunks it holds
    while they are found (it used to be emptied every time it filled, then
    emptied only when lookups mostly missed), and once a table's worth of
    lookups since it filled have been made, the chunks not found go and
    new ones take their room."""
    tok = spmbpe.load(MODEL)
    _testing.limit_cache(tok._core, 1024, 1 << 20)
    words, other = _letter_words(0, 1000), _letter_words(1000, 3000)
    held = " ".join(words[:300])
    want = expected_ids(MODEL, [held, " ".join(other)], special="none")
    def cached(ws):
        return {w: _testing.cached_ids(tok._core, ("\u2581" + w).encode()) for w in ws}

    tok.encode_ordinary(" ".join(words))  # held's chunks go in first
    _, filled, _, full = _testing.cache_info(tok._core)
    assert full and filled == 768
    before = cached(words[:300])
    assert sum(ids is not None for ids in before.values()) > 200  # (most words are one chunk)
    for _ in range(3):  # 900 lookups since it filled, all found
        assert tok.encode_ordinary(held) == want[0]
    assert _testing.cache_info(tok._core)[1:4:2] == (768, True)
    assert tok.encode_ordinary(held) == want[0]  # 1,200: swept before the next call
    assert tok.encode_ordinary(" ".join(other)) == want[1]
    _, used, _, full = _testing.cache_info(tok._core)
    assert full and used == 768
    now = cached(words + other)
    assert all(now[w] == before[w] for w in words[:300])
    assert all(now[w] is None for w in words[300:])
    # other's first chunks took the room the sweep made.
    assert sum(now[w] is not None for w in other) > 300
    assert all(now[w] == tok.encode_ordinary(w) for w in words + other if now[w] is not None)


def test_cache_grows_while_threads_read_it():
    tok = spmbpe.load(MODEL)
    texts = [f"{line} w{k}" for k, line in enumerate(LINES)]
    want = expected_ids(MODEL, texts, special="none")
    assert _testing.cache_info(tok._core)[0] == 0  # nothing before the first encode
    assert tok.encode_batch(texts, special="none", num_threads=4) == want
    slots, used, data, full = _testing.cache_info(tok._core)
    assert slots > 1024 and 0 < used <= slots // 2 + 4 and not full
    assert tok.encode_batch(texts, special="none", num_threads=4) == want  # from the cache


def test_limit_cache_checks():
    tok = spmbpe.load(MODEL)
    for slots in (1000, 512, 1 << 20):
        with pytest.raises(ValueError, match="power of two"):
            _testing.limit_cache(tok._core, slots, 4096)
    tok.encode("a")
    with pytest.raises(RuntimeError, match="before the first encode"):
        _testing.limit_cache(tok._core, 1024, 4096)


def test_job_rejects_bad_input():
    tok = spmbpe.load(MODEL)
    with pytest.raises(TypeError, match="must be str"):
        BatchJob(tok._core).start(["a", 3], 4)
    with pytest.raises(ValueError, match="one seed per text"):
        BatchJob(tok._core).start(["a", "b"], 4, 0.5, array.array("Q", [1]))
    job = BatchJob(tok._core)
    job.start(["a"], 1)
    with pytest.raises(RuntimeError, match="one batch"):
        job.start(["b"], 1)
    job.close()


def test_helpers_waiting_for_texts_leave_when_the_job_fails():
    """Helpers started before the texts wait for them; when gathering fails
    the job is closed and they return without taking a workspace."""
    tok = spmbpe.load(MODEL)
    job = BatchJob(tok._core)
    helpers = [threading.Thread(target=job.work) for _ in range(3)]
    for t in helpers:
        t.start()
    with pytest.raises(TypeError):
        job.start(["a", None], 4)
    job.close()
    for t in helpers:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in helpers)
    assert tok.encode_ordinary("a b") == spmbpe.load(MODEL).encode_ordinary("a b")


@pytest.mark.parametrize("path", [MODEL, DATA_DIR / "mistral-v1.tokenizer.json"], ids=["model", "json"])
def test_cache_capacity_bounds_the_cache_and_changes_no_id(path):
    import pickle

    want = expected_ids(path, LINES, special="none")
    # The references' own ids: sentencepiece for the .model, tokenizers for
    # the tokenizer.json (no special token is read under either here).
    if path.suffix == ".model":
        import sentencepiece

        ref = sentencepiece.SentencePieceProcessor(model_file=str(path))
        assert want == [ref.encode(x) for x in LINES]
    else:
        from tokenizers import Tokenizer

        ref = Tokenizer.from_file(str(path))
        assert want == [e.ids for e in ref.encode_batch(LINES, add_special_tokens=False)]
    tok = spmbpe.load(path)
    assert tok.cache_capacity == 98304
    assert tok.encode_batch(LINES, special="none", num_threads=2) == want
    tok.cache_capacity = 600
    assert tok.cache_capacity == 768 and _testing.cache_info(tok._core)[0] == 0  # dropped
    for _ in range(2):
        assert tok.encode_batch(LINES, special="none", num_threads=2) == want
        assert [tok.encode_ordinary(x) for x in LINES] == want
        slots, used, data, _ = _testing.cache_info(tok._core)
        assert slots == 1024 and 0 < used <= 768 + 2 * 16 and data <= 600 * 64
    tok.cache_capacity = 0
    assert tok.cache_capacity == 0
    assert tok.encode_batch(LINES, special="none", num_threads=2) == want
    assert [tok.encode_ordinary(x) for x in LINES[:200]] == want[:200]
    assert _testing.cache_info(tok._core)[0] == 0
    assert pickle.loads(pickle.dumps(tok)).cache_capacity == 98304  # a setting of this process
    for bad, error in ((-1, ValueError), (1 << 24, ValueError), (True, TypeError), ("10", TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="cache_capacity"):
            tok.cache_capacity = bad
    assert tok.cache_capacity == 0


@settings(max_examples=examples(500), deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), max_size=30),
    parts=st.integers(1, 9),
    min_share=st.integers(1, 60),
    max_items=st.integers(1, 12),
)
def test_batch_shape_is_batch_slices_in_one_pass(lengths, parts, min_share, max_items):
    """The one-pass shape of a batch (the job path for texts that need no
    planning) says what the split says: its share, longest text, and
    whether it makes two groups or more."""
    texts = ["x" * n for n in lengths]
    share, longest, stops = batch_slices(texts, parts, min_share, max_items)
    assert batch_shape(texts, parts, min_share, max_items) == (share, longest, len(stops) >= 2)


def test_a_unit_of_empty_texts_on_a_workspace_without_ids():
    """A workspace that gave back a large ids buffer has none; a unit whose
    texts are all empty then has no ids to copy (the sanitizer run checks
    that nothing is read from the missing buffer: memcpy from NULL)."""
    tok = spmbpe.load(MODEL)
    big = "word " * 100_000  # more ids than a pooled workspace keeps
    for flat in (False, True):
        assert len(tok.encode(big, special="none")) > 1 << 16
        job = BatchJob(tok._core)
        try:
            job.start(["", "", ""], 4, 0.0, None, True)
            got = job.lead(flat)
        finally:
            job.close()
        if flat:
            assert bytes(got[0]) == b"" and np.frombuffer(got[1], dtype=np.int64).tolist() == [0, 0, 0, 0]
        else:
            assert got == [[], [], []]


def _big_batch_with(long_text):
    """More texts than one group holds (_batch._MAX_GROUP), so that the job
    itself reads the batch's shape, and `long_text` among them."""
    texts = [f"{line} ({k})" for k, line in enumerate(LINES[:1500] * 2)]  # (new objects each)
    assert len(texts) > spmbpe._batch._MAX_GROUP
    texts.insert(1234, long_text)
    return texts


@pytest.mark.parametrize("flat", [False, True], ids=["lists", "numpy"])
def test_a_large_batch_reads_its_shape_once_and_cuts_a_long_text(monkeypatch, flat):
    """A batch of more texts than a group holds is read once, by the job that
    takes its texts (no pass of batch_shape before it); when a text is longer
    than two shares, the job refuses the batch and the groups' way cuts that
    text for the threads.  Both give sentencepiece's ids."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(MODEL))
    calls = {"shape": 0, "groups": 0}
    shape, groups = spmbpe._batch.batch_shape, spmbpe._batch._batch_groups

    def counted_shape(*a):
        calls["shape"] += 1
        return shape(*a)

    def counted_groups(*a):
        calls["groups"] += 1
        return groups(*a)

    monkeypatch.setattr(spmbpe._batch, "batch_shape", counted_shape)
    monkeypatch.setattr(spmbpe._batch, "_batch_groups", counted_groups)
    tok = spmbpe.load(MODEL)
    document = (DATA_DIR / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")[:200_000]

    def cut_before(size):
        # Whether the batch with a text of `size` characters was cut for two
        # threads before the job read the shape: batch_shape's share and
        # longest, and the rule _batch_groups applies to them.
        share, longest, _ = shape(_big_batch_with(document[:size]), 2 * 4, spmbpe._batch._MIN_SHARE,
                                  spmbpe._batch._MAX_GROUP)
        return spmbpe._batch._cuts_long_texts(tok._core, True, share, longest)

    low, high = 300, len(document)  # (not cut, cut: the last size not cut is found between)
    assert not cut_before(low) and cut_before(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if not cut_before(mid) else (low, mid)
    for size, cut in ((300, False), (low, False), (high, True), (len(document), True)):
        texts = _big_batch_with(document[:size])
        want = sp.encode(texts)
        for threads in (1, 2):
            calls.update(shape=0, groups=0)
            got = tok.encode_batch(texts, num_threads=threads, return_numpy=flat)
            if flat:
                ids, offsets = got
                got = [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))]
            assert got == want
            # (One thread never cuts a text: the job takes the batch.)
            assert calls == {"shape": 0, "groups": int(cut and threads > 1)}, (size, threads)


@pytest.mark.parametrize("flat", [False, True], ids=["lists", "numpy"])
def test_a_batch_job_gives_back_every_text(flat):
    """The job holds a reference to each text while the threads read it and
    gives each back once (as its unit is collected, or at the end): every
    text's reference count is what it was, after a batch, after one it
    refused for a long text, and after one a text failed.  (After a
    collection: a failed job, say, stays in its traceback's cycle until then;
    and once the pool's threads have let go of their last task, which holds
    a refused batch's groups for a moment after its result is handed over.
    A text not given back never returns to its count; one given back twice
    falls below it or crashes.)"""
    tok = spmbpe.load(MODEL)
    document = (DATA_DIR / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")[:200_000]
    for texts in (_big_batch_with("short"), _big_batch_with(document), _big_batch_with("bad \ud800")):
        before = [sys.getrefcount(t) for t in texts]
        for threads in (1, 2):
            try:
                tok.encode_batch(texts, num_threads=threads, return_numpy=flat)
            except ValueError as e:
                assert "surrogate" in str(e) and texts[1234].startswith("bad")
            for _ in range(200):
                gc.collect()
                after = [sys.getrefcount(t) for t in texts]
                if after == before or min(a - b for a, b in zip(after, before)) < 0:
                    break
                time.sleep(0.05)
            changed = [(i, a - b) for i, (a, b) in enumerate(zip(after, before)) if a != b]
            assert not changed, (threads, len(changed), changed[:5])


@pytest.mark.parametrize("bad, error, message", [
    (3, TypeError, r"texts\[1234\] must be str, not int"),
    (b"x", TypeError, r"texts\[1234\] must be str, not bytes"),
    ("a \ud800", ValueError, r"texts\[1234\]: text contains a lone surrogate"),
])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("flat", [False, True], ids=["lists", "numpy"])
def test_a_large_batch_names_a_bad_text_as_a_small_one_does(bad, error, message, threads, flat):
    """A text that is not a str (which the job refuses before any merge) or
    holds a lone surrogate (which fails it) is named by its index, as in a
    batch small enough to be read by batch_shape first."""
    tok = spmbpe.load(MODEL)
    for texts in (_big_batch_with(bad), ["a"] * 1234 + [bad]):
        with pytest.raises(error, match=message):
            tok.encode_batch(texts, num_threads=threads, return_numpy=flat)
