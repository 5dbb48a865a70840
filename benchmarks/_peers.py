"""The peers of benchmarks/scale.py: every tokenizer it times, and how each is called.

Only the standard library is imported at the top, so that a worker started with
another virtual environment's Python (``scale.py --python PATH``) can read this
file whatever that environment holds; each peer's library is imported when its
column is built.

A column is one tokenizer on one vocabulary file with the calls of each mode:

  line    one call per text, one thread: fn(tok, text) -> ids
  batch   the texts in one call on N threads: fn(tok, texts, n) -> list of id lists
  numpy   the same into one flat array: fn(tok, texts, n) -> (flat ids, starts),
          starts holding len(texts) + 1 offsets into ids
  files   a file of the texts, one a line, read by the peer's own reader on N
          threads: fn(tok, path, n) -> (flat ids, starts) (gigatoken's encode_files)

Every call encodes plain text: no BOS/EOS, and a special token's spelling in the
text is text (sentencepiece reads "</s>" as four characters).  A peer that has
no such call for a mode says which texts its call reads otherwise
(``Column.reads_specials``): those texts are left out of its id check and
counted, and every other text must agree.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"
MODEL = DATA / "mistral-v1.model"          # sentencepiece ModelProto of Mistral 7B v0.1
JSON = DATA / "mistral-v1.tokenizer.json"  # the same vocabulary as a tokenizer.json

# The control pieces of mistral-v1: the spellings a peer may read as a special token.
MISTRAL_SPECIALS = ("<unk>", "<s>", "</s>")


@dataclass
class Column:
    key: str      # unique in a run: library (and format) and version
    library: str  # distribution name, for the version line
    version: str
    make: Callable[[], object]
    modes: Dict[str, Callable] = field(default_factory=dict)
    # mode -> the special-token spellings that mode's call turns into ids
    # (texts holding one are left out of its id check).
    reads_specials: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    spmbpe: bool = False
    # tok -> the line call as one callable of the text, without a Python
    # frame of ours around it (a bound method): what the per-line loops time.
    bind: Optional[Callable] = None
    # tok -> a function of a list of texts that encodes them one by one as a
    # user's loop written for this call does, for a call that is no bound
    # method of one argument (keywords, or `.ids` to take): a function of
    # ours around each call would add a Python frame per text, which such
    # a loop never pays.  The per-line modes run it when given;
    # `loop(tok, keep=True)`'s function returns the ids of each text (a list
    # comprehension, for compare.py's check), else it drops them.
    loop: Optional[Callable] = None
    # Whose ids it must give: "spm" (sentencepiece's, for the .model and what
    # is converted from it) or "json" (tokenizers', for the tokenizer.json,
    # whose merges split a run of spaces otherwise: "  You" is
    # ["▁▁", "You"] there, ["▁", "▁You"] in sentencepiece).
    family: str = "spm"


def _version(module, dist: str) -> str:
    version = getattr(module, "__version__", None)
    if version is None:
        try:
            from importlib import metadata

            version = metadata.version(dist)
        except Exception:  # noqa: BLE001 - a version we cannot read is shown as "?"
            version = "?"
    return str(version)


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# --------------------------------------------------------------------------
# spmbpe: one column per format; the .model one in three calls


SPMBPE_FORMATS = ("model", "gguf", "json", "folder")
# encode_ordinary, encode(special="all").  (encode() with its default,
# special="raise", takes the "all" path on a text without a special token
# and raises on one: a corpus that spells one would stop it.)
SPMBPE_CALLS = ("ordinary", "all")


# The reference each format's ids are checked against: a model folder follows
# transformers 5, whose pipeline for this folder (merges derived from the
# .model, Metaspace) is the tokenizers library's on the tokenizer.json.
_FAMILY = {"model": "spm", "gguf": "spm", "json": "json", "folder": "json"}


def spmbpe_key(fmt: str, call: str = "ordinary") -> str:
    return f"spmbpe {fmt}" + ("" if call == "ordinary" else f" {call}")


def spmbpe_column(fmt: str, call: str, path: str) -> Column:
    import spmbpe
    # `import spmbpe` defers its modules to the first load; imported here,
    # as every peer's are, "loaded" is the tokenizer's memory, not the library's.
    import spmbpe.loading  # noqa: F401

    loop = None
    if call == "ordinary":
        bind = lambda t: t.encode_ordinary  # noqa: E731
    else:
        # (functools.partial with a keyword would build a dict of keywords
        # for every call, which a loop never pays.)
        bind = lambda t: lambda x, encode=t.encode: encode(x, special="all")  # noqa: E731

        def loop(t, keep=False):
            encode = t.encode
            if keep:
                return lambda texts: [encode(x, special="all") for x in texts]

            def each(texts):
                for x in texts:
                    encode(x, special="all")
            return each
    col = Column(spmbpe_key(fmt, call), "spmbpe", spmbpe.__version__, lambda: spmbpe.load(path),
                 {"line": lambda t, x: bind(t)(x)}, spmbpe=True, family=_FAMILY[fmt],
                 bind=bind, loop=loop)
    if call == "ordinary":
        col.modes["batch"] = lambda t, xs, n: t.encode_batch(xs, special="none", num_threads=n)
        col.modes["numpy"] = lambda t, xs, n: t.encode_batch(xs, special="none", num_threads=n,
                                                              return_numpy=True)
    else:
        # With special tokens read, the spellings of the vocabulary's control
        # pieces become their ids where sentencepiece reads text.
        col.reads_specials["line"] = MISTRAL_SPECIALS
    return col


def write_formats(tmp: Path, model: Path = MODEL, tokenizer_json: Path = JSON) -> Dict[str, str]:
    """The paths of mistral-v1 in every format spmbpe reads, the GGUF and the
    folder written under `tmp`: format -> path.  The GGUF needs the gguf and
    sentencepiece packages (left out without them)."""
    paths = {"model": str(model), "json": str(tokenizer_json)}
    folder = tmp / "mistral-v1-folder"
    folder.mkdir(exist_ok=True)
    (folder / "tokenizer.model").write_bytes(model.read_bytes())
    # As Mistral 7B v0.1's repository ships it: transformers' LlamaTokenizer,
    # legacy, BOS added by add_special_tokens, the three control pieces special.
    added = {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True} for i, c in enumerate(MISTRAL_SPECIALS)}
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "legacy": True, "add_bos_token": True,
        "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "added_tokens_decoder": added,
    }), encoding="utf-8")
    paths["folder"] = str(folder)
    gguf_path = tmp / "mistral-v1.gguf"
    if write_gguf(model, gguf_path):
        paths["gguf"] = str(gguf_path)
    return paths


def write_gguf(model: Path, out: Path) -> bool:
    """mistral-v1.model as a vocabulary-only GGUF, the way llama.cpp's
    converter writes a SentencePiece vocabulary (pieces, scores, token types,
    BOS/EOS/UNK ids).  False when gguf or sentencepiece is missing."""
    gguf, spm = _import("gguf"), _import("sentencepiece")
    if gguf is None or spm is None:
        return False
    sp = spm.SentencePieceProcessor(model_file=str(model))
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i).encode("utf-8"))
        scores.append(sp.get_score(i))
        # llama.cpp's token types: 1 normal, 2 unknown, 3 control, 5 unused, 6 byte.
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i)
                     else 5 if sp.is_unused(i) else 1)
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_string("tokenizer.ggml.model", "llama")
    writer.add_array("tokenizer.ggml.tokens", tokens)
    writer.add_array("tokenizer.ggml.scores", scores)
    writer.add_array("tokenizer.ggml.token_type", types)
    writer.add_uint32("tokenizer.ggml.bos_token_id", sp.bos_id())
    writer.add_uint32("tokenizer.ggml.eos_token_id", sp.eos_id())
    writer.add_uint32("tokenizer.ggml.unknown_token_id", sp.unk_id())
    writer.add_bool("tokenizer.ggml.add_bos_token", True)
    writer.add_bool("tokenizer.ggml.add_eos_token", False)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return True


# --------------------------------------------------------------------------
# The peers, each built when its library is importable


def _flat_from_bytes(np, ids: bytes, offsets: bytes):
    return np.frombuffer(ids, dtype="<u4"), np.frombuffer(offsets, dtype="<u8")


def _sentencepiece(spm, np) -> Column:
    v = _version(spm, "sentencepiece")
    model = str(MODEL)
    return Column(f"sentencepiece {v}", "sentencepiece", v, lambda: spm.SentencePieceProcessor(model_file=model),
                  {"line": lambda t, x: t.encode(x),
                   "batch": lambda t, xs, n: t.encode(xs, num_threads=n)},
                  bind=lambda t: t.encode)


def _splintr(splintr, np) -> Column:
    v = _version(splintr, "splintr-rs")
    # Its bundled copy of mistral-v1 (the same pieces and scores).
    col = Column(f"splintr-rs {v}", "splintr-rs", v, lambda: splintr.Tokenizer.from_pretrained("mistral_v1"),
                 {"line": lambda t, x: t.encode_ordinary(x),
                  "batch": lambda t, xs, n: t.encode_batch(xs)},
                 bind=lambda t: t.encode_ordinary)
    if np is not None:
        col.modes["numpy"] = lambda t, xs, n: _flat_from_bytes(np, *t.encode_batch_flat(xs))
    # Its batch calls have no plain-text form: they match special tokens.
    col.reads_specials = {"batch": MISTRAL_SPECIALS, "numpy": MISTRAL_SPECIALS}
    return col


def _kitoken(kitoken, np) -> Column:
    v = _version(kitoken, "kitoken")
    model = str(MODEL)
    return Column(f"kitoken {v}", "kitoken", v, lambda: kitoken.Kitoken.from_sentencepiece_file(model),
                  # encode_specials defaults to False: spellings stay text.
                  {"line": lambda t, x: t.encode(x),
                   "batch": lambda t, xs, n: t.encode_all(xs)},
                  bind=lambda t: t.encode)


def _tokie(tokie, np) -> Column:
    v = _version(tokie, "tokie")
    tj = str(JSON)

    def loop(t, keep=False):
        encode = t.encode
        if keep:
            return lambda texts: [encode(x, add_special_tokens=False).ids for x in texts]

        def each(texts):
            for x in texts:
                encode(x, add_special_tokens=False).ids
        return each

    col = Column(f"tokie {v}", "tokie", v, lambda: tokie.Tokenizer.from_json(tj),
                 {"line": lambda t, x: t.encode(x, add_special_tokens=False).ids,
                  "batch": lambda t, xs, n: [e.ids for e in t.encode_batch(xs, add_special_tokens=False)]},
                 family="json", loop=loop)
    if np is not None:
        def flat(t, xs, n):
            ids, lengths = t.encode_batch_flat(xs, add_special_tokens=False)
            return ids, np.concatenate((np.zeros(1, lengths.dtype), np.cumsum(lengths)))
        col.modes["numpy"] = flat
    # tokie has no call that reads a special token's spelling as text.
    col.reads_specials = {m: MISTRAL_SPECIALS for m in col.modes}
    return col


# Distribution name -> (module, builder(module, numpy or None) -> Column), in table order.
PEERS = {
    "sentencepiece": ("sentencepiece", _sentencepiece),
    "splintr-rs": ("splintr", _splintr),
    "tokenizers": ("tokenizers", lambda m, np: _tokenizers_column(m, str(JSON))),
    "kitoken": ("kitoken", _kitoken),
    "gigatoken": ("gigatoken", lambda m, np: _gigatoken_column(m, str(MODEL), np)),
    "tokie": ("tokie", _tokie),
}


def peer_columns(only: Optional[str] = None) -> Tuple[List[Column], List[str]]:
    """The peers importable in this interpreter (only the library `only`
    when given), and the names of the missing ones."""
    cols: List[Column] = []
    notes: List[str] = []
    for dist, (module, build) in PEERS.items():
        if only is not None and dist != only:
            continue
        mod = _import(module)
        if mod is None:
            notes.append(dist)
            continue
        cols.append(build(mod, _import("numpy")))
    return cols, notes


def _tokenizers_column(tokenizers, path: str) -> Column:
    v = _version(tokenizers, "tokenizers")
    # tokenizers matches added tokens (<s>, </s>, <unk>) in the text even
    # with add_special_tokens=False; encode_special_tokens makes it read them
    # as text: an attribute of the tokenizer before tokenizers 1.0, an
    # argument of the call from 1.0.
    cls = tokenizers.Tokenizer
    as_attribute = hasattr(cls, "encode_special_tokens")
    kw = {"add_special_tokens": False} if as_attribute else {"add_special_tokens": False, "encode_special_tokens": True}

    def make():
        tok = tokenizers.Tokenizer.from_file(path)
        if as_attribute:
            tok.encode_special_tokens = True
        return tok

    def loop(t, keep=False):
        encode = t.encode
        if keep:
            if as_attribute:
                return lambda texts: [encode(x, add_special_tokens=False).ids for x in texts]
            return lambda texts: [encode(x, add_special_tokens=False, encode_special_tokens=True).ids
                                  for x in texts]
        if as_attribute:
            def each(texts):
                for x in texts:
                    encode(x, add_special_tokens=False).ids
        else:
            def each(texts):
                for x in texts:
                    encode(x, add_special_tokens=False, encode_special_tokens=True).ids
        return each

    # encode_batch_fast (tokenizers 0.21 until 1.0) skips the offsets; 1.0 has
    # only encode_batch.
    batch_name = "encode_batch_fast" if hasattr(cls, "encode_batch_fast") else "encode_batch"
    return Column(f"tokenizers {v}", "tokenizers", v, make,
                  {"line": lambda t, x: t.encode(x, **kw).ids,
                   "batch": lambda t, xs, n: [e.ids for e in getattr(t, batch_name)(xs, **kw)]},
                  family="json", loop=loop)


def _gigatoken_column(gigatoken, model: str, np) -> Column:
    v = _version(gigatoken, "gigatoken")
    Tok = gigatoken.Tokenizer

    def flat(t, xs, n):
        # encode_batch's own output: an awkward list array, whose two
        # buffers are the flat ids and the offsets (no copy).
        layout = t.encode_batch(xs).layout
        return layout.content.data, layout.offsets.data

    def files(t, path, n):
        # encode_files on a text file, a document per line (its separator;
        # a bare path would be one document): gigatoken's own reader.
        layout = t.encode_files(gigatoken.TextFileSource([path], separator="\n")).layout
        return layout.content.data, layout.offsets.data

    col = Column(f"gigatoken {v}", "gigatoken", v, lambda: Tok.from_sentencepiece(model),
                 # encode returns a NumPy array per text.
                 {"line": lambda t, x: t.encode(x),
                  "batch": lambda t, xs, n: t.encode_batch_list(xs),
                  "numpy": flat,
                  "files": files},
                 bind=lambda t: t.encode)
    # gigatoken matches the control pieces' spellings in every call, with no
    # option to read them as text.
    col.reads_specials = {m: MISTRAL_SPECIALS for m in col.modes}
    return col


def column_registry(formats: Optional[Dict[str, str]], spmbpe_ok: bool,
                    only: Optional[str] = None) -> Tuple[Dict[str, Column], List[str]]:
    """Every column this interpreter can run: spmbpe's (when `formats` is
    given and spmbpe imports) and the peers'; with `only` (a column's key),
    just the columns of that key's library, the others not imported."""
    cols: Dict[str, Column] = {}
    library = only.split()[0] if only else None
    if formats and spmbpe_ok and library in (None, "spmbpe"):
        for fmt in SPMBPE_FORMATS:
            if fmt in formats:
                for call in SPMBPE_CALLS:
                    c = spmbpe_column(fmt, call, formats[fmt])
                    cols[c.key] = c
    if library == "spmbpe":
        return cols, []
    peers, notes = peer_columns(library)
    for c in peers:
        cols[c.key] = c
    return cols, notes


def file_kind(name: str) -> str:
    """"main" (English, code) or "other" (the other languages), for the targets."""
    return "other" if re.match(r"multi_", name) else "main"


def env_threads(n: int) -> Dict[str, str]:
    """Environment of a worker: Rayon's pool (tokenizers, splintr-rs, kitoken,
    tokie) sized like spmbpe's batch, and one OpenBLAS thread.  (NumPy is
    imported just before the timing, and OpenBLAS's threads spin for a
    while after NumPy's import: on two cores they took a core from
    whichever tokenizer ran next.  No tokenizer here uses BLAS; the
    spmbpe program sets the same for itself.)"""
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(n)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env
