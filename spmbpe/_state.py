"""What a tokenizer is made of, as canonical bytes: its pickle and its
fingerprint (docs/architecture.md, "Beside the path").

A spec is written as one byte string in a small tagged format of its own,
so that a pickle carries the vocabulary itself, never a path, with the same
bytes in every process and run (``datasets`` hashes functions through their
pickle), and the fingerprint (their SHA-256) changes when any setting that
can change an id does.  Every keyword of ``TokenizerSpec.build``
(``spec.settings``) and the reference's own options are written, so a new
setting needs no change here (or raises ``TypeError`` when it is of a kind
the format cannot write)."""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import fields
from importlib import import_module
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._core import PieceTable, distinct_rules
from ._normalizer import Normalizer
from ._normalizer import _rebuild as _rebuild_normalizer
from ._vocab import piece_offsets
from .references import OLD_NAMES
from .spec import RankedMerges, TokenizerSpec
from .tokens import AddedToken

__all__ = ["state_bytes", "fingerprint", "restore", "register_builder"]

# Bumped when the format changes; part of every fingerprint.
_MAGIC = b"spmbpe-state/1\x00"

# Array item formats, fixed-size and little-endian whatever the platform.
_ARRAY_FORMATS = {
    "b": "b", "B": "B", "h": "h", "H": "H", "i": "i", "I": "I",
    "l": "q", "L": "Q", "q": "q", "Q": "Q", "f": "f", "d": "d",
}


def state_bytes(spec: TokenizerSpec) -> bytes:
    """The canonical bytes of everything the tokenizer is built from."""
    return b"".join(_chunks(spec))


def fingerprint(spec: TokenizerSpec) -> str:
    """The SHA-256 (hex) of :func:`state_bytes`."""
    # Imported here: hashlib loads OpenSSL, megabytes that a process which
    # never asks for a fingerprint need not hold.
    import hashlib

    digest = hashlib.sha256()
    for chunk in _chunks(spec, first_names=True):
        digest.update(chunk)
    return digest.hexdigest()


def _chunks(spec: TokenizerSpec, first_names: bool = False) -> List[bytes]:
    out: List[bytes] = [_MAGIC]
    merges = _canonical_merges(spec.ranked_merges)
    options = _options(spec)
    if first_names:
        # A fingerprint hashes the reference by the name the format first
        # gave it, so that caches keyed by one (datasets') outlive the rename.
        options["reference"] = _FIRST_NAMES.get(options["reference"], options["reference"])
    _write(out, (spec.table, spec.rank, spec.types, options, merges))
    return out


_FIRST_NAMES = {name: old for old, name in OLD_NAMES.items()}


# How this format (version 1, since spmbpe's first state) spells what
# changed names since: transformers 4's reference (references.OLD_NAMES),
# whose own options were settings of every spec, "hf_*", the first two
# always written.
_OLD_OPTIONS = {
    "special_tokens": "hf_special_tokens", "unk_token": "hf_unk_token",
    "additional_special_tokens": "hf_additional_special_tokens", "add_prefix_space": "hf_add_prefix_space",
    "clean_up_spaces": "hf_clean_up_spaces",
}
_ALWAYS_WRITTEN = ("hf_special_tokens", "hf_unk_token")
# Settings left out at these values (those of the format's first version
# always, the others when they were added): a tokenizer that does not use
# one keeps the state it had before it existed.
_LEFT_OUT: Dict[str, Any] = {
    "hf_special_tokens": (), "hf_unk_token": "<unk>", "hf_additional_special_tokens": (),
    "hf_add_prefix_space": None, "hf_clean_up_spaces": False, "named_unk_id": None, "unk_surface": " \u2047 ",
}


def _options(spec: TokenizerSpec) -> Dict[str, Any]:
    """The settings as this format writes them, sorted by name: the spec's,
    then the reference's own (spec.reference_options)."""
    options = spec.settings
    for name, value in options.pop("reference_options").items():
        options[_OLD_OPTIONS.get(name, name)] = value
    out = {
        name: value for name, value in sorted(options.items())
        if name in _ALWAYS_WRITTEN or name not in _LEFT_OUT or value != _LEFT_OUT[name]
    }
    for name in _ALWAYS_WRITTEN:
        out.setdefault(name, _LEFT_OUT[name])
    if spec.added_tokens is not None:
        out["added_tokens"] = list(spec.added_tokens)
    return dict(sorted(out.items()))


def _settings(options: Dict[str, Any]) -> Dict[str, Any]:
    """The keywords of TokenizerSpec.build for the settings `options` wrote."""
    known = {f.name for f in fields(TokenizerSpec)}
    settings: Dict[str, Any] = {"reference_options": {}}
    old_names = {old: name for name, old in _OLD_OPTIONS.items()}
    for name, value in options.items():
        if name in known:
            settings[name] = value
        elif name not in _LEFT_OUT or value != _LEFT_OUT[name]:
            settings["reference_options"][old_names.get(name, name)] = value
    reference = settings.get("reference")
    settings["reference"] = OLD_NAMES.get(reference, reference) if reference is not None else "llama.cpp"
    return settings


def _canonical_merges(merges: Optional[RankedMerges]) -> Optional[RankedMerges]:
    """The merge rules with one rule per pair, in rank order: a pair listed
    twice keeps only its later rule, the one that applies (the core and
    tokenizers both let the last write win), so that files differing only
    in a rule that never applies have one state."""
    if merges is None:
        return None
    left, right, merged, fuse_unknown, ignore_merges = merges
    distinct = distinct_rules(left, right, merged)
    if distinct is None:
        return merges
    return (*distinct, fuse_unknown, ignore_merges)


# What turns a spec into a tokenizer: tokenizer_from_spec, registered by
# spmbpe/tokenizer.py, which this module sits below and must not import.
_BUILDER: Optional[Callable[[TokenizerSpec], Any]] = None


def register_builder(builder: Callable[[TokenizerSpec], Any]) -> None:
    """Sets the function :func:`restore` builds tokenizers with."""
    global _BUILDER
    _BUILDER = builder


def restore(data: bytes) -> Any:
    """The tokenizer whose state_bytes() is `data` (the pickle's reconstructor)."""
    if not data.startswith(_MAGIC):
        raise ValueError(
            "not a pickled spmbpe tokenizer of this version (the state starts with "
            f"{bytes(data[:16])!r}); pickle it again with this spmbpe version"
        )
    value, end = _read(memoryview(data), len(_MAGIC))
    if end != len(data):
        raise ValueError(f"corrupt spmbpe tokenizer state: {len(data) - end} trailing bytes")
    table, rank, types, options, ranked_merges = value
    spec = TokenizerSpec.build(table, rank, types, ranked_merges, **_settings(options))
    if _BUILDER is None:  # a fresh interpreter unpickling has imported only this module
        import_module(f"{__package__}.tokenizer")
    assert _BUILDER is not None
    return _BUILDER(spec)


# ---------------------------------------------------------------- the format
#
# Every value is a one-byte tag and its body; lengths and counts are
# unsigned 64-bit little-endian.
#   N None | T True | F False | i int (decimal text) | d float (<d)
#   s str (UTF-8) | b bytes | a array (item format, then raw little-endian items)
#   t tuple, l list (count, items) | m dict (count, key, value, ...)
#   k AddedToken (content, id, special, lstrip, rstrip)
#   n Normalizer (the arguments of its __reduce__)
#   p PieceTable (arena bytes, then the piece lengths as an array)

_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")


def _size(n: int) -> bytes:
    return _U64.pack(n)


def _write(out: List[bytes], value: Any) -> None:
    if value is None:
        out.append(b"N")
    elif value is True:
        out.append(b"T")
    elif value is False:
        out.append(b"F")
    elif isinstance(value, int):
        text = str(int(value)).encode("ascii")
        out += (b"i", _size(len(text)), text)
    elif isinstance(value, float):
        out += (b"d", _F64.pack(value))
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        out += (b"s", _size(len(data)), data)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        out += (b"b", _size(len(data)), data)
    elif isinstance(value, array):
        fmt = _ARRAY_FORMATS.get(value.typecode)
        if fmt is None:
            raise TypeError(f"cannot write an array of typecode {value.typecode!r}")
        if array(fmt).itemsize != value.itemsize:
            value = array(fmt, value)
        if sys.byteorder != "little":
            value = array(value.typecode, value)
            value.byteswap()
        data = value.tobytes()
        out += (b"a", fmt.encode("ascii"), _size(len(data)), data)
    elif isinstance(value, (tuple, list)):
        out += (b"t" if isinstance(value, tuple) else b"l", _size(len(value)))
        for item in value:
            _write(out, item)
    elif isinstance(value, dict):
        out += (b"m", _size(len(value)))
        for key, item in value.items():
            _write(out, key)
            _write(out, item)
    elif isinstance(value, AddedToken):
        out.append(b"k")
        _write(out, (value.content, value.id, value.special, value.lstrip, value.rstrip))
    elif isinstance(value, PieceTable):
        out.append(b"p")
        lengths = value.lengths()
        _write(out, value.arena)
        _write(out, array("I", lengths) if max(lengths, default=0) < 1 << 32 else lengths)
    elif isinstance(value, Normalizer):
        _, args = value.__reduce__()
        out.append(b"n")
        _write(out, tuple(args))
    else:
        raise TypeError(
            f"spmbpe cannot write a tokenizer setting of type {type(value).__name__} "
            f"into its state (spmbpe/_state.py)"
        )


def _read(buf: memoryview, pos: int) -> Tuple[Any, int]:
    tag = buf[pos : pos + 1].tobytes()
    pos += 1
    if tag == b"N":
        return None, pos
    if tag == b"T":
        return True, pos
    if tag == b"F":
        return False, pos
    if tag == b"d":
        return _F64.unpack_from(buf, pos)[0], pos + 8
    if tag in (b"i", b"s", b"b"):
        (n,) = _U64.unpack_from(buf, pos)
        pos += 8
        data = buf[pos : pos + n].tobytes()
        if len(data) != n:
            raise ValueError("corrupt spmbpe tokenizer state: truncated")
        pos += n
        if tag == b"i":
            return int(data), pos
        if tag == b"s":
            return data.decode("utf-8", "surrogatepass"), pos
        return data, pos
    if tag == b"a":
        fmt = buf[pos : pos + 1].tobytes().decode("ascii")
        (n,) = _U64.unpack_from(buf, pos + 1)
        pos += 9
        value = array(fmt)
        value.frombytes(buf[pos : pos + n])
        if sys.byteorder != "little":
            value.byteswap()
        return value, pos + n
    if tag in (b"t", b"l"):
        (n,) = _U64.unpack_from(buf, pos)
        pos += 8
        items = []
        for _ in range(n):
            item, pos = _read(buf, pos)
            items.append(item)
        return (tuple(items) if tag == b"t" else items), pos
    if tag == b"m":
        (n,) = _U64.unpack_from(buf, pos)
        pos += 8
        mapping = {}
        for _ in range(n):
            key, pos = _read(buf, pos)
            mapping[key], pos = _read(buf, pos)
        return mapping, pos
    if tag == b"k":
        fields, pos = _read(buf, pos)
        content, token_id, special, lstrip, rstrip = fields
        return AddedToken(content, token_id, special=special, lstrip=lstrip, rstrip=rstrip), pos
    if tag == b"p":
        arena, pos = _read(buf, pos)
        lengths, pos = _read(buf, pos)
        return PieceTable(arena, piece_offsets(lengths)), pos
    if tag == b"n":
        args, pos = _read(buf, pos)
        return _rebuild_normalizer(*args), pos
    raise ValueError(f"corrupt spmbpe tokenizer state: unknown tag {tag!r} at byte {pos - 1}")
