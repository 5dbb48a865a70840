"""The references: whose rules a tokenizer follows, one module each
(``NAME``, ``OPTIONS``, ``Planner``, ``decode_rules``: docs/architecture.md,
"A reference is one module").  Adding one is a module and a line of
:data:`REFERENCES`; the loaders (file formats) name the reference a file
follows."""

from __future__ import annotations

from types import ModuleType
from typing import Dict

from . import llamacpp, sentencepiece, tokenizers, transformers, transformers4

__all__ = ["OLD_NAMES", "REFERENCES", "get"]

#: Every reference, by its public name, in documentation order.
REFERENCES: Dict[str, ModuleType] = {
    llamacpp.NAME: llamacpp,
    sentencepiece.NAME: sentencepiece,
    transformers.NAME: transformers,
    transformers4.NAME: transformers4,
    tokenizers.NAME: tokenizers,
}

#: Older spellings of a name: transformers 4's was "huggingface" (in the
#: state of tokenizers pickled before, and in SpmTokenizer(reference=...)).
OLD_NAMES = {"huggingface": transformers4.NAME}


def get(name: str) -> ModuleType:
    """The reference module of a name; ValueError naming the known ones."""
    try:
        return REFERENCES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"reference must be one of {', '.join(map(repr, REFERENCES))}, not {name!r}"
        ) from None
