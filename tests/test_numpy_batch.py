"""encode_batch(..., return_numpy=True): one flat id array and document
offsets, equal to the list output; NumPy stays an optional dependency."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spmbpe

DATA = Path(__file__).parent / "data"
FILES = ["mistral-v1.model", "mistral-v3.model", "ggml-vocab-llama-spm.gguf", "mistral-v1.tokenizer.json"]


def _texts():
    lines = [x for x in (DATA / "corpus" / "multi_de.txt").read_text(encoding="utf-8").splitlines() if x.strip()][:400]
    return lines + ["", " ", "a</s>b<s>", "[INST] hi [/INST]", "日本語 🦙"]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("special", ["all", "none"])
def test_flat_ids_and_offsets_equal_the_lists(name, threads, special):
    tok = spmbpe.load(DATA / name)
    texts = _texts()
    expected = tok.encode_batch(texts, special=special, num_threads=threads)
    ids, offsets = tok.encode_batch(texts, special=special, num_threads=threads, return_numpy=True)
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64
    assert len(offsets) == len(texts) + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))] == expected


def test_uint16_and_special_tokens():
    tok = spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf")
    texts = ["Hello world", "", "x"]
    ids, offsets = tok.encode_batch(texts, return_numpy=True, dtype=np.uint16, add_special_tokens=True)
    assert ids.dtype == np.uint16
    expected = tok.encode_batch(texts, add_special_tokens=True)
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(3)] == expected
    assert expected[0] == [1, 15043, 3186]  # llama.cpp golden row with BOS


def test_uint16_refuses_a_vocabulary_that_does_not_fit():
    pieces = ["<unk>", "\u2581"] + [f"p{i}" for i in range(70000)]
    tok = spmbpe.SpmTokenizer(pieces)
    with pytest.raises(ValueError, match="uint16"):
        tok.encode_batch(["p1"], return_numpy=True, dtype=np.uint16)
    with pytest.raises(ValueError, match="dtype"):
        tok.encode_batch(["p1"], return_numpy=True, dtype=np.int8)


def test_empty_batch():
    tok = spmbpe.load("mistral-v1")
    ids, offsets = tok.encode_batch([], return_numpy=True)
    assert ids.tolist() == [] and offsets.tolist() == [0]


def test_importing_spmbpe_does_not_import_numpy():
    code = "import sys, spmbpe; spmbpe.load('mistral-v1').encode_batch(['a b']); assert 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent)
