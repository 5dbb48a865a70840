"""encode_with_offsets: the character span of each id in the original text.

Reference: sentencepiece's own piece begin/end (its `return_type="proto"`
encoding, byte offsets converted to characters) for .model files, with one
documented convention of ours: the byte pieces of one character all span that
character (sentencepiece gives all but the last an empty span at its start).
For the other formats: the spans must tile the text (every character covered
once, in order, only whitespace stripped around special tokens left out), and
`tokenizers`' own offsets for tokenizer.json, except that its prepended "▁"
borrows the first character where ours, like sentencepiece's, is empty.
"""

import json
from pathlib import Path

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import spmbpe

from long_run import examples

DATA = Path(__file__).parent / "data"
CORPUS = sorted((DATA / "corpus").glob("*.txt"))
EDGE = ["", " ", "  a", "a ", "日本語 abc", "é🦙x", "a\u0301", "[INST] hi", "x\x00y", "tab\tend ", "説明", "\U0010ffffz"]


def _lines(per_file=250):
    out = []
    for path in CORPUS:
        out += [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()][:per_file]
    return out + EDGE


def _char_offsets(text):
    """Byte offset -> character offset, for every character boundary."""
    table, pos = {}, 0
    for i, ch in enumerate(text):
        table[pos] = i
        pos += len(ch.encode("utf-8"))
    table[pos] = len(text)
    return table


def _sentencepiece_spans(sp, text, byte_ids):
    pieces = sp.encode(text, return_type="proto").pieces
    b2c = _char_offsets(text)
    spans = [(p.id, b2c[p.begin], b2c[p.end]) for p in pieces]
    # Our convention: every byte piece of one character spans the character.
    out = list(spans)
    i = 0
    while i < len(out):
        j = i
        while j + 1 < len(out) and out[j][0] in byte_ids and out[j][1] == out[j][2] and out[j + 1][0] in byte_ids:
            j += 1
        for k in range(i, j):
            out[k] = (out[k][0], out[j][1], out[j][2])
        i = j + 1
    return out


@pytest.fixture(scope="module", params=["mistral-v1", "mistral-v3"])
def model_pair(request):
    path = DATA / f"{request.param}.model"
    tok = spmbpe.load(path)
    byte_ids = {tok.piece_to_id(f"<0x{b:02X}>") for b in range(256)}
    return tok, spm.SentencePieceProcessor(model_file=str(path)), byte_ids


def test_model_spans_equal_sentencepiece(model_pair):
    tok, sp, byte_ids = model_pair
    bad = []
    for text in _lines():
        ids, spans = tok.encode_with_offsets(text)
        got = [(i, s, e) for i, (s, e) in zip(ids, spans)]
        if got != _sentencepiece_spans(sp, text, byte_ids):
            bad.append(text)
    assert bad == []


@settings(max_examples=examples(300), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_model_spans_equal_sentencepiece_hypothesis(model_pair, text):
    tok, sp, byte_ids = model_pair
    ids, spans = tok.encode_with_offsets(text)
    assert [(i, s, e) for i, (s, e) in zip(ids, spans)] == _sentencepiece_spans(sp, text, byte_ids)


def _tiles(text, spans, removable=""):
    """The spans cover the text in order; characters no span covers are
    whitespace stripped around a special token (`removable`)."""
    covered = []
    last = None
    for span in spans:
        if span == last:
            continue  # byte pieces of one character
        last = span
        covered.append(span)
    pos = 0
    for start, end in covered:
        assert pos <= start <= end <= len(text), (spans, text)
        assert all(c in removable for c in text[pos:start]), (text, pos, start)
        pos = max(pos, end)
    assert all(c in removable for c in text[pos:]), (text, pos)


def _golden_texts(name):
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@pytest.mark.parametrize("special", ["none", "all"])
def test_gguf_spans_tile_the_text(special):
    tok = spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf")
    for text in _golden_texts("llama-spm.gguf.jsonl") + _lines(60):
        ids, spans = tok.encode_with_offsets(text, special=special)
        assert ids == tok.encode(text, special=special)
        _tiles(text, spans)
        for token_id, (start, end) in zip(ids, spans):
            if tok.token_type(token_id) == spmbpe.TokenType.CONTROL:
                assert text[start:end] == tok.id_to_piece(token_id)


def test_gguf_bos_eos_spans_are_empty_at_the_ends():
    tok = spmbpe.load(DATA / "ggml-vocab-llama-spm.gguf")
    ids, spans = tok.encode_with_offsets("Hello world", add_special_tokens=True)
    assert ids == [1, 15043, 3186]
    assert spans == [(0, 0), (0, 5), (5, 11)]


def _hf_folder(tmp_path, model, legacy):
    import shutil

    folder = tmp_path / f"{model}-{legacy}"
    folder.mkdir()
    shutil.copy(DATA / f"{model}.model", folder / "tokenizer.model")
    sp = spm.SentencePieceProcessor(model_file=str(DATA / f"{model}.model"))
    decoder = {
        str(i): {"content": sp.id_to_piece(i), "lstrip": False, "rstrip": False, "normalized": False,
                 "single_word": False, "special": True}
        for i in range(sp.get_piece_size()) if sp.is_control(i)
    }
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "legacy": legacy, "add_bos_token": False, "add_eos_token": False, "bos_token": "<s>",
        "eos_token": "</s>", "unk_token": "<unk>", "added_tokens_decoder": decoder,
    }))
    return folder


@pytest.mark.parametrize("model,legacy", [("mistral-v1", True), ("mistral-v3", False)])
def test_hf_folder_spans_tile_the_text(tmp_path, model, legacy):
    tok = spmbpe.load(_hf_folder(tmp_path, model, legacy), reference="transformers4")
    for text in _golden_texts(f"{model}.model.jsonl"):
        ids, spans = tok.encode_with_offsets(text, special="all")
        assert ids == tok.encode(text, special="all")
        _tiles(text.replace("\u2581", " ") if not legacy else text, spans)


def test_tokenizer_json_spans_equal_tokenizers_but_for_the_prefix():
    path = DATA / "mistral-v1.tokenizer.json"
    tok, ref = spmbpe.load(path), Tokenizer.from_file(str(path))
    prefix_id = tok.piece_to_id("\u2581")
    for text in _lines(100):
        encoding = ref.encode(text, add_special_tokens=False)
        ids, spans = tok.encode_with_offsets(text, special="all")
        assert ids == encoding.ids
        for token_id, ours, theirs in zip(ids, spans, encoding.offsets):
            if token_id == prefix_id and ours[0] == ours[1]:
                # tokenizers lends its prepended "▁" the first character.
                assert theirs[0] == ours[0]
            else:
                assert ours == tuple(theirs), (text, token_id)
