"""Tokenizers travel to other processes: pickling, ``tok.fingerprint``,
multiprocessing pools (fork and spawn) and ``datasets.Dataset.map``.

* A pickle holds the vocabulary's bytes and settings, never a path: it
  unpickles after the file is gone, and gives the same ids.
* Pickling is deterministic: the same bytes twice, in another process, and
  after a round trip (``datasets`` hashes functions through their pickle).
* ``fingerprint`` is a content hash: equal for the same vocabulary however it
  was loaded, different when any setting that changes ids differs.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import multiprocessing
import pathlib
import pickle
import shutil
import subprocess
import sys
import textwrap

import pytest

import spmbpe
from spmbpe import AddedToken, SpmTokenizer, TokenType
from spmbpe._state import state_bytes

from spm_proto import bpe_model_proto
from test_hf_folder import build_folder

DATA = pathlib.Path(__file__).parent / "data"
GGUF = DATA / "ggml-vocab-llama-spm.gguf"
TOKENIZER_JSON = DATA / "mistral-v1.tokenizer.json"

TEXTS = [
    "Hello, world!",
    "  two  spaces and a tab\there",
    "<s>[INST] control </s> tokens <unk>",
    "日本語のテキスト、한국어, emoji 🎉🦙 and ▁ a literal marker",
    "",
    "x" * 300,
]


def _sources(tmp_path_factory):
    folder = build_folder(tmp_path_factory.mktemp("hf") / "legacy", "mistral-v1")
    return {
        "model": DATA / "mistral-v1.model",
        "gguf": GGUF,
        "tokenizer.json": TOKENIZER_JSON,
        "hf-folder": folder,
    }


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return _sources(tmp_path_factory)


@pytest.fixture(scope="module", params=["model", "gguf", "tokenizer.json", "hf-folder", "lists"])
def tok(request, sources):
    if request.param == "lists":
        return _list_tokenizer()
    return spmbpe.load(sources[request.param])


def _list_tokenizer(**overrides):
    """A small tokenizer built from lists (the constructor, not a loader)."""
    pieces = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "ab", "\u2581a", "\u2581ab", "<sep>"]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    settings = dict(
        scores=[0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5, -0.25, -0.1, 0.0] + [0.0] * 256,
        token_types=[2, 3, 3, 1, 1, 1, 1, 1, 1, 4] + [6] * 256,
        bos_id=1,
        eos_id=2,
        add_bos=True,
        added_tokens=[AddedToken("[X]", 6, special=True, rstrip=True)],
    )
    settings.update(overrides)
    tokens = settings.pop("tokens", pieces)
    return SpmTokenizer(tokens, **settings)


def _ids(tok):
    return [tok.encode(t, add_special_tokens=True, special="all") for t in TEXTS] + [tok.encode_ordinary(t) for t in TEXTS]


# ---------------------------------------------------------------- pickling


def test_round_trip_gives_the_same_ids_and_fingerprint(tok):
    data = pickle.dumps(tok)
    back = pickle.loads(data)
    assert type(back) is SpmTokenizer
    assert _ids(back) == _ids(tok)
    assert [back.decode(ids) for ids in _ids(tok)] == [tok.decode(ids) for ids in _ids(tok)]
    assert back.fingerprint == tok.fingerprint
    for name in ("vocab_size", "bos_id", "eos_id", "unk_id", "pad_id", "add_bos", "add_eos",
                 "add_prefix_space", "prefix_scheme", "reference", "added_tokens", "special_tokens"):
        assert getattr(back, name) == getattr(tok, name), name
    # Deterministic: the same bytes twice, and after the round trip.
    assert pickle.dumps(tok) == data
    assert pickle.dumps(back) == data


def test_pickle_holds_the_vocabulary_not_a_path(tmp_path):
    path = tmp_path / "tok.gguf"
    shutil.copyfile(GGUF, path)
    tok = spmbpe.load(path)
    data = pickle.dumps(tok)
    assert str(tmp_path).encode() not in data and b"tok.gguf" not in data
    path.unlink()
    back = pickle.loads(data)
    assert _ids(back) == _ids(tok)
    # The vocabulary's bytes, compactly: about the size of the pieces,
    # scores and types themselves (32000 pieces), not several copies.
    assert len(data) < 1.5 * GGUF.stat().st_size


def test_pickle_bytes_are_equal_in_another_process(sources, tmp_path):
    """The pickle of each tokenizer made in a fresh interpreter (its own hash
    seed) is byte-identical to this process's."""
    paths = {k: str(v) for k, v in sources.items()}
    script = textwrap.dedent(
        """
        import hashlib, json, pickle, sys
        import spmbpe
        paths = json.loads(sys.argv[1])
        print(json.dumps({k: [hashlib.sha256(pickle.dumps(spmbpe.load(p))).hexdigest(),
                              spmbpe.load(p).fingerprint] for k, p in paths.items()}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(paths)], capture_output=True, text=True, check=True,
        env={**_env(), "PYTHONHASHSEED": "12345"},
    )
    theirs = json.loads(out.stdout)
    import hashlib

    for key, path in sources.items():
        tok = spmbpe.load(path)
        assert theirs[key] == [hashlib.sha256(pickle.dumps(tok)).hexdigest(), tok.fingerprint], key


def test_unpickling_rejects_foreign_state():
    with pytest.raises(ValueError, match="not a pickled spmbpe tokenizer"):
        pickle.loads(pickle.dumps(_list_tokenizer()).replace(b"spmbpe-state/1", b"spmbpe-state/9"))


# ---------------------------------------------------------------- fingerprint


def test_fingerprint_is_a_sha256_hex_string(tok):
    assert isinstance(tok.fingerprint, str) and len(tok.fingerprint) == 64
    int(tok.fingerprint, 16)


def test_fingerprint_is_the_same_for_the_same_vocabulary(sources, tmp_path):
    for key, path in sources.items():
        copy = tmp_path / key
        if path.is_dir():
            shutil.copytree(path, copy)
        else:
            shutil.copyfile(path, copy)
        assert spmbpe.load(copy).fingerprint == spmbpe.load(path).fingerprint, key
    assert spmbpe.load("mistral-v1").fingerprint == spmbpe.load(DATA / "mistral-v1.model").fingerprint
    # Built from lists: a mapping or AddedToken objects, a list or a tuple.
    assert _list_tokenizer().fingerprint == _list_tokenizer(
        scores=tuple(_list_tokenizer_scores()), added_tokens=iter([AddedToken("[X]", 6, rstrip=True)])
    ).fingerprint
    assert _list_tokenizer(added_tokens={"[X]": 6}).fingerprint == _list_tokenizer(
        added_tokens=[AddedToken("[X]", 6)]
    ).fingerprint


def _list_tokenizer_scores():
    return [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5, -0.25, -0.1, 0.0] + [0.0] * 256


def test_fingerprint_differs_when_a_setting_differs(sources):
    base = _list_tokenizer()
    pieces = base._table.pieces()
    variants = {
        "a piece": dict(tokens=pieces[:4] + ["c"] + pieces[5:]),
        "a score": dict(scores=[0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5, -0.25, -0.2, 0.0] + [0.0] * 256),
        "no scores": dict(scores=None),
        "a type": dict(token_types=[2, 3, 3, 1, 1, 1, 1, 1, 5, 4] + [6] * 256),
        "bos_id": dict(bos_id=2, add_bos=True),
        "eos_id": dict(eos_id=1),
        "unk_id": dict(unk_id=3),
        "pad_id": dict(pad_id=0),
        "add_bos": dict(add_bos=False),
        "add_eos": dict(add_eos=True),
        "add_prefix_space": dict(add_prefix_space=False),
        "prefix_scheme": dict(prefix_scheme="once"),
        "reference": dict(reference="sentencepiece"),
        "no added token": dict(added_tokens=None),
        "added token id": dict(added_tokens=[AddedToken("[X]", 7, special=True, rstrip=True)]),
        "added token text": dict(added_tokens=[AddedToken("[Y]", 6, special=True, rstrip=True)]),
        "added token special": dict(added_tokens=[AddedToken("[X]", 6, special=False, rstrip=True)]),
        "added token lstrip": dict(added_tokens=[AddedToken("[X]", 6, special=True, lstrip=True, rstrip=True)]),
        "added token rstrip": dict(added_tokens=[AddedToken("[X]", 6, special=True)]),
    }
    prints = {"base": base.fingerprint}
    for name, change in variants.items():
        prints[name] = _list_tokenizer(**change).fingerprint
    assert len(set(prints.values())) == len(prints), prints

    # Loaders: the same vocabulary under another reference's rules, a
    # model folder's legacy flag, the order of tokenizer.json's merges.
    loaded = {key: spmbpe.load(path).fingerprint for key, path in sources.items()}
    assert len(set(loaded.values())) == len(loaded)


def test_fingerprint_covers_tokenizer_json_merges_and_folder_settings(tmp_path):
    data = json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))
    merges = data["model"]["merges"]
    merges[10], merges[11] = merges[11], merges[10]
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(data), encoding="utf-8")
    assert spmbpe.load(swapped).fingerprint != spmbpe.load(TOKENIZER_JSON).fingerprint

    legacy = spmbpe.load(build_folder(tmp_path / "legacy", "mistral-v1", legacy=True), reference="transformers4")
    modern = spmbpe.load(build_folder(tmp_path / "modern", "mistral-v1", legacy=False), reference="transformers4")
    with_eos = spmbpe.load(build_folder(tmp_path / "eos", "mistral-v1", add_eos=True), reference="transformers4")
    padded = spmbpe.load(build_folder(tmp_path / "pad", "mistral-v1", config_extra={"pad_token": "<unk>"}), reference="transformers4")
    assert len({t.fingerprint for t in (legacy, modern, with_eos, padded)}) == 4


def test_fingerprint_covers_the_normalizer_spec(tmp_path):
    pieces = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "\u2581a"] + [f"<0x{b:02X}>" for b in range(256)]
    scores = [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5] + [0.0] * 256
    types = [2, 3, 3, 1, 1, 1, 1] + [6] * 256
    prints = {}
    for name, settings in {
        "identity": {},
        "no dummy prefix": dict(add_dummy_prefix=False),
        "remove extra whitespaces": dict(remove_extra_whitespaces=True),
        "no escape": dict(escape_whitespaces=False),
        "no byte fallback": dict(byte_fallback=False),
        # (A trainer spec's pad_id alone is no pad: sentencepiece's pad_id()
        # is the control piece spelled pad_piece, which this model lacks.)
        "unk surface": dict(unk_surface="??"),
    }.items():
        path = tmp_path / f"{len(prints)}.model"
        path.write_bytes(bpe_model_proto(pieces, scores, types, **settings))
        tok = spmbpe.load(path)
        prints[name] = tok.fingerprint
        back = pickle.loads(pickle.dumps(tok))
        assert back.fingerprint == tok.fingerprint
        for text in ("a  b", " ab a ", "ba\u00e9"):
            assert back.encode(text, special="all") == tok.encode(text, special="all")
            assert back.decode(tok.encode(text, special="all")) == tok.decode(tok.encode(text, special="all"))
    assert len(set(prints.values())) == len(prints), prints


def test_a_model_with_normalizer_and_denormalizer_round_trips(tmp_path):
    from test_streaming_decode import _denormalizer_model

    tok = spmbpe.load(_denormalizer_model(tmp_path))
    back = pickle.loads(pickle.dumps(tok))
    for text in ("A cat and a Bat", "  Aa  ", "banana"):
        assert back.encode(text, special="all") == tok.encode(text, special="all")
        assert back.decode(tok.encode(text, special="all")) == tok.decode(tok.encode(text, special="all"))
    assert back.decode(tok.encode("A cat", special="all")) == "A cAt"  # the denormalizer travelled
    assert back.fingerprint == tok.fingerprint


def test_every_setting_is_part_of_the_state():
    """Each setting of a spec (each field after the data: the keywords of
    TokenizerSpec.build) and each option of a reference is recorded, so a
    setting added later cannot be left out of the pickle and the
    fingerprint."""
    from spmbpe._state import _LEFT_OUT, _options
    from spmbpe.spec import DATA_FIELDS, TokenizerSpec
    from spmbpe.tokenizer import tokenizer_from_spec

    names = [f.name for f in dataclasses.fields(TokenizerSpec) if f.name not in DATA_FIELDS]
    names.remove("reference_options")
    assert len(names) > 10
    spec = _list_tokenizer()._spec
    # Settings added later are left out at their defaults (so the state of a
    # tokenizer that does not use them is what it was before they existed);
    # the first state format wrote two of transformers 4's options always.
    always = {"hf_special_tokens", "hf_unk_token"}
    assert sorted(_options(spec)) == sorted((set(names) - set(_LEFT_OUT)) | always)
    # ... and written whenever they are set, transformers 4's options by
    # their names in that format; they read back as they were.
    own = dict(add_prefix_space=False, additional_special_tokens=("[X]",), clean_up_spaces=True,
               special_tokens=("<s>",), unk_token="<x>")
    later = dataclasses.replace(spec, named_unk_id=0, unk_surface="??", reference="transformers4", reference_options=own)
    hf = {"hf_add_prefix_space", "hf_additional_special_tokens", "hf_clean_up_spaces"}
    assert sorted(_options(later)) == sorted(set(names) | always | hf)
    assert state_bytes(later) != state_bytes(spec)
    back = pickle.loads(pickle.dumps(tokenizer_from_spec(later)))
    assert back.reference == "transformers4" and back._spec.reference_options == own
    assert back._spec.settings == {**later.settings, "reference_options": own}


STATE_GOLDENS = DATA / "state-68c0db6.pickle.gz"


def test_pickles_of_an_older_spmbpe_load_and_give_the_same_ids():
    """Pickles written by spmbpe 68c0db6 (tools/make_state_goldens.py), one
    per reference: the same ids, decodes and fingerprint; transformers 4's,
    whose state named it "huggingface", reads as "transformers4" and is
    written with that name, its fingerprint unchanged."""
    import gzip

    goldens = pickle.loads(gzip.decompress(STATE_GOLDENS.read_bytes()))["goldens"]
    assert {g["reference"] for g in goldens.values()} == {
        "llama.cpp", "sentencepiece", "transformers", "transformers4", "tokenizers"
    }
    for name, golden in goldens.items():
        tok = pickle.loads(golden["pickle"])
        assert tok.reference == golden["reference"], name
        ids = [tok.encode(text, special="all", add_special_tokens=True) for text in golden["texts"]]
        assert ids == golden["ids"], name
        assert [tok.decode(i) for i in ids] == golden["decoded"], name
        assert [tok.decode(i, skip_special=True) for i in ids] == golden["decoded_skipping"], name
        state = state_bytes(tok._whole_spec())
        if golden["reference"] == "transformers4":
            assert b"huggingface" in golden["pickle"] and b"huggingface" not in state
            assert b"transformers4" in state
        assert tok.fingerprint == golden["fingerprint"], name
        again = pickle.loads(pickle.dumps(tok))
        assert again.fingerprint == tok.fingerprint and again.reference == tok.reference
        assert [again.encode(t, special="all", add_special_tokens=True) for t in golden["texts"]] == ids


def test_a_pickle_loads_in_a_fresh_interpreter():
    """Unpickling imports only spmbpe._state (the reconstructor's module):
    it builds the tokenizer without the caller importing spmbpe."""
    import gzip

    golden = pickle.loads(gzip.decompress(STATE_GOLDENS.read_bytes()))["goldens"]["transformers4"]
    script = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read()).encode(sys.argv[1], special='all'))"
    for data in (golden["pickle"], pickle.dumps(pickle.loads(golden["pickle"]))):
        out = subprocess.run(
            [sys.executable, "-c", script, golden["texts"][1]], input=data, capture_output=True, check=True,
        )
        assert out.stdout.decode().strip() == str(golden["ids"][1][1:])


def test_fingerprint_is_stable_across_processes_and_runs(sources):
    script = "import spmbpe, sys; print(spmbpe.load(sys.argv[1]).fingerprint)"
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", script, str(sources["gguf"])], capture_output=True, text=True,
            check=True, env={**_env(), "PYTHONHASHSEED": seed},
        )
        assert out.stdout.strip() == spmbpe.load(sources["gguf"]).fingerprint


# ---------------------------------------------------------------- process pools


def _encode_in_worker(args):
    tok, text = args
    return tok.encode(text, add_special_tokens=True, special="all"), tok.fingerprint, tok.encode_batch([text] * 3, num_threads=2, special="all")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_pool(method, sources):
    tok = spmbpe.load(sources["model"])
    # Threads started before the fork must not be relied on in the child.
    tok.encode_batch(TEXTS, num_threads=2, special="all")
    context = multiprocessing.get_context(method)
    with context.Pool(2) as pool:
        results = pool.map_async(_encode_in_worker, [(tok, t) for t in TEXTS]).get(timeout=120)
    for text, (ids, fingerprint, batch) in zip(TEXTS, results):
        assert ids == tok.encode(text, add_special_tokens=True, special="all")
        assert fingerprint == tok.fingerprint
        assert batch == [tok.encode(text, special="all")] * 3


_tok_for_fork = None


def _encode_with_global(text):
    return _tok_for_fork.encode_batch([text, text], num_threads=2, special="all")


def test_fork_inherits_a_tokenizer_whose_thread_pool_ran():
    """Under fork a global tokenizer is inherited, not pickled; its thread
    pool's threads are not, and encode_batch must start new ones."""
    global _tok_for_fork
    _tok_for_fork = spmbpe.load(GGUF)
    _tok_for_fork.encode_batch(TEXTS, num_threads=2, special="all")
    with multiprocessing.get_context("fork").Pool(2) as pool:
        # Before spmbpe started a new pool in the child, this hung forever.
        results = pool.map_async(_encode_with_global, TEXTS).get(timeout=120)
    assert results == [[_tok_for_fork.encode(t, special="all")] * 2 for t in TEXTS]


# ---------------------------------------------------------------- datasets

_DATASETS_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, os, sys
    import datasets
    from datasets.fingerprint import Hasher
    import spmbpe

    datasets.disable_progress_bars()
    source, cache = sys.argv[1], sys.argv[2]
    tok = spmbpe.load(source)

    def tokenize(batch):
        return {"input_ids": tok.encode_batch(batch["text"], special="all", add_special_tokens=True)}

    ds = datasets.load_from_disk(cache + "/raw")
    out = ds.map(tokenize, batched=True, batch_size=4, num_proc=2)
    print(json.dumps({
        "fn": Hasher.hash(tokenize),
        "fingerprint": out._fingerprint,
        "cache_files": sorted(os.path.basename(f["filename"]) for f in out.cache_files),
        "ids": out.to_dict()["input_ids"],
    }))
    """
)


@pytest.mark.long  # datasets' import and its pool of processes; the fingerprint's stability across processes is tested above
def test_datasets_map_num_proc_has_a_stable_fingerprint(tmp_path):
    import datasets  # the test extra installs it
    datasets.disable_progress_bars()
    lines = [x for x in (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8").splitlines() if x.strip()]
    texts = lines[:30] + TEXTS
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(tmp_path / "raw"))
    runs = []
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", _DATASETS_SCRIPT, str(GGUF), str(tmp_path)], capture_output=True,
            text=True, env={**_env(), "PYTHONHASHSEED": seed, "HF_DATASETS_CACHE": str(tmp_path / "hf")},
            timeout=600,  # (datasets waits forever for a worker that raised)
        )
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, second = runs
    tok = spmbpe.load(GGUF)
    assert first["ids"] == [tok.encode(t, special="all", add_special_tokens=True) for t in texts]
    assert second["ids"] == first["ids"]
    assert first["fn"] == second["fn"]
    assert first["fingerprint"] == second["fingerprint"]
    # The second run found the first run's cache files (same names) and
    # wrote no new ones.
    assert first["cache_files"] == second["cache_files"] and len(first["cache_files"]) == 2
    written = sorted(p.name for p in (tmp_path / "raw").glob("cache-*.arrow"))
    assert written == first["cache_files"]


def _env():
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).parent) + ((":" + env["PYTHONPATH"]) if env.get("PYTHONPATH") else "")
    return env
