"""``tok.streaming_decoder()``: ids in one at a time, text out as soon as
it is whole; for any ids, the chunks plus ``flush()`` equal ``decode(ids)``
(with the same ``skip_special`` and ``errors``)."""

from __future__ import annotations

import io
import pathlib

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe import TokenType

from long_run import examples
from test_hf_folder import build_folder

DATA = pathlib.Path(__file__).parent / "data"
FORMATS = ["model", "gguf", "tokenizer.json", "hf-legacy", "hf-non-legacy", "no-prefix", "denormalizer"]


def _denormalizer_model(tmp_path) -> pathlib.Path:
    """A model with custom rules: 'A' -> 'a' when encoding, and a
    denormalizer_spec 'a' -> 'A' that decode applies to the whole text."""
    (tmp_path / "norm.tsv").write_text("41\t61\n")
    (tmp_path / "denorm.tsv").write_text("61\t41\n")
    lines = [x for x in (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8").splitlines() if x.strip()]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines[:300]), model_writer=buf, model_type="bpe", vocab_size=600,
        normalization_rule_tsv=str(tmp_path / "norm.tsv"), denormalization_rule_tsv=str(tmp_path / "denorm.tsv"),
        byte_fallback=True, minloglevel=2, num_threads=1,
    )
    path = tmp_path / "custom.model"
    path.write_bytes(buf.getvalue())
    return path


@pytest.fixture(scope="module")
def toks(tmp_path_factory):
    root = tmp_path_factory.mktemp("streaming")
    no_prefix = spmbpe.load(DATA / "mistral-v1.model")
    return {
        "model": spmbpe.load(DATA / "mistral-v1.model"),
        "gguf": spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf"),
        "tokenizer.json": spmbpe.load(DATA / "mistral-v1.tokenizer.json"),
        "hf-legacy": spmbpe.load(build_folder(root / "legacy", "mistral-v1", legacy=True), reference="transformers4"),
        "hf-non-legacy": spmbpe.load(build_folder(root / "modern", "mistral-v3", legacy=False), reference="transformers4"),
        "no-prefix": spmbpe.SpmTokenizer(
            [no_prefix.id_to_piece(i) for i in range(no_prefix.vocab_size)],
            token_types=[no_prefix.token_type(i) for i in range(no_prefix.vocab_size)],
            add_prefix_space=False,
        ),
        "denormalizer": spmbpe.load(_denormalizer_model(root)),
    }


def _stream(tok, ids, **options):
    decoder = tok.streaming_decoder(**options)
    chunks = [decoder.add_token(i) for i in ids]
    return chunks, decoder.flush()


def _interesting_ids(tok):
    """Ids a random sequence should hit often: byte pieces (which build
    multi-byte characters across ids), control/unknown ones, pieces that
    start with a space marker."""
    out = []
    for i in range(tok.vocab_size):
        kind = tok.token_type(i)
        if kind in (TokenType.BYTE, TokenType.CONTROL, TokenType.UNKNOWN):
            out.append(i)
        elif i < 2000 and tok.id_to_piece(i).startswith("\u2581"):
            out.append(i)
    return out


def id_sequences(tok):
    interesting = _interesting_ids(tok)
    byte_id = {b: tok.piece_to_id(f"<0x{b:02X}>") for b in range(256)}
    assert all(tok.token_type(i) == TokenType.BYTE for i in byte_id.values())
    one = st.one_of(
        st.integers(0, tok.vocab_size - 1).map(lambda i: [i]),
        st.sampled_from(interesting).map(lambda i: [i]),
        # A whole UTF-8 character spelled in byte pieces, or a prefix of one.
        st.text(min_size=1, max_size=1)
        .map(lambda ch: [byte_id[b] for b in ch.encode("utf-8")])
        .flatmap(lambda seq: st.integers(1, len(seq)).map(lambda k: seq[:k])),
    )
    return st.lists(one, max_size=24).map(lambda items: [i for item in items for i in item])


@pytest.mark.parametrize("kind", FORMATS)
def test_chunks_and_flush_equal_decode_for_random_ids(toks, kind):
    tok = toks[kind]

    @settings(max_examples=examples(120), deadline=None, suppress_health_check=list(HealthCheck))
    @given(ids=id_sequences(tok), skip_special=st.booleans(), errors=st.sampled_from(["replace", "ignore"]))
    def check(ids, skip_special, errors):
        chunks, rest = _stream(tok, ids, skip_special=skip_special, errors=errors)
        assert "".join(chunks) + rest == tok.decode(ids, skip_special=skip_special, errors=errors)

    check()


@pytest.mark.parametrize("kind", FORMATS)
def test_encoded_text_streams_back_whole_characters(toks, kind):
    tok = toks[kind]

    @settings(max_examples=examples(50), deadline=None, suppress_health_check=list(HealthCheck))
    @given(text=st.text(max_size=40))
    def check(text):
        # (special="none": a drawn text may spell a special token, "<s>", which
        # the default policy refuses; hypothesis draws the test's own strings.)
        ids = tok.encode(text, add_special_tokens=True, special="none")
        chunks, rest = _stream(tok, ids, skip_special=True)
        assert "".join(chunks) + rest == tok.decode(ids, skip_special=True)
        # Valid UTF-8 comes out whole: no replacement character anywhere.
        if "\ufffd" not in text:
            assert "\ufffd" not in "".join(chunks) + rest

    check()


def test_a_character_in_byte_pieces_comes_out_with_its_last_byte(toks):
    tok = toks["gguf"]
    ids = tok.encode("a🦙b")  # the llama is not a piece: four byte pieces
    pieces = [tok.id_to_piece(i) for i in ids]
    assert pieces[-5:-1] == ["<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"]
    chunks, rest = _stream(tok, ids)
    assert chunks == ["a"] * (len(ids) - 5) + ["", "", "", "\U0001f999", "b"] and rest == ""


def test_the_dummy_prefix_comes_off_the_first_piece_only(toks):
    tok = toks["gguf"]
    ids = tok.encode("Hello world")
    assert _stream(tok, ids) == (["Hello", " world"], "")
    # A skipped control id first: llama.cpp's llama_detokenize takes the space
    # off the first id only, so the next piece keeps it.
    assert _stream(tok, [tok.bos_id] + ids, skip_special=True) == (["", " Hello", " world"], "")
    # sentencepiece (.model): the leading "▁" comes off while nothing is decoded.
    model = toks["model"]
    model_ids = model.encode("Hello world")
    assert _stream(model, [model.bos_id] + model_ids) == (["", "Hello", " world"], "")
    assert _stream(tok, [tok.bos_id] + ids) == (["<s>", " Hello", " world"], "")
    # Without a dummy prefix, nothing comes off.
    plain = toks["no-prefix"]
    ids = plain.encode(" Hello")
    assert _stream(plain, ids)[0][0].startswith(" ")


def test_flush_ends_an_incomplete_character_and_starts_afresh(toks):
    tok = toks["model"]
    decoder = tok.streaming_decoder()
    assert decoder.add_token(tok.piece_to_id("<0xE6>")) == ""
    assert decoder.add_token(tok.piece_to_id("<0x97>")) == ""
    # sentencepiece: one U+FFFD for each byte of an incomplete character.
    assert decoder.flush() == tok.decode([tok.piece_to_id("<0xE6>"), tok.piece_to_id("<0x97>")]) == "\ufffd\ufffd"
    # A new sequence: the dummy prefix comes off its first piece again.
    hello = tok.encode("Hello")
    assert decoder.add_token(hello[0]) == tok.decode(hello[:1]) == "Hello"


def test_the_denormalizer_applies_to_the_whole_text(toks):
    tok = toks["denormalizer"]
    ids = tok.encode("A cat and a Bat")
    chunks, rest = _stream(tok, ids)
    assert "".join(chunks) + rest == tok.decode(ids) == "A cAt And A BAt"


def test_invalid_ids_and_errors_are_rejected(toks):
    tok = toks["gguf"]
    decoder = tok.streaming_decoder()
    with pytest.raises(spmbpe.InvalidTokenIdError):
        decoder.add_token(tok.vocab_size)
    with pytest.raises(TypeError):
        decoder.add_token("1")  # type: ignore[arg-type]
    with pytest.raises(LookupError):
        tok.streaming_decoder(errors="no-such-handler")
    strict = tok.streaming_decoder(errors="strict")
    strict.add_token(tok.piece_to_id("<0xE6>"))
    with pytest.raises(UnicodeDecodeError):
        strict.flush()
