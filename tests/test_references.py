"""A reference is one module of spmbpe/references/, registered by its public
name: a sixth is one module and one entry of ``references.REFERENCES``,
and the public API takes it by name."""

from __future__ import annotations

import dataclasses
import pickle
import types

import pytest

import spmbpe
from spmbpe import references
from spmbpe.references import llamacpp, sentencepiece
from spmbpe.tokenizer import tokenizer_from_spec

PIECES = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "ab", "\u2581a", "\u2581ab"] + [f"<0x{b:02X}>" for b in range(256)]
SCORES = [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5, -0.25, -0.1] + [0.0] * 256
TYPES = [2, 3, 3, 1, 1, 1, 1, 1, 1] + [6] * 256


def _toy_reference() -> types.ModuleType:
    """Plans as sentencepiece, decodes as llama.cpp (control pieces as their
    text), with an option of its own."""
    toy = types.ModuleType("toy")
    toy.NAME = "toy"  # type: ignore[attr-defined]
    toy.OPTIONS = {"loud": False}  # type: ignore[attr-defined]
    toy.Planner = type("Planner", (sentencepiece.Planner,), {})  # type: ignore[attr-defined]

    def decode_rules(spec):
        return llamacpp.decode_rules(spec)

    toy.decode_rules = decode_rules  # type: ignore[attr-defined]
    return toy


@pytest.fixture
def toy(monkeypatch):
    module = _toy_reference()
    monkeypatch.setitem(references.REFERENCES, module.NAME, module)
    return module


def _tokenizer(reference: str) -> spmbpe.SpmTokenizer:
    return spmbpe.SpmTokenizer(PIECES, SCORES, token_types=TYPES, bos_id=1, eos_id=2, unk_id=0, reference=reference)


def test_a_registered_reference_is_used_through_the_public_api(toy):
    tok, sp, llama = _tokenizer("toy"), _tokenizer("sentencepiece"), _tokenizer("llama.cpp")
    assert tok.reference == "toy"
    for text in ("ab a", " ab  b", "<s>ab</s>", "abc\u00e9"):
        assert tok.encode(text, special="all") == sp.encode(text, special="all"), text
        assert tok.encode_with_offsets(text) == sp.encode_with_offsets(text), text
    assert tok.encode("<s>ab", special="all") != llama.encode("<s>ab", special="all")  # (sentencepiece's plan)
    ids = [1, 8, 2]  # <s> ▁ab </s>
    assert sp.decode(ids) == "ab"
    assert tok.decode(ids) == llama.decode(ids) == "<s> ab</s>"
    stream = tok.streaming_decoder()
    assert "".join(stream.add_token(i) for i in ids) + stream.flush() == tok.decode(ids)
    # Its name travels in the state, with its options.
    loud = tokenizer_from_spec(dataclasses.replace(tok._spec, reference_options={"loud": True}))
    back = pickle.loads(pickle.dumps(loud))
    assert back.reference == "toy" and back._spec.reference_options == {"loud": True}
    assert back.fingerprint == loud.fingerprint != tok.fingerprint
    assert back.encode("ab a") == tok.encode("ab a")


def test_a_reference_takes_only_its_own_options(toy):
    spec = _tokenizer("toy")._spec
    with pytest.raises(ValueError, match="reference 'toy' has no option 'special_tokens'"):
        tokenizer_from_spec(dataclasses.replace(spec, reference_options={"special_tokens": ("<s>",)}))
    with pytest.raises(ValueError, match="reference must be one of 'llama.cpp', .*'toy', not 'nope'"):
        tokenizer_from_spec(dataclasses.replace(spec, reference="nope"))


def test_every_reference_module_has_the_same_interface():
    assert list(references.REFERENCES) == ["llama.cpp", "sentencepiece", "transformers", "transformers4", "tokenizers"]
    for name, module in references.REFERENCES.items():
        assert module.NAME == name
        assert isinstance(module.OPTIONS, dict)
        assert issubclass(module.Planner, references.base.Planner)
        assert callable(module.decode_rules)


def test_the_old_name_of_transformers4_is_still_taken():
    tok = _tokenizer("huggingface")
    assert tok.reference == "transformers4"
    with pytest.raises(ValueError, match="'llama.cpp' or 'sentencepiece' or 'transformers4' for a tokenizer built"):
        _tokenizer("tokenizers")
