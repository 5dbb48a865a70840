"""How far spmbpe.load(folder) is from the transformers 5 goldens, per folder.

    python tools/transformers5_agreement.py [REFERENCE]

For every folder of tests/data/transformers5/ (see
tools/make_transformers5_goldens.py), the share of rows where spmbpe differs
from transformers 5: ``encode(text)``, ``encode(text,
add_special_tokens=True)``, and ``decode(ids)`` / ``decode(ids,
skip_special=True)`` (over the encoded texts and the extra id lists).
REFERENCE is passed to ``spmbpe.load(folder, reference=...)`` (default: the
folder default).  Runs with the Python and spmbpe of the caller.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))  # this checkout's spmbpe

import transformers5_folders as folders  # noqa: E402  (tests/transformers5_folders.py)

import spmbpe  # noqa: E402


def main() -> int:
    reference = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        for name in folders.golden_names():
            meta, rows = folders.read_golden(name)
            folder = folders.materialize(name, meta["files"], pathlib.Path(tmp) / name)
            try:
                tok = spmbpe.load(folder) if reference is None else spmbpe.load(folder, reference=reference)
            except Exception as exc:  # a folder the reading refuses is reported, not fatal
                print(f"{name:26s} not loaded: {type(exc).__name__}: {str(exc)[:90]}")
                continue
            # The goldens are transformers' tok(text): special-token text is read as special.
            enc = [r for r in rows if "text" in r]
            ids = sum(tok.encode(r["text"], special="all") != r["ids"] for r in enc)
            special = sum(tok.encode(r["text"], add_special_tokens=True, special="all") != r["ids_special"]
                          for r in enc)
            lists = [r.get("ids_special", r.get("decode_ids")) for r in rows]
            try:
                dec = sum(tok.decode(x) != r["decode"] for x, r in zip(lists, rows))
                skip = sum(tok.decode(x, skip_special=True) != r["decode_skip"] for x, r in zip(lists, rows))
            except spmbpe.SpmbpeError as exc:  # an id this reading does not have
                print(f"{name:26s} not decoded: {type(exc).__name__}: {str(exc)[:90]}")
                continue
            print(f"{name:26s} {len(enc):5d} texts: ids {ids / len(enc):6.1%}  ids_special "
                  f"{special / len(enc):6.1%}  | {len(rows):5d} id lists: decode {dec / len(rows):6.1%}  "
                  f"skip {skip / len(rows):6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
