"""``spmbpe info``: what a tokenizer file holds."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

from ._arrays import ARRAY_FORMATS, array_dtype
from ._atomic import OutputError
from ._cli_common import load_model

__all__ = ["cmd_info"]


_FORMATS = {
    "llama.cpp": "GGUF (llama.cpp's rules)",
    "sentencepiece": "sentencepiece model (.model; sentencepiece's rules)",
    "transformers": "Hugging Face model folder (transformers 5's AutoTokenizer rules)",
    "tokenizers": "HuggingFace tokenizer.json (the tokenizers library's rules)",
}


def cmd_info(args: argparse.Namespace) -> int:
    tok = load_model(args.model)
    info = _model_info(args.model, tok)
    if args.json:
        sys.stdout.write(json.dumps(info, ensure_ascii=False, indent=1) + "\n")
        return 0
    labels = [
        ("model", "model"), ("format", "format"), ("vocab_size", "vocabulary size"),
        ("array_dtype", "npy/bin/ds dtype"), ("bos", "BOS"), ("eos", "EOS"), ("unk", "UNK"),
        ("pad", "PAD"), ("add_bos", "add BOS (--add-special-tokens)"),
        ("add_eos", "add EOS (--add-special-tokens)"), ("add_prefix_space", "dummy prefix"),
        ("prefix_scheme", "prefix scheme"), ("normalizer", "normalizer"),
        ("byte_fallback", "byte fallback"), ("chunked_fast_path", "exact chunked fast path"),
        ("special_token_count", "special tokens (--special all)"), ("control_count", "control/unknown pieces"),
        ("user_defined_count", "user-defined tokens split out"),
        ("fingerprint", "fingerprint"),
    ]
    width = max(len(label) for _, label in labels)
    for key, label in labels:
        value = info.get(key)
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, dict):
            value = f"{value['id']} {value['piece']!r}"
        elif value is None:
            value = "-"
        listed = {"special_token_count": "special_tokens", "control_count": "control_pieces"}.get(key)
        if listed and info[listed]:
            shown = ", ".join(f"{t['id']} {t['text']!r}" for t in info[listed][:12])
            more = len(info[listed]) - 12
            value = f"{value}: {shown}" + (f", ... ({more} more)" if more > 0 else "")
        sys.stdout.write(f"{label.ljust(width)}  {value}\n")
    return 0


def _model_info(model: str, tok: Any) -> Dict[str, Any]:
    np_dtype = _array_dtypes(tok.vocab_size)

    def named(i: Optional[int]) -> Optional[Dict[str, Any]]:
        return None if i is None else {"id": i, "piece": tok.id_to_piece(i)}

    added = {t.content: t.id for t in tok.added_tokens}
    special = sorted(
        ({"id": added[text] if text in added else tok.piece_to_id(text), "text": text} for text in tok.special_tokens),
        key=lambda t: (t["id"], t["text"]),
    )
    user_defined = sum(1 for t in tok.added_tokens if not t.special)
    from .tokens import TokenType

    kinds = (TokenType.CONTROL, TokenType.UNKNOWN)
    control = [
        {"id": i, "text": tok.id_to_piece(i)} for i in range(tok.vocab_size) if tok.token_type(i) in kinds
    ]
    hidden = tok.describe()
    return {
        "model": model,
        "format": _FORMATS.get(tok.reference, tok.reference),
        "reference": tok.reference,
        "vocab_size": tok.vocab_size,
        "array_dtype": np_dtype,
        "bos": named(tok.bos_id),
        "eos": named(tok.eos_id),
        "unk": named(tok.unk_id),
        "pad": named(tok.pad_id),
        "add_bos": tok.add_bos,
        "add_eos": tok.add_eos,
        "add_prefix_space": tok.add_prefix_space,
        "prefix_scheme": tok.prefix_scheme,
        "normalizer": _normalizer_description(model, tok),
        "byte_fallback": hidden["byte_fallback"],
        "chunked_fast_path": hidden["chunked"],
        "special_token_count": len(special),
        "special_tokens": special,
        "control_count": len(control),
        "control_pieces": control,
        "user_defined_count": user_defined,
        "fingerprint": getattr(tok, "fingerprint", None),
    }


def _array_dtypes(vocab_size: int) -> str:
    """The ids' dtype in each array format ("uint16" when all agree)."""
    by_dtype: Dict[str, List[str]] = {}
    for fmt in ARRAY_FORMATS:
        try:
            name = array_dtype(vocab_size, fmt).name
        except OutputError:
            name = "none"
        by_dtype.setdefault(name, []).append(fmt)
    if len(by_dtype) == 1:
        return next(iter(by_dtype))
    return ", ".join(f"{name} ({', '.join(fmts)})" for name, fmts in by_dtype.items())


def _model_path(model: str) -> str:
    """The file `model` names: a path, or a vocabulary bundled in the
    package (spmbpe.load's names, BUNDLED_MODELS)."""
    from .loading import BUNDLED_MODELS

    if os.path.exists(model) or model not in BUNDLED_MODELS:
        return model
    import importlib.resources

    return str(importlib.resources.files("spmbpe") / "data" / BUNDLED_MODELS[model])


def _normalizer_description(model: str, tok: Any) -> str:
    # The normalizer as the file spells it: the tokenizer keeps only what
    # it runs, so the file is read again (for the reference that
    # tok.reference names, not detected anew).
    reference = tok.reference
    if reference == "llama.cpp":
        return "none (llama.cpp normalizes nothing; spaces become '▁')"
    path = _model_path(model)
    if reference == "tokenizers":
        json_path = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
        try:
            with open(json_path, "r", encoding="utf-8") as f:
                spec = json.load(f).get("normalizer")
        except (OSError, ValueError):
            return "unknown"
        return _describe_hf_normalizer(spec)
    from ._spm_model import read_model_proto

    proto_path = os.path.join(path, "tokenizer.model") if os.path.isdir(path) else path
    try:
        spec = read_model_proto(proto_path).normalizer_or_default
    except (OSError, ValueError):
        return "unknown"
    name = getattr(spec, "name", "") or "(unnamed)"
    runs = tok.describe()["normalizer_runs"]
    flags = [
        f"{flag}={bool(getattr(spec, flag))}"
        for flag in ("add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces")
    ]
    stage = "applied" if runs else "nothing to apply beyond spaces and prefix (stage skipped)"
    return f"{name}: {stage}; {', '.join(flags)}"


def _describe_hf_normalizer(spec: Any) -> str:
    if spec is None:
        return "none"
    if isinstance(spec, dict):
        kind = spec.get("type", "?")
        if kind == "Sequence":
            return "Sequence[" + ", ".join(_describe_hf_normalizer(s) for s in spec.get("normalizers", [])) + "]"
        if kind == "Replace":
            pattern = spec.get("pattern", {})
            src = pattern.get("String", pattern.get("Regex", "?")) if isinstance(pattern, dict) else pattern
            return f"Replace({src!r} -> {spec.get('content')!r})"
        if kind == "Prepend":
            return f"Prepend({spec.get('prepend')!r})"
        return str(kind)
    return str(spec)
