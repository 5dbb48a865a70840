"""Model folders as transformers 5 runs them: ``spmbpe.load(folder)``.

References:

* ``data/transformers5/*.jsonl.gz``, made by tools/make_transformers5_goldens.py
  with transformers 5.24 / tokenizers 0.23.3 (``AutoTokenizer.from_pretrained``
  on folders laid out as model repositories ship them): the ids of
  ``encode(text, add_special_tokens=False/True)``, and the tokenizers
  pipeline transformers built for each folder (``backend``);
* live transformers 5, when it is the installed major (hypothesis, below).
  The project's test environment keeps transformers 4.x for the slow
  tokenizer's differential tests (tests/test_hf_folder.py), so there these
  tests are skipped for that reason alone.

No expectation here is derived from spmbpe itself.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import os
import pathlib
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe._transformers5 import backend_json, generate_merges
from spmbpe.errors import UnsupportedModelError

from long_run import examples, sample
import transformers5_folders as golden

DATA = pathlib.Path(__file__).parent / "data"
NAMES = golden.golden_names()
# The pipeline's checks read each folder's whole vocabulary: every folder in
# the long run, one of each kind (v1 or v3, tokenizer.json, .model or
# saved) in the quick one.
PIPELINE_NAMES = sample(NAMES, 4, kind=lambda name: tuple(name.split("-")[:2]))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@functools.lru_cache(maxsize=None)
def _golden(name):
    return golden.read_golden(name)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tf5")
    return {name: golden.materialize(name, _golden(name)[0]["files"], root / name) for name in NAMES}


def test_the_goldens_come_from_transformers_5():
    assert len(NAMES) == 17
    for name in NAMES:
        meta, rows = _golden(name)
        assert meta["folder"] == name and meta["transformers"].startswith("5.")
        assert sum("text" in r for r in rows) >= 700


# ---------------------------------------------------------------- the ids


@functools.lru_cache(maxsize=None)
def _load(path):
    return spmbpe.load(path)


@pytest.mark.parametrize("name", NAMES)
def test_every_golden_row_equals_transformers_5(folders, name):
    tok = _load(str(folders[name]))
    assert tok.reference == "transformers" and "reference='transformers'" in repr(tok)
    rows = [r for r in _golden(name)[1] if "text" in r]
    bad = [r["text"] for r in rows if tok.encode(r["text"], special="all") != r["ids"]]
    assert bad == []
    bad = [r["text"] for r in rows if tok.encode(r["text"], add_special_tokens=True, special="all") != r["ids_special"]]
    assert bad == []
    # The transformers-style call gives the same ids.
    texts = [r["text"] for r in rows[:200]]
    assert tok(texts)["input_ids"] == [r["ids_special"] for r in rows[:200]]


@pytest.mark.parametrize("name", NAMES)
def test_every_golden_decode_equals_transformers_5(folders, name):
    """decode(ids, skip_special_tokens=False/True) of the encoded texts and
    of id lists with control, unknown and byte ids mixed in."""
    tok = _load(str(folders[name]))
    rows = _golden(name)[1]
    assert sum("decode_ids" in r for r in rows) >= 300
    bad = []
    for r in rows:
        ids = r["ids_special"] if "text" in r else r["decode_ids"]
        if tok.decode(ids) != r["decode"] or tok.decode(ids, skip_special=True) != r["decode_skip"]:
            bad.append(ids)
    assert bad == []


def _streamed(tok, ids, skip_special):
    d = tok.streaming_decoder(skip_special=skip_special)
    return "".join(d.add_token(i) for i in ids) + d.flush()


@pytest.mark.parametrize("name", ["v1-model-legacy", "v1-model-absent-noprefix", "v1-model-added", "v3-model-nolegacy"])
def test_streaming_decoder_and_decode_bytes_agree_with_the_goldens(folders, name):
    tok = _load(str(folders[name]))
    d = tok.streaming_decoder()
    for r in _golden(name)[1]:
        ids = r["ids_special"] if "text" in r else r["decode_ids"]
        assert _streamed(tok, ids, False) == r["decode"], ids
        assert _streamed(tok, ids, True) == r["decode_skip"], ids
        assert tok.decode_bytes(ids) == r["decode"].encode("utf-8"), ids
        # One decoder, reused after flush, gives the same.
        assert "".join(d.add_token(i) for i in ids) + d.flush() == r["decode"], ids


def test_decode_rules(folders):
    """The rules behind the decode goldens (v1-model-legacy: add_prefix_space;
    v1-model-absent-noprefix: no Strip step)."""
    name = "v1-model-legacy"
    tok = _load(str(folders[name]))
    by_ids = {tuple(r["decode_ids"]): r for r in _golden(name)[1] if "decode_ids" in r}
    # Control ids render as their text, and skip_special drops them.
    row = next(r for k, r in by_ids.items() if k[:1] == (1,) and len(k) > 2)
    assert tok.decode(row["decode_ids"]) == row["decode"] and row["decode"].startswith("<s>")
    # A byte run that is not UTF-8 is one U+FFFD per byte piece.
    bad_run = next(k for k in by_ids if k and all(3 <= i <= 258 for i in k) and len(k) >= 3)
    assert by_ids[bad_run]["decode"] == "\ufffd" * len(bad_run) == tok.decode(list(bad_run))
    # The leading space comes off the whole text once: "▁▁" decodes to " ".
    assert tok.decode([28705, 28705]) == by_ids[(28705, 28705)]["decode"] == " "
    assert tok.decode([28705]) == by_ids[(28705,)]["decode"] == ""
    noprefix = _load(str(folders["v1-model-absent-noprefix"]))
    plain = {tuple(r["decode_ids"]): r for r in _golden("v1-model-absent-noprefix")[1] if "decode_ids" in r}
    assert noprefix.decode([28705]) == plain[(28705,)]["decode"] == " "


def test_added_tokens_at_piece_ids_get_the_next_ids(folders):
    """An added token that the config puts at a piece's id with another
    text gets the next id past the vocabulary, as tokenizers' add_tokens
    gives it (transformers 4 kept the config's id)."""
    name = "v1-model-respelled"
    tok = _load(str(folders[name]))
    rows = {r["text"]: r for r in _golden(name)[1] if "text" in r}
    assert rows["<mytok>"]["ids"] == [32000] == tok.encode("<mytok>", special="all")
    assert rows["<myspecial>"]["ids"] == [32001] == tok.encode("<myspecial>", special="all")
    assert rows["<myspecial>"]["decode_skip"] == "" == tok.decode([32001], skip_special=True)
    assert tok.vocab_size == 32002 and tok.decode([5, 6]) == "\x02\x03"


def test_clean_up_tokenization_spaces_only_when_forced_for_bpe(folders):
    """transformers 5 ignores clean_up_tokenization_spaces for a BPE model
    unless clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output
    is set too; then the text loses the spaces before punctuation."""
    plain, forced = (_golden(name)[1] for name in ("v1-model-cleanup", "v1-model-cleanup-forced"))
    tok_plain = _load(str(folders["v1-model-cleanup"]))
    tok_forced = _load(str(folders["v1-model-cleanup-forced"]))
    cleaned = [(a, b) for a, b in zip(plain, forced) if a["decode"] != b["decode"]]
    assert len(cleaned) >= 20
    for a, b in cleaned:
        ids = a["ids_special"] if "text" in a else a["decode_ids"]
        assert tok_plain.decode(ids) == a["decode"] and tok_forced.decode(ids) == b["decode"], ids
        assert _streamed(tok_forced, ids, False) == b["decode"], ids
    assert tok_forced.decode(tok_forced.encode("Yes , it is .")) == "Yes, it is."


def test_single_word_and_normalized_added_tokens(folders):
    """tokenizers matches single_word tokens only between non-word
    characters, and normalized tokens after the others (goldens)."""
    tok = _load(str(folders["v1-model-added"]))
    for text in ("Hello<sw>world", "Hello <sw> world", "<sw>", "<sw>Hello", "<tool><sw>", "Hello<tool>world"):
        assert tok.encode(text, special="all") == _ids("v1-model-added", text), text
    assert 32003 in _ids("v1-model-added", "Hello <sw> world")
    assert 32003 not in _ids("v1-model-added", "Hello<sw>world")


def _ids(name, text, field="ids"):
    return next(r[field] for r in _golden(name)[1] if r.get("text") == text)


def test_the_issue_rows(folders):
    """The rows measured in issue 22, from the goldens: transformers 5's
    merges build runs of spaces, and its Metaspace puts "▁" only where
    prepend_scheme says."""
    v3 = _load(str(folders["v3-model-nolegacy"]))
    assert v3.encode("[INST]Write", special="all") == _ids("v3-model-nolegacy", "[INST]Write") == [3, 6006]
    assert v3.encode("  two  spaces", special="all") == _ids("v3-model-nolegacy", "  two  spaces") == [1027, 11629, 1027, 1654, 2857]
    v1 = _load(str(folders["v1-model-legacy"]))
    assert v1.encode(" <s>x", special="all") == _ids("v1-model-legacy", " <s>x") == [28705, 1, 1318]
    saved = _load(str(folders["v1-saved-legacy"]))
    assert saved.encode("<s>x", special="all") == _ids("v1-saved-legacy", "<s>x") == [1, 28744]


# ---------------------------------------------------------------- the pipeline


def _digest(value):
    blob = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return {"size": len(value), "sha256": hashlib.sha256(blob).hexdigest()}


@pytest.mark.parametrize("name", PIPELINE_NAMES)
def test_a_pipeline_left_in_the_file_gives_the_spelled_pipelines_spec(folders, name):
    """The pipeline as spmbpe.load builds it (a tokenizer.json's merges and
    vocabulary read from its bytes, derived merges as ids) gives the spec
    of the pipeline spelled out as json.loads would hold it."""
    from spmbpe._state import fingerprint
    from spmbpe.tokenizer_json import MergesInFile, VocabInFile, spec_from_json

    folder = str(folders[name])
    left = backend_json(folder, spell=False)
    spelled = backend_json(folder)
    assert not isinstance(spelled["model"]["vocab"], VocabInFile)
    assert not isinstance(spelled["model"]["merges"], MergesInFile)
    if (folders[name] / "tokenizer.json").exists():
        assert isinstance(left["model"]["merges"], MergesInFile)
        assert isinstance(left["model"]["vocab"], VocabInFile)
    assert fingerprint(spec_from_json(left, folder, reference="transformers")) == fingerprint(
        spec_from_json(spelled, folder, reference="transformers"))


def test_a_model_with_a_piece_given_twice_gives_the_spelled_pipelines_spec(folders, tmp_path):
    """A tokenizer.model that repeats a piece: convert's dict keeps the
    later id, which the arena taken as it is cannot say; the lazy
    vocabulary then spells that dict, and the spec (or the error) is the
    spelled pipeline's."""
    from sentencepiece import sentencepiece_model_pb2 as pb2

    from spmbpe._state import fingerprint
    from spmbpe.tokenizer_json import spec_from_json

    model = pb2.ModelProto()
    model.ParseFromString((DATA / "mistral-v1.model").read_bytes())
    model.pieces[20001].piece = model.pieces[20000].piece
    folder = tmp_path / "twice"
    shutil.copytree(folders["v1-model-legacy"], folder)
    (folder / "tokenizer.model").write_bytes(model.SerializeToString())

    def outcome(spell):
        try:
            return fingerprint(spec_from_json(backend_json(str(folder), spell=spell), str(folder),
                                              reference="transformers"))
        except Exception as exc:  # noqa: BLE001 -- compared, type and message
            return type(exc), str(exc)

    assert outcome(False) == outcome(True)


@pytest.mark.parametrize("name", PIPELINE_NAMES)
def test_the_pipeline_is_the_one_transformers_builds(folders, name):
    """backend_json(folder) is the tokenizer.json of transformers 5's
    backend tokenizer: the same merges in the same order, the same
    Metaspace, decoder and template, the same added tokens and flags."""
    ours = backend_json(str(folders[name]))
    theirs = _golden(name)[0]["backend"]
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        assert ours[key] == theirs[key], key
    assert ours["post_processor"]["single"] == theirs["post_processor"]["single"]
    assert ours["post_processor"]["special_tokens"] == theirs["post_processor"]["special_tokens"]
    assert sorted(ours["added_tokens"], key=lambda e: e["id"]) == theirs["added_tokens"]
    model = dict(ours["model"])
    assert _digest(model.pop("merges")) == theirs["model"]["merges"]
    assert _digest(model.pop("vocab")) == theirs["model"]["vocab"]
    expected = {k: v for k, v in theirs["model"].items() if k not in ("vocab", "merges")}
    assert model == expected


def test_merges_derived_from_the_model_equal_transformers_5s():
    """mistral-v1.tokenizer.json was converted by transformers 5.24 from
    mistral-v1.model (fixtures README): the merges spmbpe derives are its
    merges, in its order."""
    data = json.loads((DATA / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    assert [list(m) for m in generate_merges(vocab)] == [list(m) for m in data["model"]["merges"]]


def test_merges_derived_in_compiled_code_equal_transformers_5s():
    """The same merges as ids, derived from the piece table (what loading a
    folder runs): each rule's left, right and merged ids, in its order."""
    from spmbpe._core import PieceTable, split_merge_ids

    data = json.loads((DATA / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    by_id = sorted(vocab, key=vocab.__getitem__)
    table = PieceTable.from_pieces([p.encode("utf-8") for p in by_id])
    left, right, merged = split_merge_ids(table, bytearray([1]) * len(by_id))
    assert len(left) == len(data["model"]["merges"]) == 58_980
    assert list(zip(left, right, merged)) == [(vocab[a], vocab[b], vocab[a + b]) for a, b in data["model"]["merges"]]


def test_derived_merges_whose_part_is_an_added_tokens_text_come_from_the_vocab():
    """Where a part's lowest id in the piece table is not a model piece
    (an added token's text at a lower id), the compiled derivation refuses
    and generate_merges over the vocabulary dict decides."""
    from spmbpe._core import PieceTable, RuleNotResolved, split_merge_ids
    from spmbpe.tokenizer_json import DerivedMerges, _merge_rules

    # "ab" is added token 2 and model piece 5; "abc" splits into "ab"+"c".
    pieces = ["a", "b", "ab", "c", "bc", "ab", "abc"]
    vocab = {"a": 0, "b": 1, "c": 3, "bc": 4, "ab": 5, "abc": 6}
    table = PieceTable.from_pieces([p.encode() for p in pieces])
    flags = bytearray([1, 1, 0, 1, 1, 1, 1])
    with pytest.raises(RuleNotResolved):
        split_merge_ids(table, flags)
    derived = DerivedMerges(lambda: [list(m) for m in generate_merges(vocab)])
    left, right, merged = _merge_rules(derived, vocab, table, flags, "folder")
    expected = [(vocab[a], vocab[b], vocab[a + b]) for a, b in generate_merges(vocab)]
    assert list(zip(left, right, merged)) == expected == [(1, 3, 4), (0, 1, 5), (0, 4, 6), (5, 3, 6)]


# ---------------------------------------------------------------- the other readings


def _hf_slow_rows(model):
    raw = (DATA / f"{model}.model.jsonl").read_bytes().decode("utf-8")
    return [json.loads(line) for line in raw.split("\n") if line][::4]


def test_reference_transformers4_keeps_the_slow_tokenizer(folders):
    """v1-model-legacy and v3-model-nolegacy are the hf_slow fixture folders
    of the fixtures README (BOS aside): transformers4 gives those ids."""
    for name, model in (("v1-model-legacy", "mistral-v1"), ("v3-model-nolegacy", "mistral-v3")):
        tok = spmbpe.load(folders[name], reference="transformers4")
        assert tok.reference == "transformers4" and "transformers4" in repr(tok)
        bad = [r["text"] for r in _hf_slow_rows(model) if tok.encode(r["text"], special="all") != r["hf_slow"]]
        assert bad == []


def test_reference_sentencepiece_reads_the_model(folders):
    for name, model in (("v1-model-legacy", "mistral-v1"), ("v3-model-nolegacy", "mistral-v3")):
        tok = spmbpe.load(folders[name], reference="sentencepiece")
        assert tok.reference == "sentencepiece"
        bad = [r["text"] for r in _hf_slow_rows(model) if tok.encode(r["text"], special="all") != r["sp"]]
        assert bad == []


def test_reference_tokenizers_reads_the_json(folders):
    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(str(folders["v1-json-config"] / "tokenizer.json"))
    tok = spmbpe.load(folders["v1-json-config"], reference="tokenizers")
    assert tok.reference == "tokenizers"
    for r in _hf_slow_rows("mistral-v1"):
        assert tok.encode(r["text"], special="all") == ref.encode(r["text"], add_special_tokens=False).ids, r["text"]


def test_a_reference_the_files_cannot_support_names_the_missing_file(folders):
    with pytest.raises(UnsupportedModelError, match="tokenizer.json"):
        spmbpe.load(folders["v1-model-legacy"], reference="tokenizers")
    with pytest.raises(UnsupportedModelError, match="tokenizer.model"):
        spmbpe.load(folders["v1-json-config"], reference="sentencepiece")
    with pytest.raises(UnsupportedModelError, match="llama.cpp"):
        spmbpe.load(folders["v1-model-legacy"], reference="llama.cpp")
    with pytest.raises(ValueError, match="reference must be one of"):
        spmbpe.load(folders["v1-model-legacy"], reference="transformers6")


def test_files_keep_their_own_reference():
    assert spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf").reference == "llama.cpp"
    assert spmbpe.load(DATA / "mistral-v1.model").reference == "sentencepiece"
    assert spmbpe.load(DATA / "mistral-v1.model", reference="sentencepiece").reference == "sentencepiece"
    with pytest.raises(UnsupportedModelError, match="model folder"):
        spmbpe.load(DATA / "mistral-v1.model", reference="transformers")
    with pytest.raises(UnsupportedModelError, match="'llama.cpp'"):
        spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf", reference="sentencepiece")


def test_a_config_without_a_llama_class_is_refused(tmp_path):
    """transformers 5.24 gives such a folder TokenizersBackend's generic
    sentencepiece conversion, which spmbpe does not reproduce."""
    shutil.copy(DATA / "mistral-v3.model", tmp_path / "tokenizer.model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"legacy": False}))
    with pytest.raises(UnsupportedModelError, match="tokenizer_class"):
        spmbpe.load(tmp_path)
    assert spmbpe.load(tmp_path, reference="transformers4").reference == "transformers4"


def test_pickled_transformers_tokenizer_keeps_its_reference(folders):
    import pickle

    tok = _load(str(folders["v3-model-nolegacy"]))
    back = pickle.loads(pickle.dumps(tok))
    assert back.reference == "transformers" and back.fingerprint == tok.fingerprint
    text = "[INST]  two  spaces <s>x"
    assert back.encode(text, special="all") == tok.encode(text, special="all")


# ---------------------------------------------------------------- live transformers 5


def _transformers_major():
    try:
        import transformers
    except ImportError:
        return None
    return int(transformers.__version__.split(".")[0])


live = pytest.mark.skipif(
    _transformers_major() != 5,
    reason="the installed transformers is not 5.x (the test extra keeps 4.x for the slow tokenizer's tests)",
)

_PIECES = ["Hello", " world", " ", "  ", "   ", "\t", "\n", "\u2581", "<s>", "</s>", "<unk>", "[INST]", "[/INST]",
           "<|im_start|>", "<|im_end|>", "<tool>", "日本", "🦙", "é", "x", "12", " <s>", "<s> "]
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40) | st.lists(
    st.sampled_from(_PIECES), max_size=12).map("".join)


@live
@pytest.mark.parametrize("name", ["v1-model-legacy", "v3-model-nolegacy", "v1-model-absent-noprefix", "v1-model-added"])
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_id_lists_decode_as_live_transformers_5(folders, name, data):
    tok, ref = _live_pair(str(folders[name]))
    ids = data.draw(st.lists(st.integers(0, tok.vocab_size - 1) | st.integers(0, 300), max_size=12))
    assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False) == _streamed(tok, ids, False)
    assert tok.decode(ids, skip_special=True) == ref.decode(ids, skip_special_tokens=True) == _streamed(tok, ids, True)


@functools.lru_cache(maxsize=None)
def _live_pair(path):
    from transformers import AutoTokenizer

    return spmbpe.load(path), AutoTokenizer.from_pretrained(path)


@live
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_random_texts_equal_live_transformers_5(folders, name, text):
    tok, ref = _live_pair(str(folders[name]))
    assert tok.encode(text, special="all") == ref.encode(text, add_special_tokens=False)
    assert tok.encode(text, add_special_tokens=True, special="all") == ref.encode(text, add_special_tokens=True)


def test_the_named_token_ids_are_transformers_5s(folders):
    # tok.bos_token_id / eos_token_id / unk_token_id / pad_token_id as
    # transformers 5 reports them: the config's named tokens (LlamaTokenizer's
    # defaults <s>, </s>, <unk>), whether or not add_special_tokens adds them.
    for name in ("v1-model-legacy", "v1-model-absent-prefix", "v1-model-nolegacy-eos"):
        tok = spmbpe.load(folders[name])
        assert (tok.bos_token_id, tok.eos_token_id, tok.unk_token_id) == (1, 2, 0), name
        assert pickle.loads(pickle.dumps(tok)).eos_token_id == 2
