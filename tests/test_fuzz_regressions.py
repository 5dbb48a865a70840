"""What fuzzing found (tools/fuzz.py), pinned; and a short fuzz run.

Each regression test is the smallest input that showed the problem; the
``test_short_fuzz_run`` cases run every fuzz target for a fixed number of
inputs from a fixed seed (a few seconds in all).  Longer runs:
``python tools/fuzz.py all --seconds 600``.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import random
import struct
import time

import pytest

import spmbpe
from spmbpe.errors import (
    DisallowedSpecialError,
    ModelFormatError,
    UnsupportedFeatureError,
    UnsupportedModelError,
)

from conftest import DATA_DIR
from long_run import examples
from test_malformed import (
    ARRAY,
    FLOAT32,
    INT32,
    STRING,
    base_kvs,
    gguf_bytes,
    raises_format_error,
    small_model,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent
FUZZ_PATH = ROOT / "tools" / "fuzz.py"


def _fuzz_module():
    if not FUZZ_PATH.exists():
        pytest.skip("tools/fuzz.py is not in this tree (an sdist)")
    spec = importlib.util.spec_from_file_location("spmbpe_fuzz", FUZZ_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------- GGUF


def test_gguf_float_token_types(tmp_path):
    """TypeError from array('i', floats) in gguf._numeric_array."""
    n = len(base_kvs()[2][2][1])
    data = gguf_bytes(base_kvs(**{"tokenizer.ggml.token_type": (ARRAY, (FLOAT32, [1.0] * n))}))
    raises_format_error(tmp_path, data, match="token_type holds floats")


def test_gguf_scores_as_strings(tmp_path):
    n = len(base_kvs()[2][2][1])
    data = gguf_bytes(base_kvs(**{"tokenizer.ggml.scores": (ARRAY, (STRING, ["x"] * n))}))
    raises_format_error(tmp_path, data, match="not a numeric array")


def test_gguf_errors_name_the_offset_of_the_pair(tmp_path):
    data = gguf_bytes(base_kvs(**{"tokenizer.ggml.eos_token_id": (INT32, 10**6)}))
    err = raises_format_error(tmp_path, data)
    assert err.offset == data.index(b"tokenizer.ggml.eos_token_id") - 8


# ----------------------------------------------------------------- tokenizer.json


def _small_json():
    data = json.loads((DATA_DIR / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    vocab = {p: i for p, i in data["model"]["vocab"].items() if i < 300}
    data["model"]["vocab"] = vocab
    pairs = [(m, m.split(" ", 1) if isinstance(m, str) else m) for m in data["model"]["merges"]]
    data["model"]["merges"] = [m for m, (a, b) in pairs if a in vocab and b in vocab and a + b in vocab]
    data["added_tokens"] = [t for t in data["added_tokens"] if t["id"] < 300]
    return data


def _write(tmp_path, tree):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(tree))
    return path


def test_json_huge_id_does_not_walk_to_it(tmp_path):
    """A vocab id of 2**62 made the loader build range(2**62): a hang."""
    tree = _small_json()
    tree["model"]["vocab"]["<unk>"] = 2**62
    start = time.monotonic()
    with pytest.raises(ModelFormatError, match="no piece has id"):
        spmbpe.load(str(_write(tmp_path, tree)))
    assert time.monotonic() - start < 2


def test_json_negative_added_token_id(tmp_path):
    """IndexError from types[token.id] with a negative added-token id."""
    tree = _small_json()
    tree["added_tokens"].append({"id": -3, "content": "<x>", "special": True})
    with pytest.raises(ModelFormatError, match="invalid entry"):
        spmbpe.load(str(_write(tmp_path, tree)))


@pytest.mark.parametrize(
    "post",
    [
        {"type": "TemplateProcessing", "single": {"a": 1}},
        {"type": "TemplateProcessing", "single": [{"SpecialToken": 5}]},
        {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}], "special_tokens": []},
        {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": ["<s>"]}}]},
    ],
)
def test_json_template_structures(tmp_path, post):
    """KeyError / TypeError / AttributeError from odd post_processor trees."""
    tree = _small_json()
    tree["post_processor"] = post
    with pytest.raises(ModelFormatError):
        spmbpe.load(str(_write(tmp_path, tree)))


def test_json_unsupported_front_end_is_an_spmbpe_error(tmp_path):
    """NotImplementedError, which no `except SpmbpeError` caught."""
    tree = _small_json()
    tree["pre_tokenizer"] = None
    with pytest.raises(UnsupportedFeatureError) as info:
        spmbpe.load(str(_write(tmp_path, tree)))
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, UnsupportedModelError)


# ----------------------------------------------------------------- .model / HF folder


def test_model_corrupt_charsmap_is_a_format_error(tmp_path):
    """ValueError from spmbpe._normalizer escaped the .model loader."""
    from spm_proto import model_proto, normalizer_spec, trainer_spec
    from test_malformed import MODEL_PIECES, MODEL_SCORES, MODEL_TYPES

    charsmap = struct.pack("<I", 4) + bytes(3)
    data = model_proto(MODEL_PIECES, MODEL_SCORES, MODEL_TYPES, trainer=trainer_spec(vocab_size=len(MODEL_PIECES)),
                       normalizer=normalizer_spec(name="x", precompiled_charsmap=charsmap))
    raises_format_error(tmp_path, data, "x.model", match="charsmap", offset=False)


def test_model_that_fails_the_sniff_names_the_offset(tmp_path):
    """A corrupt .model whose first bytes fail the format sniff was 'not a
    tokenizer file spmbpe knows'; the extension now picks the reader."""
    data = bytearray(small_model())
    data[3] = 0x7F
    raises_format_error(tmp_path, bytes(data), "x.model")


def test_hf_folder_tokenizer_class_list(tmp_path):
    """TypeError: unhashable type 'list' in the transformers 4 folder loader (read_transformers4_spec)."""
    (tmp_path / "tokenizer.model").write_bytes(small_model())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": ["LlamaTokenizer"]}))
    with pytest.raises(UnsupportedModelError):
        spmbpe.load(str(tmp_path))


def test_disallowed_offset_hf_non_legacy(tmp_path):
    """DisallowedSpecialError.offset counted the synthetic "▁" that
    non-legacy folders put in front of the text (fuzz target encode)."""
    import shutil

    shutil.copy(DATA_DIR / "mistral-v3.model", tmp_path / "tokenizer.model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"legacy": False, "additional_special_tokens": ["[INST]", "[/INST]"]}))
    tok = spmbpe.load(str(tmp_path), reference="transformers4")
    for text in ("ab [INST]", "\u00e9[INST]", "[INST]", "\U0001f600 x [INST]"):
        with pytest.raises(DisallowedSpecialError) as info:
            tok.encode(text, special={"[/INST]"})
        assert info.value.offset == text.index("[INST]")


def test_a_skipped_first_id_leaves_the_next_pieces_space_in_a_gguf():
    """The decode target's invariant took skip_special=True as decoding the
    ids without the control and unknown ones; llama_detokenize strips the
    leading space of the first id only, whatever it renders, so a skipped
    first id leaves the next piece its space.  The rows are llama.cpp's
    (llama-cpp-python 0.3.36: llama_detokenize(remove_special=true,
    unparse_special=false)); the ids are the finding's."""
    tok = spmbpe.load(DATA_DIR / "ggml-vocab-llama-spm.gguf")
    assert tok.decode_bytes([0, 0, 29611, 4095], skip_special=True) == b" simulate govern"
    assert tok.decode_bytes([1, 29611, 4095], skip_special=True) == b" simulate govern"
    assert tok.decode_bytes([29611, 4095], skip_special=True) == b"simulate govern"


def test_the_decode_targets_invariant_takes_a_skipped_first_id(fuzz, tmp_path):
    # The finding (its first byte 0xff picked the GGUF among three
    # tokenizers; 0x00 picks it among two as well).
    target = fuzz.TARGET_CLASSES["decode"](tmp_path)
    assert fuzz.classify(target, bytes.fromhex("000000000000000000bf6affffffff0000008001")) is None


# ----------------------------------------------------------------- short fuzz run

# (target, inputs): a fixed seed and count, a few seconds in all in the long
# run; a tenth of the inputs (the seeds first) in the quick one.
SHORT_RUN = [(name, examples(count)) for name, count in [
    ("encode", 300), ("decode", 300), ("gguf", 120), ("model", 120), ("tokenizer_json", 60),
    ("hf_folder", 40), ("normalizer", 150)]]


@pytest.fixture(scope="module")
def fuzz():
    return _fuzz_module()


@pytest.mark.parametrize("name, count", SHORT_RUN)
def test_short_fuzz_run(fuzz, tmp_path, name, count):
    target = fuzz.TARGET_CLASSES[name](tmp_path)
    rng = random.Random(1234)
    corpus = list(target.seeds)
    findings = []
    deadline = time.monotonic() + 20
    for i in range(count):
        data = corpus[i] if i < len(corpus) else target.mutate(rng.choice(corpus), rng)
        result = fuzz.classify(target, data)
        if result is not None:
            findings.append((result, data[:200]))
        if time.monotonic() > deadline:
            break
    assert not findings, findings[:3]


def test_normalizer_on_cut_and_flipped_charsmaps(fuzz, tmp_path):
    """The C normalizer on a real charsmap cut short and with bytes flipped
    (no sentencepiece involved, so this also runs under tools/sanitize.sh)."""
    from spmbpe._normalizer import Normalizer

    target = fuzz.TARGET_CLASSES["normalizer"](tmp_path)
    blob = target.seeds[0]
    rng = random.Random(5)
    cases = [blob[:cut] for cut in range(0, len(blob), max(1, len(blob) // 150))]
    for _ in range(150):
        bad = bytearray(blob)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        cases.append(bytes(bad))
    loaded = 0
    for case in cases:
        try:
            norm = Normalizer(case)
        except ValueError:
            continue
        loaded += 1
        for text in ("\uff21\uff22 \u2167 \ufb01 caf\u00e9", "  a  b  ", "\x00\U0010ffff\u0301"):
            out, align = norm.normalize_with_offsets(text)
            assert out == norm.normalize(text)
            assert len(align) == len(out) + 1
    assert loaded > 0
