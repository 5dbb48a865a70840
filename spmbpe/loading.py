"""spmbpe.load: one entry point that recognises a tokenizer file's format."""

from __future__ import annotations

import os
from typing import Callable, Union

from ._spm_model import is_model_proto
from .errors import UnsupportedModelError
from .spec import TokenizerSpec
from .tokenizer import SpmTokenizer, tokenizer_from_spec

__all__ = ["load", "read_spec", "KNOWN_FORMATS", "BUNDLED_MODELS"]

#: The formats load() recognises, as named in its error messages.
KNOWN_FORMATS = (
    "GGUF (.gguf, tokenizer.ggml.model = 'llama')",
    "sentencepiece model (.model, a BPE ModelProto)",
    "HuggingFace model folder (tokenizer.model + tokenizer_config.json, or tokenizer.json)",
    "HuggingFace tokenizer.json (a Llama-style BPE model)",
)

_GGUF_MAGIC = b"GGUF"

#: Vocabularies shipped inside the package, loadable by name.
BUNDLED_MODELS = {"mistral-v1": "mistral-v1.model"}
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def load(path: Union[str, "os.PathLike[str]"]) -> SpmTokenizer:
    """A tokenizer from a file or folder, its format detected from its
    contents, or a bundled vocabulary by name (``"mistral-v1"``).

    GGUF files give llama.cpp's behaviour (``tokenizer.ggml.model`` must be
    ``"llama"``, the SentencePiece-BPE vocabulary type); sentencepiece
    ``.model`` files give sentencepiece's.
    """
    return tokenizer_from_spec(read_spec(path))


def read_spec(path: Union[str, "os.PathLike[str]"]) -> TokenizerSpec:
    """The TokenizerSpec of a file or folder (what load builds from)."""
    path = os.fspath(path)
    if not os.path.exists(path) and path in BUNDLED_MODELS:
        # A bundled vocabulary by name: spmbpe.load("mistral-v1").
        path = os.path.join(_DATA, BUNDLED_MODELS[path])
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no such tokenizer file or folder: {path!r} (bundled vocabularies: "
            f"{', '.join(sorted(BUNDLED_MODELS))})"
        )
    return _reader(path)(path)


def _reader(path: str) -> Callable[[str], TokenizerSpec]:
    """The loader that reads `path` into a spec, by its contents."""
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "tokenizer.model")):
            from .huggingface import read_hf_folder_spec

            return read_hf_folder_spec
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            from .tokenizer_json import read_tokenizer_json_spec

            return lambda folder: read_tokenizer_json_spec(os.path.join(folder, "tokenizer.json"))
        raise UnsupportedModelError(
            f"{path}: a folder with neither tokenizer.model nor tokenizer.json; spmbpe.load "
            f"reads a tokenizer file or folder of one of these formats: {'; '.join(KNOWN_FORMATS)}"
        )
    with open(path, "rb") as f:
        head = f.read(64)
    from .gguf import read_gguf_spec
    from .sentencepiece import read_model_proto_spec
    from .tokenizer_json import read_tokenizer_json_spec

    if head[:4] == _GGUF_MAGIC:
        return read_gguf_spec
    if head.lstrip()[:1] == b"{":
        return read_tokenizer_json_spec
    if is_model_proto(head):
        return read_model_proto_spec
    # No format recognised from the contents: a file named like one of them
    # is a corrupt file of that format, and its reader says where.
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".gguf":
        return read_gguf_spec
    if suffix == ".json":
        return read_tokenizer_json_spec
    if suffix == ".model" and head:
        return read_model_proto_spec
    raise UnsupportedModelError(
        f"{path}: not a tokenizer file spmbpe knows (it starts with {head[:8]!r}); "
        f"known formats: {'; '.join(KNOWN_FORMATS)}"
    )
