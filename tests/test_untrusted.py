"""Untrusted text cannot forge a control token.

For every format in tests/data (and a GGUF variant with chat markers, and
model folders with special tokens):

* ``encode(text, special="none")`` (= ``encode_ordinary``) never contains a
  CONTROL id, whatever the text spells — random text built from fragments of
  every special token's spelling, the spellings themselves, byte-piece names
  (``<0x41>``) — and never the unknown id (these vocabularies have all 256
  byte pieces, so no text is unknown to them);
* an allow-list raises ``DisallowedSpecialError`` (naming the token and its
  offset) for any other special token spelled in the text, and changes
  nothing for text that spells none;
* ``decode(ids, skip_special=True)`` never shows a control or unknown piece:
  it equals decoding the ids without them.

The references agree: llama.cpp with ``parse_special=false``, sentencepiece
(which never matches control pieces in text), transformers with the special
tokens not split and tokenizers with ``split_special_tokens`` all encode a
control token's spelling as plain pieces.
"""

from __future__ import annotations

import functools
import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe import TokenType
from spmbpe._core import Plan
from spmbpe.errors import DisallowedSpecialError

from conftest import DATA_DIR, LLAMA_SPM_GGUF
from long_run import examples

_SPECIAL_TYPES = (TokenType.CONTROL, TokenType.UNKNOWN)


def _hf_folder(tmp_path_factory, model: str, legacy: bool):
    folder = tmp_path_factory.mktemp(f"hf-{model}-{legacy}")
    shutil.copy(DATA_DIR / f"{model}.model", folder / "tokenizer.model")
    config = {
        "legacy": legacy,
        "add_bos_token": True,
        "additional_special_tokens": ["[INST]", "[/INST]", "<|im_start|>"],
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return str(folder)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    from gguf_variants import write_variant

    variant = write_variant("phi3", tmp_path_factory.mktemp("phi3") / "phi3.gguf")
    return {
        "gguf": spmbpe.load(LLAMA_SPM_GGUF),
        "gguf-phi3": spmbpe.load(str(variant)),
        "mistral-v1.model": spmbpe.load(DATA_DIR / "mistral-v1.model"),
        "mistral-v3.model": spmbpe.load(DATA_DIR / "mistral-v3.model"),
        "tokenizer.json": spmbpe.load(DATA_DIR / "mistral-v1.tokenizer.json"),
        "hf-legacy": spmbpe.load(_hf_folder(tmp_path_factory, "mistral-v1", True), reference="transformers4"),
        "hf-nonlegacy": spmbpe.load(_hf_folder(tmp_path_factory, "mistral-v3", False), reference="transformers4"),
    }


NAMES = ["gguf", "gguf-phi3", "mistral-v1.model", "mistral-v3.model", "tokenizer.json", "hf-legacy",
         "hf-nonlegacy"]


@functools.lru_cache(maxsize=None)
def control_texts(tok):
    """The spellings of every special token and control/unknown piece (found
    once for each tokenizer: a walk over its whole vocabulary)."""
    texts = set(tok.special_tokens)
    for i in range(tok.vocab_size):
        if tok.token_type(i) in _SPECIAL_TYPES:
            texts.add(tok.id_to_piece(i))
    return tuple(sorted(texts))


def assert_no_control(tok, text):
    ids = tok.encode(text, special="none")
    bad = [(i, tok.id_to_piece(i)) for i in ids if tok.token_type(i) in _SPECIAL_TYPES]
    assert not bad, f"{text!r} gave special ids {bad} with special='none'"
    assert tok.encode_ordinary(text) == ids
    assert tok.unk_id is None or tok.unk_id not in ids
    return ids


@pytest.mark.parametrize("name", NAMES)
def test_every_control_spelling_is_plain_text(tokenizers, name):
    tok = tokenizers[name]
    spellings = control_texts(tok)
    assert spellings
    for s in spellings:
        for text in (s, "x" + s, " " + s, s + s, s + " y", "\u2581" + s, s[:-1], s[1:], f"a{s}b{s}c"):
            assert_no_control(tok, text)
    assert_no_control(tok, "".join(spellings))
    assert_no_control(tok, " ".join(spellings))


@pytest.mark.parametrize("name", ["gguf", "mistral-v1.model", "tokenizer.json"])
def test_byte_piece_names_are_plain_text(tokenizers, name):
    tok = tokenizers[name]
    for text in ("<0x41>", "<0x00>", "<0xFF><0xFE>", "<0x>"):
        ids = assert_no_control(tok, text)
        assert all(tok.token_type(i) != TokenType.BYTE for i in ids), (text, ids)
        assert tok.decode(ids) == text


def _fragments(spellings):
    pieces = set()
    for s in spellings:
        for i in range(len(s)):
            for j in range(i + 1, len(s) + 1):
                if j - i <= 4 or (i, j) == (0, len(s)):
                    pieces.add(s[i:j])
    return sorted(pieces)


@st.composite
def forged_texts(draw, spellings):
    """Text stitched from fragments of special-token spellings, whole
    spellings, spaces, the space marker and ordinary characters."""
    fragments = _fragments(spellings) + [" ", "  ", "\u2581", "\n", "a", "\u00e9", "\U0001f600", "\t"]
    parts = draw(st.lists(st.one_of(st.sampled_from(fragments), st.text(max_size=3)), max_size=24))
    return "".join(parts)


# Fewer examples under tools/sanitize.sh (everything runs ~10x slower there).
_SETTINGS = settings(max_examples=examples(12 if os.environ.get("SPMBPE_SANITIZED") else 60), deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", NAMES)
def test_forged_text_gives_no_control_id(tokenizers, name):
    tok = tokenizers[name]
    spellings = control_texts(tok)[:60]

    @_SETTINGS
    @given(forged_texts(spellings))
    def check(text):
        if any("\ud800" <= c <= "\udfff" for c in text):
            return
        assert_no_control(tok, text)
        # Batches and offsets take the same path.
        assert tok.encode_batch([text, text], special="none", num_threads=2) == [tok.encode_ordinary(text)] * 2
        assert tok.encode_with_offsets(text, special="none")[0] == tok.encode_ordinary(text)

    check()


def _occurrences(text, token):
    start = text.find(token)
    while start >= 0:
        yield start
        start = text.find(token, start + 1)


@pytest.mark.parametrize("name", NAMES)
def test_allow_list(tokenizers, name):
    tok = tokenizers[name]
    specials = sorted(tok.special_tokens)
    # Under sentencepiece's rules no special token is matched in text: there
    # an allow-list naming control pieces changes nothing and raises nothing.
    allowed = frozenset(specials[:1]) if specials else frozenset(control_texts(tok)[:1])
    spellings = control_texts(tok)[:60]

    @_SETTINGS
    @given(forged_texts(spellings))
    def check(text):
        if any("\ud800" <= c <= "\udfff" for c in text):
            return
        present = {t for t in specials if t in text}
        try:
            ids = tok.encode(text, special=allowed)
        except DisallowedSpecialError as e:
            assert e.token in tok.special_tokens and e.token not in allowed
            assert e.token in text
            assert text[e.offset:e.offset + len(e.token)] == e.token, (text, e.token, e.offset)
            return
        # No error: every special spelled is allowed, or inside an allowed one.
        for t in present - allowed:
            for at in _occurrences(text, t):
                covered = any(
                    a <= at and at + len(t) <= a + len(u)
                    for u in allowed for a in _occurrences(text, u)
                )
                assert covered, f"{t!r} at {at} in {text!r} was not refused"
        if not present:
            assert ids == tok.encode(text, special="none") == tok.encode(text, special="all")

    check()
    other = [t for t in specials if t not in allowed and not any(a in t or t in a for a in allowed)]
    if other:
        with pytest.raises(DisallowedSpecialError) as info:
            tok.encode("hi " + other[0], special=allowed)
        assert info.value.token == other[0]
        with pytest.raises(DisallowedSpecialError):
            tok.encode(other[0], special=set())
        with pytest.raises(DisallowedSpecialError):
            tok.encode_batch(["ok", other[0]], special=set())


@pytest.mark.parametrize("name", NAMES)
def test_decode_skip_special_hides_control_pieces(tokenizers, name):
    tok = tokenizers[name]
    special_ids = [i for i in range(tok.vocab_size) if tok.token_type(i) in _SPECIAL_TYPES]
    special_ids += [t.id for t in tok.added_tokens if t.special]
    special_ids = sorted(set(special_ids))
    assert tok.decode(special_ids, skip_special=True) == ""
    assert tok.decode_bytes(special_ids, skip_special=True) == b""
    hello = tok.encode_ordinary("Hello world")
    for i in special_ids[:12]:
        mixed = [i] + hello + [i, i] + hello + [i]
        # A skipped id in the middle or at the end is as if it were not there;
        # a skipped first id may still decide the leading space (llama.cpp).
        assert tok.decode(mixed[1:], skip_special=True) == tok.decode(hello + hello)
        assert tok.decode(mixed, skip_special=True) == tok.decode([i] + hello + hello, skip_special=True)
        shown = tok.decode(mixed)
        assert tok.id_to_piece(i) in shown or tok.decode([i]) in shown

    @_SETTINGS
    @given(forged_texts(control_texts(tok)[:40]))
    def check(text):
        if any("\ud800" <= c <= "\udfff" for c in text):
            return
        ids = tok.encode(text, special="all")
        kept = [i for i in ids if i not in set(special_ids)]
        assert tok.decode(ids, skip_special=True) == tok.decode(kept)

    check()


# ---------------------------------------------------------------- the default policy

# Formats whose reference reads special tokens from text (llama.cpp with
# parse_special, transformers, tokenizers): their default must refuse them.
# A bare .model follows sentencepiece, which reads them as plain text.
READS_SPECIALS = ["gguf", "gguf-phi3", "tokenizer.json", "hf-legacy", "hf-nonlegacy"]


def test_a_chatml_constant_in_code_raises_by_default(tokenizers):
    # The issue's own example: source code that spells a control token.
    tok = tokenizers["gguf"]
    line = 'CHATML_BOS_TOKEN = "<s>"'
    with pytest.raises(DisallowedSpecialError) as excinfo:
        tok.encode(line)
    error = excinfo.value
    assert (error.token, error.offset, error.index) == ("<s>", 20, None)
    message = str(error)
    assert "'<s>'" in message and "offset 20" in message
    assert "special='all'" in message and "special='none'" in message
    # Both ways out: the control id, or plain text.
    assert tok.encode(line, special="all").count(tok.bos_id) == 1
    assert tok.bos_id not in tok.encode(line, special="none")


@pytest.mark.parametrize("name", NAMES)
def test_default_encode_is_plain_text_or_an_error_never_a_control_id(tokenizers, name):
    tok = tokenizers[name]
    spellings = control_texts(tok)
    raised = 0
    for s in spellings:
        for text in (s, "x" + s, " " + s + " y", f"a{s}b{s}c", "\u2581" + s):
            try:
                ids = tok.encode(text)
            except DisallowedSpecialError as e:
                raised += 1
                # It names a special token that the text spells where it says.
                assert e.token in tok.special_tokens or e.token in spellings
                assert text.startswith(e.token, e.offset), (text, e.token, e.offset)
                with pytest.raises(DisallowedSpecialError):
                    tok.encode_with_offsets(text)
                continue
            assert ids == tok.encode(text, special="none"), text
    if name in READS_SPECIALS:
        assert raised > 0
    else:
        # sentencepiece reads no special token from text: nothing to refuse.
        assert raised == 0


class _Policy(str):
    """A str subclass (as an enum of policies would be)."""


@pytest.mark.parametrize("name", READS_SPECIALS)
def test_a_policy_spelled_at_run_time_acts_as_its_literal(tokenizers, name):
    # The call tells the literals apart by identity first; a policy string
    # built at run time (not the interned literal), or a str subclass, must
    # act the same.
    tok = tokenizers[name]
    token = sorted(tok.special_tokens)[0]
    text = f"a {token} b"
    built = {p: "".join(list(p)) for p in ("all", "none", "raise")}
    assert all(built[p] is not p for p in built)
    for policy in ("all", "none"):
        expected = tok.encode(text, special=policy)
        assert tok.encode(text, special=built[policy]) == expected
        assert tok.encode(text, special=_Policy(policy)) == expected
        assert tok.encode_batch([text], special=built[policy]) == [expected]
    token_id = tok.convert_tokens_to_ids(token)
    assert token_id in tok.encode(text, special=built["all"])
    assert token_id not in tok.encode(text, special=built["none"])
    for policy in (built["raise"], _Policy("raise")):
        with pytest.raises(DisallowedSpecialError):
            tok.encode(text, special=policy)
    assert tok.encode("plain text", special=built["raise"]) == tok.encode_ordinary("plain text")
    if name == "tokenizer.json":
        # The reference: tokenizers reads the token as its id, and as text
        # with encode_special_tokens.
        from tokenizers import Tokenizer

        ref = Tokenizer.from_file(str(DATA_DIR / "mistral-v1.tokenizer.json"))
        assert tok.encode(text, special=built["all"]) == ref.encode(text, add_special_tokens=False).ids
        ref.encode_special_tokens = True
        assert tok.encode(text, special=built["none"]) == ref.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("name", READS_SPECIALS)
def test_default_batch_names_the_text_that_spells_a_special_token(tokenizers, name):
    tok = tokenizers[name]
    token = sorted(tok.special_tokens)[0]
    texts = ["plain text", "more plain text", f"a {token} b", "tail"]
    with pytest.raises(DisallowedSpecialError) as excinfo:
        tok.encode_batch(texts, num_threads=1)
    assert (excinfo.value.token, excinfo.value.index) == (token, 2)
    assert "texts[2]" in str(excinfo.value)
    # Texts without one encode as they do under any policy.
    plain = [t for t in texts if token not in t]
    assert tok.encode_batch(plain) == tok.encode_batch(plain, special="none") == tok.encode_batch(plain, special="all")


@pytest.mark.parametrize("name", READS_SPECIALS)
def test_the_transformers_style_calls_keep_reading_special_tokens(tokenizers, name):
    # tok(...) and tokenize follow transformers, whose default reads them.
    tok = tokenizers[name]
    token = sorted(tok.special_tokens)[0]
    text = f"a {token} b"
    expected = tok.encode(text, special="all")
    assert tok(text, add_special_tokens=False)["input_ids"] == expected
    assert tok.tokenize(text) == [tok.id_to_piece(i) for i in expected]


@pytest.mark.parametrize("name", NAMES)
def test_hypothesis_default_never_yields_a_control_id(tokenizers, name):
    tok = tokenizers[name]

    @_SETTINGS
    @given(forged_texts(control_texts(tok)[:40]))
    def check(text):
        if any("\ud800" <= c <= "\udfff" for c in text):
            return
        try:
            ids = tok.encode(text)
        except DisallowedSpecialError as e:
            assert name in READS_SPECIALS and text.startswith(e.token, e.offset)
            return
        assert ids == tok.encode(text, special="none")

    check()


def test_readme_names_the_safe_mode():
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "README.md"
    if not path.exists():
        pytest.skip("no README.md beside tests/ (a scratch copy)")
    readme = path.read_text(encoding="utf-8")
    assert 'special="none"' in readme and "encode_ordinary" in readme and "DisallowedSpecialError" in readme
    assert "(docs/hardening.md)" in readme
    hardening = (path.parent / "docs" / "hardening.md").read_text(encoding="utf-8")
    assert hardening.startswith("# Hardening") and 'special="none"' in hardening


def _ok_plan():
    plan = Plan()
    plan.add_text("ok", True)
    return plan


@pytest.mark.parametrize(
    "add, error, message",
    [
        (lambda p: p.add_token("a"), TypeError, "token id must be an int"),
        (lambda p: p.add_token(None), TypeError, "token id must be an int"),
        (lambda p: p.add_token(1.5), TypeError, "token id must be an int"),
        (lambda p: p.add_token(-1), ValueError, "not a piece id"),
        (lambda p: p.add_token(2**31), ValueError, "not a piece id"),
        (lambda p: p.add_token(5, -1, 0), ValueError, "span"),
        (lambda p: p.add_token(5, "a", 1), TypeError, None),
        (lambda p: p.add_text(5, True), TypeError, "text must be str"),
        (lambda p: p.add_text(b"a", True), TypeError, "text must be str"),
        (lambda p: p.add_text(None, True), TypeError, "text must be str"),
        (lambda p: p.add_text("a", True, -1), ValueError, "skip"),
        (lambda p: p.add_text("a", True, 2**31), ValueError, "skip"),
        (lambda p: p.add_text("a", True, 0, -1, 0), ValueError, "origin and lead"),
        (lambda p: p.add_text("a", True, alignment=[0]), ValueError, "alignment must have"),
        (lambda p: p.add_text("a", True, alignment=[0, 1, 2]), ValueError, "alignment must have"),
        (lambda p: p.add_text("a", True, alignment=(0, 1)), TypeError, "alignment must be a list"),
        (lambda p: p.add_text("a", True, alignment=[0, "1"]), TypeError, "alignment must hold ints"),
        (lambda p: p.add_text("a", True, alignment=[0, 1.5]), TypeError, "alignment must hold ints"),
        (lambda p: p.add_text("\ud800", True), UnicodeEncodeError, None),
        (lambda p: p.set_skip(0, -1), ValueError, "skip"),
        (lambda p: p.set_skip(1, 1), IndexError, "out of range"),
        (lambda p: p.extend([("a", True)]), TypeError, None),
    ],
)
def test_plan_refuses_malformed_parts(add, error, message):
    # The core reads a plan's parts unchecked, without the GIL: a malformed
    # part must be refused when added, never read past the end of an object.
    tok = spmbpe.load("mistral-v1")
    plan = _ok_plan()
    with pytest.raises(error, match=message):
        add(plan)
    # (A part refused is not half added.)
    assert plan.parts() == [("ok", True, 0, 0, 0)]
    assert tok._core.encode_parts(plan) == tok._core.encode_parts_offsets(plan)[0] == tok.encode("ok")
    token = Plan()
    token.add_token(5)
    with pytest.raises(ValueError, match="part 0 is a token"):
        token.set_skip(0, 1)


@pytest.mark.parametrize("plan", [[("ok", True)], [5], ("ok", True), "ok", None, 5])
def test_core_plan_calls_take_only_plans(plan):
    # The tuple shapes of earlier versions, or anything else, are refused.
    tok = spmbpe.load("mistral-v1")
    with pytest.raises(TypeError):
        tok._core.encode_parts(plan)
    with pytest.raises(TypeError):
        tok._core.encode_parts_offsets(plan)
    if plan is not None and not isinstance(plan, str):
        with pytest.raises(TypeError, match="must be str or a Plan"):
            tok._core.encode_parts_batch([_ok_plan(), plan])


def test_core_plan_calls_refuse_ids_outside_the_vocabulary():
    # A Plan does not know the vocabulary: the core checks its token ids.
    tok = spmbpe.load("mistral-v1")
    plan = _ok_plan()
    plan.add_token(len(tok))
    with pytest.raises(ValueError, match=f"token id {len(tok)} is not a piece id"):
        tok._core.encode_parts(plan)
    with pytest.raises(ValueError, match="is not a piece id"):
        tok._core.encode_parts_offsets(plan)
    with pytest.raises(ValueError, match="is not a piece id"):
        tok._core.encode_parts_batch(["a", plan])
