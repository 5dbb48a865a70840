"""One way from a text to its ids (issue 20): a text in which no added token
occurs goes from encode/encode_batch straight to the compiled merge, without
the Python planner, and gets exactly the ids the planner's path gives.

The planner's path itself is pinned against the references elsewhere
(goldens and live oracles); here the two paths are compared on texts that
take each front end's prefix rule (leading space, leading "▁", empty) for
every format: GGUF (and a variant with chat markers and one without the
dummy prefix), .model, tokenizer.json with each Metaspace prepend scheme and
with Prepend+Replace, and model folders read as transformers 5 does.
"""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

import spmbpe

from conftest import DATA_DIR, LLAMA_SPM_GGUF

JSON = DATA_DIR / "mistral-v1.tokenizer.json"

TEXTS = [
    "Hello world", " Hello", "  two", "\u2581x", "\u2581\u2581 y", "x\u2581", "", " ", "line\nbreak\n",
    "日本語 テキスト", "é🦙 emoji", "tabs\tand  runs   of spaces", "<s", "s>", "</ s>", "[INST",
    "a<s>b", "<s>x", " </s> y ", "x[INST]y", "[INST] hi [/INST]", "<unk>z", "a  <s>  b",
    # A token after other places its first byte starts (the scan's memchr
    # moves on from each), at the very end, and cut short there.
    "a < b <s>", "<<s>>", "<< </s> <", "x <u <unk", "[[INST] <", "1 < 2 and [ 3 ] </s", "<</s>",
]


def _json_variant(tmp_path: pathlib.Path, name: str, edit) -> str:
    data = json.loads(JSON.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _metaspace(scheme, split=False):
    def edit(data):
        data["normalizer"] = None
        data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme,
                                 "split": split}
        data["added_tokens"].append(
            {"id": 32000, "content": "[INST]", "single_word": False, "lstrip": True, "rstrip": True,
             "normalized": False, "special": True}
        )
    return edit


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    from gguf_variants import write_variant
    from transformers5_folders import materialize, read_golden

    tmp = tmp_path_factory.mktemp("direct")
    toks = {
        "gguf": spmbpe.load(LLAMA_SPM_GGUF),
        "gguf-phi3": spmbpe.load(str(write_variant("phi3", tmp / "phi3.gguf"))),
        "gguf-no-prefix": spmbpe.load(str(write_variant("no_prefix_eos", tmp / "np.gguf"))),
        "mistral-v1.model": spmbpe.load(DATA_DIR / "mistral-v1.model"),
        "mistral-v3.model": spmbpe.load(DATA_DIR / "mistral-v3.model"),
        "tokenizer.json": spmbpe.load(JSON),
    }
    for scheme in ("always", "first", "never"):
        toks[f"metaspace-{scheme}"] = spmbpe.load(_json_variant(tmp, scheme, _metaspace(scheme)))
    toks["metaspace-split"] = spmbpe.load(_json_variant(tmp, "split", _metaspace("always", True)))
    for name in ("v1-model-added", "v3-model-nolegacy", "v1-json-config"):
        meta, _ = read_golden(name)
        toks[f"folder-{name}"] = spmbpe.load(str(materialize(name, meta["files"], tmp / name)))
    return toks


NAMES = [
    "gguf", "gguf-phi3", "gguf-no-prefix", "mistral-v1.model", "mistral-v3.model", "tokenizer.json",
    "metaspace-always", "metaspace-first", "metaspace-never", "metaspace-split",
    "folder-v1-model-added", "folder-v3-model-nolegacy", "folder-v1-json-config",
]

# The formats whose every text is split by their planner (the Metaspace
# split=True front end cuts a segment per word).
ALWAYS_PLANNED = {"metaspace-split"}


def _planned(tok, text, special):
    """The planner's ids for `text` (the path every text took before)."""
    include = special != "none"
    return tok._core.encode_parts(tok._planner.plan(text, include, None))


@pytest.mark.parametrize("name", NAMES)
def test_direct_ids_equal_the_planned_ids(tokenizers, name):
    tok = tokenizers[name]
    corpus = (DATA_DIR / "corpus").glob("*.txt")
    lines = [line for path in sorted(corpus) for line in path.read_text(encoding="utf-8").splitlines()[:40]]
    for special in ("all", "none"):
        texts = TEXTS + lines
        expected = [_planned(tok, t, special) for t in texts]
        got = [tok.encode(t, special=special) for t in texts]
        assert [(t, e, g) for t, e, g in zip(texts, expected, got) if e != g] == []
        assert tok.encode_batch(texts, special=special, num_threads=1) == expected
        assert tok.encode_batch(texts, special=special, num_threads=2) == expected
        if special == "none":
            assert [tok.encode_ordinary(t) for t in texts] == expected


@pytest.mark.parametrize("name", NAMES)
def test_a_text_without_an_added_token_is_not_planned(tokenizers, name, monkeypatch):
    tok = tokenizers[name]
    calls = []
    plan = tok._planner.plan

    def counting_plan(text, *args, **kwargs):
        calls.append(text)
        return plan(text, *args, **kwargs)

    monkeypatch.setattr(tok._planner, "plan", counting_plan)
    plain = ["Hello world", "x = 1  # no markers here", "日本語"]
    expected = [_planned(tok, t, "all") for t in plain]
    calls.clear()
    assert [tok.encode(t, special="all") for t in plain] == expected
    assert [tok.encode(t) for t in plain] == expected
    assert tok.encode_batch(plain, num_threads=1) == expected
    assert tok.encode_batch(plain * 200, num_threads=2) == expected * 200
    if name in ALWAYS_PLANNED or (name.endswith(".model") and tok._planner.direct() is None):
        assert calls
        return
    assert calls == []
    # A text that spells an added token is planned (pyahocorasick splits it).
    marked = sorted(t.content for t in tok.added_tokens if t.content)
    if marked:
        text = f"a {marked[0]} b"
        want = _planned(tok, text, "all")
        calls.clear()
        assert tok.encode(text, special="all") == want
        assert calls == [text]
        calls.clear()
        # In a batch, only that text is.
        assert tok.encode_batch(plain + [text], special="all", num_threads=1) == expected + [want]
        assert calls == [text]


# A single text is read as CPython stores it, as a batch's texts are: a str
# that is not ASCII is converted into the encoder's own buffer, not asked for
# the UTF-8 copy CPython would keep on it (a corpus of such lines encoded one
# by one held half as much again).  ASCII, Latin-1 (one byte a character, not
# UTF-8), two and four bytes a character, each with the prefix rule's
# first characters.
STORAGES = ["plain ascii", "caf\u00e9 cr\u00e8me", "\u65e5\u672c\u8a9e \u3067\u3059", "\U0001f999 llama",
            " l\u00e9ad", "\u2581l\u00e9ad", "\u00e9", "\U0001f600", "tail\u00ff", "\u0436" * 20000,
            "\u00e9 " * 16000]


@pytest.mark.parametrize("fmt", ["model", "json"])
def test_one_text_of_every_str_storage_gives_the_references_ids_and_leaves_no_copy(fmt):
    texts = [t + f" {i}" for i in range(3) for t in STORAGES]
    sizes = [sys.getsizeof(t) for t in texts]
    if fmt == "model":
        import sentencepiece

        tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
        got = [tok.encode_ordinary(t) for t in texts]
        assert [sys.getsizeof(t) for t in texts] == sizes
        want = sentencepiece.SentencePieceProcessor(model_file=str(DATA_DIR / "mistral-v1.model")).encode(texts)
        assert got == want
        # sentencepiece left its copy on each text that is not ASCII: that
        # copy is read as it is, the same ids.
        assert sum(sys.getsizeof(t) for t in texts) > sum(sizes)
        assert [tok.encode_ordinary(t) for t in texts] == want
    else:
        from tokenizers import Tokenizer

        tok = spmbpe.load(JSON)
        got = [tok.encode(t, special="none") for t in texts]
        # Where a special token may occur (special="all", and the default
        # "raise"), a text is looked through for one in a converted copy,
        # not in CPython's; one that holds a token is planned.
        assert [tok.encode(t, special="all") for t in texts] == got
        assert [tok.encode(t) for t in texts] == got
        with_tokens = [f"\u65e5\u672c<s>\u8a9e {i}" for i in range(3)] + [" \u00e9</s>", "\u041f\u0440 <unk> \u043c"]
        token_sizes = [sys.getsizeof(t) for t in with_tokens]
        got_tokens = [tok.encode(t, special="all") for t in with_tokens]
        assert [sys.getsizeof(t) for t in texts] == sizes
        assert [sys.getsizeof(t) for t in with_tokens] == token_sizes
        ref = Tokenizer.from_file(str(JSON))
        assert got == [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
        assert got_tokens == [e.ids for e in ref.encode_batch(with_tokens, add_special_tokens=False)]
        assert all(1 in ids or 2 in ids or 0 in ids for ids in got_tokens)


@pytest.mark.parametrize("text, position", [("\u00e9\ud800", 1), ("\u65e5\udfff x", 1), ("\U0001f999 \ud83d", 2)])
def test_a_surrogate_in_one_short_text_is_named_as_the_planned_path_names_it(text, position):
    tok = spmbpe.load(DATA_DIR / "mistral-v1.model")
    for call in (tok.encode_ordinary, lambda t: tok.encode(t, special="none")):
        with pytest.raises(ValueError, match=f"lone surrogate .* at position {position}, "):
            call(text)


@pytest.mark.parametrize("text", ["\u65e5\u672c\ud800 x", "\u00e9<s>\udc00", "\u65e5\ud83d </s> y", "<unk>\u00e9\udfff"])
def test_a_surrogate_where_a_token_may_occur_fails_as_the_planned_path_fails(text):
    """Where a special token may occur (the default and "all" on a
    tokenizer.json), a short text is looked for one in the UTF-8 it is
    converted into to be merged; a surrogate there sends it to the planner,
    whose error it gets, as a policy that is a collection (always planned)
    gives it, whether or not it also spells a token."""
    tok = spmbpe.load(JSON)
    specials = frozenset(t.content for t in tok.added_tokens if t.special)
    assert {"<s>", "</s>", "<unk>"} <= specials
    for direct, planned in ((lambda t: tok.encode(t), lambda t: tok.encode(t, special=frozenset())),
                            (lambda t: tok.encode(t, special="all"), lambda t: tok.encode(t, special=specials))):
        with pytest.raises(Exception) as want:
            planned(text)
        with pytest.raises(Exception) as got:
            direct(text)
        assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))
