"""Regenerate tests/data/transformers5/: transformers 5's ids on model folders.

    python tools/make_transformers5_goldens.py [--venv DIR] [--corpus DIR] [--check]

transformers 5 and transformers 4.x (which the project's other folder tests
pin, see tests/test_hf_folder.py) cannot share one environment, so this
script makes its own: it creates the virtual environment ``--venv``
(default /work/venvs/tf5) when it is missing, installs
``transformers>=5,<6 tokenizers sentencepiece protobuf`` into it with pip,
and runs itself again with that environment's Python.  It never installs
anything into the Python that started it.

It writes, under tests/data/transformers5/:

* ``<name>/``: the small files of one model folder, laid out as model
  repositories ship them (``tokenizer_config.json`` with ``legacy``
  true/false/absent, ``add_bos_token``/``add_eos_token``,
  ``add_prefix_space``, ``added_tokens_decoder`` entries with
  lstrip/rstrip/normalized/special/single_word; ``special_tokens_map.json``;
  ``added_tokens.json``; what ``save_pretrained`` writes).  The vocabulary
  files are not copied: tests/transformers5_folders.py puts them back from
  tests/data (see its docstring);
* ``<name>.jsonl.gz``: gzip-compressed JSONL, a first line ``{"folder", "files", "transformers",
  "tokenizers", "class", "backend"}`` (``backend``: the tokenizer.json of the
  tokenizers pipeline transformers built for the folder, its vocabulary and
  merges replaced by their size and SHA-256), then one object per input:
  ``{"text", "ids", "ids_special", "decode", "decode_skip"}`` with
  ``ids = encode(text, add_special_tokens=False)``, ``ids_special =
  encode(text, add_special_tokens=True)`` and ``decode``/``decode_skip`` =
  ``decode(ids_special, skip_special_tokens=False/True)``; then rows
  ``{"decode_ids", "decode", "decode_skip"}`` for id lists with control,
  unknown and byte ids mixed in.

Tokenizers come from ``AutoTokenizer.from_pretrained(folder)``, offline.
Inputs: the texts of the project's sentencepiece goldens for the folder's
vocabulary (tests/data/mistral-v*.model.jsonl: edge cases, whitespace,
mixed scripts, corpus lines, random strings of vocabulary pieces; all of
them for the main folders, a fixed subset for the variants), runs of spaces,
tabs and newlines between words, and every added or special token of the
folder placed around text and whitespace.

``--check`` loads the committed folders again and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = DATA / "transformers5"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from reference_env import reference_python  # noqa: E402

REQUIREMENTS = ["transformers>=5,<6", "tokenizers", "sentencepiece", "protobuf"]
# What reference_python runs in the environment to know it is made.
TRANSFORMERS5 = "import sys, transformers; sys.exit(transformers.__version__.split('.')[0] != '5')"
DEFAULT_VENV = pathlib.Path("/work/venvs/tf5")
N_SUBSET = 300  # texts of the sentencepiece goldens used for the variant folders

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


# ------------------------------------------------------------ the environment


def ensure_environment(venv: pathlib.Path, script: str = __file__) -> Optional[int]:
    """None when this Python has transformers 5; else the exit code of
    `script` (this one) run again inside `venv` (created and filled when
    missing) with this process's arguments."""
    try:
        import transformers

        if transformers.__version__.split(".")[0] == "5":
            return None
    except ImportError:
        pass
    if os.environ.get("SPMBPE_TF5_INSIDE"):
        sys.exit(f"{venv}: transformers 5 is still not importable there")
    python = reference_python(venv, REQUIREMENTS, TRANSFORMERS5)
    env = dict(os.environ, SPMBPE_TF5_INSIDE="1")
    return subprocess.run([python, script, *sys.argv[1:]], env=env).returncode


# ------------------------------------------------------------ the folders


def pieces_of(model: str) -> List[Any]:
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString((DATA / f"{model}.model").read_bytes())
    return list(proto.pieces)


def entry(content: str, special: bool = True, lstrip: bool = False, rstrip: bool = False,
          normalized: bool = False, single_word: bool = False) -> Dict[str, Any]:
    return {"content": content, "lstrip": lstrip, "normalized": normalized, "rstrip": rstrip,
            "single_word": single_word, "special": special}


def base_config(model: str, legacy_value: Any, **extra: Any) -> Dict[str, Any]:
    """tokenizer_config.json as model repositories ship it (the layout of
    the project's hf_slow fixtures): every control piece special in
    added_tokens_decoder."""
    decoder = {str(i): entry(p.piece) for i, p in enumerate(pieces_of(model)) if p.type in (2, 3)}
    config: Dict[str, Any] = {
        "add_bos_token": True,
        "add_eos_token": False,
        "added_tokens_decoder": decoder,
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": False,
        "eos_token": "</s>",
        "legacy": legacy_value,
        "model_max_length": 1000000000000000019884624838656,
        "pad_token": None,
        "sp_model_kwargs": {},
        "spaces_between_special_tokens": False,
        "tokenizer_class": "LlamaTokenizer",
        "unk_token": "<unk>",
        "use_default_system_prompt": False,
    }
    for key, value in extra.items():
        if value is _DROP:
            config.pop(key, None)
        else:
            config[key] = value
    return config


_DROP = object()
SPECIAL_MAP = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def folder_specs() -> List[Dict[str, Any]]:
    """name, vocabulary files, small files, texts ("all" or "subset"),
    and for save_pretrained folders the folder saved."""
    v1_added = dict(base_config("mistral-v1", True)["added_tokens_decoder"])
    v1_added.update({
        "32000": entry("<|im_start|>", lstrip=True),
        "32001": entry("<|im_end|>", rstrip=True),
        "32002": entry("<tool>", special=False, normalized=True),
        "32003": entry("<sw>", special=False, single_word=True),
        "32004": entry(" <sp>", special=False, lstrip=False),
    })
    v3_added = dict(base_config("mistral-v3", False)["added_tokens_decoder"])
    v3_added["3"] = entry("[INST]", rstrip=True)
    v3_added["4"] = entry("[/INST]", lstrip=True)
    v3_added["770"] = entry("[REFERENCE_DOC_0]", special=False, normalized=True)
    v3_added["32768"] = entry("<|extra|>", special=True, single_word=True)
    model = {"tokenizer.model": "mistral-v1.model"}
    model3 = {"tokenizer.model": "mistral-v3.model"}
    json1 = {"tokenizer.json": "mistral-v1.tokenizer.json"}
    return [
        # Mistral 7B v0.1 as shipped: legacy true (the hf_slow fixture, with BOS on).
        dict(name="v1-model-legacy", files=model, texts="all",
             small={"tokenizer_config.json": base_config("mistral-v1", True),
                    "special_tokens_map.json": SPECIAL_MAP}),
        dict(name="v1-model-nolegacy-eos", files=model, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", False, add_eos_token=True),
                    "special_tokens_map.json": SPECIAL_MAP}),
        dict(name="v1-model-absent-noprefix", files=model, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", None, legacy=_DROP,
                                                         add_bos_token=_DROP, add_prefix_space=False)}),
        dict(name="v1-model-absent-prefix", files=model, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", None, legacy=_DROP,
                                                         add_prefix_space=True, add_bos_token=False)}),
        dict(name="v1-model-added", files=model, texts="subset",
             small={"tokenizer_config.json": base_config(
                 "mistral-v1", True, added_tokens_decoder=v1_added, pad_token="<|im_end|>",
                 additional_special_tokens=["<|im_start|>", "<|im_end|>"]),
                 "special_tokens_map.json": dict(SPECIAL_MAP, pad_token="<|im_end|>")}),
        # Added tokens at ids of the model's pieces with other texts:
        # transformers 5 gives them the next ids past the vocabulary
        # (transformers 4 kept the config's ids).
        dict(name="v1-model-respelled", files=model, texts="subset",
             small={"tokenizer_config.json": base_config(
                 "mistral-v1", True, added_tokens_decoder=dict(
                     base_config("mistral-v1", True)["added_tokens_decoder"],
                     **{"5": entry("<mytok>", special=False), "6": entry("<myspecial>")}),
                 additional_special_tokens=["<myspecial>"])}),
        # clean_up_tokenization_spaces: ignored for a BPE model unless the
        # config insists (TokenizersBackend._decode).
        dict(name="v1-model-cleanup", files=model, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", True, clean_up_tokenization_spaces=True)}),
        dict(name="v1-model-cleanup-forced", files=model, texts="subset",
             small={"tokenizer_config.json": base_config(
                 "mistral-v1", True, clean_up_tokenization_spaces=True,
                 clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output=True)}),
        # The pre-4.34 layout: no added_tokens_decoder; special_tokens_map.json
        # and added_tokens.json carry the added tokens.
        dict(name="v1-model-old-layout", files=model, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", True, added_tokens_decoder=_DROP),
                    "special_tokens_map.json": {
                        "bos_token": {"content": "<s>", "lstrip": False, "normalized": False,
                                      "rstrip": False, "single_word": False},
                        "eos_token": {"content": "</s>", "lstrip": True, "normalized": False,
                                      "rstrip": False, "single_word": False},
                        "unk_token": "<unk>",
                        "additional_special_tokens": ["<|im_start|>"]},
                    "added_tokens.json": {"<|im_start|>": 32000, "<pad>": 32001}}),
        dict(name="v3-model-nolegacy", files=model3, texts="all",
             small={"tokenizer_config.json": base_config("mistral-v3", False, add_bos_token=False),
                    "special_tokens_map.json": SPECIAL_MAP}),
        dict(name="v3-model-legacy-bos", files=model3, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v3", True),
                    "special_tokens_map.json": SPECIAL_MAP}),
        dict(name="v3-model-absent-added", files=model3, texts="subset",
             small={"tokenizer_config.json": base_config(
                 "mistral-v3", None, legacy=_DROP, added_tokens_decoder=v3_added, add_eos_token=True)}),
        # What save_pretrained writes for the two v1 layouts above.
        dict(name="v1-saved-legacy", saved="v1-model-legacy", files=json1, texts="all"),
        dict(name="v1-saved-nolegacy-eos", saved="v1-model-nolegacy-eos", files=json1, texts="subset"),
        # The shipped tokenizer.json beside tokenizer.model and the config.
        dict(name="v1-json-and-model", files=dict(json1, **model), texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", True),
                    "special_tokens_map.json": SPECIAL_MAP}),
        # tokenizer.json with a config that asks for BOS and EOS (no .model).
        dict(name="v1-json-config", files=json1, texts="subset",
             small={"tokenizer_config.json": base_config("mistral-v1", True, add_eos_token=True)}),
        dict(name="v1-json-bare", files=json1, texts="all", small={}),
    ]


def write_folder(spec: Dict[str, Any], built: Dict[str, pathlib.Path], tmp: pathlib.Path) -> pathlib.Path:
    """Write the small files of `spec` under OUT and a whole copy under tmp."""
    from transformers import AutoTokenizer

    import transformers5_folders as folders

    name = spec["name"]
    small_dir = OUT / name
    if small_dir.exists():
        shutil.rmtree(small_dir)
    small_dir.mkdir(parents=True)
    if "saved" in spec:
        saved_dir = tmp / (name + "-save")
        AutoTokenizer.from_pretrained(str(built[spec["saved"]])).save_pretrained(str(saved_dir))
        for item in sorted(saved_dir.iterdir()):
            if item.name == "tokenizer.json":
                data = json.loads(item.read_text(encoding="utf-8"))
                source = DATA / spec["files"]["tokenizer.json"]
                if data["model"] != json.loads(source.read_text(encoding="utf-8"))["model"]:
                    raise SystemExit(f"{name}: the saved model section differs from {source.name}")
                data["model"] = "@" + source.name
                (small_dir / item.name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
            elif item.name.endswith(".json"):
                shutil.copyfile(item, small_dir / item.name)
            else:
                raise SystemExit(f"{name}: save_pretrained wrote an unexpected file {item.name}")
    else:
        for file_name, content in spec["small"].items():
            (small_dir / file_name).write_text(json.dumps(content, ensure_ascii=False, indent=2), encoding="utf-8")
    return folders.materialize(name, spec["files"], tmp / name)


# ------------------------------------------------------------ the inputs


def golden_texts(model: str) -> List[str]:
    raw = (DATA / f"{model}.model.jsonl").read_bytes().decode("utf-8")
    return [json.loads(line)["text"] for line in raw.split("\n") if line]


def whitespace_texts() -> List[str]:
    out = []
    for k in range(1, 18):
        for ws in (" ", "\t", "\n", " \n", "\n "):
            out += [ws * k, "a" + ws * k + "b", ws * k + "word", "word" + ws * k]
    out += ["Hello" + " " * k + "world" + " " * (k + 1) + "!" for k in range(1, 9)]
    out += [" two  spaces", "  two  spaces", "   three   spaces   ", "\u2581 \u2581x", "x \u2581\u2581 y"]
    # The rows measured in issue 22.
    out += ["[INST]Write", " <s>x", "<s>x", "[control_27]Write"]
    return out


# Around a special text: the neighbours where the references disagree
# (spaces before and after it, start and end of input, other scripts); the
# same arrangements as tools/make_gguf_variant_goldens.py, which needs gguf.
AROUND = [
    "{t}", "{t}{t}", "{t} {t}", "{t}\n{t}", "Hello{t}", "{t}Hello", "Hello{t}world", "Hello {t} world",
    " {t}", "{t} ", "  {t}  ", "\n{t}\n", "\t{t}\t", " \n\t{t}\t\n ", "a\n{t}\nb", "a \n{t} \nb",
    "{t}\n\nHello", "{t}  Hello", "Hello  {t}", "\r\n{t}\r\n", "\u00a0{t}\u00a0", "\u2581{t}\u2581x",
    "\u00e9{t}\u4e2d", "{t} {t}  {t}\n", "[INST]{t}Write", "x {t}x", "x  {t}  x",
]


def special_texts(tokens: List[str]) -> List[str]:
    out: List[str] = []
    for t in tokens:
        out += [a.format(t=t) for a in AROUND] + [t[:-1], t[1:], "x" + t[:-1] + " " + t]
    for a, b in zip(tokens, tokens[1:] + tokens[:1]):
        out += [a + b, a + " " + b, a + "\n" + b, b + " x " + a]
    if len(tokens) > 1:
        out += ["".join(tokens), " ".join(tokens), "x".join(tokens) + "x"]
    return out


def folder_texts(model: str, which: str, tokens: List[str]) -> List[str]:
    texts = golden_texts(model)
    if which == "subset":
        rng = random.Random(f"{model}-subset")
        chosen = list(range(120)) + sorted(rng.sample(range(120, len(texts)), N_SUBSET - 120))
        texts = [texts[i] for i in chosen]
    out = texts + whitespace_texts() + special_texts(tokens)
    seen: set = set()
    return [t for t in out if not (t in seen or seen.add(t))]


def decode_lists(tok: Any, rows: List[Dict[str, Any]]) -> List[List[int]]:
    """Id lists with control, unknown and byte ids mixed in."""
    vocab = tok.get_vocab()
    controls = sorted(i for i in tok.all_special_ids if i is not None)[:6]
    unk = vocab.get("<unk>", 0)
    byte = [vocab[f"<0x{b:02X}>"] for b in (0x20, 0x41, 0xE6, 0x97, 0xA5, 0xFF) if f"<0x{b:02X}>" in vocab]
    lone = vocab.get("\u2581")
    out: List[List[int]] = [[], [unk], [unk, unk], byte, byte[2:5], byte[:1] + byte[2:5]]
    if lone is not None:
        out += [[lone], [lone, lone], [lone] + controls[:1], controls[:1] + [lone]]
    rng = random.Random(1234)
    sample = [r["ids"] for r in rows if r["ids"]][:: max(1, len(rows) // 60)]
    for ids in sample:
        for c in controls + [unk]:
            k = rng.randrange(len(ids) + 1)
            out += [[c] + ids, ids + [c], ids[:k] + [c] + ids[k:], ids[:k] + [c, c] + ids[k:]]
        if byte:
            k = rng.randrange(len(ids) + 1)
            out.append(ids[:k] + byte[2:5] + ids[k:])
            out.append(ids[:k] + byte[3:4] + ids[k:])
    seen: set = set()
    return [x for x in out if not (tuple(x) in seen or seen.add(tuple(x)))]


# ------------------------------------------------------------ recording


def backend_summary(tok: Any) -> Dict[str, Any]:
    data = json.loads(tok.backend_tokenizer.to_str())
    model = data["model"]
    for key in ("vocab", "merges"):
        value = model.get(key)
        blob = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        model[key] = {"size": len(value) if value is not None else None,
                      "sha256": hashlib.sha256(blob).hexdigest()}
    return data


def record(spec: Dict[str, Any], folder: pathlib.Path) -> List[Dict[str, Any]]:
    import tokenizers
    import transformers
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = "mistral-v3" if "v3" in spec["name"].split("-")[0] else "mistral-v1"
    specials = [str(t) for t in tok.added_tokens_decoder.values()]
    tokens = [t for t in specials if t in ("<s>", "</s>", "<unk>")]
    tokens += [t for t in specials if t not in tokens][:12]
    rows: List[Dict[str, Any]] = []
    for text in folder_texts(model, spec["texts"], tokens):
        ids = tok.encode(text, add_special_tokens=False)
        with_special = tok.encode(text, add_special_tokens=True)
        rows.append({
            "text": text, "ids": ids, "ids_special": with_special,
            "decode": tok.decode(with_special, skip_special_tokens=False),
            "decode_skip": tok.decode(with_special, skip_special_tokens=True),
        })
    for ids in decode_lists(tok, rows):
        rows.append({"decode_ids": ids, "decode": tok.decode(ids, skip_special_tokens=False),
                     "decode_skip": tok.decode(ids, skip_special_tokens=True)})
    meta = {
        "folder": spec["name"], "files": spec["files"],
        "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
        "class": type(tok).__name__, "backend": backend_summary(tok),
    }
    return [meta] + rows


def write_jsonl(path: pathlib.Path, lines: List[Dict[str, Any]]) -> None:
    """gzip-compressed JSONL (about 8x smaller), with no timestamp inside so
    that the same rows give the same bytes."""
    import gzip

    text = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(text.encode("utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=pathlib.Path, default=DEFAULT_VENV)
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    ap.add_argument("--only", action="append", help="regenerate only these folders")
    args = ap.parse_args()
    code = ensure_environment(args.venv)
    if code is not None:
        return code
    import transformers5_folders as folders

    OUT.mkdir(parents=True, exist_ok=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        built: Dict[str, pathlib.Path] = {}
        for spec in folder_specs():
            name = spec["name"]
            if args.check:
                meta, old_rows = folders.read_golden(name)
                folder = folders.materialize(name, meta["files"], tmp / name)
                new = record(spec, folder)
                differ = [(a, b) for a, b in zip(old_rows, new[1:]) if a != b]
                print(f"{name}: {len(new) - 1} rows, {len(differ)} differ")
                bad += len(differ) + abs(len(old_rows) - (len(new) - 1))
                built[name] = folder
                continue
            folder = write_folder(spec, built, tmp)
            built[name] = folder
            if args.only and name not in args.only:
                continue
            lines = record(spec, folder)
            write_jsonl(OUT / f"{name}.jsonl.gz", lines)
            print(f"{name}: {len(lines) - 1} rows ({lines[0]['class']})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
