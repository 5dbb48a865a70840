"""tokenizer.json (HuggingFace tokenizers' BPE): ids equal the tokenizers library's.

References: live `tokenizers` on the golden texts, every corpus line and
hypothesis text; synthetic tokenizer.json variants for the front ends and
the rules real files rarely hit.
"""

import functools
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
import tokenizers
from tokenizers import Tokenizer

import spmbpe
from spmbpe.errors import ModelFormatError, UnsupportedModelError
from spmbpe.tokenizer_json import read_tokenizer_json_spec

from long_run import examples, sample

DATA = Path(__file__).parent / "data"
JSON = DATA / "mistral-v1.tokenizer.json"
CORPUS = sorted((DATA / "corpus").glob("*.txt"))


@functools.lru_cache(maxsize=None)
def _shipped_text():
    return JSON.read_text(encoding="utf-8")


def _shipped():
    """The shipped file as json.loads reads it, for the caller to change."""
    return json.loads(_shipped_text())


@functools.lru_cache(maxsize=None)
def _shipped_data():
    """The shipped file as json.loads reads it, read once: not to be changed."""
    return _shipped()


@pytest.fixture(scope="module")
def pair():
    return spmbpe.load(JSON), Tokenizer.from_file(str(JSON))


def _ref(ref, text, special=False):
    return ref.encode(text, add_special_tokens=special).ids


def test_golden_texts_equal_tokenizers(pair):
    tok, ref = pair
    texts = [json.loads(line)["text"] for line in (DATA / "mistral-v1.model.jsonl").open(encoding="utf-8")]
    bad = [(t, _ref(ref, t), tok.encode(t, special="all")) for t in texts if tok.encode(t, special="all") != _ref(ref, t)]
    assert bad == []


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_corpus_line_equals_tokenizers(pair, path):
    # (Every line in the long run, an even sample in the quick one.)
    tok, ref = pair
    lines = sample([x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()], 400)
    expected = [e.ids for e in ref.encode_batch(lines, add_special_tokens=False)]
    got = tok.encode_batch(lines, special="all")
    bad = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert bad[:3] == [] and len(bad) == 0


@pytest.mark.parametrize("name", ["multi_ja.txt", "multi_zh_CN.txt", "multi_ko.txt"])
def test_cjk_documents_equal_tokenizers(name):
    # Whole documents through the merge rules, cut between CJK characters.
    tok, ref = spmbpe.load(JSON), Tokenizer.from_file(str(JSON))
    doc = (DATA / "corpus" / name).read_text(encoding="utf-8")
    assert tok.encode(doc, special="all") == _ref(ref, doc)


def test_merge_order_is_the_merges_list_not_piece_scores(pair):
    # On runs of spaces the converted tokenizer.json and the sentencepiece
    # model it came from disagree; each file gets its own library's ids.
    tok, ref = pair
    sp = spmbpe.load(DATA / "mistral-v1.model")
    text = "almost no restrictions whatsoever.  You may copy it"
    assert tok.encode(text, special="all") == _ref(ref, text)
    assert sp.encode(text) != tok.encode(text, special="all")


def test_a_folder_with_only_tokenizer_json_loads(tmp_path, pair):
    _, ref = pair
    shutil.copy(JSON, tmp_path / "tokenizer.json")
    tok = spmbpe.load(tmp_path, reference="transformers4")
    assert tok.reference == "tokenizers"
    assert tok.encode("Hello world", special="all") == _ref(ref, "Hello world")


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60) | st.lists(
    st.sampled_from(["Hello", " world", "  ", "   ", "\t", "\n", "日本", "🦙", "é", "<s>", "</s>", "<unk>", "▁", "x", "12"]),
    max_size=12,
).map("".join)


@settings(max_examples=examples(400), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_hypothesis_equals_live_tokenizers(pair, text):
    tok, ref = pair
    assert tok.encode(text, special="all") == _ref(ref, text)


# ---------------------------------------------------------------- variants

def _variant(tmp_path, edit, name="tokenizer.json"):
    data = _shipped()
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return spmbpe.load(path), Tokenizer.from_file(str(path))


_VARIANT_TEXTS = [
    "Hello world", " Hello", "  two", "a<s>b", "<s>x", " </s> y ", "x[INST]y", "[INST] hi [/INST]",
    "line\nbreak", "日本語", "é🦙", "", " ", "<unk>z", "a  <s>  b",
]


def _set_metaspace(scheme, split):
    def edit(data):
        data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split}
    return edit


def _prepend_replace(data):
    data["pre_tokenizer"] = None
    data["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        ],
    }


def _added_with_strip(data):
    data["added_tokens"].append(
        {"id": 32000, "content": "[INST]", "single_word": False, "lstrip": True, "rstrip": True, "normalized": False, "special": True}
    )
    data["added_tokens"].append(
        {"id": 32001, "content": "[/INST]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False}
    )


def _bos_eos_template(data):
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}},
    }


def _no_byte_fallback(data):
    data["model"]["byte_fallback"] = False
    data["model"]["unk_token"] = "<unk>"


@pytest.mark.parametrize(
    "edit",
    [
        _set_metaspace("first", False),
        _set_metaspace("never", False),
        _set_metaspace("always", True),
        _prepend_replace,
        _added_with_strip,
        _bos_eos_template,
        _no_byte_fallback,
    ],
    ids=["metaspace-first", "metaspace-never", "metaspace-split", "prepend-replace", "added-strip", "template", "no-byte-fallback"],
)
def test_variants_equal_live_tokenizers(tmp_path, edit):
    tok, ref = _variant(tmp_path, edit)
    for text in _VARIANT_TEXTS:
        assert tok.encode(text, special="all") == _ref(ref, text), text
        assert tok.encode(text, add_special_tokens=True, special="all") == _ref(ref, text, special=True), text



# Added tokens whose ids in the file are not the ones tokenizers gives them:
# deserializing, it adds the entries in file order and only warns.
def _added_entry(token_id, content, special=False, lstrip=False, rstrip=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": False, "special": special}


def _with_added(*entries):
    def edit(data):
        data["added_tokens"] = data["added_tokens"] + [_added_entry(*e) for e in entries]
    return edit


_ADDED_TEXTS = ["a <mytok> b <mysp> <a> <b> Hello \u2581Hello", "<a><b><a>", "x<mysp>y", "\u2581Hello"]


# (Each a copy of the 3.5 MB file: every case in the long run, a sample in
# the quick one.)
@pytest.mark.parametrize(
    "edit, size",
    sample([
        # a piece of the vocabulary: its id there
        pytest.param(_with_added((7, "\u2581Hello")), 32000, id="in-vocabulary"),
        # new texts at a piece's id: past the vocabulary
        pytest.param(_with_added((5, "<mytok>"), (6, "<mysp>", True)), 32002, id="piece-id"),
        # a gap: the next ids, in file order
        pytest.param(_with_added((32005, "<a>"), (32001, "<b>")), 32002, id="gap"),
        # a text twice: one id, the later flags
        pytest.param(_with_added((32000, "<a>"), (32001, "<a>", True)), 32001, id="text-twice"),
        # empty content: ignored
        pytest.param(_with_added((32000, ""), (32001, "<b>")), 32001, id="empty"),
        # an id twice
        pytest.param(_with_added((32000, "<a>"), (32000, "<b>")), 32002, id="id-twice"),
    ], 3),
)
def test_added_token_ids_are_the_ones_tokenizers_gives(tmp_path, edit, size):
    tok, ref = _variant(tmp_path, edit)
    assert tok.vocab_size == ref.get_vocab_size(with_added_tokens=True) == size
    for text in _ADDED_TEXTS:
        assert tok.encode(text, special="all") == _ref(ref, text), text
    for i in [5, 6, 7, 22557] + list(range(32000, size)):
        assert tok.id_to_piece(i) == ref.id_to_token(i), i
        for skip in (False, True):
            assert tok.decode([22557, i, i], skip_special=skip) == ref.decode([22557, i, i], skip_special_tokens=skip)


_ADDED_POOL = ["<mytok>", "<a>", "<b>", "\u2581Hello", "Hello", "<s>", "</s>", "<unk>", "x", "", "[INST]", "<0x41>"]


@settings(max_examples=examples(60, quick=4), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=st.lists(
    st.tuples(st.sampled_from([0, 1, 5, 7, 22557, 31999, 32000, 32001, 32002, 32003, 32010]),
              st.sampled_from(_ADDED_POOL), st.booleans(), st.booleans(), st.booleans()),
    max_size=6,
))
def test_random_added_tokens_get_the_ids_tokenizers_gives(tmp_path, entries):
    """Entries at any id, with texts of pieces, of earlier entries, new or
    empty, special or not, stripping or not: tokenizers' ids, matching
    and decoding. (No entry repeats an earlier one exactly: there 0.22,
    installed beside transformers 4, and 0.23 differ; see the next test.)"""
    shipped = [(e["content"], e["special"], e["lstrip"], e["rstrip"])
               for e in _shipped_data()["added_tokens"]]
    assume(len({e[1:] for e in entries} | set(shipped)) == len(entries) + len(shipped))
    tok, ref = _variant(tmp_path, _with_added(*entries))
    size = ref.get_vocab_size(with_added_tokens=True)
    assert tok.vocab_size == size
    for text in (" ".join(t for t in _ADDED_POOL if t) + " a<a><b>b", "x  <a>  <b> y <mytok>  z"):
        assert tok.encode(text, special="all") == _ref(ref, text), text
    ids = [5, 7, 22557, 1, 2] + list(range(32000, size))
    for skip in (False, True):
        assert tok.decode(ids, skip_special=skip) == ref.decode(ids, skip_special_tokens=skip)


def test_an_entry_repeating_an_earlier_one_applies_as_in_tokenizers_0_23(tmp_path):
    """<a> with rstrip, then without, then with again: the last entry's
    flags apply, as tokenizers 0.23.3 (and 1.0.0-rc.3) read the file; 0.22
    ignored an entry identical to any earlier one, so kept the second's.
    The ids are 0.23.3's, from tools' run of the two releases (2026-12-05)."""
    entries = [(0, "<a>", False, False, True), (0, "<a>"), (0, "<a>", False, False, True)]
    tok, ref = _variant(tmp_path, _with_added(*entries))
    text = "x  <a>  <b> y"
    assert tok.encode(text, special="all") == [1318, 259, 32000, 523, 28726, 28767, 337]
    if tokenizers.__version__.startswith("0.22."):
        assert _ref(ref, text) == [1318, 259, 32000, 259, 28789, 28726, 28767, 337]
    else:
        assert _ref(ref, text) == tok.encode(text, special="all")
    # Without the repeat, every release agrees.
    tok, ref = _variant(tmp_path, _with_added(*entries[:2]))
    assert tok.encode(text, special="all") == _ref(ref, text) == [1318, 259, 32000, 259, 28789, 28726, 28767, 337]

# Chunks are cut between characters no merge result holds side by side, and
# on both sides of a character whose id is in no merge rule (spmbpe's exact
# chunking); these variants add the rules that forbid such cuts.
def _added_rule(left, right, merged):
    def edit(data):
        model = data["model"]
        model["vocab"][merged] = len(model["vocab"])
        model["merges"].insert(0, [left, right])
    return edit


_CUT_TEXTS = [
    "a\n\nb", "x\n\n\ny\n", "\n\n", "a12b 123 x1 2 112", "1212,12", "a,b a, b ,b, a,,b", "(a,b).",
    "a\tb", "ab\x01ab a\x01b", "\x01\x01", "a\x7fb", "日本\n語12", "é,é é\té",
]


# (Every rule in the long run, a sample in the quick one.)
@pytest.mark.parametrize(
    "edit",
    sample([
        pytest.param(_added_rule("<0x0A>", "<0x0A>", "<0x0A><0x0A>"), id="newline-bytes-merge"),
        pytest.param(_added_rule("1", "2", "12"), id="digits-merge"),
        pytest.param(_added_rule("a", ",", "a,"), id="letter-comma"),
        pytest.param(_added_rule(",", "b", ",b"), id="comma-letter"),
    ], 2),
)
def test_rules_across_the_cuts_equal_live_tokenizers(tmp_path, edit):
    tok, ref = _variant(tmp_path, edit)
    assert tok._core.cut_chars
    for text in _CUT_TEXTS:
        assert tok.encode(text, special="all") == _ref(ref, text), text


def test_other_model_types_are_refused_by_name(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"a": 0}}}), encoding="utf-8")
    with pytest.raises(UnsupportedModelError, match="WordPiece"):
        spmbpe.load(path)


def test_invalid_json_names_the_file_and_offset(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"type": "BPE", ', encoding="utf-8")
    with pytest.raises(ModelFormatError) as info:
        spmbpe.load(path)
    assert info.value.path == str(path) and info.value.offset is not None


def _edited(tmp_path, edit):
    """The path of a copy of the shipped tokenizer.json changed by `edit`."""
    data = _shipped()
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _merges_as_strings(data):
    data["model"]["merges"] = [f"{a} {b}" for a, b in data["model"]["merges"]]


def _merges_mixed(data):
    merges = data["model"]["merges"]
    data["model"]["merges"] = [f"{a} {b}" if i % 2 else [a, b] for i, (a, b) in enumerate(merges)]


@pytest.mark.parametrize("edit", [_merges_as_strings, _merges_mixed], ids=["strings", "mixed"])
def test_merge_rules_in_every_form_give_tokenizers_ids(tmp_path, edit):
    """Rules as "left right" strings (the older files) or pairs and strings
    in one list (read rule by rule) rank as the pairs of the file as
    shipped: live tokenizers' ids for that file, on the corpus lines."""
    tok = spmbpe.load(_edited(tmp_path, edit))
    ref = Tokenizer.from_file(str(JSON))
    lines = [x for p in CORPUS for x in p.read_text(encoding="utf-8").splitlines()[:200] if x.strip()]
    assert tok.encode_batch(lines, special="none") == [e.ids for e in ref.encode_batch(lines, add_special_tokens=False)]


def _model_table(vocab):
    """The PieceTable of a model vocabulary {piece: id} (ids 0..n-1), and
    its model_ids flags (every piece)."""
    from spmbpe._core import PieceTable

    by_id = sorted(vocab, key=vocab.__getitem__)
    return PieceTable.from_pieces([p.encode("utf-8") for p in by_id]), bytearray([1]) * len(by_id)


@functools.lru_cache(maxsize=None)
def _shipped_table():
    """_model_table of the shipped vocabulary, made once."""
    return _model_table(_shipped_data()["model"]["vocab"])


@pytest.mark.parametrize("form", ["pairs", "strings"])
def test_well_formed_rules_are_resolved_in_compiled_code(form):
    """The shipped file's rules, looked up in the piece table (no
    rule-by-rule fallback): each rule's left, right and joined piece ids,
    as the vocabulary dict gives them."""
    from spmbpe._core import merge_rule_ids

    model = _shipped_data()["model"]
    vocab, merges = model["vocab"], model["merges"]
    rules = merges if form == "pairs" else [f"{a} {b}" for a, b in merges]
    table, model_ids = _shipped_table()
    left, right, merged = merge_rule_ids(table, rules, model_ids)
    assert len(left) == len(merges) == 58_980
    assert list(zip(left, right, merged)) == [(vocab[a], vocab[b], vocab[a + b]) for a, b in merges]


@pytest.mark.parametrize("rule", ["\u2581t", ["\u2581", "t", "x"], ["\u2581", 5], "\u2581zzq qqz", ["\u2581", "\ud800"]])
def test_a_rule_the_table_cannot_resolve_is_left_to_the_dict_reading(rule):
    """merge_rule_ids raises ValueError (not a wrong id, not a crash) on a
    rule without a space, a rule that is not a pair of strs, a piece
    outside the vocabulary or a surrogate: the reading rule by rule then
    names it."""
    from spmbpe._core import merge_rule_ids

    model = _shipped_data()["model"]
    table, model_ids = _shipped_table()
    with pytest.raises(ValueError):
        merge_rule_ids(table, model["merges"][:3] + [rule], model_ids)


def test_a_part_whose_lowest_id_is_an_added_token_is_resolved_by_the_model_vocab(tmp_path):
    """A table where a text's lowest id is not the model's ("ab": 7, and the
    model's 17): the compiled lookups leave a rule on it to the dict
    (RuleNotResolved). A file cannot make such a table: tokenizers gives an
    added token whose text is a piece of model.vocab that piece's id, so
    the file's "ab" at 7 is the model's 17 and 7 is a gap, which spmbpe
    refuses by name (tokenizers leaves it without a token)."""
    from spmbpe._core import PieceTable, RuleNotResolved, merge_rule_ids

    vocab = {p: i for i, p in enumerate(_SMALL_VOCAB) if p != "ab"}
    vocab["ab"] = len(_SMALL_VOCAB)  # 17; id 7 is the added token's
    data = _shipped()
    data["model"].update(vocab=vocab, merges=_SMALL_MERGES, byte_fallback=False, unk_token="<unk>")
    data["added_tokens"] = [{"id": 7, "content": "ab", "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True}]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")

    by_id = {i: p for p, i in vocab.items()}
    by_id[7] = "ab"
    table = PieceTable.from_pieces([by_id[i].encode() for i in range(len(by_id))])
    flags = bytearray([1]) * len(by_id)
    flags[7] = 0
    with pytest.raises(RuleNotResolved):
        merge_rule_ids(table, [["a", "b"]], flags)

    ref = Tokenizer.from_file(str(path))
    assert ref.token_to_id("ab") == 17 and ref.id_to_token(7) is None
    with pytest.raises(ModelFormatError, match="no piece has id 7"):
        spmbpe.load(path)


# (Each a copy of the 3.5 MB file: every shape in the long run, a sample in
# the quick one.)
@pytest.mark.parametrize("rule", sample([[1, 2], ["\u2581", "t", "x"], {"a": "b"}, ["\u2581", 5], ["\u2581", ["t"]], 7, "\u2581t"], 4))
def test_a_malformed_merge_rule_is_named(tmp_path, rule):
    def edit(data):
        data["model"]["merges"].insert(3, rule)
    with pytest.raises(ModelFormatError, match="merge rule 3"):
        spmbpe.load(_edited(tmp_path, edit))


def test_a_merge_outside_the_vocabulary_is_refused(tmp_path):
    def edit(data):
        data["model"]["merges"].append(["\u2581zzq", "qqz"])
    with pytest.raises(ModelFormatError, match="merge rule"):
        spmbpe.load(_edited(tmp_path, edit))


# Short chunks are merged by a scan for the lowest rank (merge_ranked_small),
# long ones over tokenizers' agenda (merge_ranked_heap).  These vocabularies
# build one piece from two different pairs ("a"+"bc" and "ab"+"c"), in
# several rank orders, and repeat pairs, so that stale agenda entries and
# ties are where the scan and the agenda could part.
_SMALL_VOCAB = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "c", "ab", "bc", "abc", "ca", "cab",
                "\u2581a", "\u2581ab", "\u2581abc", "aa", "aaa"]
_SMALL_MERGES = [["b", "c"], ["a", "b"], ["a", "bc"], ["ab", "c"], ["c", "a"], ["c", "ab"],
                 ["\u2581", "a"], ["\u2581a", "b"], ["\u2581ab", "c"], ["a", "a"], ["aa", "a"]]


# Pairs listed twice: each takes its later rank, as tokenizers' map built
# from the list does ("c a" goes from first to after "a b": "cab" is one
# piece, not "ca" "b"; "b c" from second to last).
_REPEATED_MERGES = [["c", "a"]] + _SMALL_MERGES + [["b", "c"]]


_SMALL_MERGE_LISTS = {"listed": _SMALL_MERGES, "reversed": _SMALL_MERGES[::-1],
                      "rotated": _SMALL_MERGES[5:] + _SMALL_MERGES[:5], "repeated": _REPEATED_MERGES}


@pytest.fixture(scope="module", params=sorted(_SMALL_MERGE_LISTS))
def small_ranked(request, tmp_path_factory):
    """(spmbpe, spmbpe merging over the agenda only, tokenizers, the merges)."""
    from spmbpe import _testing

    merges = _SMALL_MERGE_LISTS[request.param]
    data = _shipped()
    data["model"].update(vocab={p: i for i, p in enumerate(_SMALL_VOCAB)}, merges=merges,
                         byte_fallback=False, unk_token="<unk>")
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    heap = spmbpe.load(path)
    _testing.disable_small_merges(heap._core)
    return spmbpe.load(path), heap, Tokenizer.from_file(str(path)), merges


@settings(max_examples=examples(300), deadline=None)
@given(text=st.lists(st.sampled_from(["a", "b", "c", " ", "ab", "bc", "x"]), max_size=40).map("".join))
def test_short_chunks_merge_as_tokenizers_agenda_does(small_ranked, text):
    tok, heap, ref, _ = small_ranked
    assert tok.encode(text, special="all") == _ref(ref, text) == heap.encode(text, special="all")


@pytest.mark.parametrize("text", ["cab", "xcabx", "abca", "bcab"])
def test_a_pair_listed_twice_merges_at_its_later_rank(small_ranked, text):
    tok, heap, ref, _ = small_ranked
    assert tok.encode(text, special="all") == _ref(ref, text) == heap.encode(text, special="all")


def test_a_pickled_tokenizer_keeps_the_rules_the_core_read_back(small_ranked):
    import pickle

    tok, _, ref, _ = small_ranked
    again = pickle.loads(pickle.dumps(tok))
    assert again.fingerprint == tok.fingerprint
    assert again._core.ranked_merges() == tok._core.ranked_merges()
    for text in ["cab", "xcabx", "abca", "bcab", "aaa bc"]:
        assert again.encode(text, special="all") == _ref(ref, text)


def test_a_tokenizers_state_is_its_files_spec_with_the_rules_read_back(small_ranked, tmp_path):
    # (The tokenizer keeps no copy of the rules; its pickle and fingerprint
    # read them from the core, and must be what the file's spec writes.)
    from spmbpe._state import state_bytes

    tok, _, _, listed = small_ranked
    data = _shipped()
    data["model"].update(vocab={p: i for i, p in enumerate(_SMALL_VOCAB)}, merges=listed,
                         byte_fallback=False, unk_token="<unk>")
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    for spec_path, loaded in ((path, tok), (JSON, spmbpe.load(JSON))):
        spec = read_tokenizer_json_spec(str(spec_path))
        assert spec.ranked_merges is not None and loaded._spec.ranked_merges is None
        assert state_bytes(loaded._whole_spec()) == state_bytes(spec)


def test_the_core_keeps_one_rule_per_pair_the_last_listed(small_ranked):
    tok, _, _, listed = small_ranked
    ids = {p: i for i, p in enumerate(_SMALL_VOCAB)}
    merges = [(ids[a], ids[b], ids[a + b]) for a, b in listed]
    last = {(a, b): rank for rank, (a, b, _) in enumerate(merges)}
    kept = [merges[rank] for rank in sorted(last.values())]
    left, right, merged = tok._core.ranked_merges()
    assert list(zip(left, right, merged)) == kept


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 50)), max_size=40))
def test_the_states_rules_keep_the_last_listing_of_each_pair(rules):
    # The canonical rules the pickle and fingerprint write (a compiled pass
    # since 2026-12-04): what a dict keyed by the pair, its entry moved to
    # the end at each listing, keeps -- the last listing of each pair, in
    # the order of those listings; the very columns given when no pair
    # repeats.
    from array import array

    from spmbpe._state import _canonical_merges

    columns = tuple(array("i", [rule[k] for rule in rules]) for k in range(3))
    kept = {}
    for left, right, merged in rules:
        kept.pop((left, right), None)
        kept[left, right] = merged
    got = _canonical_merges((*columns, True, False))
    assert got[3:] == (True, False)
    assert [list(c) for c in got[:3]] == [[p[0] for p in kept], [p[1] for p in kept], list(kept.values())]
    if len(kept) == len(rules):
        assert all(a is b for a, b in zip(got[:3], columns))


def test_the_cores_rules_of_the_shipped_file_are_its_merges_list(pair):
    data = _shipped()
    vocab = data["model"]["vocab"]
    rules = [rule.split(" ") if isinstance(rule, str) else rule for rule in data["model"]["merges"]]
    assert len(rules) == 58980 and len(set(map(tuple, rules))) == 58980
    left, right, merged = pair[0]._core.ranked_merges()
    assert list(zip(left, right, merged)) == [(vocab[a], vocab[b], vocab[a + b]) for a, b in rules]


# ------------------------------------------------------------------ merge rules read from the file's bytes


def _json_text(draw, value):
    """`value` as JSON text in one of the forms files take: indented or
    not, ASCII or not, with \\u escapes in upper case and "/" escaped at
    random (JSON's, which json.dumps does not write)."""
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1, 2])),
                      separators=draw(st.sampled_from([None, (",", ":"), (" ,\t", " :\r\n")])))
    if draw(st.booleans()):
        text = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), text)
    if draw(st.booleans()):
        text = text.replace("/", "\\/")
    return text


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data(), form=st.sampled_from(["pairs", "strings", "mixed"]))
def test_rules_read_from_the_file_bytes_equal_the_json_loads_reading(data, form):
    """model.merges found in the file's bytes (model_spans) is the array
    json.loads reads there, and json_merge_rule_ids gives merge_rule_ids's
    ids for it, in every form the rules and the file take."""
    from spmbpe._core import json_merge_rule_ids, merge_rule_ids, model_spans

    model = _shipped_data()["model"]
    vocab = model["vocab"]
    start = data.draw(st.integers(0, len(model["merges"]) - 300))
    merges = model["merges"][start:start + data.draw(st.integers(0, 300))]
    if form != "pairs":
        merges = [f"{a} {b}" if form == "strings" or i % 2 else [a, b] for i, (a, b) in enumerate(merges)]
    doc = {"version": "1.0", "added_tokens": [], "model": {"type": "BPE", "vocab": vocab, "merges": merges}}
    raw = _json_text(data.draw, doc).encode("utf-8")
    spans = model_spans(raw)
    assert spans is not None
    assert json.loads(raw[spans[0]:spans[1]]) == merges
    table, model_ids = _shipped_table()
    assert json_merge_rule_ids(table, raw, *spans[:2], model_ids) == merge_rule_ids(table, merges, model_ids)


def test_a_vocabulary_without_scores_ranks_its_pieces_by_id():
    """A tokenizer.json has no scores: the spec's rank of piece i is -i
    (float32, lower ids first), as a list of Python floats made it."""
    from array import array

    from spmbpe._core import id_order_ranks

    spec = read_tokenizer_json_spec(str(JSON))
    n = len(spec.table)
    assert spec.rank.typecode == "f"
    assert spec.rank.tobytes() == array("f", [-float(i) for i in range(n)]).tobytes()
    assert id_order_ranks(0) == array("f") and id_order_ranks(3) == array("f", [-0.0, -1.0, -2.0])
    with pytest.raises(ValueError):
        id_order_ranks(-1)


@pytest.mark.parametrize("form", ["pairs", "strings"])
def test_every_rule_of_the_shipped_file_read_from_its_bytes_is_the_list_reading(form):
    """All 58,980 rules as json_merge_rule_ids reads them -- each a few
    rules ahead of its lookups, into a scratch taken up again from its
    start every 64 KB --: merge_rule_ids's ids for json.loads's list.  A
    rule naming a piece outside the vocabulary, first, after many windows
    or last, is refused."""
    from spmbpe._core import RuleNotResolved, json_merge_rule_ids, merge_rule_ids, model_spans

    model = _shipped_data()["model"]
    merges = model["merges"] if form == "pairs" else [f"{a} {b}" for a, b in model["merges"]]
    table, model_ids = _shipped_table()

    def read(rules):
        raw = json.dumps({"model": {"type": "BPE", "merges": rules}}, ensure_ascii=False).encode("utf-8")
        return json_merge_rule_ids(table, raw, *model_spans(raw)[:2], model_ids)

    expected = merge_rule_ids(table, merges, model_ids)
    assert len(expected[0]) == 58_980
    assert read(merges) == expected
    outside = ["\u2581zzq", "qqz"] if form == "pairs" else "\u2581zzq qqz"
    for at in (0, 1, 30_000, len(merges) - 2, len(merges) - 1):
        with pytest.raises(RuleNotResolved):
            read(merges[:at] + [outside] + merges[at + 1:])
    assert read(merges[:7]) == merge_rule_ids(table, merges[:7], model_ids)


@pytest.mark.parametrize("form", ["pairs", "strings"])
def test_long_rules_after_the_scratch_is_taken_up_again_are_read_whole(form):
    """Rules of 40 KB pieces right after 64 KB of short ones: the short
    rules still waiting for their lookups when the scratch is taken up
    from its start again are looked up first, not overwritten."""
    from spmbpe._core import json_merge_rule_ids, merge_rule_ids, model_spans

    long_a, long_b = "\u2581" + "a" * 40_000, "b" * 40_000
    vocab = {p: i for i, p in enumerate(["c", "d", "cd", "\u2581", long_a, long_b, long_a + long_b])}
    table, model_ids = _model_table(vocab)
    for short in (32_760, 32_765, 32_770):
        pairs = [["c", "d"]] * short + [[long_a, long_b]] * 3 + [["c", "d"]] * 9
        rules = pairs if form == "pairs" else [f"{a} {b}" for a, b in pairs]
        raw = json.dumps({"model": {"merges": rules}}).encode("utf-8")
        got = json_merge_rule_ids(table, raw, *model_spans(raw)[:2], model_ids)
        assert got == merge_rule_ids(table, rules, model_ids)
        assert list(zip(*got))[short:short + 4] == [(4, 5, 6)] * 3 + [(0, 1, 2)]


@pytest.mark.parametrize("doc, merges, vocab", [
    ('{"model": {"merges": [1]}, "model": {"merges": [2], "merges": [3]}}', [3], None),
    ('{"model": {"merges": [1]}, "x": {"model": {"merges": [2]}}}', [1], None),
    ('{"model": {"merges": [1], "vocab": {"merges": [2]}}}', [1], {"merges": [2]}),
    ('{"model": {"vocab": {"a": 0}, "merges": [1], "vocab": {"b": 1}}}', [1], {"b": 1}),
    ('{"model": {"vocab": {"a": 0}, "merges": [1]}, "model": {"merges": [2]}}', [2], None),
    ('{"model": {"vocab": {"a": 0}, "merges": [1], "vocab": ["a"]}}', [1], None),
    ('{"model": {"vocab": {"a": 0}, "merges": [1], "vocab": {}}}', [1], {}),
    ('{"model": {"vocab": {"a": 0}, "\\u006derges": [1], "voc\\u0061b": {"b": 0}}}', [1], {"b": 0}),
    ('{"model": {"vocab": {"a": 0}, "merges": [1], "\\u0076\\u006f\\u0063\\u0061\\u0062\\u0073": {}}}', [1],
     {"a": 0}),
    ('{"model": {"vocab": {"a": 0}, "\\u006d\\u0065\\u0072\\u0067\\u0065\\u0073": [2]}}', [2], {"a": 0}),
    ('{"model": {"' + "x" * 5000 + '": 1, "merges": [1]}}', [1], None),
    ('\n {"model" : {"merges" : [ ]} } \r\n', [], None),
    ('{"model": {"merges": [1]}, "model": {"vocab": {}}}', None, None),  # the last model has none
    ('{"model": {"merges": [1]}, "model": 3}', None, None),
    ('{"model": {"merges": [1], "merges": {"a": 1}}}', None, None),
    ('{"model": {"merges": [1]}} x', None, None),
    ('{"model": {"merges": [1]}, "n": NaN}', None, None),
    ('{"model": {"merges": ["\\ud800"]}}', None, None),
    ('{"model": {"merges": [1], "vocab": {"\\udc00": 0}}}', None, None),
    ('[{"model": {"merges": [1]}}]', None, None),
    ('{"model": {"merges": [1],}}', None, None),
    ('', None, None),
])
def test_model_spans_are_the_values_json_loads_keeps(doc, merges, vocab):
    """The last "merges" array and "vocab" object of the last "model", as
    json.loads keeps a repeated member, whichever way the names are
    spelled; None when the document is not plain JSON or has no such
    array (json.loads then reads the file), and no vocabulary span when
    the last is no object."""
    from spmbpe._core import model_spans

    raw = doc.encode("utf-8")
    spans = model_spans(raw)
    if merges is None:
        assert spans is None
        return
    assert json.loads(raw[spans[0]:spans[1]]) == merges == json.loads(raw)["model"]["merges"]
    if vocab is None:
        assert spans[2:] == (-1, -1)
    else:
        assert json.loads(raw[spans[2]:spans[3]]) == vocab == json.loads(raw)["model"]["vocab"]


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_a_vocabulary_read_from_the_file_bytes_is_the_json_loads_reading(data):
    """json_vocab_pieces gives each id's piece as json.loads's dict does,
    in every form the file takes, in the file's order of ids or another."""
    from spmbpe._core import json_vocab_pieces, model_spans

    vocab = _shipped_data()["model"]["vocab"]
    pieces = sorted(vocab, key=vocab.__getitem__)
    start = data.draw(st.integers(0, len(pieces) - 1))
    kept = pieces[start:start + data.draw(st.integers(1, 400))] + data.draw(
        st.lists(st.text(max_size=6).filter(lambda p: p not in vocab), max_size=5, unique=True))
    ids = list(range(len(kept)))
    if data.draw(st.booleans()):
        ids = data.draw(st.permutations(ids))
    sub = dict(zip(kept, ids))
    raw = _json_text(data.draw, {"model": {"vocab": sub, "merges": []}}).encode("utf-8", "surrogatepass")
    spans = model_spans(raw)
    if any(0xD800 <= ord(c) <= 0xDFFF for p in kept for c in p):
        assert spans is None  # a lone surrogate: json.loads reads the file
        return
    arena, offsets = json_vocab_pieces(raw, spans[2], spans[3])
    by_id = sorted(sub, key=sub.__getitem__)
    assert [arena[offsets[i]:offsets[i + 1]] for i in range(len(by_id))] == [p.encode("utf-8") for p in by_id]
    assert len(offsets) == len(by_id) + 1 and offsets[-1] == len(arena)


@functools.lru_cache(maxsize=None)
def _some_pieces_json(ascii_only):
    """The JSON text of 200 of the shipped vocabulary's pieces, ASCII and
    not (ids 0-99 and 29,000-29,099), numbered 0..199."""
    vocab = _shipped_data()["model"]["vocab"]
    by_id = sorted(vocab, key=vocab.__getitem__)
    chosen = by_id[:100] + by_id[29000:29100]
    return json.dumps(dict(zip(chosen, range(200))), ensure_ascii=ascii_only).encode("utf-8")


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_a_damaged_vocabulary_is_refused_or_read_as_json_loads_reads_it(data):
    """Bytes of a vocabulary changed, cut or inserted at random (valid
    UTF-8, as the loader checks first): json_vocab_pieces gives None, or
    the pieces json.loads reads there (its ids 0..n-1), never anything
    else and never a crash."""
    from spmbpe._core import json_vocab_pieces

    doc = bytearray(_some_pieces_json(data.draw(st.booleans())))
    alphabet = st.sampled_from(list(b'{}[]",:0123456789\\u -.eE\x00\x7f'))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(1, len(doc) - 1))
        how = data.draw(st.sampled_from(["change", "cut", "insert"]))
        if how == "change":
            doc[at] = data.draw(alphabet)
        elif how == "cut":
            del doc[at:at + data.draw(st.integers(1, 5))]
        else:
            doc[at:at] = bytes(data.draw(st.lists(alphabet, min_size=1, max_size=4)))
    doc = bytes(doc)
    try:
        doc.decode("utf-8")
    except UnicodeDecodeError:
        return  # (the loader reads no further)
    got = json_vocab_pieces(doc, 0, len(doc))
    if got is None:
        return
    arena, offsets = got
    read = json.loads(doc)  # what it takes, json.loads reads
    pieces = [arena[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    if len(set(pieces)) == len(pieces):  # (a name given twice: the caller's check)
        assert sorted(read.values()) == list(range(len(pieces)))
        assert [p.encode("utf-8") for p in sorted(read, key=read.__getitem__)] == pieces


@pytest.mark.parametrize("members", [
    '"a": 0, "b": 2', '"a": 1, "b": 1', '"a": 0, "b": 1.0', '"a": 0, "b": -1', '"a": 0, "b": 1e0',
    '"a": 0, "b": 01', '"a": 0, "b": "1"', '"a": 0, "b": true', '"a": 0, "b": 99999999999', '',
    '"a": 0, "b": 1,', '"a": 0 "b": 1', '"a": 0, "b": [1]', '"a": 0, "b": 1} ',
])
def test_a_vocabulary_the_file_reading_does_not_take_is_left_to_json_loads(members):
    """json_vocab_pieces is None (not a wrong table, not a crash) unless
    the ids are the integers 0..n-1, each once: spec_from_json then reads
    json.loads's dict and names what is wrong."""
    from spmbpe._core import json_vocab_pieces

    raw = ("{" + members + "}").encode("utf-8")
    assert json_vocab_pieces(raw, 0, len(raw)) is None


@pytest.mark.parametrize("rule", ['"\\u2581t"', '["\\u2581", "t", "x"]', '["\\u2581", 5]', '"\\u2581zzq qqz"',
                                  '["\\u2581", "\\ud800"]', '7', '{"a": "b"}', '["\\u2581"]', '[["\\u2581"], "t"]'])
def test_a_rule_the_file_reading_cannot_resolve_is_left_to_json_loads(rule):
    """json_merge_rule_ids raises RuleNotResolved (not a wrong id, not a
    crash) where merge_rule_ids would raise, and on a rule that is no pair
    of plain strings: the reading of the json.loads list then decides."""
    from spmbpe._core import RuleNotResolved, json_merge_rule_ids

    model = _shipped_data()["model"]
    table, model_ids = _shipped_table()
    raw = ('[' + ", ".join(json.dumps(r) for r in model["merges"][:3]) + ", " + rule + ']').encode("utf-8")
    with pytest.raises(RuleNotResolved):
        json_merge_rule_ids(table, raw, 0, len(raw), model_ids)


def test_a_tokenizer_json_reads_as_json_loads_reads_it(tmp_path):
    """read_tokenizer_json: the file's object, with model.merges and
    model.vocab left in the file (spelled: json.loads's list and dict);
    the same spec as json.loads's
    reading, for the shipped file indented and on one line."""
    from spmbpe._hf_json import read_json_object
    from spmbpe._state import fingerprint
    from spmbpe.tokenizer_json import MergesInFile, VocabInFile, read_tokenizer_json, spec_from_json

    expected = _shipped()
    for indent in (None, 2):
        path = tmp_path / f"tokenizer-{indent}.json"
        path.write_text(json.dumps(expected, indent=indent, ensure_ascii=False), encoding="utf-8")
        data = read_tokenizer_json(str(path))
        merges, vocab = data["model"]["merges"], data["model"]["vocab"]
        assert isinstance(merges, MergesInFile) and isinstance(vocab, VocabInFile)
        assert merges.spell() == expected["model"]["merges"]
        assert vocab.spell() == expected["model"]["vocab"]
        data["model"]["merges"] = expected["model"]["merges"]
        data["model"]["vocab"] = expected["model"]["vocab"]
        assert data == expected
        lazy = spec_from_json(read_tokenizer_json(str(path)), str(path))
        assert fingerprint(lazy) == fingerprint(spec_from_json(read_json_object(str(path)), str(path)))


def _shuffled(data):
    items = list(data["model"]["vocab"].items())
    data["model"]["vocab"] = dict(items[1::2] + items[::2])


def _beyond(data):
    n = len(data["model"]["vocab"])
    data["added_tokens"] += [{"id": n, "content": "<extra>", "special": True},
                             {"id": n + 1, "content": "\u2581the", "special": False}]


def _gap_filled(data):
    # tokenizers does not give the added token the id of the gap (it gets the
    # next one past model.vocab): the gap stays, which spmbpe refuses.
    vocab = data["model"]["vocab"]
    piece = next(p for p, i in vocab.items() if i == 100)  # a byte piece: in no merge rule
    del vocab[piece]
    data["added_tokens"].append({"id": 100, "content": piece, "special": False})


def _gap_beyond(data):
    # An id past the next one in the file: tokenizers gives the next one.
    data["added_tokens"].append({"id": len(data["model"]["vocab"]) + 1, "content": "<x>", "special": True})


def _unk_absent(data):
    data["model"]["unk_token"] = "<nowhere>"


def _unk_after_beyond(data):
    _beyond(data)
    data["model"]["unk_token"] = "<unk>"  # looked up once the table holds the tokens beyond


def _float_id(data):
    data["model"]["vocab"]["\u2581the"] = float(data["model"]["vocab"]["\u2581the"])


def _no_vocab(data):
    data["model"]["vocab"] = {}


_FIRST = ('"vocab": {', '"vocab": {"\u2581the": 7, ')  # a name also given first (json.loads keeps the last)
_LAST = ('}, "merges": [', ', "\u2581the": 7}, "merges": [')  # ... and last (its id 7 twice)
_EXTRA = ('"vocab": {', '"vocab": {"<extra>": 9, ')  # an added token's content, in the vocabulary too
_RENAMED = ('"<0x61>": 100', '"<0x62>": 100')  # ids 0..n-1 each once, a name twice (json.loads: 100 is gone)


# (Each a copy of the 3.5 MB file: every case in the long run; in the quick
# one a sample, with cases that load and cases refused.)
@pytest.mark.parametrize("change, edit, loads", sample([
    (None, None, True), (_shuffled, None, True), (_beyond, None, True), (_gap_filled, None, False),
    (_gap_beyond, None, True), (_unk_absent, None, False), (_float_id, None, False), (_no_vocab, None, False),
    (None, _FIRST, True), (None, _LAST, False), (_beyond, _EXTRA, False), (_unk_after_beyond, None, True),
    (None, _RENAMED, False),
], 6, kind=lambda case: case[2]))
def test_a_vocabulary_read_from_the_file_gives_the_json_loads_spec_or_error(tmp_path, change, edit, loads):
    """Whether compiled code reads model.vocab (ids 0..n-1 in the file's
    order or another, added tokens beyond them) or leaves it to json.loads
    (a gap an added token fills, a float id, a name given twice, whose
    last id json.loads keeps): the same spec as json.loads's reading of
    the whole file (`loads`), or the same error."""
    from spmbpe._hf_json import read_json_object
    from spmbpe._state import fingerprint
    from spmbpe.tokenizer_json import read_tokenizer_json, spec_from_json

    data = _shipped()
    if change is not None:
        change(data)
    text = json.dumps(data, ensure_ascii=False)
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit, 1)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")

    def outcome(read):
        try:
            return fingerprint(spec_from_json(read(str(path)), str(path)))
        except Exception as exc:  # noqa: BLE001 -- compared, type and message
            return type(exc), str(exc)

    expected = outcome(read_json_object)
    assert outcome(read_tokenizer_json) == expected
    assert isinstance(expected, str) == loads


# ------------------------------------------------------------------ the file read into a mapping of its own


def test_a_large_file_is_read_into_a_mapping_and_a_small_one_as_bytes(tmp_path):
    import mmap

    from spmbpe import tokenizer_json

    big, small = tmp_path / "big", tmp_path / "small"
    big.write_bytes(bytes(range(256)) * 4097)  # just over 1 MiB
    small.write_bytes(b'{"model": {}}')
    raw = tokenizer_json._file_bytes(str(big))
    assert isinstance(raw, mmap.mmap) and raw[:] == big.read_bytes()
    assert tokenizer_json._file_bytes(str(small)) == b'{"model": {}}'


def test_a_file_that_grew_after_its_size_was_read_is_read_whole(tmp_path, monkeypatch):
    from spmbpe import tokenizer_json

    path = tmp_path / "grown"
    path.write_bytes(b"x" * (3 << 20))
    real_fstat = tokenizer_json.os.fstat

    class Stat:
        def __init__(self, st):
            self.st_size = st.st_size - 10

    monkeypatch.setattr(tokenizer_json.os, "fstat", lambda fd: Stat(real_fstat(fd)))
    assert tokenizer_json._file_bytes(str(path)) == path.read_bytes()


def test_a_large_file_the_compiled_readers_do_not_take_is_parsed_from_the_mapping(tmp_path, pair):
    # (NaN is json.loads's, not the plain JSON that model_spans reads.)
    path = tmp_path / "tokenizer.json"
    path.write_bytes(JSON.read_bytes().replace(b"{", b'{"x": NaN, ', 1))
    tok = spmbpe.load(path)
    for text in _VARIANT_TEXTS:
        assert tok.encode(text, special="all") == _ref(pair[1], text)
