"""sentencepiece .model files: ids equal sentencepiece's own.

References: the `sp` field of the golden files (sentencepiece 0.2.3), live
sentencepiece on every non-blank corpus line, and live sentencepiece under
hypothesis on the Mistral models and on small synthetic models that exercise
the rules real models rarely hit (UNUSED pieces, no byte fallback,
user-defined pieces).
"""

import functools
import json
from pathlib import Path

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe.errors import ModelFormatError, UnsupportedModelError

from long_run import combinations, examples, sample
from spm_proto import MODEL_TYPE_UNIGRAM, bpe_model_proto, model_proto, normalizer_spec, trainer_spec

DATA = Path(__file__).parent / "data"
MODELS = ["mistral-v1", "mistral-v3"]
CORPUS = sorted((DATA / "corpus").glob("*.txt"))

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


@functools.lru_cache(maxsize=None)
def _pair(name):
    path = DATA / f"{name}.model"
    return name, spmbpe.load(path), spm.SentencePieceProcessor(model_file=str(path))


@pytest.fixture(scope="module", params=MODELS)
def pair(request):
    return _pair(request.param)


def _golden(name):
    with open(DATA / f"{name}.model.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("name", MODELS)
def test_every_golden_row_equals_sentencepiece(name):
    tok = spmbpe.load(DATA / f"{name}.model")
    rows = _golden(name)
    assert len(rows) > 900
    mismatches = [(r["text"], r["sp"], tok.encode(r["text"])) for r in rows if tok.encode(r["text"]) != r["sp"]]
    assert mismatches == []


def test_load_detects_the_model_format(pair):
    name, tok, sp = pair
    assert tok.reference == "sentencepiece"
    assert tok.vocab_size == sp.get_piece_size()
    assert (tok.bos_id, tok.eos_id, tok.unk_id) == (sp.bos_id(), sp.eos_id(), sp.unk_id())
    assert tok.pad_id is None and sp.pad_id() == -1
    for i in (0, 1, 2, 3, 300, 1000, tok.vocab_size - 1):
        assert tok.id_to_piece(i) == sp.id_to_piece(i)
        assert tok.piece_to_id(sp.id_to_piece(i)) == sp.piece_to_id(sp.id_to_piece(i))


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_corpus_line_equals_sentencepiece(pair, path):
    # (Every line in the long run, an even sample in the quick one.)
    name, tok, sp = pair
    lines = sample([x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()], 400)
    expected = sp.encode(lines)
    got = tok.encode_batch(lines)
    bad = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert bad[:3] == [] and len(bad) == 0


@pytest.mark.parametrize("name, path", combinations(MODELS, CORPUS),
                         ids=lambda v: v if isinstance(v, str) else v.stem)
def test_every_corpus_document_equals_sentencepiece(name, path):
    # Whole documents: chunks cut at newlines, before "▁" and between CJK
    # characters, on a fresh tokenizer and again from its cache, and split
    # for two threads.  (Each document with each model in the long run;
    # in the quick one each document with one of them, in turn.)
    name, tok, sp = _pair(name)
    doc = path.read_text(encoding="utf-8")
    expected = sp.encode(doc)
    fresh = spmbpe.load(DATA / f"{name}.model")
    assert fresh.encode_ordinary(doc) == expected
    assert fresh.encode_ordinary(doc) == expected
    assert fresh.encode_batch([doc], special="none", num_threads=2) == [expected]


def test_control_pieces_in_text_are_plain_text(pair):
    # sentencepiece never matches control pieces in the text, so special=
    # makes no difference for a bare model.
    name, tok, sp = pair
    for text in ["<s>x</s>", "[INST] hi [/INST]", "<unk>", "[control_27]Write"]:
        assert tok.encode(text) == sp.encode(text)
        assert tok.encode(text, special="none") == sp.encode(text)
    assert tok.special_tokens == frozenset()


def test_decode_round_trips_like_sentencepiece(pair):
    name, tok, sp = pair
    for text in ["Hello world", "  two  spaces ", "日本語 テキスト", "emoji 🦙 and é", "tab\tnew\nline"]:
        ids = tok.encode(text)
        assert tok.decode(ids) == sp.decode(ids) == text


_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60
) | st.lists(
    st.sampled_from(["Hello", " world", "  ", "\t", "\n", "日本", "語", "🦙", "é", "[INST]", "</s>", "<s>", "▁", "x", "ab", "12"]),
    max_size=12,
).map("".join)


@settings(max_examples=examples(300), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_hypothesis_equals_live_sentencepiece(pair, text):
    name, tok, sp = pair
    assert tok.encode(text) == sp.encode(text)


# ---------------------------------------------------------------- synthetic models

def _synthetic(tmp_path, pieces, types, *, byte_fallback, name="m.model"):
    """A small BPE model: rank = -id, so earlier pieces merge first."""
    scores = [0.0 if t in (CONTROL, UNKNOWN, BYTE) else -float(i) for i, t in enumerate(types)]
    path = tmp_path / name
    path.write_bytes(bpe_model_proto(pieces, scores, types, byte_fallback=byte_fallback))
    return spmbpe.load(path), spm.SentencePieceProcessor(model_file=str(path))


_BASE = ["<unk>", "<s>", "</s>"]
_BASE_TYPES = [UNKNOWN, CONTROL, CONTROL]
_BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _vocab(with_bytes):
    pieces = list(_BASE) + (_BYTES if with_bytes else [])
    types = list(_BASE_TYPES) + ([BYTE] * 256 if with_bytes else [])
    # UNUSED pieces sit between normal ones: "ab" is built, then split again.
    for piece, kind in [
        ("ab", UNUSED), ("▁a", NORMAL), ("bc", NORMAL), ("abc", NORMAL), ("▁ab", UNUSED),
        ("<ud>", USER_DEFINED), ("▁▁", USER_DEFINED), ("cd", NORMAL), ("▁abc", NORMAL),
        ("▁", NORMAL), ("a", NORMAL), ("b", NORMAL), ("c", NORMAL), ("d", NORMAL),
        ("<", NORMAL), (">", NORMAL), ("u", NORMAL), ("x", NORMAL), ("<u", NORMAL),
    ]:
        pieces.append(piece)
        types.append(kind)
    return pieces, types


@pytest.mark.parametrize("with_bytes", [True, False], ids=["byte_fallback", "no_byte_fallback"])
@settings(max_examples=examples(400), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(["a", "b", "c", "d", " ", "  ", "<ud>", "<", ">", "u", "x", "é", "日", "🦙", "\n"]), max_size=16).map("".join))
def test_synthetic_rules_equal_live_sentencepiece(tmp_path_factory, with_bytes, text):
    key = ("synthetic", with_bytes)
    cache = test_synthetic_rules_equal_live_sentencepiece.__dict__.setdefault("cache", {})
    if key not in cache:
        pieces, types = _vocab(with_bytes)
        cache[key] = _synthetic(tmp_path_factory.mktemp("spm"), pieces, types, byte_fallback=with_bytes)
    tok, sp = cache[key]
    assert tok.encode(text) == sp.encode(text)


def test_unused_pieces_are_split_and_unknown_runs_collapse(tmp_path):
    pieces, types = _vocab(with_bytes=False)
    tok, sp = _synthetic(tmp_path, pieces, types, byte_fallback=False)
    ab = pieces.index("ab")
    # "ab" is UNUSED: built by the merge, then split back into a + b.
    assert ab not in tok.encode("xab")
    assert tok.encode("xab") == sp.encode("xab")
    # Three unknown characters in a row are one <unk> without byte fallback.
    assert tok.encode("é日🦙") == sp.encode("é日🦙")
    assert tok.encode("é日🦙").count(0) == 1


def test_user_defined_pieces_are_matched_in_the_escaped_text(tmp_path):
    pieces, types = _vocab(with_bytes=True)
    tok, sp = _synthetic(tmp_path, pieces, types, byte_fallback=True)
    # "▁▁" is user-defined: two spaces (after escaping) are matched whole.
    for text in ["a  b", " <ud>a", "<ud><ud>", "x<ud", "  "]:
        assert tok.encode(text) == sp.encode(text), text


def test_unigram_and_other_model_types_are_refused(tmp_path):
    pieces, types = _vocab(with_bytes=False)
    path = tmp_path / "uni.model"
    path.write_bytes(
        model_proto(
            pieces,
            [0.0] * len(pieces),
            types,
            trainer=trainer_spec(model_type=MODEL_TYPE_UNIGRAM, vocab_size=len(pieces), byte_fallback=False),
            normalizer=normalizer_spec(),
        )
    )
    with pytest.raises(UnsupportedModelError, match="Unigram.*BPE"):
        spmbpe.load(path)


def test_escape_whitespaces_false_keeps_spaces_as_spaces(tmp_path):
    # Spaces stay spaces (no "▁"); checked against live sentencepiece.
    pieces, types = _vocab(with_bytes=True)
    pieces = pieces + [" a", "a b", " "]
    types = types + [NORMAL, NORMAL, NORMAL]
    path = tmp_path / "n.model"
    path.write_bytes(bpe_model_proto(pieces, [-float(i) for i in range(len(pieces))], types,
                                     byte_fallback=True, escape_whitespaces=False))
    tok, sp = spmbpe.load(path), spm.SentencePieceProcessor(model_file=str(path))
    for text in ["a b", " a", "ab  cd", "x a b ", "<ud> a", "é a"]:
        assert tok.encode(text) == sp.encode(text), text
        assert tok.decode(sp.encode(text)) == sp.decode(sp.encode(text)), text


def test_a_corrupt_model_names_file_and_offset(tmp_path):
    data = (DATA / "mistral-v1.model").read_bytes()
    path = tmp_path / "cut.model"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFormatError) as info:
        spmbpe.load(path)
    assert info.value.path == str(path) and info.value.offset is not None


def test_pieces_changed_after_reading_are_checked_again():
    # The reader checks every piece's UTF-8 once, and the tokenizer trusts
    # that check only while the proto still holds those very pieces.
    from spmbpe._spm_model import read_model_proto
    from spmbpe.errors import VocabularyError
    from spmbpe.sentencepiece import spec_from_model_proto
    from spmbpe.tokenizer import tokenizer_from_spec

    def tokenizer_from_model_proto(proto):
        return tokenizer_from_spec(spec_from_model_proto(proto))

    proto = read_model_proto(DATA / "mistral-v1.model")
    assert proto.pieces_checked()
    assert tokenizer_from_model_proto(proto).encode("Hello world") == [22557, 1526]

    # Offsets moved in place: piece 3 now ends inside a character.
    at = next(i for i in range(len(proto)) if len(proto.arena[proto.offsets[i]:proto.offsets[i + 1]]) >= 3
              and proto.arena[proto.offsets[i]] >= 0x80)
    moved = read_model_proto(DATA / "mistral-v1.model")
    moved.offsets[at + 1] = moved.offsets[at] + 1
    assert not moved.pieces_checked()
    with pytest.raises(VocabularyError, match=f"piece {at} is not valid UTF-8"):
        tokenizer_from_model_proto(moved)

    # A new arena of the same length, with a bad byte.
    swapped = read_model_proto(DATA / "mistral-v1.model")
    arena = bytearray(swapped.arena)
    arena[swapped.offsets[at]] = 0xFF
    swapped.arena = bytes(arena)
    assert not swapped.pieces_checked()
    with pytest.raises(VocabularyError, match=f"piece {at} is not valid UTF-8"):
        tokenizer_from_model_proto(swapped)
