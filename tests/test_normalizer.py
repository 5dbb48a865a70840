"""spmbpe._normalizer against live sentencepiece.

sentencepiece is the oracle: tiny BPE models are trained here (on a few lines
of every corpus file) with each built-in normalization rule (``nmt_nfkc``,
``nfkc``, ``nmt_nfkc_cf``, ``nfkc_cf``, ``identity``), with custom TSV rules,
with user-defined symbols, and with every combination of the whitespace
settings.  Each model is read back with our protobuf-free reader, a
``Normalizer`` is built from it (``Normalizer.from_model_proto``), and its
output is compared with ``SentencePieceProcessor.normalize`` -- the string,
the character offsets (``with_offsets=True`` on ``str``), and on bytes input
(malformed UTF-8 included) the bytes and sentencepiece's own byte alignment
``norm_to_orig`` (``with_offsets=True`` on ``bytes``).

Inputs: every non-blank line of ``tests/data/corpus/*.txt`` and
hypothesis-generated text (derandomized).  Corrupt charsmaps must raise
``ValueError`` exactly when sentencepiece refuses to load them (plus one
stricter check of ours: replacement strings must be valid UTF-8).

A model whose normalizer settings the trainer cannot produce
(``escape_whitespaces = false`` is refused for BPE; hand-made charsmaps) is
made by appending a second ``normalizer_spec`` field to a trained model:
protobuf merges repeated embedded messages, so sentencepiece and our reader
both see the later values.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import pathlib
import pickle
import random
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spmbpe._normalizer import Normalizer
from spmbpe._spm_model import parse_model_proto
from long_run import examples, sample
from spm_proto import _varint  # the test suite's ModelProto writer

CORPUS_DIR = pathlib.Path(__file__).parent / "data" / "corpus"
RULES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")

# Hypothesis examples per test (derandomized: every run draws the same
# inputs): a few seconds in all in the long run, a tenth in the quick one;
# raise locally to hunt for disagreements, e.g. SPMBPE_NORM_EXAMPLES=20000.
MAX_EXAMPLES = int(os.environ.get("SPMBPE_NORM_EXAMPLES", "0")) or examples(300)


def _settings(max_examples: int) -> settings:
    return settings(
        max_examples=max(1, max_examples),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ------------------------------------------------------------------ corpus


@functools.lru_cache(maxsize=None)
def _corpus_lines() -> Tuple[str, ...]:
    """Every non-blank line of every corpus file (whitespace kept) in the
    long run; in the quick one an even sample of each file's."""
    lines: List[str] = []
    for path in sorted(CORPUS_DIR.glob("*.txt")):
        text = path.read_bytes().decode("utf-8")
        lines.extend(sample([line for line in text.split("\n") if line.strip()], 400))
    return tuple(lines)


@functools.lru_cache(maxsize=None)
def _training_lines() -> Tuple[str, ...]:
    lines: List[str] = []
    for path in sorted(CORPUS_DIR.glob("*.txt")):
        text = path.read_bytes().decode("utf-8")
        lines.extend(itertools.islice((ln for ln in text.split("\n") if ln.strip()), 120))
    return tuple(lines)


# ------------------------------------------------------------------ models


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _with_normalizer_fields(
    model: bytes,
    charsmap: Optional[bytes] = None,
    escape_whitespaces: Optional[bool] = None,
) -> bytes:
    """`model` with a second normalizer_spec (field 3) appended; protobuf
    merges it into the first, so only the fields given here change."""
    spec = b""
    if charsmap is not None:
        spec += _len_field(2, charsmap)
    if escape_whitespaces is not None:
        spec += _varint(5 << 3) + _varint(int(escape_whitespaces))
    return model + _len_field(3, spec)


@functools.lru_cache(maxsize=None)
def _train(
    rule: str = "nmt_nfkc",
    remove_extra_whitespaces: bool = True,
    add_dummy_prefix: bool = True,
    treat_whitespace_as_suffix: bool = False,
    byte_fallback: bool = False,
    user_defined_symbols: Tuple[str, ...] = (),
    rule_tsv: Optional[str] = None,
) -> bytes:
    """A tiny trained BPE model (cached for the session)."""
    buf = io.BytesIO()
    kwargs: Dict[str, object] = dict(
        sentence_iterator=iter(_training_lines()),
        model_writer=buf,
        model_type="bpe",
        vocab_size=500 + (256 if byte_fallback else 0),  # + the 256 byte pieces
        character_coverage=0.98,
        remove_extra_whitespaces=remove_extra_whitespaces,
        add_dummy_prefix=add_dummy_prefix,
        treat_whitespace_as_suffix=treat_whitespace_as_suffix,
        byte_fallback=byte_fallback,
        minloglevel=2,
        num_threads=1,
    )
    if rule_tsv is not None:
        kwargs["normalization_rule_tsv"] = rule_tsv
    else:
        kwargs["normalization_rule_name"] = rule
    if user_defined_symbols:
        kwargs["user_defined_symbols"] = list(user_defined_symbols)
    spm.SentencePieceTrainer.train(**kwargs)
    return buf.getvalue()


class Pair(NamedTuple):
    model: bytes
    sp: spm.SentencePieceProcessor
    nz: Normalizer


def _pair(model: bytes) -> Pair:
    return Pair(
        model,
        spm.SentencePieceProcessor(model_proto=model),
        Normalizer.from_model_proto(parse_model_proto(model)),
    )


@functools.lru_cache(maxsize=None)
def _rule_pair(rule: str) -> Pair:
    return _pair(_train(rule))


# remove_extra_whitespaces, add_dummy_prefix, treat_whitespace_as_suffix,
# escape_whitespaces
FLAG_COMBOS = tuple(itertools.product((True, False), repeat=4))


@functools.lru_cache(maxsize=None)
def _flag_pair(remove: bool, dummy: bool, suffix: bool, escape: bool) -> Pair:
    model = _train(
        "nmt_nfkc",
        remove_extra_whitespaces=remove,
        add_dummy_prefix=dummy,
        treat_whitespace_as_suffix=suffix,
        byte_fallback=True,
    )
    if not escape:
        model = _with_normalizer_fields(model, escape_whitespaces=False)
    return _pair(model)


def _combo_id(combo: Tuple[bool, ...]) -> str:
    names = ("remove", "dummy", "suffix", "escape")
    return "-".join(n if on else "no_" + n for n, on in zip(names, combo))


# ------------------------------------------------------------------ checks


def _check_text(pair: Pair, text: str) -> None:
    expected = pair.sp.normalize(text)
    assert pair.nz.normalize(text) == expected, text
    exp_text, exp_offsets = pair.sp.normalize(text, with_offsets=True)
    got_text, got_offsets = pair.nz.normalize_with_offsets(text)
    assert got_text == exp_text == expected, text
    assert got_offsets == list(exp_offsets), text


def _check_bytes(pair: Pair, data: bytes) -> None:
    exp_bytes, exp_offsets = pair.sp.normalize(data, with_offsets=True)
    assert pair.nz.normalize_bytes(data) == exp_bytes, data
    got_bytes, got_offsets = pair.nz.normalize_bytes_with_offsets(data)
    assert got_bytes == exp_bytes, data
    assert got_offsets == list(exp_offsets), data


def _first_mismatch(pair: Pair, texts) -> Optional[Tuple[str, str, str]]:
    expected = pair.sp.normalize(list(texts))
    for text, exp in zip(texts, expected):
        got = pair.nz.normalize(text)
        if got != exp:
            return text, exp, got
    return None


# ------------------------------------------------------------------ strategies

WHITESPACE = (
    " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u1680", "\u2000",
    "\u2002", "\u2003", "\u2009", "\u200a", "\u200b", "\u2028", "\u2029",
    "\u202f", "\u205f", "\u3000", "\ufeff", "\u2581", " \u3000 ", "\t \t",
)  # fmt: skip
SPECIAL = (
    # control characters
    "\x00", "\x01", "\x07", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f",
    "\u00ad", "\u200c", "\u200d", "\u2060", "\ufffd", "\ufffe", "\uffff",
    # full-width and half-width forms
    "\uff01", "\uff10", "\uff21", "\uff3a", "\uff41", "\uff5e", "\uff61",
    "\uff76", "\uff9e", "\uff9f", "\uffe5", "ＡＢＣ", "１２３", "ｶﾞｷﾞ", "ﾊﾟ",
    # compatibility characters
    "\u2460", "\u2473", "\u2163", "\u217b", "\u3300", "\u3357", "\u33ff",
    "\ufb00", "\ufb01", "\ufb06", "\u2126", "\u212b", "\u00bd", "\u00b2",
    "\u2075", "\u017f", "\u1e9b", "\ufdfa", "\ufdfb", "\u3250", "\u32ff",
    "\u2122", "\u00c5", "\u00b5", "\u1d2c", "\u02b0", "\u2f00", "\uf900",
    "\uf9ff", "\ufa30", "\U0001d400", "\U0001d7ce", "\U0002f800",
    # combining marks and what they compose with
    "\u0300", "\u0301", "\u0308", "\u0327", "\u036f", "\u3099", "\u309a",
    "e\u0301", "A\u030a", "n\u0303", "か\u3099", "ﾊ\uff9f", "\u1100\u1161",
    "\u1100\u1161\u11a8", "\u1112", "\u1175", "\u11c2",
    # case folding
    "ß", "ẞ", "İ", "ı", "Σ", "ς", "ǅ", "Ω", "Ꭰ", "ꭰ", "ﬅ", "ΐ",
    # CJK, Hangul, kana, astral
    "日本語", "漢字", "中文", "한국어", "가", "ひらがな", "カタカナ", "\U0001f600",
    "\U000e0001", "\U0010ffff", "\U00020000",
    # ASCII
    "a", "Z", "0", "Hello", "world", "x", "~", ".", ",",
)  # fmt: skip

_piece = st.one_of(
    st.sampled_from(SPECIAL),
    st.sampled_from(WHITESPACE),
    st.characters(codec="utf-8"),  # no lone surrogates
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4),
)
TEXT = st.lists(_piece, max_size=24).map("".join)

MALFORMED = (
    b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2", b"\xc2\x41",
    b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe0\xa0", b"\xe3\x81", b"\xed\xa0\x80",
    b"\xed\xbf\xbf", b"\xef\xbf\xbd", b"\xf0\x80\x80\x80", b"\xf0\x9f\x98",
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfe",
    b"\xff", b"\xff\xfe",
)  # fmt: skip
BYTES = st.lists(
    st.one_of(
        _piece.map(lambda s: s.encode("utf-8")),
        st.sampled_from(MALFORMED),
        st.binary(max_size=4),
    ),
    max_size=16,
).map(b"".join)

CURATED = (
    "", " ", "   ", "\t", "\u3000", " \u3000\t ", "a", " a", "a ", " a ", "  a  b  ",
    "a\u3000\u3000b", "a \t b", "\u2581", "a\u2581", "\u2581a", " \u2581 ", "a\u2581\u2581",
    "\u2581 a \u2581", "x\x01y", "\x01", " \x01 ", "\x01 a", "a \x01", "ＡＢＣ　ｄｅｆ",
    "\ufdfa", " \ufdfa ", "ｶﾞｷﾞ", "e\u0301", "Hello  World", "\n\nHello\n", "\ufeffa",
)  # fmt: skip


# ------------------------------------------------------------------ rules


@pytest.mark.parametrize("rule", RULES)
def test_reader_sees_the_trained_spec(rule):
    proto = parse_model_proto(_train(rule))
    assert proto.normalizer.name == rule
    nz = Normalizer.from_model_proto(proto)
    assert nz.has_charsmap == (rule != "identity")
    assert nz.precompiled_charsmap == proto.normalizer.precompiled_charsmap
    assert (nz.add_dummy_prefix, nz.remove_extra_whitespaces, nz.escape_whitespaces) == (
        True,
        True,
        True,
    )
    assert not nz.treat_whitespace_as_suffix
    assert not nz.is_identity


@pytest.mark.parametrize("rule", RULES)
def test_every_corpus_line(rule):
    pair = _rule_pair(rule)
    lines = _corpus_lines()
    assert _first_mismatch(pair, lines) is None


@pytest.mark.parametrize("rule", RULES)
def test_corpus_offsets(rule):
    pair = _rule_pair(rule)
    lines = _corpus_lines()
    if rule != "nmt_nfkc":
        lines = lines[::4]
    expected = pair.sp.normalize(list(lines), with_offsets=True)
    for text, (exp_text, exp_offsets) in zip(lines, expected):
        got_text, got_offsets = pair.nz.normalize_with_offsets(text)
        assert (got_text, got_offsets) == (exp_text, list(exp_offsets)), text


@pytest.mark.parametrize("rule", RULES)
def test_curated(rule):
    pair = _rule_pair(rule)
    for text in CURATED + SPECIAL + WHITESPACE:
        _check_text(pair, text)
        _check_bytes(pair, text.encode("utf-8"))


@pytest.mark.parametrize("rule", RULES)
def test_whole_file_as_one_input(rule):
    pair = _rule_pair(rule)
    for name in ("en_botchan.txt", "multi_ja.txt"):
        text = (CORPUS_DIR / name).read_bytes().decode("utf-8")
        assert pair.nz.normalize(text) == pair.sp.normalize(text)


@pytest.mark.parametrize("rule", RULES)
@_settings(MAX_EXAMPLES)
@given(text=TEXT)
def test_hypothesis_text(rule, text):
    _check_text(_rule_pair(rule), text)


@pytest.mark.parametrize("rule", RULES)
@_settings(MAX_EXAMPLES // 2)
@given(data=BYTES)
def test_hypothesis_malformed_utf8(rule, data):
    _check_bytes(_rule_pair(rule), data)


# ------------------------------------------------------------------ whitespace settings


@pytest.mark.parametrize("combo", FLAG_COMBOS, ids=_combo_id)
def test_whitespace_settings(combo):
    remove, dummy, suffix, escape = combo
    pair = _flag_pair(*combo)
    nz = pair.nz
    assert (
        nz.remove_extra_whitespaces,
        nz.add_dummy_prefix,
        nz.treat_whitespace_as_suffix,
        nz.escape_whitespaces,
    ) == combo
    for text in CURATED + WHITESPACE:
        _check_text(pair, text)
        _check_bytes(pair, text.encode("utf-8"))
    lines = _corpus_lines()[::40]
    assert _first_mismatch(pair, lines) is None
    for text in lines[::10]:
        _check_text(pair, text)


@_settings(MAX_EXAMPLES)
@given(combo=st.sampled_from(FLAG_COMBOS), text=TEXT, data=BYTES)
def test_hypothesis_whitespace_settings(combo, text, data):
    pair = _flag_pair(*combo)
    _check_text(pair, text)
    _check_bytes(pair, data)


# ------------------------------------------------------------------ user-defined symbols

USER_SYMBOLS = ("ＡＢ", "x  y", "ｶﾞ", "Ⅻ", "ﬁn", "日本", " q", "\u3000z")


@functools.lru_cache(maxsize=None)
def _uds_pair() -> Pair:
    return _pair(_train("nmt_nfkc_cf", user_defined_symbols=USER_SYMBOLS))


def test_user_defined_symbols_are_copied_verbatim():
    pair = _uds_pair()
    proto = parse_model_proto(pair.model)
    assert set(pair.nz.user_defined_symbols) == {
        proto.piece(i) for i in range(len(proto)) if proto.types[i] == 4
    }
    assert "ＡＢ" in pair.nz.user_defined_symbols
    # protected from the charsmap
    assert pair.sp.normalize("ＡＢＣ") == pair.nz.normalize("ＡＢＣ") == "\u2581ＡＢc"
    for text in CURATED + USER_SYMBOLS + (
        "ＡＢＡＢ", "x  yx   y", "ｶﾞｶﾞ", "ⅫⅪ", "ﬁnﬁ", " q q  q", "\u3000z\u3000\u3000z",
    ):  # fmt: skip
        _check_text(pair, text)
    # without the symbols, the same charsmap normalizes them
    plain = Normalizer(pair.nz.precompiled_charsmap)
    assert plain.normalize("ＡＢ") == "\u2581ab"


@_settings(MAX_EXAMPLES)
@given(
    text=st.lists(
        st.one_of(st.sampled_from(USER_SYMBOLS), st.sampled_from(WHITESPACE), _piece),
        max_size=16,
    ).map("".join)
)
def test_hypothesis_user_defined_symbols(text):
    _check_text(_uds_pair(), text)


# ------------------------------------------------------------------ custom rules

RULES_TSV = """\
41 42\t43
41\t44 44
58\t20 20
59\t20 78
5A\t78 20
7E\t
61 62 63\t2581
3000\t20
2581\t20
62 62\t62 20 20 62
"""  # AB->C, A->DD, X->"  ", Y->" x", Z->"x ", ~->"", abc->U+2581, U+3000->" ",
# U+2581->" ", bb->"b  b"

_RULE_ALPHABET = ("A", "B", "AB", "X", "Y", "Z", "~", "a", "b", "c", "abc", "bb", " ", "\u3000",
                  "\u2581", "\t", "q")  # fmt: skip


@functools.lru_cache(maxsize=None)
def _tsv_pairs(tmp_dir: str) -> Tuple[Pair, ...]:
    path = os.path.join(tmp_dir, "rules.tsv")
    with open(path, "w", encoding="utf-8") as f:
        f.write(RULES_TSV)
    base = _train(rule_tsv=path)
    pairs = [_pair(base)]
    for suffix in (False, True):
        for remove in (True, False):
            model = _train(
                rule_tsv=path, remove_extra_whitespaces=remove, treat_whitespace_as_suffix=suffix
            )
            pairs.append(_pair(model))
            pairs.append(_pair(_with_normalizer_fields(model, escape_whitespaces=False)))
    return tuple(pairs)


@pytest.fixture(scope="module")
def tsv_pairs(tmp_path_factory):
    return _tsv_pairs(str(tmp_path_factory.mktemp("rules")))


def test_custom_rules(tsv_pairs):
    assert parse_model_proto(tsv_pairs[0].model).normalizer.name == "user_defined"
    texts = ["".join(p) for n in (1, 2) for p in itertools.product(_RULE_ALPHABET, repeat=n)]
    rng = random.Random(0)
    texts += ["".join(rng.choices(_RULE_ALPHABET, k=rng.randint(3, 8))) for _ in range(300)]
    for pair in tsv_pairs:
        for text in texts:
            _check_text(pair, text)


def test_hypothesis_custom_rules(tsv_pairs):
    @_settings(MAX_EXAMPLES)
    @given(
        index=st.integers(0, len(tsv_pairs) - 1),
        text=st.lists(st.sampled_from(_RULE_ALPHABET), max_size=12).map("".join),
    )
    def check(index, text):
        _check_text(tsv_pairs[index], text)

    check()


# ------------------------------------------------------------------ hand-made tries


def _chain_charsmap(k: int, replacement=lambda j: b"[%d]" % j) -> bytes:
    """A Darts-clone trie with keys 'a', 'aa', ..., 'a' * k; 'a' * j maps to
    replacement(j).  Node j sits at 256*j + 'a', its children block at
    256*(j+1) (the leaf at offset 0 of that block)."""
    n_units = 256 * (k + 2)
    units = [0] * n_units
    units[0] = 256 << 10  # root: children block 256
    strings = b""
    for j in range(1, k + 1):
        node = 256 * j + 0x61
        block = 256 * (j + 1)
        units[node] = ((node ^ block) << 10) | (1 << 8) | 0x61
        units[block] = 0x80000000 | len(strings)
        strings += replacement(j) + b"\0"
    return struct.pack("<I", 4 * n_units) + struct.pack("<%dI" % n_units, *units) + strings


@functools.lru_cache(maxsize=None)
def _identity_model() -> bytes:
    return _train("identity")


def _sp_with_charsmap(blob: bytes) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_proto=_with_normalizer_fields(_identity_model(), blob))


def test_longest_match_among_the_first_32():
    # sentencepiece looks at the first 32 matches (kMaxTrieResultsSize) only
    blob = _chain_charsmap(40)
    pair = _pair(_with_normalizer_fields(_identity_model(), blob))
    assert pair.nz.normalize("a" * 40) == "\u2581[32][8]" == pair.sp.normalize("a" * 40)
    for n in range(0, 70, 3):
        _check_text(pair, "a" * n)
        _check_text(pair, " ".join(["a" * n, "b", "a" * (n // 2)]))


def test_replacements_with_spaces_and_empty():
    reps = {1: b"", 2: b"  ", 3: b" x ", 4: b"\xe2\x96\x81", 5: b"y  "}
    blob = _chain_charsmap(5, lambda j: reps[j])
    model = _with_normalizer_fields(_identity_model(), blob)
    for escape in (True, False):
        pair = _pair(_with_normalizer_fields(model, escape_whitespaces=escape))
        for parts in itertools.product(("a", "aa", "aaa", "aaaa", "aaaaa", " ", "b"), repeat=3):
            _check_text(pair, "".join(parts))


# ------------------------------------------------------------------ corrupt charsmaps


def _units(blob: bytes) -> List[int]:
    n = struct.unpack_from("<I", blob)[0] // 4
    return list(struct.unpack_from("<%dI" % n, blob, 4))


def _with_units(blob: bytes, units: List[int]) -> bytes:
    n = len(units)
    return blob[:4] + struct.pack("<%dI" % n, *units) + blob[4 + 4 * n :]


def _label(u: int) -> int:
    return u & 0x800000FF


def _offset(u: int) -> int:
    return (u >> 10) << ((u & (1 << 9)) >> 6)


def _a_node_with_leaf(units: List[int]) -> Tuple[int, int]:
    """(node index, leaf index) of some reachable key."""
    root = _offset(units[0])
    for c in range(0x41, 0x7F):
        node = root ^ c
        u = units[node]
        if _label(u) == c and (u >> 8) & 1:
            return node, node ^ _offset(u)
    for j in range(1, len(units)):
        u = units[j]
        if _label(u) <= 0xFF and (u >> 8) & 1:
            return j, j ^ _offset(u)
    raise AssertionError("no key")


def _corruptions(blob: bytes) -> Dict[str, Tuple[bytes, bool]]:
    """name -> (corrupt blob, does sentencepiece refuse it too)."""
    trie_size = struct.unpack_from("<I", blob)[0]
    units = _units(blob)
    strings_at = 4 + trie_size
    node, leaf = _a_node_with_leaf(units)
    value = units[leaf] & 0x7FFFFFFF
    out: Dict[str, Tuple[bytes, bool]] = {}
    out["one byte"] = (b"\x00", True)
    out["four bytes"] = (blob[:4], True)
    out["no strings"] = (blob[: 4 + trie_size], True)
    out["trie size past the end"] = (struct.pack("<I", len(blob)) + blob[4:], True)
    out["trie size huge"] = (b"\xff\xff\xff\xff" + blob[4:], True)
    out["trie size 0"] = (b"\0\0\0\0" + blob[4:], True)
    out["trie size 1020"] = (struct.pack("<I", 1020) + blob[4:], True)
    out["trie size not a multiple of 1024"] = (struct.pack("<I", trie_size - 4) + blob[4:], True)
    out["strings not NUL-terminated"] = (blob[:-1] + b"x", True)
    bad = list(units)
    bad[0] |= 1 << 8
    out["root with a leaf"] = (_with_units(blob, bad), True)
    bad = list(units)
    bad[0] = (len(units) + 256) << 10
    out["root children outside"] = (_with_units(blob, bad), True)
    bad = list(units)
    bad[node] = (0x1FFFFF << 10) | (units[node] & 0x1FF)
    out["children outside the trie"] = (_with_units(blob, bad), True)
    bad = list(units)
    bad[leaf] = 0
    out["leaf is not a leaf unit"] = (_with_units(blob, bad), True)
    bad = list(units)
    bad[leaf] = 0x80000000 | (len(blob) - strings_at)
    out["value past the strings"] = (_with_units(blob, bad), True)
    bad = list(units)
    bad[leaf] = 0x7FFFFFFF | 0x80000000
    out["value huge"] = (_with_units(blob, bad), True)
    # ours only: the replacement is not UTF-8 (sentencepiece loads it)
    p = strings_at + value
    out["replacement not UTF-8"] = (blob[:p] + b"\xff" + blob[p + 1 :], False)
    return out


_CORRUPTIONS = _corruptions(_chain_charsmap(3))


@pytest.mark.parametrize("name", sorted(_CORRUPTIONS))
def test_corrupt_charsmap_raises_value_error(name):
    blob, sp_refuses = _CORRUPTIONS[name]
    with pytest.raises(ValueError, match="corrupt precompiled_charsmap"):
        Normalizer(blob)
    if sp_refuses:
        with pytest.raises(RuntimeError):
            _sp_with_charsmap(blob)
    else:
        _sp_with_charsmap(blob)  # loads


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nfkc_cf"])
def test_corrupt_real_charsmap(rule):
    blob = parse_model_proto(_train(rule)).normalizer.precompiled_charsmap
    for name, (bad, sp_refuses) in _corruptions(blob).items():
        with pytest.raises(ValueError, match="corrupt precompiled_charsmap"):
            Normalizer(bad)
        if sp_refuses:
            with pytest.raises(RuntimeError):
                _sp_with_charsmap(bad)


def _accepts(blob: bytes) -> Tuple[Optional[Normalizer], Optional[str]]:
    try:
        return Normalizer(blob), None
    except ValueError as exc:
        return None, str(exc)


@_settings(MAX_EXAMPLES // 2)
@given(
    edits=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10**9)),
)
def test_fuzzed_charsmap_same_verdict_as_sentencepiece(edits, cut):
    """Random byte edits and truncations of a small charsmap: we refuse it
    exactly when sentencepiece does (or, on our own UTF-8 rule, more), and
    when both take it they normalize alike."""
    blob = bytearray(_FUZZ_BASE)
    for pos, value in edits:
        blob[pos % len(blob)] = value
    if cut is not None:
        blob = blob[: cut % (len(blob) + 1)]
    blob = bytes(blob)
    ours, why = _accepts(blob)
    try:
        sp = _sp_with_charsmap(blob)
    except RuntimeError:
        sp = None
    if not blob:
        return  # empty: no charsmap at all
    if ours is None:
        assert sp is None or "not valid UTF-8" in why, why
        return
    assert sp is not None
    for text in _FUZZ_TEXTS:
        assert ours.normalize(text) == sp.normalize(text), text


_FUZZ_BASE = _chain_charsmap(3, lambda j: (b"\xe2\x96\x81", b" \xc3\xa9 ", b"")[j - 1])
_FUZZ_TEXTS = ("", "a", "aa", "aaa", "aaaa", " a b ", "abc\x00a", "\u00e9a", "a" * 9)


# ------------------------------------------------------------------ API


def test_is_identity():
    assert Normalizer(
        b"", add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False
    ).is_identity
    for flags in (
        dict(add_dummy_prefix=True, remove_extra_whitespaces=False, escape_whitespaces=False),
        dict(add_dummy_prefix=False, remove_extra_whitespaces=True, escape_whitespaces=False),
        dict(add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=True),
    ):
        assert not Normalizer(b"", **flags).is_identity
    blob = _chain_charsmap(2)
    assert not Normalizer(
        blob, add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False
    ).is_identity
    nz = Normalizer(
        b"",
        add_dummy_prefix=False,
        remove_extra_whitespaces=False,
        escape_whitespaces=False,
        treat_whitespace_as_suffix=True,
        user_defined_symbols=["ab"],
    )
    assert nz.is_identity
    text = " a  b\u3000\x01 "
    assert nz.normalize(text) is text
    assert nz.normalize_with_offsets(text) == (text, list(range(len(text) + 1)))
    assert nz.normalize_bytes(b"a\xffb") == b"a\xef\xbf\xbdb"


def test_defaults_are_the_proto_defaults():
    nz = Normalizer(b"")
    assert (nz.add_dummy_prefix, nz.remove_extra_whitespaces, nz.escape_whitespaces) == (
        True,
        True,
        True,
    )
    assert not nz.treat_whitespace_as_suffix
    assert nz.normalize("  a  b ") == "\u2581a\u2581b"
    assert nz.normalize_with_offsets("  a  b ") == ("\u2581a\u2581b", [2, 2, 3, 5, 6])


def test_from_spec_and_pickle():
    proto = parse_model_proto(_uds_pair().model)
    a = Normalizer.from_spec(proto.normalizer, proto.trainer)
    assert a.user_defined_symbols == ()
    b = Normalizer.from_model_proto(proto)
    c = pickle.loads(pickle.dumps(b))
    assert repr(c) == repr(b)
    assert c.user_defined_symbols == b.user_defined_symbols
    for text in ("ＡＢＣ x  y", " a  b ", "ｶﾞ"):
        assert c.normalize(text) == b.normalize(text)


def test_threads_share_a_normalizer():
    pair = _rule_pair("nmt_nfkc")
    lines = list(_corpus_lines()[::7])
    serial = [pair.nz.normalize(t) for t in lines]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(pair.nz.normalize, lines, chunksize=64))
    assert parallel == serial


def test_argument_errors():
    nz = Normalizer(b"")
    with pytest.raises(TypeError):
        nz.normalize(b"abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        nz.normalize(None)  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        nz.normalize("a\ud800b")
    with pytest.raises(TypeError):
        nz.normalize_bytes("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        nz.normalize_bytes(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Normalizer(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Normalizer(b"", user_defined_symbols="ab")
    with pytest.raises(TypeError):
        Normalizer(b"", True)  # type: ignore[misc]  # flags are keyword-only
    assert nz.normalize_bytes(bytearray(b" a ")) == "\u2581a".encode()
    assert nz.normalize_bytes(memoryview(b" a ")) == "\u2581a".encode()
