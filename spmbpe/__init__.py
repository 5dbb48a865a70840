"""spmbpe: SentencePiece-BPE tokenization, exact and fast.

>>> import spmbpe
>>> tok = spmbpe.load("ggml-vocab-llama-spm.gguf")   # doctest: +SKIP
>>> tok.encode("Hello world")                          # doctest: +SKIP
[15043, 3186]

The public names are imported from their modules when first used, so that
``import spmbpe`` runs nothing: the spmbpe program (spmbpe/__main__.py)
then starts before any of them and can answer an interrupt (Ctrl-C) while
they load.
"""

TYPE_CHECKING = False  # (typing itself is not imported: see above)
if TYPE_CHECKING:
    from typing import Any, List

    from ._hf_call import BatchEncoding
    from ._decoding import StreamingDecoder
    from ._threads import get_num_threads, set_num_threads
    from .errors import (
        DisallowedSpecialError, InvalidTokenIdError, ModelFormatError, SpmbpeError, UnsupportedFeatureError,
        UnsupportedModelError, VocabularyError,
    )
    from .loading import load
    from .tokenizer import PREFIX_SCHEMES, SpmTokenizer
    from .tokens import NEVER_MERGE, AddedToken, TokenType

__version__ = "0.1.0"

__all__ = [
    "SpmTokenizer", "StreamingDecoder", "BatchEncoding", "AddedToken", "TokenType", "load", "set_num_threads",
    "get_num_threads", "NEVER_MERGE", "PREFIX_SCHEMES", "SpmbpeError", "VocabularyError", "ModelFormatError",
    "UnsupportedModelError", "UnsupportedFeatureError", "DisallowedSpecialError", "InvalidTokenIdError",
    "__version__",
]

# The module each public name comes from.
_HOMES = {
    name: home
    for home, names in (
        ("tokenizer", "SpmTokenizer PREFIX_SCHEMES"),
        ("_decoding", "StreamingDecoder"),
        ("_hf_call", "BatchEncoding"),
        ("tokens", "AddedToken TokenType NEVER_MERGE"),
        ("loading", "load"),
        ("_threads", "set_num_threads get_num_threads"),
        ("errors", "SpmbpeError VocabularyError ModelFormatError UnsupportedModelError UnsupportedFeatureError "
                   "DisallowedSpecialError InvalidTokenIdError"),
    )
    for name in names.split()
}

if not TYPE_CHECKING:  # for type checkers the imports above say it all

    def __getattr__(name: str) -> "Any":
        from importlib import import_module

        home = _HOMES.get(name)
        if home is not None:
            value = getattr(import_module(f".{home}", __name__), name)
            globals()[name] = value  # found directly from now on
            return value
        if not name.startswith("__"):
            # A submodule (spmbpe.errors, ...), as when importing the
            # package imported them all.
            try:
                return import_module(f".{name}", __name__)
            except ModuleNotFoundError as e:
                if e.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> "List[str]":
        return sorted(set(globals()) | set(__all__))
