"""Tokenizers from HuggingFace ``tokenizer.json`` files (tokenizers' BPE),
read as the ``tokenizers`` library runs them (``models/bpe``,
``added_vocabulary``, ``pre_tokenizers/metaspace``): docs/behaviour.md says
what that means (merges ranked per pair, not per merged piece; characters
looked up before merging), references/tokenizers.py encodes and decodes."""

from __future__ import annotations

import json
import mmap
import os
from array import array
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union, cast

from ._core import (
    PieceTable, RuleNotResolved, json_merge_rule_ids, json_vocab_pieces, merge_rule_ids, model_spans, split_merge_ids,
    utf8_valid_prefix,
)
from ._hf_json import added_token, json_id, parse_json_object
from ._vocab import byte_piece_ids, piece_offsets
from .errors import ModelFormatError, UnsupportedFeatureError, UnsupportedModelError
from .spec import RankedMerges, TokenizerSpec
from .tokens import AddedToken, TokenType

__all__ = ["read_tokenizer_json", "read_tokenizer_json_spec", "spec_from_json"]

_MARKER = "\u2581"


def read_tokenizer_json_spec(path: str) -> TokenizerSpec:
    """The TokenizerSpec of a ``tokenizer.json`` (a Llama-style BPE model)."""
    return spec_from_json(read_tokenizer_json(path), path)


def read_tokenizer_json(path: str) -> Dict[str, Any]:
    """The JSON object of a ``tokenizer.json``, with model.vocab a
    VocabInFile and model.merges a MergesInFile where the file is plain JSON
    (core/merges_json.pyx): compiled code reads them from the file's bytes."""
    raw = _file_bytes(path)
    spans = model_spans(raw) if utf8_valid_prefix(raw) == len(raw) else None
    if spans is None:
        return parse_json_object(raw[:], path)
    merges_start, merges_end, vocab_start, vocab_end = spans
    # Each span left out as an empty value of its kind, in the file's order.
    cuts = sorted([(merges_start, merges_end, b"[]")] + ([(vocab_start, vocab_end, b"{}")] if vocab_start >= 0 else []))
    parts, at = [], 0
    for start, end, empty in cuts:
        parts += [raw[at:start], empty]
        at = end
    data = parse_json_object(b"".join(parts) + raw[at:], path)
    data["model"]["merges"] = MergesInFile(raw, merges_start, merges_end)
    if vocab_start >= 0:
        data["model"]["vocab"] = VocabInFile(raw, vocab_start, vocab_end)
    return data


# Files of at least this size are read into a mapping of their own (_file_bytes).
_MAPPED_BYTES = 1 << 20

FileBytes = Union[bytes, mmap.mmap]


def _file_bytes(path: str) -> FileBytes:
    """The bytes of the file at `path`; a large one in an anonymous mapping
    of its own, which goes back to the system whole when the loader lets it
    go (glibc's heap keeps freed pages once a large free has raised its mmap
    threshold, as reading a corpus does)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < _MAPPED_BYTES:
            return f.read()
        # (Linux: its pages made in one call, MAP_POPULATE, cheaper than
        # faulting them in one by one as the read fills them.)
        populate = getattr(mmap, "MAP_POPULATE", 0)
        if populate:
            raw = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
        else:
            raw = mmap.mmap(-1, size)
        if f.readinto(raw) == size and not f.read(1):
            return raw
        # The file changed size while it was read: read it again, whole.
        f.seek(0)
        return f.read()


class _SpanInFile:
    """A value of a tokenizer.json left in the file's bytes
    (read_tokenizer_json); `spell` gives what json.loads gives for it."""

    def __init__(self, raw: FileBytes, start: int, end: int) -> None:
        self.raw, self.start, self.end = raw, start, end

    def spell(self) -> Any:
        return json.loads(self.raw[self.start:self.end])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.end - self.start:,} bytes)"


class MergesInFile(_SpanInFile):
    """model.merges, read as ids by compiled code (`spell` where that does
    not decide)."""

    def spell(self) -> List[Any]:
        return cast(List[Any], super().spell())


class LazyVocab:
    """A model.vocab that compiled code reads by id (`pieces`), spelled as
    json.loads's dict where that does not decide; `get` and len() answer as
    that dict does.  A subclass says where the pieces are (_read_pieces) and
    how they spell (spell)."""

    def __init__(self) -> None:
        self._read: Any = self  # (not read yet)
        self._table: Optional[PieceTable] = None
        self._lookup: Union[PieceTable, Dict[str, Any], None] = None

    def _read_pieces(self) -> Optional[Tuple[bytes, "array[int]"]]:
        raise NotImplementedError

    def spell(self) -> Dict[str, Any]:
        raise NotImplementedError

    def pieces(self) -> Optional[Tuple[bytes, "array[int]"]]:
        """(arena, offsets) of the pieces by id (read once; not to be
        changed), when the ids are 0..n-1; else None.  (A piece given
        twice is not seen here: spec_from_json checks its table.)"""
        if self._read is self:
            self._read = self._read_pieces()
        return cast(Optional[Tuple[bytes, "array[int]"]], self._read)

    def table(self) -> Optional[PieceTable]:
        """The table of `pieces` (made once), or None."""
        read = self.pieces()
        if self._table is None and read is not None:
            self._table = PieceTable(*read)
        return self._table

    def _names(self) -> Union[PieceTable, Dict[str, Any]]:
        """The table where its pieces are distinct, else the dict."""
        if self._lookup is None:
            table = self.table()
            self._lookup = table if table is not None and table.first_duplicate < 0 else self.spell()
        return self._lookup

    def get(self, piece: str) -> Optional[int]:
        names = self._names()
        if isinstance(names, dict):
            return cast(Optional[int], names.get(piece))
        try:
            found = names.find(piece.encode())
        except UnicodeEncodeError:  # a lone surrogate: no piece of the file
            return None
        return found if found >= 0 else None

    def __len__(self) -> int:
        return len(self._names())


class VocabInFile(LazyVocab, _SpanInFile):
    """model.vocab left in the file: its members read by
    json_vocab_pieces when the ids are 0..n-1, each once, as integers."""

    def __init__(self, raw: FileBytes, start: int, end: int) -> None:
        LazyVocab.__init__(self)
        _SpanInFile.__init__(self, raw, start, end)

    def _read_pieces(self) -> Optional[Tuple[bytes, "array[int]"]]:
        return json_vocab_pieces(self.raw, self.start, self.end)

    def spell(self) -> Dict[str, Any]:
        return cast(Dict[str, Any], _SpanInFile.spell(self))


def spec_from_json(data: Dict[str, Any], path: str, reference: str = "tokenizers") -> TokenizerSpec:
    """The TokenizerSpec of a ``tokenizer.json`` object (`path` names it in
    errors); `reference` is "transformers" for the pipeline _transformers5.py
    builds, whose added tokens may be single_word or normalized."""
    if not isinstance(data.get("model"), dict):
        raise ModelFormatError(path, None, "no 'model' object: not a tokenizers tokenizer.json")
    model = data["model"]
    kind = model.get("type", "BPE" if "merges" in model else None)
    if kind != "BPE":
        raise UnsupportedModelError(
            f"{path}: a tokenizers {kind or 'unknown'} model; spmbpe implements BPE models "
            f"(Llama-style, with byte_fallback and a Metaspace front end)"
        )
    for field in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(field):
            raise UnsupportedFeatureError(f"{path}: model.{field} is not implemented")
    if model.get("dropout"):
        raise UnsupportedFeatureError(f"{path}: BPE-dropout (model.dropout) is not implemented")
    front_end: Tuple[Any, ...] = _front_end(data, path)

    vocab = model.get("vocab")
    if not isinstance(vocab, LazyVocab) and (not isinstance(vocab, dict) or not vocab):
        raise ModelFormatError(path, None, "model.vocab is missing or empty")
    added_entries = _added_entries(data, front_end, path)
    added = _added_tokens(added_entries, vocab, path, reference)
    table, model_ids, vocab = _vocabulary(vocab, added, path)
    if reference == "transformers":
        # tokenizers' matching of single_word and normalized added tokens
        # (spmbpe/_transformers5.py TokenizersMatcher), carried in front_end.
        front_end = (
            *front_end,
            tuple(sorted({e["content"] for e in added_entries if e.get("single_word")})),
            tuple(sorted({e["content"] for e in added_entries if e.get("normalized")})),
        )
    types = _types(table, model_ids.count(1), added)

    left, right, merged = _merge_rules(model.get("merges"), vocab, table, model_ids, path)
    unk_token = model.get("unk_token")
    unk_id = vocab.get(unk_token) if isinstance(unk_token, str) else None
    if isinstance(unk_token, str) and unk_id is None:
        raise ModelFormatError(path, None, f"model.unk_token {unk_token!r} is not in the vocabulary")
    bos_id, eos_id = _template_ends(data, path)
    ranked_merges: RankedMerges = (
        left, right, merged, bool(model.get("fuse_unk", False)), bool(model.get("ignore_merges", False))
    )
    return TokenizerSpec.build(
        table, None, types, ranked_merges, bos_id=bos_id,
        eos_id=eos_id,
        unk_id=unk_id,
        add_bos=bos_id is not None,
        add_eos=eos_id is not None,
        add_prefix_space=front_end[0] == "prepend" or front_end[1] != "never",
        prefix_scheme="after_each_special",
        reference=reference,
        byte_fallback=bool(model.get("byte_fallback", False)),
        added_tokens=added,
        front_end=front_end,
    )


def _added_entries(data: Dict[str, Any], front_end: Tuple[Any, ...], path: str) -> List[Dict[str, Any]]:
    """The file's added_tokens entries, checked."""
    entries = data.get("added_tokens") or []
    if not isinstance(entries, list):
        raise ModelFormatError(path, None, "added_tokens is not a list")
    for entry in entries:
        entry_id = json_id(entry.get("id")) if isinstance(entry, dict) else None
        # (tokenizers reads the id as a u32, then gives the token its own.)
        if entry_id is None or not 0 <= entry_id < 2**32 or not isinstance(entry.get("content"), str):
            raise ModelFormatError(path, None, f"added_tokens holds an invalid entry: {entry!r:.200}")
        if entry.get("normalized") and front_end[0] == "prepend" and entry["content"]:
            raise UnsupportedFeatureError(
                f"{path}: added token {entry['content']!r} is matched after normalization "
                f"(normalized=true), which spmbpe does not implement with a normalizer"
            )
    return entries


def _types(table: PieceTable, model_pieces: int, added: List[AddedToken]) -> bytes:
    """Each piece's type: the model's NORMAL (BYTE for <0xNN>), the ids past
    them USER_DEFINED, an added token's CONTROL when special."""
    n = len(table)
    types = bytearray([TokenType.NORMAL]) * n
    for i in range(model_pieces, n):
        types[i] = TokenType.USER_DEFINED
    for token in added:
        types[token.id] = TokenType.CONTROL if token.special else TokenType.USER_DEFINED
    for found in byte_piece_ids(table):
        if types[found] == TokenType.NORMAL:
            types[found] = TokenType.BYTE
    return bytes(types)


def _added_tokens(
    entries: List[Dict[str, Any]], vocab: Union[Dict[str, Any], LazyVocab], path: str, reference: str
) -> List[AddedToken]:
    """The added tokens with the ids tokenizers gives them, not the file's.

    Deserializing, tokenizers (0.22, 0.23) adds each entry in file order
    (AddedVocabulary.add_tokens) and only warns where an id differs: an
    entry of empty content is ignored; one whose content is already an added
    token or a piece of model.vocab gets that id (a later entry's lstrip and
    rstrip replace an earlier one's, but a text once special stays special:
    special_tokens_set); any other the next id past model.vocab and the
    added tokens so far.  (1.0's candidate takes a file's new tokens in the
    order of their ids instead; the two differ only where those are not in
    file order.)"""
    next_id = len(vocab)  # (model.vocab's ids are 0..n-1: _vocabulary checks)
    ids: Dict[str, int] = {}
    by_id: Dict[int, AddedToken] = {}
    special: Set[str] = set()
    for entry in entries:
        content = entry["content"]
        if not content:
            continue
        if reference == "transformers" and entry.get("single_word"):
            entry = {**entry, "single_word": False}  # matched by TokenizersMatcher (front_end[3])
        token_id = ids.get(content)
        if token_id is None:
            token_id = vocab.get(content)
            if not isinstance(token_id, int) or isinstance(token_id, bool):
                token_id = None  # (an id that is not one: _vocabulary names it)
        if token_id is None:
            token_id = next_id
            next_id += 1
        ids[content] = token_id
        if entry.get("special"):
            special.add(content)
        by_id[token_id] = added_token(entry, token_id, path, special=content in special)
    return [by_id[i] for i in sorted(by_id)]


def _vocabulary(
    vocab: Union[Dict[str, Any], LazyVocab], added: List[AddedToken], path: str
) -> Tuple[PieceTable, bytearray, Union[Dict[str, Any], LazyVocab]]:
    """The table of every id's piece (model.vocab's, then the added tokens'
    it lacks; ids 0..n-1), a flag per id for model.vocab's, and model.vocab
    (still a LazyVocab where compiled code read it, else json.loads's dict)."""
    if isinstance(vocab, LazyVocab):
        read = vocab.pieces()
        if read is not None:
            arena, offsets = read
            n_model = len(offsets) - 1
            beyond: Dict[int, str] = {}
            for token in added:
                if token.id >= n_model:
                    beyond.setdefault(token.id, token.content)
            n = n_model + len(beyond)
            _check_dense(max(beyond, default=0), n, lambda i: i < n_model or i in beyond, path)
            tail = [beyond[i].encode() for i in range(n_model, n)]
            # (No tokens beyond: the table get() may have made already.)
            table = cast(PieceTable, vocab.table()) if not tail else PieceTable(
                arena + b"".join(tail), offsets + piece_offsets(map(len, tail), offsets[-1])[1:])
            # A name given twice: json.loads keeps its last id (and the
            # first id's absence decides), as the dict below does.
            if not 0 <= table.first_duplicate < n_model:
                return table, bytearray(b"\x01") * n_model + bytearray(n - n_model), vocab
        vocab = vocab.spell()
        if not isinstance(vocab, dict) or not vocab:
            raise ModelFormatError(path, None, "model.vocab is missing or empty")
    by_id = _ids_of_pieces(vocab, path)
    n_model = len(by_id)
    model_id_list = list(by_id)
    for token in added:
        by_id.setdefault(token.id, token.content)
    n = len(by_id)
    _check_dense(max(by_id), n, by_id.__contains__, path)
    # (map over C functions: a comprehension's own steps were most of it.)
    table = PieceTable.from_pieces(list(map(str.encode, map(by_id.__getitem__, range(n)))))
    model_ids = bytearray(n)
    if n_model and max(model_id_list) == n_model - 1:
        model_ids[:n_model] = b"\x01" * n_model  # the model's ids are 0..n_model-1 (distinct)
    else:
        for i in model_id_list:
            model_ids[i] = 1
    return table, model_ids, vocab


def _check_dense(top: int, n: int, has: Callable[[int], bool], path: str) -> None:
    """Ids must be 0..n-1 with none missing; a stray huge id must not make
    us walk (or allocate) up to it."""
    if top >= n:
        missing = next(i for i in range(n) if not has(i))
        raise ModelFormatError(
            path, None, f"no piece has id {missing}, but ids go up to {top} (ids must be 0..n-1)"
        )


def _ids_of_pieces(vocab: Dict[str, Any], path: str) -> Dict[int, str]:
    """model.vocab turned around, id -> piece, in the file's order; each id
    a distinct JSON integer >= 0 (else ModelFormatError naming it)."""
    ids = list(vocab.values())
    # (Checked by built-ins at once, not by a Python loop over every
    # entry, a noticeable part of loading; bool is not int here.)
    if set(map(type, ids)) == {int} and min(ids) >= 0:
        by_id = dict(zip(ids, vocab))
        if len(by_id) == len(ids):
            return by_id
    by_id = {}
    for piece, token_id in vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise ModelFormatError(path, None, f"model.vocab[{piece!r}] is not an id: {token_id!r}")
        if token_id in by_id:
            raise ModelFormatError(path, None, f"model.vocab gives id {token_id} to {by_id[token_id]!r} and {piece!r}")
        by_id[token_id] = piece
    return by_id


def _front_end(data: Dict[str, Any], path: str) -> Tuple[Union[str, bool], ...]:
    """SpmTokenizer's front_end: ("metaspace", prepend_scheme, split) or
    ("prepend",)."""
    normalizer = data.get("normalizer")
    pre = data.get("pre_tokenizer")
    if normalizer is None and isinstance(pre, dict) and pre.get("type") == "Metaspace":
        if pre.get("replacement", _MARKER) != _MARKER:
            raise UnsupportedFeatureError(f"{path}: Metaspace replacement {pre.get('replacement')!r} is not implemented")
        scheme = pre.get("prepend_scheme")
        if scheme is None:  # older files: add_prefix_space
            scheme = "always" if pre.get("add_prefix_space", True) else "never"
        if scheme not in ("always", "first", "never"):
            raise UnsupportedFeatureError(f"{path}: Metaspace prepend_scheme {scheme!r} is not implemented")
        return ("metaspace", scheme, bool(pre.get("split", True)))
    if pre is None and isinstance(normalizer, dict) and normalizer.get("type") == "Sequence":
        steps = normalizer.get("normalizers") or []
        if (
            isinstance(steps, list)
            and len(steps) == 2
            and all(isinstance(step, dict) for step in steps)
            and steps[0].get("type") == "Prepend"
            and steps[0].get("prepend") == _MARKER
            and steps[1].get("type") == "Replace"
            and steps[1].get("pattern") == {"String": " "}
            and steps[1].get("content") == _MARKER
        ):
            return ("prepend",)
    described = (
        f"normalizer {normalizer.get('type') if isinstance(normalizer, dict) else normalizer!r}, "
        f"pre_tokenizer {pre.get('type') if isinstance(pre, dict) else pre!r}"
    )
    raise UnsupportedFeatureError(
        f"{path}: the front end ({described}) is not implemented; spmbpe reads Llama-style "
        f"files (a Metaspace pre-tokenizer, or a Prepend+Replace normalizer)"
    )


class DerivedMerges:
    """model.merges derived from the vocabulary (transformers 5's
    generate_merges): compiled code derives them as ids (core/rules.pyx),
    `spell` gives them as pairs of pieces where that does not decide."""

    def __init__(self, spell: Callable[[], List[List[str]]]) -> None:
        self.spell = spell

    def __repr__(self) -> str:
        return "DerivedMerges(...)"


def _merge_rules(
    merges: object, vocab: Union[Dict[str, int], LazyVocab], table: PieceTable, model_ids: bytearray, path: str
) -> Tuple["array[int]", "array[int]", "array[int]"]:
    """(left, right, merged) ids of the merge rules, in rank order (a pair
    listed twice is kept twice: the core keeps the later one, as tokenizers
    does).  Where the compiled lookups do not decide (RuleNotResolved), the
    vocabulary dict does, rule by rule, and names a rule at fault."""
    if isinstance(merges, DerivedMerges):
        try:
            return split_merge_ids(table, model_ids)
        except RuleNotResolved:
            merges = merges.spell()
    elif isinstance(merges, MergesInFile):
        try:
            return json_merge_rule_ids(table, merges.raw, merges.start, merges.end, model_ids)
        except RuleNotResolved:
            merges = merges.spell()
    if not isinstance(merges, list):
        raise ModelFormatError(path, None, "model.merges is missing or not a list")
    try:
        return merge_rule_ids(table, merges, model_ids)
    except ValueError:  # RuleNotResolved, or a surrogate that has no UTF-8
        pass
    if isinstance(vocab, LazyVocab):
        vocab = vocab.spell()
    left, right, merged = array("i"), array("i"), array("i")
    for i, rule in enumerate(merges):
        if isinstance(rule, str):
            a, sep, b = rule.partition(" ")
            if not sep:
                raise ModelFormatError(path, None, f"merge rule {i} ({rule!r}) is not 'left right'")
        elif isinstance(rule, list) and len(rule) == 2 and all(isinstance(x, str) for x in rule):
            a, b = rule
        else:
            raise ModelFormatError(path, None, f"merge rule {i} is not a pair of pieces: {rule!r}")
        left_id, right_id, merged_id = vocab.get(a), vocab.get(b), vocab.get(a + b)
        if left_id is None or right_id is None or merged_id is None:
            raise ModelFormatError(path, None, f"merge rule {i} ({a!r}, {b!r}) names a piece outside the vocabulary")
        left.append(left_id)
        right.append(right_id)
        merged.append(merged_id)
    return left, right, merged


def _template_ends(data: Dict[str, Any], path: str) -> Tuple[Optional[int], Optional[int]]:
    """BOS/EOS that the post-processor's single-sequence template adds."""
    post = data.get("post_processor")
    if post is None:
        return None, None
    if not isinstance(post, dict) or post.get("type") != "TemplateProcessing":
        raise UnsupportedFeatureError(
            f"{path}: post_processor {post.get('type') if isinstance(post, dict) else post!r} "
            f"is not implemented (TemplateProcessing is)"
        )
    single = post.get("single") or []
    specials = post.get("special_tokens") or {}
    if not isinstance(single, list) or not isinstance(specials, dict):
        raise ModelFormatError(path, None, "post_processor.single is not a list or special_tokens not an object")

    def special_id(item: object) -> Optional[int]:
        if isinstance(item, dict) and "SpecialToken" in item:
            ref = item["SpecialToken"]
            name = ref.get("id") if isinstance(ref, dict) else None
            entry = specials.get(name) if isinstance(name, str) else None
            ids = entry.get("ids") if isinstance(entry, dict) else None
            if not isinstance(ids, list) or not ids:
                raise ModelFormatError(path, None, f"post_processor: template special token {name!r} has no ids")
            if len(ids) != 1:
                raise UnsupportedFeatureError(f"{path}: template special token {name!r} is not one id")
            if not isinstance(ids[0], int) or isinstance(ids[0], bool):
                raise ModelFormatError(path, None, f"post_processor: the id of {name!r} is not an integer")
            return ids[0]
        return None

    if not single:
        return None, None
    return special_id(single[0]), special_id(single[-1]) if len(single) > 1 else None
