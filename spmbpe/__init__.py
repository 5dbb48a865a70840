"""spmbpe: SentencePiece-BPE tokenization, exact and fast.

>>> import spmbpe
>>> tok = spmbpe.load("ggml-vocab-llama-spm.gguf")   # doctest: +SKIP
>>> tok.encode("Hello world")                          # doctest: +SKIP
[15043, 3186]
"""

from .errors import (
    DisallowedSpecialError,
    InvalidTokenIdError,
    ModelFormatError,
    SpmbpeError,
    UnsupportedFeatureError,
    UnsupportedModelError,
    VocabularyError,
)
from ._hf_call import BatchEncoding
from ._streaming import StreamingDecoder
from .loading import load
from ._threads import get_num_threads, set_num_threads
from .tokenizer import PREFIX_SCHEMES, SpmTokenizer
from .tokens import NEVER_MERGE, AddedToken, TokenType

__version__ = "0.1.0"

__all__ = [
    "SpmTokenizer",
    "StreamingDecoder",
    "BatchEncoding",
    "AddedToken",
    "TokenType",
    "load",
    "set_num_threads",
    "get_num_threads",
    "NEVER_MERGE",
    "PREFIX_SCHEMES",
    "SpmbpeError",
    "VocabularyError",
    "ModelFormatError",
    "UnsupportedModelError",
    "UnsupportedFeatureError",
    "DisallowedSpecialError",
    "InvalidTokenIdError",
    "__version__",
]
