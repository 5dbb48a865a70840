"""HuggingFace model folders: ids equal transformers' slow LlamaTokenizer.

A folder holding ``tokenizer.model`` + ``tokenizer_config.json`` (+
``special_tokens_map.json``) is what transformers' sentencepiece-backed
``LlamaTokenizer`` reads; ``spmbpe.load(folder, reference="transformers4")`` must give its ids.

References:

* the ``hf_slow`` field of ``data/mistral-v1.model.jsonl`` and
  ``data/mistral-v3.model.jsonl`` (transformers 4.57.6, made on the folder
  ``build_folder`` rebuilds here exactly as the fixtures README describes:
  ``legacy`` true for v1, false for v3);
* live transformers (the ``test`` extra; skipped when it is not installed):
  ``AutoTokenizer.from_pretrained(folder, use_fast=False)`` on the same
  folder and on variants of it (lstrip/rstrip, non-special added tokens,
  ``legacy`` absent, ``additional_special_tokens``, added tokens past the
  model's pieces, ``add_bos_token``/``add_eos_token``), under hypothesis.

No expectation here is derived from spmbpe itself.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import shutil
from typing import Dict, Iterable, Optional

import pytest
import sentencepiece
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe

from long_run import examples

DATA = pathlib.Path(__file__).parent / "data"
MODELS = ["mistral-v1", "mistral-v3"]
# The fixtures README: Mistral 7B v0.1 ships legacy: true; v3 is made with false.
GOLDEN_LEGACY = {"mistral-v1": True, "mistral-v3": False}

# transformers must never reach the network: the folders are local.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_MISSING = object()


# ------------------------------------------------------------- the folders


@functools.lru_cache(maxsize=None)
def control_pieces(model: str) -> Dict[int, str]:
    """id -> piece of every CONTROL piece of the model, per sentencepiece."""
    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / f"{model}.model"))
    return {i: sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i)}


def added_entry(content: str, *, special: bool = True, lstrip: bool = False, rstrip: bool = False,
                single_word: bool = False, normalized: bool = False) -> dict:
    """One ``added_tokens_decoder`` value, as transformers writes them."""
    return {
        "content": content,
        "lstrip": lstrip,
        "normalized": normalized,
        "rstrip": rstrip,
        "single_word": single_word,
        "special": special,
    }


def build_folder(
    root: pathlib.Path,
    model: str,
    *,
    legacy=_MISSING,
    add_bos: bool = False,
    add_eos: bool = False,
    added: Optional[Dict[int, dict]] = None,
    special_map_extra: Optional[dict] = None,
    config_extra: Optional[dict] = None,
    with_decoder: bool = True,
    controls: bool = True,
) -> pathlib.Path:
    """A model folder as the fixtures README describes it.

    ``tokenizer.model`` is the ``.model`` file; ``tokenizer_config.json``
    has ``legacy`` (default: the golden files' value for the model; pass
    ``None`` to leave the key out), ``add_bos_token``/``add_eos_token``,
    bos/eos/unk ``<s>``/``</s>``/``<unk>``, every CONTROL piece in
    ``added_tokens_decoder`` with ``special: true`` (``added`` adds or
    replaces entries; ``controls=False`` leaves the control pieces out of
    it; ``with_decoder=False`` leaves the key out, the pre-4.34 layout) and ``tokenizer_class: LlamaTokenizer``;
    ``special_tokens_map.json`` names bos/eos/unk (``special_map_extra``
    adds keys to it, ``config_extra`` to the config).
    """
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / f"{model}.model", root / "tokenizer.model")
    if legacy is _MISSING:
        legacy = GOLDEN_LEGACY[model]
    decoder = {str(i): added_entry(piece) for i, piece in control_pieces(model).items()} if controls else {}
    for i, entry in (added or {}).items():
        decoder[str(i)] = entry
    config = {
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        "added_tokens_decoder": dict(sorted(decoder.items(), key=lambda kv: int(kv[0]))),
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": False,
        "eos_token": "</s>",
        "legacy": legacy,
        "model_max_length": 1000000000000000019884624838656,
        "pad_token": None,
        "sp_model_kwargs": {},
        "spaces_between_special_tokens": False,
        "tokenizer_class": "LlamaTokenizer",
        "unk_token": "<unk>",
        "use_default_system_prompt": False,
    }
    if legacy is None:
        del config["legacy"]
    if not with_decoder:
        del config["added_tokens_decoder"]
    config.update(config_extra or {})
    (root / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    special_map = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    special_map.update(special_map_extra or {})
    (root / "special_tokens_map.json").write_text(json.dumps(special_map, indent=2), encoding="utf-8")
    return root


def _golden(model: str):
    with open(DATA / f"{model}.model.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def golden_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_golden")
    return {m: build_folder(root / m, m) for m in MODELS}


# ---------------------------------------------------------------- goldens


def test_folder_matches_the_fixtures_readme(golden_folders):
    for model, folder in golden_folders.items():
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        assert config["legacy"] is GOLDEN_LEGACY[model]
        assert config["add_bos_token"] is False and config["add_eos_token"] is False
        assert (config["bos_token"], config["eos_token"], config["unk_token"]) == ("<s>", "</s>", "<unk>")
        decoder = config["added_tokens_decoder"]
        assert {int(k): v["content"] for k, v in decoder.items()} == control_pieces(model)
        assert all(v["special"] for v in decoder.values())
        assert (folder / "tokenizer.model").read_bytes() == (DATA / f"{model}.model").read_bytes()
    assert len(control_pieces("mistral-v1")) == 2  # <s>, </s>
    assert len(control_pieces("mistral-v3")) > 700  # [INST], [/INST], [control_N], ...


@pytest.mark.parametrize("model", MODELS)
def test_every_golden_row_equals_transformers_slow(golden_folders, model):
    tok = spmbpe.load(golden_folders[model], reference="transformers4")
    rows = _golden(model)
    assert len(rows) > 900
    mismatches = [(r["text"], r["hf_slow"], tok.encode(r["text"], special="all")) for r in rows if tok.encode(r["text"], special="all") != r["hf_slow"]]
    assert mismatches == []


def test_golden_seed_rows(golden_folders):
    # The rows the fixtures README quotes, spelled out.
    v3 = spmbpe.load(golden_folders["mistral-v3"], reference="transformers4")
    assert v3.encode("<s>x", special="all") == [1, 29512]
    assert v3.encode(" <s>x", special="all") == [1027, 1, 29512]
    assert v3.encode("[control_27]Write", special="all") == [29473, 29, 6006]
    assert v3.encode("<s>x", add_special_tokens=True, special="all") == [1, 29512]  # add_bos_token false


# ------------------------------------------------------------------ errors


def test_folder_without_a_tokenizer_file(tmp_path):
    folder = tmp_path / "empty-model"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "LlamaTokenizer"}', encoding="utf-8")
    with pytest.raises(spmbpe.UnsupportedModelError) as info:
        spmbpe.load(folder, reference="transformers4")
    assert str(folder) in str(info.value)


def test_invalid_tokenizer_config_json(tmp_path):
    folder = build_folder(tmp_path / "m", "mistral-v1")
    (folder / "tokenizer_config.json").write_text('{"legacy": true,', encoding="utf-8")
    with pytest.raises(spmbpe.ModelFormatError) as info:
        spmbpe.load(folder, reference="transformers4")
    assert "tokenizer_config.json" in str(info.value)


def test_single_word_added_token_is_not_implemented(tmp_path):
    folder = build_folder(
        tmp_path / "m", "mistral-v1", added={32000: added_entry("<|im_start|>", single_word=True)}
    )
    with pytest.raises(NotImplementedError, match="single_word"):
        spmbpe.load(folder, reference="transformers4")


def test_other_tokenizer_class_is_unsupported(tmp_path):
    folder = build_folder(tmp_path / "m", "mistral-v1", config_extra={"tokenizer_class": "T5Tokenizer"})
    with pytest.raises(spmbpe.UnsupportedModelError, match="T5Tokenizer"):
        spmbpe.load(folder, reference="transformers4")


# ------------------------------------------------------ live transformers


@pytest.fixture(scope="module")
def transformers():
    tf = pytest.importorskip("transformers")
    pytest.importorskip("google.protobuf")  # non-legacy LlamaTokenizer edits the ModelProto
    tf.logging.set_verbosity_error()
    return tf


def hf_slow(transformers, folder):
    tok = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=False, local_files_only=True)
    assert type(tok).__name__ == "LlamaTokenizer"
    return tok


def test_transformers_reproduces_the_goldens(transformers, golden_folders):
    # The folder built here is the one the goldens were made on (every
    # third row: transformers is slow).
    for model, folder in golden_folders.items():
        hf = hf_slow(transformers, folder)
        rows = _golden(model)[::3]
        bad = [r["text"] for r in rows if hf.encode(r["text"], add_special_tokens=False) != r["hf_slow"]]
        assert bad == []


class Variant(tuple):
    """(model, folder, spmbpe tokenizer, transformers tokenizer), with a
    short repr (transformers' lists every added token)."""

    def __repr__(self) -> str:
        return f"<variant {self[1].name} of {self[0]}>"


def _pair(transformers, folder):
    return spmbpe.load(folder, reference="transformers4"), hf_slow(transformers, folder)


def _check(tok, hf, text: str, *, add_special_tokens=(False, True)):
    for add in add_special_tokens:
        expected = hf.encode(text, add_special_tokens=add)
        got = tok.encode(text, add_special_tokens=add, special="all")
        assert got == expected, (text, add, hf.convert_ids_to_tokens(expected), expected, got)


WORDS = [
    "Hello", "world", "a", "x", "the", "don't", "Write", "INST", "s", "unk", "control",
    "123", "3.14", "café", "naïve", "日本語", "한국어", "Привет", "🦙", "😀👍", "\u200b",
    "<", ">", "</", "/>", "[", "]", "[/", "_", "-", "<<", ">>", "][",
]
SPACES = [
    " ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\n ", "\r\n", "\u3000", "\xa0", "\x85", "\x0b",
    "\u2581", "\u2581\u2581", " \u2581", "\u2581 ",
]
V1_SPECIALS = ["<s>", "</s>", "<unk>", "[INST]", "[/INST]"]
V3_SPECIALS = V1_SPECIALS + [
    "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[PREFIX]", "[control_12]", "[control_27]", "[control_748]",
    "[control_8]",  # not a piece of v3 ([control_12] is the first)
    "[REFERENCE_DOC_3]",  # a USER_DEFINED piece: not an added token
]


def texts(specials: Iterable[str]) -> st.SearchStrategy[str]:
    specials = sorted(set(specials))
    special = st.sampled_from(specials)
    fragment = st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(SPACES),
        special,
        special,
        special.map(lambda s: " " + s),
        special.map(lambda s: s + " "),
        special.map(lambda s: " " + s + " "),
        st.text(st.characters(codec="utf-8"), max_size=3),
    )
    return st.lists(fragment, max_size=8).map("".join)


def _settings(n: int):
    return settings(
        max_examples=examples(n),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# (model, legacy, add_bos, add_eos): every model under both legacy values,
# add_bos_token/add_eos_token in each combination.
DIFF_CONFIGS = [
    ("mistral-v1", True, True, False),
    ("mistral-v1", False, False, True),
    ("mistral-v3", False, True, True),
    ("mistral-v3", True, False, False),
]


@pytest.fixture(scope="module", params=DIFF_CONFIGS, ids=lambda c: f"{c[0]}-legacy{c[1]}-bos{int(c[2])}eos{int(c[3])}")
def diff_pair(request, transformers, tmp_path_factory):
    model, legacy, add_bos, add_eos = request.param
    folder = build_folder(
        tmp_path_factory.mktemp("hf_diff") / model, model, legacy=legacy, add_bos=add_bos, add_eos=add_eos
    )
    return Variant((model, folder, *_pair(transformers, folder)))


@pytest.mark.parametrize(
    "text",
    [
        "", " ", "\u2581", "\u2581\u2581", " \u2581", "<s>", " <s>", "<s> ", "\u2581<s>", "[INST]",
        " [INST]", "\u2581[INST]", "[INST]Write", "[INST] Write [/INST]", "<s>[INST] hi [/INST]</s>",
        "a<unk>b", " <unk> ", "<s></s>", "<s> </s>", "x\n<s>\ny", "Hello\u2581world", "\u2581Hello",
    ],
)
def test_fixed_texts_equal_transformers(diff_pair, text):
    model, folder, tok, hf = diff_pair
    _check(tok, hf, text)


@_settings(80)
@given(data=st.data())
def test_random_texts_equal_transformers(diff_pair, data):
    model, folder, tok, hf = diff_pair
    text = data.draw(texts(V3_SPECIALS if model == "mistral-v3" else V1_SPECIALS), label="text")
    _check(tok, hf, text)


# ------------------------------------------------- folder variants, live

E = added_entry
# Added tokens past the model's pieces take the next ids, as transformers
# numbers them (v1 has 32000 pieces, v3 32768).
V1_PAST = {32000: E("<|im_start|>"), 32001: E("<|im_end|>")}
V1_STRIP = {
    2: E("</s>", lstrip=True),  # a control piece, now stripping
    32000: E("<|im_start|>", rstrip=True),
    32001: E("<|im_end|>", lstrip=True),
    32002: E("<tool>", special=False, lstrip=True, rstrip=True),
    32003: E("[INST]", special=False),
}
V3_STRIP = {
    3: E("[INST]", lstrip=True, rstrip=True),
    4: E("[/INST]", lstrip=True),
    11: E("[PREFIX]", rstrip=True),
    32768: E("<|im_start|>", special=False, rstrip=True),
    32769: E("<|im_end|>", special=True, lstrip=True),
}
ADDITIONAL = ["[INST]", "[/INST]", "[TOOL_CALLS]"]

# name -> (model, build_folder arguments)
VARIANTS = {
    "v1-strip-legacy": ("mistral-v1", dict(legacy=True, add_bos=True, add_eos=True, added=V1_STRIP)),
    "v1-strip-nonlegacy": ("mistral-v1", dict(legacy=False, add_bos=True, add_eos=False, added=V1_STRIP)),
    "v3-strip-legacy": ("mistral-v3", dict(legacy=True, add_bos=False, add_eos=True, added=V3_STRIP)),
    "v3-strip-nonlegacy": ("mistral-v3", dict(legacy=False, add_bos=True, add_eos=True, added=V3_STRIP)),
    "v1-past-vocab-legacy": ("mistral-v1", dict(legacy=True, add_bos=True, add_eos=True, added=V1_PAST)),
    "v1-past-vocab-nonlegacy": ("mistral-v1", dict(legacy=False, add_bos=True, add_eos=True, added=V1_PAST)),
    "v1-legacy-absent": ("mistral-v1", dict(legacy=None, add_bos=True)),
    "v3-legacy-absent": ("mistral-v3", dict(legacy=None, add_bos=True, add_eos=True)),
    "v3-additional-in-config": (
        "mistral-v3", dict(legacy=False, add_bos=True, config_extra={"additional_special_tokens": ADDITIONAL})
    ),
    # transformers 4.57 reads special_tokens_map.json only when
    # tokenizer_config.json has no added_tokens_decoder.
    "v3-additional-in-map": (
        "mistral-v3", dict(legacy=False, add_bos=True, special_map_extra={"additional_special_tokens": ADDITIONAL})
    ),
    "v3-additional-in-map-no-decoder": (
        "mistral-v3",
        dict(legacy=False, add_bos=True, with_decoder=False,
             special_map_extra={"additional_special_tokens": ADDITIONAL}),
    ),
}

VARIANT_TEXTS = {
    "mistral-v1": V1_SPECIALS + ["<|im_start|>", "<|im_end|>", "<tool>", "<|im_start|>user\n", "\n<|im_end|>\n"],
    "mistral-v3": V3_SPECIALS + ["<|im_start|>", "<|im_end|>", "[/INST] ", " [INST] "],
}


@pytest.fixture(scope="module")
def variant_root(tmp_path_factory):
    return tmp_path_factory.mktemp("hf_variants")


@functools.lru_cache(maxsize=None)
def _variant_pair(root: pathlib.Path, name: str):
    model, kwargs = VARIANTS[name]
    folder = build_folder(root / name, model, **kwargs)
    import transformers as tf

    return Variant((model, folder, spmbpe.load(folder, reference="transformers4"), hf_slow(tf, folder)))


@pytest.fixture
def variant(transformers, variant_root, request):
    return _variant_pair(variant_root, request.param)


FIXED_VARIANT_TEXTS = [
    "", " ", "\u2581", "<s>", " <s> ", "\u2581<s>", "[INST]", " [INST] ", "\u2581[INST]", "[/INST]",
    "x [INST]  y  [/INST]  z", "[INST]\n\nhi\n\n[/INST]\n", "a [/INST] b", "[TOOL_CALLS] [PREFIX]  q",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", " <|im_start|>  x  <|im_end|> ",
    "\u2581<|im_start|>", "<|im_end|>", "a <tool>  b <tool>", "</s>", " </s>", "x  </s>  y", "<s><s>",
]


@pytest.mark.parametrize("variant", sorted(VARIANTS), indirect=True)
def test_variant_fixed_texts_equal_transformers(variant):
    model, folder, tok, hf = variant
    bad = []
    for text in FIXED_VARIANT_TEXTS:
        for add in (False, True):
            expected = hf.encode(text, add_special_tokens=add)
            got = tok.encode(text, add_special_tokens=add, special="all")
            if got != expected:
                bad.append((text, add, hf.convert_ids_to_tokens(expected), expected, got))
    assert bad == []


@pytest.mark.parametrize("variant", sorted(VARIANTS), indirect=True)
@_settings(30)
@given(data=st.data())
def test_variant_random_texts_equal_transformers(variant, data):
    model, folder, tok, hf = variant
    _check(tok, hf, data.draw(texts(VARIANT_TEXTS[model]), label="text"))


@pytest.mark.parametrize("variant", ["v1-legacy-absent", "v3-legacy-absent"], indirect=True)
def test_legacy_absent_is_legacy(variant):
    model, folder, tok, hf = variant
    assert "legacy" not in json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert hf.legacy is True  # transformers' default, which spmbpe must follow
    # The texts where legacy and non-legacy differ, with transformers' ids.
    for text in ["[INST]Write", "<s>x", "a<unk>b", "\u2581\u2581x", " <s> y"]:
        assert tok.encode(text, special="all") == hf.encode(text, add_special_tokens=False), text


@pytest.mark.parametrize("variant", ["v1-past-vocab-legacy", "v1-past-vocab-nonlegacy"], indirect=True)
def test_added_tokens_past_the_vocabulary(variant):
    model, folder, tok, hf = variant
    text = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
    expected = hf.encode(text, add_special_tokens=False)
    assert expected.count(32000) == 2 and expected.count(32001) == 1  # transformers' ids
    assert tok.encode(text, special="all") == expected
    assert tok.encode(text, add_special_tokens=True, special="all") == hf.encode(text, add_special_tokens=True)
    assert len(tok) == len(hf) == 32002
    assert [tok.id_to_piece(i) for i in (32000, 32001)] == hf.convert_ids_to_tokens([32000, 32001])


@pytest.mark.parametrize(
    "variant", ["v3-additional-in-config", "v3-additional-in-map", "v3-additional-in-map-no-decoder"], indirect=True
)
def test_additional_special_tokens_lone_prefix(variant):
    # Non-legacy LlamaTokenizer.tokenize drops a leading lone "▁" only before
    # one of all_special_tokens; which tokens those are is transformers' call.
    model, folder, tok, hf = variant
    for text in ["[INST]", "[/INST] x", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[control_27]", "<s>", " [INST]"]:
        expected = hf.encode(text, add_special_tokens=False)
        assert tok.encode(text, special="all") == expected, (text, hf.all_special_tokens, hf.convert_ids_to_tokens(expected))


@pytest.mark.parametrize("legacy", [True, False])
@pytest.mark.parametrize("model", MODELS)
def test_non_special_added_token_is_split_with_special_none(transformers, tmp_path, model, legacy):
    """``special="none"``: special tokens are text, non-special added tokens
    are still split out.  transformers has no such switch (its
    ``split_special_tokens=True`` leaves every added token unsplit), so the
    reference is transformers on a second folder where the special tokens are
    not tokens at all: control pieces out of ``added_tokens_decoder``, bos/eos
    renamed to texts that never occur (unk stays ``<unk>``: the non-legacy
    path encodes ``unk_token + text``; the texts avoid ``<unk>``)."""
    n = len(sentencepiece.SentencePieceProcessor(model_file=str(DATA / f"{model}.model")))
    plain = {
        n: E("<|plain|>", special=False),
        n + 1: E("<|lplain|>", special=False, lstrip=True),
        n + 2: E("<|rplain|>", special=False, rstrip=True),
    }
    special = {n + 3: E("<|im_start|>"), n + 4: E("<|im_end|>", lstrip=True)}
    folder = build_folder(tmp_path / "real", model, legacy=legacy, added={**plain, **special})
    tok, hf = _pair(transformers, folder)
    oracle_folder = build_folder(
        tmp_path / "demoted", model, legacy=legacy, added=plain, controls=False,
        config_extra={"bos_token": "\x01never-bos\x01", "eos_token": "\x01never-eos\x01"},
    )
    oracle = hf_slow(transformers, oracle_folder)
    # The oracle folder has no control pieces in added_tokens_decoder.
    decoder = json.loads((oracle_folder / "tokenizer_config.json").read_text(encoding="utf-8"))["added_tokens_decoder"]
    assert sorted(int(k) for k in decoder) == sorted(plain)
    assert oracle.convert_tokens_to_ids("<|plain|>") == n

    samples = [
        "<|plain|>", "a<|plain|>b", " <|plain|> ", "<s><|plain|></s>", "x <|lplain|> y <|rplain|> z",
        "<|im_start|>user <|plain|>\nhi<|im_end|>", "[INST] <|plain|> [/INST]", "\u2581<|plain|>",
        "<|plain|><|plain|>", "  <|rplain|>  <|lplain|>  ", "<s>", " </s> ", "<|im_end|>",
    ]
    bad = []
    for text in samples:
        expected = oracle.encode(text, add_special_tokens=False)
        if tok.encode(text, special="none") != expected:
            bad.append((text, oracle.convert_ids_to_tokens(expected), expected, tok.encode(text, special="none")))
        # With special="all" the special ones are tokens again: transformers on the real folder.
        if tok.encode(text, special="all") != hf.encode(text, add_special_tokens=False):
            bad.append((text, "all", hf.encode(text, add_special_tokens=False), tok.encode(text, special="all")))
    assert bad == []
    assert n in tok.encode("a<|plain|>b", special="none")
    assert n + 3 not in tok.encode("<|im_start|>", special="none")

    words = st.sampled_from(WORDS[:12] + SPACES + ["<|plain|>", "<|lplain|>", "<|rplain|>", "<s>", "</s>",
                                                   "<|im_start|>", "<|im_end|>", "[INST]", " <|plain|> "])

    @_settings(30)
    @given(st.lists(words, max_size=8).map("".join))
    def run(text):
        expected = oracle.encode(text, add_special_tokens=False)
        assert tok.encode(text, special="none") == expected, (text, oracle.convert_ids_to_tokens(expected))

    run()


@pytest.mark.parametrize(
    "config_extra, text",
    [
        ({"additional_special_tokens": ["<|new|>"]}, "a<|new|>b <|new|>"),
        ({"pad_token": "<pad>"}, "a<pad>b <pad>"),
        ({"bos_token": "<|begin|>"}, "<|begin|>x <|begin|>"),
    ],
    ids=["additional", "pad", "bos"],
)
def test_special_token_outside_the_vocabulary(transformers, tmp_path, config_extra, text):
    # A special token named in tokenizer_config.json that is neither a piece
    # nor in added_tokens_decoder: transformers adds it at the next id
    # (32000 for v1) and splits it out of the text.
    folder = build_folder(tmp_path / "m", "mistral-v1", legacy=False, add_bos=True, config_extra=config_extra)
    tok, hf = _pair(transformers, folder)
    for add in (False, True):
        expected = hf.encode(text, add_special_tokens=add)
        assert 32000 in expected  # transformers' id
        assert tok.encode(text, add_special_tokens=add, special="all") == expected, (hf.convert_ids_to_tokens(expected), add)


# Added tokens that overlap one another, over letters whose pairs and
# triples are no pieces of v1: transformers' Trie.split decides.
OVERLAPPING = {
    32000: E("\ua66e\ua699"),
    32001: E("\ua699\ua74f\ua66e", special=False, rstrip=True),
    32002: E("\ua66e\ua699\ua74f\ua74f", lstrip=True),
    32003: E("\ua74f\ua74f", special=False),
    32004: E("\ua699\ua74f"),
}


@pytest.mark.parametrize("legacy", [True, False])
def test_overlapping_added_tokens(transformers, tmp_path, legacy):
    sp = sentencepiece.SentencePieceProcessor(model_file=str(DATA / "mistral-v1.model"))
    assert all(sp.piece_to_id(e["content"]) == sp.unk_id() for e in OVERLAPPING.values())
    folder = build_folder(tmp_path / "m", "mistral-v1", legacy=legacy, added=OVERLAPPING)
    tok, hf = _pair(transformers, folder)

    @_settings(40)
    @given(st.lists(st.sampled_from(["\ua66e", "\ua699", "\ua74f", " ", "x"]), max_size=12).map("".join))
    def run(text):
        expected = hf.encode(text, add_special_tokens=False)
        assert tok.encode(text, special="all") == expected, (text, hf.convert_ids_to_tokens(expected))

    run()


@pytest.mark.parametrize("legacy", [True, False])
def test_added_token_spelled_like_a_piece(transformers, tmp_path, legacy):
    # An added token past the vocabulary whose text is also a piece ("ab" is
    # piece 375 of v1): transformers loads it and gives the added id.
    folder = build_folder(tmp_path / "m", "mistral-v1", legacy=legacy, added={32000: E("ab", special=False)})
    hf = hf_slow(transformers, folder)
    tok = spmbpe.load(folder, reference="transformers4")
    for text in ["ab", "cab", " ab c", "abab"]:
        expected = hf.encode(text, add_special_tokens=False)
        assert tok.encode(text, special="all") == expected, (text, hf.convert_ids_to_tokens(expected))


@pytest.mark.parametrize("legacy", [False, True])
def test_normalized_model_with_user_defined_pieces_equals_transformers(transformers, tmp_path, legacy):
    # Non-legacy folders put HF's unk token before each segment and drop
    # its ids; with a normalizer and a user-defined piece in the segment,
    # that plan holds bare ids, and encoding it crashed the process.
    from test_normalizer import _train

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes(_train(rule="nmt_nfkc", user_defined_symbols=("<sep>", "ｘｙ")))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "legacy": legacy, "add_bos_token": False, "add_eos_token": False,
        "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
    }), encoding="utf-8")
    tok = spmbpe.load(folder, reference="transformers4")
    hf = hf_slow(transformers, folder)
    texts = ["a <sep> b", "hello <sep>", " <sep>x", "x <sep><sep> y", "ｘｙ z", "a ｘｙ", "<sep>", " <sep> ",
             "Ａ <sep> Ｂ", "a  <sep>  b", "ｘｙｘｙ <sep>ｘｙ", "hello world <sep> again"]
    expected = [hf.encode(text, add_special_tokens=False) for text in texts]
    assert [tok.encode(text, special="all") for text in texts] == expected
    assert [tok.encode_with_offsets(text, special="all")[0] for text in texts] == expected
    assert tok.encode_batch(texts, num_threads=2, special="all") == expected
