"""One tokenizer shared by many threads gives exactly the serial results.

Threads call encode, encode_ordinary, encode_with_offsets, encode_batch (list
and NumPy output, itself multi-threaded), decode and decode_bytes on the same
tokenizer at once, released together by a barrier: on the same texts (every
thread hits the same cached chunks) and on different texts (the shared cache
fills and grows under contention), with a thread clearing the cache meanwhile
(tests/test_batch_job.py fills a small one to its bounds).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import threading

import pytest

import spmbpe
from spmbpe import _testing

from conftest import DATA_DIR, LLAMA_SPM_GGUF

N_THREADS = 8


def corpus_texts(limit=300):
    texts = []
    for name in ("en_botchan.txt", "multi_ja.txt", "code_py.txt", "multi_ru.txt"):
        lines = (DATA_DIR / "corpus" / name).read_text(encoding="utf-8").splitlines()
        texts += [line for line in lines if line.strip()][: limit // 4]
    texts.append("\n".join(texts[:40]))  # a long document (chunked, cached)
    texts += ["", " ", "</s>a<s>", "[INST] hi [/INST]", "  leading and trailing  ", "\U0001f600" * 30,
              "\uff21\uff22 \u2167 \ufb01 caf\u00e9", "x" * 3000]
    return texts


def _nfkc_model(folder):
    """A small BPE model with sentencepiece's nmt_nfkc normalizer (the
    normalizer stage runs in every encode)."""
    spm = pytest.importorskip("sentencepiece")
    corpus = folder / "corpus.txt"
    lines = (DATA_DIR / "corpus" / "en_botchan.txt").read_text(encoding="utf-8").splitlines()[:300]
    corpus.write_text("\n".join(lines) + "\n\uff21\uff22 \u2167 \ufb01 caf\u00e9\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "nfkc"), model_type="bpe", vocab_size=600,
        normalization_rule_name="nmt_nfkc", byte_fallback=True, minloglevel=2,
    )
    return folder / "nfkc.model"


def _hf_folder(folder):
    shutil.copy(DATA_DIR / "mistral-v3.model", folder / "tokenizer.model")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"legacy": False, "additional_special_tokens": ["[INST]", "[/INST]"]}))
    return folder


@pytest.fixture(scope="module", params=["gguf", "mistral-v1.model", "tokenizer.json", "nmt_nfkc", "hf-nonlegacy"])
def tok(request, tmp_path_factory):
    if request.param == "nmt_nfkc":
        return spmbpe.load(_nfkc_model(tmp_path_factory.mktemp("nfkc")))
    if request.param == "hf-nonlegacy":
        return spmbpe.load(_hf_folder(tmp_path_factory.mktemp("hf")), reference="transformers4")
    path = {
        "gguf": LLAMA_SPM_GGUF,
        "mistral-v1.model": DATA_DIR / "mistral-v1.model",
        "tokenizer.json": DATA_DIR / "mistral-v1.tokenizer.json",
    }[request.param]
    return spmbpe.load(path)


@pytest.fixture(scope="module")
def texts():
    return corpus_texts()


def serial(tok, texts):
    _testing.clear_cache(tok._core)  # serial results from a cold cache
    return {
        "encode": [tok.encode(t, special="all") for t in texts],
        "ordinary": [tok.encode_ordinary(t) for t in texts],
        "offsets": [tok.encode_with_offsets(t, special="all") for t in texts],
    }


def run_threads(worker, n=N_THREADS):
    barrier = threading.Barrier(n)
    errors = []

    def body(k):
        try:
            barrier.wait()
            worker(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((k, e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a thread hung"
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0][1]


def test_same_texts_everywhere(tok, texts):
    """Every thread encodes the same texts in the same order: the caches
    and workspace pool are hit by all of them at once."""
    expected = serial(tok, texts)

    def worker(k):
        for _ in range(2):
            assert [tok.encode(t, special="all") for t in texts] == expected["encode"]
            assert [tok.encode_ordinary(t) for t in texts] == expected["ordinary"]

    run_threads(worker)


def test_different_texts_and_entry_points(tok, texts):
    expected = serial(tok, texts)
    decoded = [tok.decode(ids) for ids in expected["encode"]]

    def worker(k):
        rng = random.Random(k)
        order = list(range(len(texts)))
        rng.shuffle(order)
        for i in order[: len(order) // 2]:
            kind = (i + k) % 4
            if kind == 0:
                assert tok.encode(texts[i], special="all") == expected["encode"][i]
            elif kind == 1:
                assert tok.encode_with_offsets(texts[i], special="all") == expected["offsets"][i]
            elif kind == 2:
                assert tok.decode(expected["encode"][i]) == decoded[i]
                assert tok.decode_bytes(expected["encode"][i]).decode("utf-8", "replace") == decoded[i]
            else:
                assert tok.encode_ordinary(texts[i]) == expected["ordinary"][i]
        chunk = [texts[i] for i in order[:60]]
        assert tok.encode_batch(chunk, num_threads=2, special="all") == [expected["encode"][i] for i in order[:60]]

    run_threads(worker)


def test_batches_from_many_threads(tok, texts):
    expected = serial(tok, texts)["encode"]
    np = pytest.importorskip("numpy")

    def worker(k):
        for _ in range(2):
            assert tok.encode_batch(texts, num_threads=2, special="all") == expected
            ids, offsets = tok.encode_batch(texts, num_threads=2, return_numpy=True, special="all")
            got = [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))]
            assert got == expected
            assert ids.dtype == np.uint32

    run_threads(worker, 4)


def test_batches_with_different_thread_counts(texts):
    """Callers asking for different num_threads at once: the shared pool was
    shut down under a running batch ("cannot schedule new futures after
    shutdown")."""
    tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
    expected = [tok.encode(t, special="all") for t in texts]

    def worker(k):
        for _ in range(20):
            assert tok.encode_batch(texts, num_threads=1 + k % 3 + 1, special="all") == expected

    run_threads(worker, 6)


def test_cache_cleared_under_contention(tok, texts):
    expected = serial(tok, texts)["encode"]
    stop = threading.Event()

    def clearer():
        while not stop.is_set():
            _testing.clear_cache(tok._core)

    side = threading.Thread(target=clearer)
    side.start()
    try:
        def worker(k):
            for t, ids in zip(texts[k::2], expected[k::2]):
                assert tok.encode(t, special="all") == ids

        run_threads(worker, 6)
    finally:
        stop.set()
        side.join()


def test_loads_and_encodes_in_parallel(texts):
    """Loading in one thread while others encode with their own tokenizers."""
    ref = spmbpe.load(DATA_DIR / "mistral-v1.model")
    expected = [ref.encode(t) for t in texts[:80]]

    def worker(k):
        for _ in range(3):
            tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
            assert [tok.encode(t, special="all") for t in texts[:80]] == expected

    run_threads(worker, 4)
