"""spmbpe.load: one entry point that recognises a tokenizer file's format."""

from __future__ import annotations

import os
from typing import Callable, Optional, Tuple, Union

from ._spm_model import is_model_proto
from .errors import UnsupportedModelError
from .spec import TokenizerSpec
from .tokenizer import SpmTokenizer, tokenizer_from_spec

__all__ = ["load", "read_spec", "KNOWN_FORMATS", "BUNDLED_MODELS", "FOLDER_REFERENCES"]

#: The formats load() recognises, as named in its error messages.
KNOWN_FORMATS = (
    "GGUF (.gguf, tokenizer.ggml.model = 'llama')",
    "sentencepiece model (.model, a BPE ModelProto)",
    "HuggingFace model folder (tokenizer.model + tokenizer_config.json, or tokenizer.json)",
    "HuggingFace tokenizer.json (a Llama-style BPE model)",
)

_GGUF_MAGIC = b"GGUF"

#: The readings of a model folder that load(folder, reference=...) offers.
FOLDER_REFERENCES: Tuple[str, ...] = ("transformers", "transformers4", "sentencepiece", "tokenizers")
# The file each folder reading needs (transformers and transformers4 take
# either; their loaders say what is missing).
_FOLDER_FILES = {"sentencepiece": "tokenizer.model", "tokenizers": "tokenizer.json"}
_REFERENCES = FOLDER_REFERENCES + ("llama.cpp",)

#: Vocabularies shipped inside the package, loadable by name.
BUNDLED_MODELS = {"mistral-v1": "mistral-v1.model"}
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def load(path: Union[str, "os.PathLike[str]"], *, reference: Optional[str] = None) -> SpmTokenizer:
    """A tokenizer from a file or folder, its format detected from its
    contents, or a bundled vocabulary by name (``"mistral-v1"``).

    GGUF files give llama.cpp's behaviour (``tokenizer.ggml.model`` must be
    ``"llama"``, the SentencePiece-BPE vocabulary type); sentencepiece
    ``.model`` files give sentencepiece's; a ``tokenizer.json`` file the
    tokenizers library's.  A model folder follows `reference`:
    ``"transformers"`` (the default: transformers 5's ``AutoTokenizer``),
    ``"transformers4"`` (transformers 4.x's slow ``LlamaTokenizer``),
    ``"sentencepiece"`` (its ``tokenizer.model`` as sentencepiece runs it) or
    ``"tokenizers"`` (its ``tokenizer.json`` as the tokenizers library runs
    it).  A file takes only its own reference.
    """
    return tokenizer_from_spec(read_spec(path, reference=reference))


def read_spec(path: Union[str, "os.PathLike[str]"], *, reference: Optional[str] = None) -> TokenizerSpec:
    """The TokenizerSpec of a file or folder (what load builds from)."""
    if reference is not None and reference not in _REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(map(repr, _REFERENCES))}, not {reference!r}")
    path = os.fspath(path)
    if not os.path.exists(path) and path in BUNDLED_MODELS:
        # A bundled vocabulary by name: spmbpe.load("mistral-v1").
        path = os.path.join(_DATA, BUNDLED_MODELS[path])
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no such tokenizer file or folder: {path!r} (bundled vocabularies: "
            f"{', '.join(sorted(BUNDLED_MODELS))})"
        )
    if os.path.isdir(path) and reference != "transformers4":
        return _folder_spec(path, reference or "transformers")
    spec = _reader(path)(path)
    if reference is not None and not os.path.isdir(path):
        own = spec.reference
        if own != reference:
            raise UnsupportedModelError(
                f"{path}: this file is read as {own!r}, not {reference!r}; the other readings "
                f"need a model folder (tokenizer.model and/or tokenizer.json with tokenizer_config.json)"
            )
    return spec


def _folder_spec(folder: str, reference: str) -> TokenizerSpec:
    """A model folder read as `reference` (but "transformers4": _reader)."""
    if reference == "llama.cpp":
        raise UnsupportedModelError(
            f"{folder}: a model folder has no llama.cpp reading (llama.cpp reads GGUF files); "
            f"a folder takes one of {', '.join(map(repr, FOLDER_REFERENCES))}"
        )
    needed = _FOLDER_FILES.get(reference)
    if needed is not None and not os.path.isfile(os.path.join(folder, needed)):
        raise UnsupportedModelError(
            f"{folder}: reference={reference!r} reads {needed}, which this folder does not have"
        )
    if reference == "sentencepiece":
        from .sentencepiece import read_model_proto_spec

        return read_model_proto_spec(os.path.join(folder, "tokenizer.model"))
    if reference == "tokenizers":
        from .tokenizer_json import read_tokenizer_json_spec

        return read_tokenizer_json_spec(os.path.join(folder, "tokenizer.json"))
    if not any(os.path.isfile(os.path.join(folder, name)) for name in ("tokenizer.model", "tokenizer.json")):
        raise UnsupportedModelError(
            f"{folder}: a folder with neither tokenizer.model nor tokenizer.json; reference={reference!r} "
            f"reads one of them"
        )
    from ._transformers5 import read_transformers5_spec

    return read_transformers5_spec(folder)


def _reader(path: str) -> Callable[[str], TokenizerSpec]:
    """The loader that reads `path` into a spec, by its contents."""
    from .tokenizer_json import read_tokenizer_json_spec

    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "tokenizer.model")):
            from ._transformers4 import read_transformers4_spec

            return read_transformers4_spec
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            return lambda folder: read_tokenizer_json_spec(os.path.join(folder, "tokenizer.json"))
        raise UnsupportedModelError(
            f"{path}: a folder with neither tokenizer.model nor tokenizer.json; spmbpe.load "
            f"reads a tokenizer file or folder of one of these formats: {'; '.join(KNOWN_FORMATS)}"
        )
    with open(path, "rb") as f:
        head = f.read(64)
    from .gguf import read_gguf_spec
    from .sentencepiece import read_model_proto_spec

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
