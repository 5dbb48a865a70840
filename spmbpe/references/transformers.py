"""transformers 5 (a model folder, the default there): ``AutoTokenizer``'s
tokenizers-backed ``LlamaTokenizer``, whatever files the folder holds.

Its loader (``spmbpe/_transformers5.py``) builds the pipeline transformers 5
builds, as a ``tokenizer.json``; this module runs it with the tokenizers
rules, with tokenizers' two-pass, single_word-aware matching of added tokens
when the folder has such tokens.  ``clean_up_spaces``: the config asks for
transformers' ``clean_up_tokenization_spaces`` on a BPE model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, cast

from .._added import AddedTokenMatcher, TokenizersMatcher
from .._decoding import DecodeRules
from ..tokens import AddedToken
from . import base, tokenizers

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

NAME = "transformers"
OPTIONS: Dict[str, Any] = {"clean_up_spaces": False}


class Planner(tokenizers.Planner):
    @classmethod
    def make_matcher(cls, tokens: List[AddedToken], spec: "TokenizerSpec") -> AddedTokenMatcher:
        if len(spec.front_end) > 3:
            single_word, normalized = spec.front_end[3], spec.front_end[4]
            return TokenizersMatcher(tokens, cast(Iterable[str], single_word), cast(Iterable[str], normalized))
        return AddedTokenMatcher(tokens)


def decode_rules(spec: "TokenizerSpec") -> Dict[bool, DecodeRules]:
    clean_up = bool(base.options(spec, OPTIONS)["clean_up_spaces"])
    return {k: rules._replace(clean_up=clean_up) for k, rules in tokenizers.decode_rules(spec).items()}
