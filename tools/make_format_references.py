#!/usr/bin/env python3
"""Reference files for the array formats, written by the training tools' own
writers, for tests/test_cli_formats.py to compare spmbpe's bytes with.

    python tools/make_format_references.py [--venv DIR]

For each case of tests/data/formats/cases.json (an input file, spmbpe encode
flags, a model) this script takes the documents' ids from
``spmbpe encode --format jsonl`` (this checkout's spmbpe), then, inside a
virtual environment of its own (created at --venv, default
/tmp/spmbpe-format-refs, with ``pip install torch megatron-core datatrove``),
writes them with

- megatron-core's ``IndexedDatasetBuilder`` (dtype
  ``DType.optimal_dtype(vocab_size)``, ``add_item`` + ``end_document`` per
  document, ``finalize``): CASE.bin + CASE.idx;
- datatrove's ``TokenizedFile`` (token_size 2, or 4 past 65,536 ids;
  ``write`` per document, ``close``): CASE.ds + CASE.ds.index;

into tests/data/formats/, and records the package versions in
tests/data/formats/VERSIONS. The tests need neither package: they compare
bytes. The files are small (a few kB); commit them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "tests" / "data" / "formats"
sys.path.insert(0, str(ROOT / "tools"))

from reference_env import reference_python  # noqa: E402

PACKAGES = ["torch", "megatron-core", "datatrove", "tokenizers", "numpy"]  # datatrove.pipeline.tokens imports tokenizers

# Runs in the venv: reads {"cases": {name: {"vocab_size": n, "docs": [[ids]]}}, "out": dir}.
_WRITER = r'''
import json, sys
import numpy, torch
from importlib.metadata import version
from megatron.core.datasets.indexed_dataset import DType, IndexedDatasetBuilder
from datatrove.pipeline.tokens.tokenizer import TokenizedFile

job = json.load(open(sys.argv[1]))
out = job["out"]
for name, case in job["cases"].items():
    # As megatron's tools/preprocess_data.py builds its dataset.
    builder = IndexedDatasetBuilder(f"{out}/{name}.bin", dtype=DType.optimal_dtype(case["vocab_size"]))
    for ids in case["docs"]:
        builder.add_item(torch.tensor(ids, dtype=torch.int64))
        builder.end_document()
    builder.finalize(f"{out}/{name}.idx")
    # As datatrove's DocumentTokenizer writes a shard (token_size from the vocabulary).
    token_size = 4 if case["vocab_size"] > numpy.iinfo(numpy.uint16).max + 1 else 2
    tokens = TokenizedFile(out, f"{name}.ds", save_index=True, token_size=token_size)
    for ids in case["docs"]:
        tokens.write(ids, None)
    tokens.close()
print(json.dumps({p: version(p) for p in ("torch", "megatron-core", "datatrove", "numpy")}))
'''


def model_path(case: dict, work: Path) -> str:
    """The model of a case: a path under tests/data, or "wide": mistral-v1's
    tokenizer.json grown past 65,536 ids (as tests/test_cli.py builds it)."""
    if case["model"] != "wide":
        return str(ROOT / case["model"])
    return str(wide_model(work))


def wide_model(folder: Path) -> Path:
    spec = json.loads((ROOT / "tests" / "data" / "mistral-v1.tokenizer.json").read_text(encoding="utf-8"))
    for i in range(32000, 70000):
        spec["model"]["vocab"][f"zzq{i}"] = i
    spec["added_tokens"].append({"id": 70000, "content": "<|big|>", "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": False, "special": True})
    path = folder / "wide.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=os.path.join(tempfile.gettempdir(), "spmbpe-format-refs"))
    args = parser.parse_args()
    python = reference_python(args.venv, PACKAGES, "import megatron.core, datatrove, torch, numpy")

    sys.path.insert(0, str(ROOT))
    import spmbpe

    cases = json.loads((FORMATS / "cases.json").read_text(encoding="utf-8"))
    job: dict = {"out": str(FORMATS), "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in cases.items():
            model = model_path(case, Path(tmp))
            encoded = subprocess.run(
                [sys.executable, "-m", "spmbpe", "encode", "--model", model, "--format", "jsonl",
                 *case["flags"], str(FORMATS / case["input"])],
                check=True, capture_output=True, cwd=ROOT,
            ).stdout
            docs = [json.loads(line) for line in encoded.decode().splitlines()]
            job["cases"][name] = {"vocab_size": spmbpe.load(model).vocab_size, "docs": docs}
        job_file = Path(tmp) / "job.json"
        job_file.write_text(json.dumps(job))
        versions = subprocess.run([str(python), "-c", _WRITER, str(job_file)], check=True,
                                  stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    (FORMATS / "VERSIONS").write_text(
        "Written by tools/make_format_references.py with: "
        + ", ".join(f"{k} {v}" for k, v in json.loads(versions).items()) + "\n"
    )
    print(f"wrote {len(cases)} cases to {FORMATS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
