"""The matrix of trained SentencePiece-BPE models in ``data/trained/``, made whole.

tools/make_trained_models.py trains each model of its matrix with
sentencepiece's own trainer and writes, per model ``NAME``:

* ``NAME.model.gz``: the ``.model`` file the trainer wrote (gzip-compressed);
* ``NAME.tokenizer.json.gz``: the ``tokenizer.json`` that transformers 5's
  ``save_pretrained`` wrote for the model's folder;
* ``NAME.jsonl.gz``: gzip-compressed JSONL, a first line ``{"name",
  "options", "sources", "config", "saved_config", "transformers",
  "tokenizers", "sentencepiece", "named", "variants"}`` (``config``: the
  minimal folder's ``tokenizer_config.json``; ``saved_config``: the one
  ``save_pretrained`` wrote; ``named``: per folder, transformers 5's
  ``[bos_token_id, eos_token_id, unk_token_id, pad_token_id]``;
  ``variants``: more folders, ``{key: {"from": "model" or "saved",
  "config"}}``, the config beside the model's ``tokenizer.model`` or beside
  the saved ``tokenizer.json``, with rows under ``key`` as well), then one
  row per text ``{"text", "minimal": [ids, ids_special, decode,
  decode_skip], "saved": [...]}`` and one per id list ``{"decode_ids",
  "minimal": [decode, decode_skip], "saved": [...]}``, from transformers 5's
  ``AutoTokenizer`` on the minimal folder (``tokenizer.model`` and its
  ``tokenizer_config.json``) and on the folder ``save_pretrained`` wrote
  from it: ``ids = encode(text, add_special_tokens=False)``, ``ids_special``
  with ``add_special_tokens=True``, and the decodes of ``ids_special`` (or
  of the id list) with ``skip_special_tokens=False/True``.

``materialize(name, dest)`` writes the model, both folders and the
``tokenizer.json`` under `dest`.  Used by tests/test_trained_models.py and
tools/differential.py (which reads the matrix live).
"""

from __future__ import annotations

import gzip
import json
import pathlib
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

DATA = pathlib.Path(__file__).parent / "data" / "trained"


class Materialized(NamedTuple):
    model: pathlib.Path  # the .model file
    minimal: pathlib.Path  # tokenizer.model + the minimal tokenizer_config.json
    saved: pathlib.Path  # what save_pretrained wrote
    tokenizer_json: pathlib.Path  # the saved folder's tokenizer.json
    variants: Dict[str, pathlib.Path] = {}  # other configs (meta "variants")

    def folders(self) -> Dict[str, pathlib.Path]:
        """Every model folder, by its key in the golden rows."""
        return {"minimal": self.minimal, "saved": self.saved, **self.variants}


def names() -> List[str]:
    return sorted(p.name[: -len(".jsonl.gz")] for p in DATA.glob("*.jsonl.gz"))


def read_golden(name: str) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(meta, rows) of one model's golden file."""
    lines = [json.loads(line) for line in gunzip(DATA / f"{name}.jsonl.gz").decode("utf-8").split("\n") if line]
    return lines[0], lines[1:]


def model_bytes(name: str) -> bytes:
    return gunzip(DATA / f"{name}.model.gz")


def gunzip(path: pathlib.Path) -> bytes:
    with gzip.open(path, "rb") as f:
        return f.read()


def write_gzip(path: pathlib.Path, data: bytes) -> None:
    """gzip with no name or timestamp inside, so that the same data gives
    the same bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(data)


def materialize(name: str, dest: pathlib.Path, meta: Dict[str, Any]) -> Materialized:
    """The files of model `name` (whose golden first line is `meta`) under `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    model = dest / f"{name}.model"
    model.write_bytes(model_bytes(name))
    minimal = dest / name
    minimal.mkdir(exist_ok=True)
    (minimal / "tokenizer.model").write_bytes(model.read_bytes())
    (minimal / "tokenizer_config.json").write_text(json.dumps(meta["config"], ensure_ascii=False), encoding="utf-8")
    saved = dest / f"{name}-saved"
    saved.mkdir(exist_ok=True)
    (saved / "tokenizer_config.json").write_text(json.dumps(meta["saved_config"], ensure_ascii=False), encoding="utf-8")
    (saved / "tokenizer.json").write_bytes(gunzip(DATA / f"{name}.tokenizer.json.gz"))
    variants = {}
    for key, variant in meta.get("variants", {}).items():
        folder = variants[key] = dest / f"{name}-{key}"
        folder.mkdir(exist_ok=True)
        source = model if variant["from"] == "model" else saved / "tokenizer.json"
        (folder / ("tokenizer.model" if variant["from"] == "model" else "tokenizer.json")).write_bytes(source.read_bytes())
        (folder / "tokenizer_config.json").write_text(json.dumps(variant["config"], ensure_ascii=False), encoding="utf-8")
    return Materialized(model, minimal, saved, saved / "tokenizer.json", variants)


def dropped_before_a_space(model: bytes) -> Callable[[str], bool]:
    """Whether a text has, right before a space (or U+2581), a character
    that the model's transformers 5 and tokenizer.json readings drop: no
    piece, and no byte piece for one of its bytes (tokenizers' BPE with no
    unknown token).  There the compiled core still cuts a chunk, so
    neighbours that tokenizers merges across the gap stay apart: a known
    divergence (tests/test_trained_models.py, xfail), which
    tools/differential.py counts apart."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_proto=model)
    pieces = {sp.id_to_piece(i) for i in range(sp.get_piece_size())}

    def dropped(c: str) -> bool:
        return c not in pieces and not all(f"<0x{b:02X}>" in pieces for b in c.encode("utf-8", "surrogatepass"))

    def check(text: str) -> bool:
        return any(b in " \u2581" and dropped(a) for a, b in zip(text, text[1:]))

    return check
