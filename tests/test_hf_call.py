"""``tok(texts, ...)`` returns what transformers' tokenizer call returns on
the same model folder: ``input_ids`` and ``attention_mask`` under every
padding / truncation / side / tensor option (compared live with the slow
``LlamaTokenizer`` and the fast one)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import spmbpe

from conftest import LLAMA_SPM_GGUF
from test_hf_folder import build_folder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TEXTS = [
    "Hello world",
    "A longer sentence, with punctuation; and 日本語 text.",
    "",
    "<s> a spelled special token </s> inside",
    "x",
]

OPTIONS = [
    dict(),
    dict(add_special_tokens=False),
    dict(padding=True),
    dict(padding="longest", padding_side="left"),
    dict(padding="max_length", max_length=24),
    dict(padding="max_length", max_length=24, padding_side="left"),
    dict(padding=True, truncation=True, max_length=6),
    dict(truncation=True, max_length=4),
    dict(max_length=3),  # truncation turns on by itself (transformers' rule)
    dict(padding=True, pad_to_multiple_of=8),
    dict(padding="max_length", truncation=True, max_length=5, add_special_tokens=False),
    dict(truncation="longest_first", max_length=3),
    dict(padding=True, return_tensors="np"),
    dict(padding="max_length", truncation=True, max_length=7, return_tensors="np", padding_side="left"),
    dict(padding=True, return_attention_mask=False),
]


@pytest.fixture(scope="module", params=[dict(legacy=True, add_eos=False), dict(legacy=True, add_eos=True)],
                ids=["bos", "bos+eos"])
def pair(request, tmp_path_factory):
    from transformers import AutoTokenizer

    folder = build_folder(
        tmp_path_factory.mktemp("hfcall") / "m", "mistral-v1", add_bos=True,
        add_eos=request.param["add_eos"], legacy=request.param["legacy"],
        config_extra={"pad_token": "<unk>"},
    )
    slow = AutoTokenizer.from_pretrained(str(folder), use_fast=False)
    fast = AutoTokenizer.from_pretrained(str(folder), use_fast=True)
    # spmbpe pads on the right unless told, as the slow LlamaTokenizer
    # does; LlamaTokenizerFast defaults to the left.
    assert (slow.padding_side, fast.padding_side) == ("right", "left")
    default = spmbpe.load(folder, reference="transformers4")(["a", "a b"], padding=True)
    assert default["attention_mask"][0][-1] == 0 and 0 not in default["attention_mask"][1]
    assert dict(slow(["a", "a b"], padding=True)) == default
    fast.padding_side = "right"
    return spmbpe.load(folder, reference="transformers4"), slow, fast


def _plain(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.kind, value.shape, value.tolist())
    return value


def _same(ours, theirs):
    assert sorted(ours.keys()) == sorted(k for k in theirs.keys() if k != "token_type_ids")
    for key in ours:
        assert _plain(ours[key]) == _plain(theirs[key]), key


@pytest.mark.parametrize("options", OPTIONS, ids=[repr(o) for o in OPTIONS])
def test_batch_equals_transformers(pair, options):
    tok, slow, fast = pair
    assert tok.pad_id == slow.pad_token_id == 0
    for reference in (slow, fast):
        _same(tok(TEXTS, **options), reference(TEXTS, **options))


@pytest.mark.parametrize("options", OPTIONS[:9] + OPTIONS[12:], ids=[repr(o) for o in OPTIONS[:9] + OPTIONS[12:]])
def test_single_text_equals_transformers(pair, options):
    tok, slow, _ = pair
    for text in ("Hello world", "A longer sentence, with punctuation"):
        _same(tok(text, **options), slow(text, **options))


def test_left_truncation_equals_transformers(pair):
    tok, slow, _ = pair
    slow.truncation_side = "left"
    try:
        _same(tok(TEXTS, truncation=True, max_length=4, truncation_side="left"),
              slow(TEXTS, truncation=True, max_length=4))
    finally:
        slow.truncation_side = "right"


def test_truncation_to_the_special_tokens_alone(pair):
    """Where max_length has room for BOS/EOS only, transformers logs an
    error and leaves the text untruncated; spmbpe keeps max_length."""
    tok, slow, _ = pair
    n = int(tok.add_bos) + int(tok.add_eos)
    assert tok(TEXTS, truncation=True, max_length=n)["input_ids"] == [
        [tok.bos_id] + ([tok.eos_id] if tok.add_eos else [])
    ] * len(TEXTS)
    assert slow(TEXTS, truncation=True, max_length=n)["input_ids"] == slow(TEXTS)["input_ids"]


def test_the_result_reads_as_attributes(pair):
    tok = pair[0]
    out = tok(["Hello", "Hello world"], padding=True)
    assert out.input_ids is out["input_ids"] and out.attention_mask is out["attention_mask"]
    assert isinstance(out, dict)
    with pytest.raises(AttributeError):
        out.token_type_ids


def test_pad_token_id_overrides_and_is_needed(tmp_path):
    from transformers import AutoTokenizer

    folder = build_folder(tmp_path / "nopad", "mistral-v1", add_bos=True)
    tok = spmbpe.load(folder, reference="transformers4")
    slow = AutoTokenizer.from_pretrained(str(folder), use_fast=False)
    assert tok.pad_id is None and slow.pad_token_id is None
    # Both refuse to pad without a pad token; neither minds when not padding.
    with pytest.raises(ValueError, match="pad"):
        slow(TEXTS, padding=True)
    with pytest.raises(ValueError, match="pad_token_id"):
        tok(TEXTS, padding=True)
    _same(tok(TEXTS), slow(TEXTS))
    # An explicit pad id: transformers with that pad token.
    slow.pad_token = "</s>"
    _same(tok(TEXTS, padding=True, pad_token_id=tok.eos_id, padding_side="left"),
          slow(TEXTS, padding=True, padding_side="left"))
    _same(tok(TEXTS, padding="max_length", max_length=30, pad_token_id=2, return_tensors="np"),
          slow(TEXTS, padding="max_length", max_length=30, return_tensors="np"))


def test_other_formats_and_numpy_types():
    tok = spmbpe.load(LLAMA_SPM_GGUF)
    out = tok(["Hello world", "a"], padding=True, pad_token_id=0, return_tensors="np")
    assert out["input_ids"].dtype == np.int64 and out["attention_mask"].dtype == np.int64
    assert out["input_ids"].tolist() == [[1, 15043, 3186], [1, 263, 0]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert tok("Hello world", return_tensors="np")["input_ids"].tolist() == [[1, 15043, 3186]]
    assert tok([], padding=True, pad_token_id=0, return_tensors="np")["input_ids"].shape == (0, 0)


def test_invalid_options_are_errors():
    tok = spmbpe.load(LLAMA_SPM_GGUF)
    with pytest.raises(ValueError, match="different lengths"):
        tok(["a", "a b c"], return_tensors="np")
    with pytest.raises(ValueError, match="max_length"):
        tok(["a"], truncation=True)
    with pytest.raises(ValueError, match="max_length"):
        tok(["a"], padding="max_length", pad_token_id=0)
    with pytest.raises(ValueError, match="no room"):
        tok(["a"], truncation=True, max_length=0)
    with pytest.raises(ValueError, match="padding"):
        tok(["a"], padding="sideways")
    with pytest.raises(ValueError, match="padding_side"):
        tok(["a"], padding=True, pad_token_id=0, padding_side="top")
    with pytest.raises(ValueError, match="return_tensors"):
        tok(["a"], return_tensors="tf")
    with pytest.raises(TypeError):
        tok(3)  # type: ignore[arg-type]
    with pytest.raises(spmbpe.InvalidTokenIdError):
        tok(["a"], padding=True, pad_token_id=tok.vocab_size)
