"""spmbpe.load: one entry point that recognises a tokenizer file's format."""

from __future__ import annotations

import os
from typing import Optional, Tuple, Union

from ._spm_model import is_model_proto
from .errors import UnsupportedModelError
from .tokenizer import SpmTokenizer

__all__ = ["load", "KNOWN_FORMATS", "BUNDLED_MODELS", "FOLDER_REFERENCES"]

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
    if reference is not None and reference not in FOLDER_REFERENCES + ("llama.cpp",):
        raise ValueError(
            f"reference must be one of {', '.join(map(repr, FOLDER_REFERENCES + ('llama.cpp',)))}, "
            f"not {reference!r}"
        )
    path = os.fspath(path)
    if not os.path.exists(path) and path in BUNDLED_MODELS:
        # A bundled vocabulary by name: spmbpe.load("mistral-v1").
        path = os.path.join(_DATA, BUNDLED_MODELS[path])
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no such tokenizer file or folder: {path!r} (bundled vocabularies: "
            f"{', '.join(sorted(BUNDLED_MODELS))})"
        )
    if os.path.isdir(path):
        if reference != "transformers4":
            return _load_folder(path, reference or "transformers")
        if os.path.isfile(os.path.join(path, "tokenizer.model")):
            from .huggingface import load_hf_folder

            return load_hf_folder(path)
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            from .tokenizer_json import load_tokenizer_json

            return load_tokenizer_json(os.path.join(path, "tokenizer.json"))
        raise UnsupportedModelError(
            f"{path}: a folder with neither tokenizer.model nor tokenizer.json; spmbpe.load "
            f"reads a tokenizer file or folder of one of these formats: {'; '.join(KNOWN_FORMATS)}"
        )
    if reference is not None:
        return _load_file_as(path, reference)
    with open(path, "rb") as f:
        head = f.read(64)
    if head[:4] == _GGUF_MAGIC:
        from .gguf import load_gguf

        return load_gguf(path)
    if head.lstrip()[:1] == b"{":
        from .tokenizer_json import load_tokenizer_json

        return load_tokenizer_json(path)
    if is_model_proto(head):
        from .sentencepiece import load_model_proto

        return load_model_proto(path)
    # No format recognised from the contents: a file named like one of them
    # is a corrupt file of that format, and its reader says where.
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".gguf":
        from .gguf import load_gguf

        return load_gguf(path)
    if suffix == ".json":
        from .tokenizer_json import load_tokenizer_json

        return load_tokenizer_json(path)
    if suffix == ".model" and head:
        from .sentencepiece import load_model_proto

        return load_model_proto(path)
    raise UnsupportedModelError(
        f"{path}: not a tokenizer file spmbpe knows (it starts with {head[:8]!r}); "
        f"known formats: {'; '.join(KNOWN_FORMATS)}"
    )


# ------------------------------------------------------------ explicit references
# (issue 22: kept apart from the format detection above so that the planner
# restructuring of issue 20 can take it over as it is.)


def _load_folder(folder: str, reference: str) -> SpmTokenizer:
    """A model folder read as `reference` ("transformers4" is the format
    detection above, today's folder behaviour)."""
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
        from .sentencepiece import load_model_proto

        return load_model_proto(os.path.join(folder, "tokenizer.model"))
    if reference == "tokenizers":
        from .tokenizer_json import load_tokenizer_json

        return load_tokenizer_json(os.path.join(folder, "tokenizer.json"))
    if not any(os.path.isfile(os.path.join(folder, name)) for name in ("tokenizer.model", "tokenizer.json")):
        raise UnsupportedModelError(
            f"{folder}: a folder with neither tokenizer.model nor tokenizer.json; reference={reference!r} "
            f"reads one of them"
        )
    from ._transformers5 import load_transformers5_folder

    return load_transformers5_folder(folder)


def _load_file_as(path: str, reference: str) -> SpmTokenizer:
    """A single file under an explicit reference: only the reference of its
    format (GGUF: llama.cpp; .model: sentencepiece; tokenizer.json:
    tokenizers) is accepted."""
    tok = load(path)
    if tok.reference != reference:
        raise UnsupportedModelError(
            f"{path}: this file is read as {tok.reference!r}, not {reference!r}; the other readings "
            f"need a model folder (tokenizer.model and/or tokenizer.json with tokenizer_config.json)"
        )
    return tok
