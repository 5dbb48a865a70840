"""Models trained with sentencepiece's own trainer, one per normalization rule
set and whitespace setting: spmbpe's ids and spans equal live sentencepiece's
on every non-blank corpus line and on hypothesis text."""

import functools
import itertools
from pathlib import Path

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe

from long_run import examples, sample
from test_normalizer import _train, _with_normalizer_fields

DATA = Path(__file__).parent / "data"
CORPUS = sorted((DATA / "corpus").glob("*.txt"))

VARIANTS = {
    "nmt_nfkc": dict(rule="nmt_nfkc"),
    "nfkc": dict(rule="nfkc"),
    "nmt_nfkc_cf": dict(rule="nmt_nfkc_cf"),
    "nfkc_cf": dict(rule="nfkc_cf"),
    "identity-remove-ws": dict(rule="identity", remove_extra_whitespaces=True),
    "nmt_nfkc-keep-ws": dict(rule="nmt_nfkc", remove_extra_whitespaces=False),
    "nmt_nfkc-no-prefix": dict(rule="nmt_nfkc", add_dummy_prefix=False),
    "nmt_nfkc-bytes": dict(rule="nmt_nfkc", byte_fallback=True),
    "nmt_nfkc-user-defined": dict(rule="nmt_nfkc", user_defined_symbols=("<sep>", "ｘｙ", "▁▁")),
    "nmt_nfkc-suffix": dict(rule="nmt_nfkc", treat_whitespace_as_suffix=True),
    "identity-suffix": dict(rule="identity", remove_extra_whitespaces=False, treat_whitespace_as_suffix=True),
    # The BPE trainer refuses escape_whitespaces=false; the model gets it
    # from a second normalizer_spec, which protobuf merges into the first.
    "nmt_nfkc-no-escape": dict(rule="nmt_nfkc", escape=False),
}


def _model(variant):
    settings_ = dict(VARIANTS[variant])
    escape = settings_.pop("escape", True)
    model = _train(**settings_)
    return model if escape else _with_normalizer_fields(model, escape_whitespaces=False)


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def pair(request, tmp_path_factory):
    model = _model(request.param)
    path = tmp_path_factory.mktemp("model") / f"{request.param}.model"
    path.write_bytes(model)
    return spmbpe.load(path), spm.SentencePieceProcessor(model_proto=model)


@functools.lru_cache(maxsize=None)
def _lines():
    """Every non-blank corpus line in the long run; in the quick one an
    even sample of each file's."""
    out = []
    for path in CORPUS:
        out += sample([x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()], 400)
    return out


def test_every_corpus_line_equals_sentencepiece(pair):
    tok, sp = pair
    lines = _lines()
    assert tok._spec.normalizers is not None  # every variant needs the normalizer stage
    got = tok.encode_batch(lines, num_threads=2)
    expected = sp.encode(lines)
    bad = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert bad[:3] == [] and len(bad) == 0


_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40
) | st.lists(
    st.sampled_from(["Ａ", "ｂ", "①", "ﬁ", "e\u0301", "  ", "\u3000", "\t", "\n", "\x00", "\u200b", "日本", "Hello", " world",
                     "<sep>", "ｘｙ", "ﾊﾞ", "Ⅻ", "㍻", "\u00a0", "🦙"]),
    max_size=12,
).map("".join)


@settings(max_examples=examples(150), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_hypothesis_equals_sentencepiece(pair, text):
    tok, sp = pair
    assert tok.encode(text) == sp.encode(text)


def _sp_spans(sp, text):
    b2c, pos = {}, 0
    for i, ch in enumerate(text):
        b2c[pos] = i
        pos += len(ch.encode("utf-8"))
    b2c[pos] = len(text)
    return [(p.id, b2c[p.begin], b2c[p.end]) for p in sp.encode(text, return_type="proto").pieces]


def test_decode_equals_sentencepiece(pair):
    tok, sp = pair
    for line in _lines()[::25]:
        ids = sp.encode(line)
        if tok.unk_id in ids:
            continue  # unknown ids decode as their piece text: documented
        assert tok.decode(ids) == sp.decode(ids), line


def test_offsets_equal_sentencepiece_on_normalized_text(pair):
    tok, sp = pair
    byte_ids = {i for i in range(tok.vocab_size) if tok.token_type(i) == spmbpe.TokenType.BYTE}
    texts = list(itertools.islice(_lines(), 0, None, 40)) + ["ﬁne  Ａｂｃ\u3000x", "  lead", "①②", "e\u0301t\u00e9"]
    for text in texts:
        ids, spans = tok.encode_with_offsets(text)
        assert ids == sp.encode(text)
        expected = _sp_spans(sp, text)
        got = [(i, s, e) for i, (s, e) in zip(ids, spans)]
        # Our convention for byte pieces: each spans its whole character.
        merged = []
        for k, item in enumerate(expected):
            if item[0] in byte_ids and item[1] == item[2] and k + 1 < len(expected) and expected[k + 1][0] in byte_ids:
                item = None
            merged.append(item)
        for k in range(len(merged) - 1, -1, -1):
            if merged[k] is None:
                merged[k] = (expected[k][0], merged[k + 1][1], merged[k + 1][2])
        assert got == merged, text


def test_custom_rules_and_the_denormalizer_on_decode(tmp_path):
    """A model trained with its own rule TSVs: 'A' normalizes to 'a', and
    its denormalizer_spec maps 'a' back to 'A' when decoding."""
    import io

    (tmp_path / "norm.tsv").write_text("41\t61\n")
    (tmp_path / "denorm.tsv").write_text("61\t41\n")
    lines = [x for x in (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8").splitlines() if x.strip()][:500]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, model_type="bpe", vocab_size=400,
        normalization_rule_tsv=str(tmp_path / "norm.tsv"), denormalization_rule_tsv=str(tmp_path / "denorm.tsv"),
        minloglevel=2, num_threads=1,
    )
    path = tmp_path / "custom.model"
    path.write_bytes(buf.getvalue())
    tok, sp = spmbpe.load(path), spm.SentencePieceProcessor(model_proto=buf.getvalue())
    for text in ["A cat and a Bat", "banana", "  Aa  ", *lines[:50]]:
        ids = sp.encode(text)
        assert tok.encode(text) == ids
        if tok.unk_id in ids:
            # An unknown id decodes as its piece text ("<unk>"), where
            # sentencepiece prints its unk_surface (" ⁇ "): documented.
            continue
        assert tok.decode(ids) == sp.decode(ids)


def test_a_large_document_cut_for_threads_equals_sentencepiece(pair):
    # encode_batch cuts a document larger than two threads' shares into
    # plans at exact chunk boundaries; a normalized plan holds bare ids for
    # the user-defined pieces split out ("<sep>").
    tok, sp = pair
    document = " <sep> ".join(_lines())[:120_000]
    texts = [document, "a", document[:5000] + "<sep>"]
    assert tok.encode_batch(texts, num_threads=4) == sp.encode(texts)
    assert tok.encode_batch(texts, num_threads=4, special="none") == sp.encode(texts)
