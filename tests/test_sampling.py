"""BPE-dropout (subword regularization), as sentencepiece's
encode(..., enable_sampling=True, alpha=...): every merge about to be made is
skipped with probability alpha (bpe_model.cc, inside its merge loop)."""

import json
import math
from collections import Counter
from pathlib import Path

import pytest
import sentencepiece as spm

import spmbpe

DATA = Path(__file__).parent / "data"
FILES = ["ggml-vocab-llama-spm.gguf", "mistral-v1.model", "mistral-v3.model", "mistral-v1.tokenizer.json"]


def _texts():
    with open(DATA / "mistral-v1.model.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    corpus = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")
    return texts + [x for x in corpus.splitlines() if x.strip()][:200]


@pytest.mark.parametrize("name", FILES)
def test_alpha_zero_is_plain_encode(name):
    tok = spmbpe.load(DATA / name)
    texts = _texts()
    plain = tok.encode_batch(texts, num_threads=1, special="all")
    assert [tok.encode(t, enable_sampling=True, alpha=0.0, seed=3, special="all") for t in texts] == plain
    assert tok.encode_batch(texts, enable_sampling=True, alpha=0.0, seed=3, num_threads=2, special="all") == plain


def test_a_seed_reproduces_the_draw_whatever_the_threads():
    tok = spmbpe.load(DATA / "mistral-v1.model")
    texts = _texts()
    one = tok.encode_batch(texts, enable_sampling=True, alpha=0.2, seed=11, num_threads=1, special="all")
    assert tok.encode_batch(texts, enable_sampling=True, alpha=0.2, seed=11, num_threads=2, special="all") == one
    ids, offsets = tok.encode_batch(texts, enable_sampling=True, alpha=0.2, seed=11, return_numpy=True, special="all")
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))] == one
    assert [tok.encode(t, enable_sampling=True, alpha=0.2, seed=5, special="all") for t in texts[:50]] == [
        tok.encode(t, enable_sampling=True, alpha=0.2, seed=5, special="all") for t in texts[:50]
    ]
    # Sampling does change ids, and every sampled sequence decodes to the text.
    assert one != tok.encode_batch(texts, num_threads=1, special="all")
    assert all(tok.decode(ids) == t for ids, t in zip(one, texts) if "\u2581" not in t)
    unseeded = {tuple(tok.encode("tokenization", enable_sampling=True, alpha=0.5, special="all")) for _ in range(50)}
    assert len(unseeded) > 1


def test_the_dropout_rate_is_alpha():
    # One possible merge ("a" + "b"): it is skipped exactly when the draw
    # falls under alpha, so the split rate estimates alpha.
    tok = spmbpe.SpmTokenizer(["<unk>", "a", "b", "ab"], add_prefix_space=False)
    n = 20000
    for alpha in (0.1, 0.5):
        split = sum(tok.encode("ab", enable_sampling=True, alpha=alpha, seed=s, special="all") == [1, 2] for s in range(n))
        sd = math.sqrt(alpha * (1 - alpha) / n)
        assert abs(split / n - alpha) < 5 * sd, (alpha, split / n)
    assert tok.encode("abab", enable_sampling=True, alpha=1.0, special="all") == [1, 2, 1, 2]
    assert tok.encode("abab", enable_sampling=True, alpha=0.0, special="all") == [3, 3]


def test_the_distribution_matches_sentencepiece():
    path = str(DATA / "mistral-v1.model")
    tok = spmbpe.load(path)
    sp = spm.SentencePieceProcessor(model_file=path)
    spm.set_random_generator_seed(1234)
    n = 20000
    for word, alpha in (("tokenization", 0.2), ("Übersetzung", 0.1)):
        ours = Counter(tuple(tok.encode(word, enable_sampling=True, alpha=alpha, seed=s, special="all")) for s in range(n))
        theirs = Counter(
            tuple(sp.encode(word, enable_sampling=True, alpha=alpha, nbest_size=-1)) for _ in range(n)
        )
        for seg in set(ours) | set(theirs):
            p = (ours[seg] + theirs[seg]) / (2 * n)
            sd = math.sqrt(2 * p * (1 - p) / n) + 1 / n
            assert abs(ours[seg] - theirs[seg]) / n < 5 * sd, (word, seg, ours[seg], theirs[seg])


def test_bad_sampling_arguments_raise():
    tok = spmbpe.load(DATA / "mistral-v1.model")
    for alpha in (-0.1, 1.5, "0.1", True):
        with pytest.raises(ValueError, match="alpha"):
            tok.encode("x", enable_sampling=True, alpha=alpha, special="all")
    with pytest.raises(TypeError, match="seed"):
        tok.encode("x", enable_sampling=True, seed="1", special="all")
    with pytest.raises(ValueError, match="alpha"):
        tok.encode_batch(["x"], enable_sampling=True, alpha=2, special="all")
