"""The names users of transformers, sentencepiece and tiktoken try first
(issue 23, item 10): each spells one method, so each equals it."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import sentencepiece

import spmbpe

@pytest.fixture(scope="module")
def tok():
    return spmbpe.load("mistral-v1")


@pytest.fixture(scope="module")
def sp():
    import pathlib

    return sentencepiece.SentencePieceProcessor(model_file=str(pathlib.Path(__file__).parent / "data" / "mistral-v1.model"))


TEXTS = ["Hello world", "a</s>b", "", "Grüße, 世界 🦙"]


def test_transformers_names(tok):
    assert (tok.bos_token_id, tok.eos_token_id, tok.unk_token_id, tok.pad_token_id) == (
        tok.bos_id, tok.eos_id, tok.unk_id, tok.pad_id,
    ) == (1, 2, 0, None)
    for text in TEXTS:
        ids = tok.encode(text)
        assert tok.tokenize(text) == [tok.id_to_piece(i) for i in ids]
        assert tok.convert_ids_to_tokens(ids) == tok.tokenize(text)
        assert tok.convert_tokens_to_ids(tok.tokenize(text)) == ids
    assert tok.tokenize("Hello world") == ["\u2581Hello", "\u2581world"]
    assert tok.convert_ids_to_tokens(22557) == "\u2581Hello"
    assert tok.convert_tokens_to_ids("\u2581Hello") == 22557
    assert tok.convert_tokens_to_ids("no such piece") == tok.unk_id
    vocab = tok.get_vocab()
    assert len(vocab) == tok.vocab_size and vocab["\u2581Hello"] == 22557
    assert all(tok.id_to_piece(i) == p for p, i in vocab.items())


def test_sentencepiece_takes_lists_too(tok, sp):
    ids = tok.encode("Hello world, again")
    assert tok.id_to_piece(ids) == sp.id_to_piece(ids)
    pieces = tok.id_to_piece(ids)
    assert tok.piece_to_id(pieces) == sp.piece_to_id(pieces) == ids
    with pytest.raises(spmbpe.InvalidTokenIdError):
        tok.id_to_piece([1, 10**9])


def test_decode_batch(tok):
    batch = [tok.encode(t) for t in TEXTS]
    assert tok.decode_batch(batch) == [tok.decode(ids) for ids in batch] == [t for t in TEXTS]
    with_bos = [[1] + ids for ids in batch]
    assert tok.decode_batch(with_bos, skip_special=True) == [tok.decode(ids, skip_special=True) for ids in with_bos]
    assert tok.batch_decode(with_bos, skip_special_tokens=True) == tok.decode_batch(with_bos, skip_special=True)
    with pytest.raises(TypeError):
        tok.decode_batch("abc")


def test_offsets_for_a_batch(tok):
    assert tok.encode_batch_with_offsets(TEXTS) == [tok.encode_with_offsets(t) for t in TEXTS]
    with pytest.raises(TypeError):
        tok.encode_batch_with_offsets("abc")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16, np.uint32, np.uint64])
def test_encode_batch_numpy_dtypes(tok, dtype):
    ids, offsets = tok.encode_batch(TEXTS, return_numpy=True, dtype=dtype)
    assert ids.dtype == np.dtype(dtype) and offsets.dtype == np.int64
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(TEXTS))] == tok.encode_batch(TEXTS)
    with pytest.raises(ValueError, match="dtype"):
        tok.encode_batch(TEXTS, return_numpy=True, dtype=np.float32)


def test_return_tensors_pt(tok, monkeypatch):
    # Without PyTorch: a clear message naming both ways out.
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="needs PyTorch.*pip install torch.*return_tensors='np'"):
        tok(["Hello"], return_tensors="pt")
    # With it (a stand-in module recording what it is given): int64 tensors
    # of the ids and mask that return_tensors="np" gives.
    made = []
    fake = types.ModuleType("torch")
    fake.int64 = "int64"

    class Tensor:
        def __init__(self, data, dtype):
            self.data, self.dtype = data, dtype

        def reshape(self, shape):
            made.append((self.data, self.dtype, shape))
            return self

    fake.tensor = Tensor
    monkeypatch.setitem(sys.modules, "torch", fake)
    out = tok(["Hello", "Hello world"], padding=True, pad_token_id=0, return_tensors="pt")
    ref = tok(["Hello", "Hello world"], padding=True, pad_token_id=0, return_tensors="np")
    assert out["input_ids"].data == ref["input_ids"].tolist() and out["input_ids"].dtype == "int64"
    assert out["attention_mask"].data == ref["attention_mask"].tolist()
    assert made[0][2] == ref["input_ids"].shape
