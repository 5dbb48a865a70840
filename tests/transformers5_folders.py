"""The transformers 5 golden folders of ``data/transformers5/``, made whole.

Each golden folder is committed with its small files only (configs,
``special_tokens_map.json``, ``added_tokens.json``, and for a folder that
``save_pretrained`` wrote, its ``tokenizer.json`` with the model section left
out); the vocabulary files come from ``tests/data``, as the first line of
``data/transformers5/<name>.jsonl.gz`` (gzip-compressed JSONL) says under ``"files"``:

* ``{"tokenizer.model": "mistral-v1.model"}``: copy that file in;
* ``{"tokenizer.json": "mistral-v1.tokenizer.json"}``: copy that file in, or,
  when the folder holds a ``tokenizer.json`` whose ``"model"`` is the string
  ``"@mistral-v1.tokenizer.json"``, put that file's model section there (the
  tool checked that the saved model section equals it).

Used by ``tools/make_transformers5_goldens.py`` (which writes the folders)
and ``tests/test_transformers5.py`` (which reads them).
"""

from __future__ import annotations

import gzip
import json
import pathlib
import shutil
from typing import Any, Dict, Iterator, List, Tuple

DATA = pathlib.Path(__file__).parent / "data"
GOLDEN = DATA / "transformers5"


def golden_names() -> List[str]:
    return sorted(p.name[: -len(".jsonl.gz")] for p in GOLDEN.glob("*.jsonl.gz"))


def read_golden(name: str) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(meta, rows) of one golden file: the first line is the meta object."""
    with gzip.open(GOLDEN / f"{name}.jsonl.gz", "rb") as f:
        raw = f.read().decode("utf-8")
    lines = [json.loads(line) for line in raw.split("\n") if line]
    return lines[0], lines[1:]


def materialize(name: str, files: Dict[str, str], dest: pathlib.Path) -> pathlib.Path:
    """The folder `name` with its vocabulary files, written at `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    # A folder of vocabulary files only (a bare tokenizer.json) has nothing
    # committed, and git keeps no empty folder.
    small = GOLDEN / name
    for item in small.iterdir() if small.is_dir() else ():
        shutil.copyfile(item, dest / item.name)
    for target, source in files.items():
        place(dest / target, DATA / source)
    return dest


def place(target: pathlib.Path, source: pathlib.Path) -> None:
    if target.name == "tokenizer.json" and target.exists():
        saved = json.loads(target.read_text(encoding="utf-8"))
        marker = saved.get("model")
        if marker != "@" + source.name:
            raise ValueError(f"{target}: model is {marker!r:.60}, expected '@{source.name}'")
        saved["model"] = json.loads(source.read_text(encoding="utf-8"))["model"]
        target.write_text(json.dumps(saved, ensure_ascii=False), encoding="utf-8")
        return
    shutil.copyfile(source, target)


def iter_rows(name: str) -> Iterator[Dict[str, Any]]:
    yield from read_golden(name)[1]
