#!/usr/bin/env python3
"""spmbpe against the live references, on random text, for as long as asked.

    python tools/differential.py [--seconds N] [--seed S] [--corpus DIR]
                                 [--folders-texts N] [--venv DIR] [--no-folders]
                                 [--trained-texts N] [--explore-trainer SECONDS] [--explore-texts N]
                                 [--explore-keep DIR]
                                 [--tokenizers-python PATH ...] [--transformers4-venv DIR]
                                 [--llama-venv DIR] [--gguf-texts N]

The tests pin every rule with goldens and short hypothesis runs; this runs
the same comparisons on many more texts, drawn at random: slices of the
large corpus's files (``../shared/tools/make_large_corpus.py``; the small
corpus of tests/data when it is missing), runs of code points from a dozen
scripts and from the control, private-use and emoji ranges, whitespace runs
(spaces, tabs, newlines, U+2581, no-break and ideographic spaces) and every
special-token spelling of the vocabularies.

* ``mistral-v1.model`` and ``mistral-v3.model`` against sentencepiece:
  ``encode_ordinary(text) == sp.encode(text)``, and ``decode`` of those ids
  and of random ids equal to ``sp.decode``;
* ``mistral-v1.tokenizer.json`` against tokenizers:
  ``encode(text, special="all") == Tokenizer.encode(text,
  add_special_tokens=False).ids`` and ``decode`` of those ids equal;
* ``encode_batch`` (lists and NumPy, one and two threads) and the command
  line's line blocks against ``encode`` of each text;
* then, unless ``--no-folders``, every folder of tests/data/transformers5
  (made whole) against transformers 5's ``AutoTokenizer``, run in its own
  virtual environment (``--venv``, made as tools/make_transformers5_goldens.py
  makes it): ``encode(text, special="all")`` with and without
  ``add_special_tokens``, and ``decode`` with and without ``skip_special``
  of those ids, on ``--folders-texts`` texts, and of as many random id lists;
* every model of tests/data/trained (``--trained-texts`` texts and id
  lists each, drawn with the model's own special pieces): the ``.model``
  against sentencepiece (ids, ids with BOS, decodes of those and of random
  id lists with control, unknown, user-defined, byte and unused ids, the
  special ids), its minimal folder and the folder ``save_pretrained``
  wrote against transformers 5 in ``--venv`` (as the folders above, and
  the named ids) and that folder's ``tokenizer.json`` against tokenizers;
* with ``--explore-trainer SECONDS``, models trained for that long with
  random combinations of trainer options (tools/make_trained_models.py
  ``random_options``) on random slices of the corpus, each in a folder with
  a random config and saved by transformers 5, compared as the matrix is
  on ``--explore-texts`` texts and id lists each (with ``--explore-keep
  DIR``, a batch of models that gave mismatches is kept there with the
  mismatches' inputs);
* with ``--tokenizers-python PATH`` (repeatable: an interpreter whose
  environment holds another tokenizers, e.g. 1.0's release candidate), the
  tokenizer.json against that tokenizers as above, on ``--folders-texts``
  texts, and ``decode`` of as many random id lists;
* with ``--transformers4-venv DIR``, the two golden folders of
  tests/test_hf_folder.py (Mistral v1, ``legacy: true``; v3, ``legacy:
  false``) and the eleven of tests/transformers4_folders.py loaded with
  ``reference="transformers4"`` against transformers 4's slow
  ``LlamaTokenizer`` (the version of the ``hf_slow`` goldens, installed
  there when missing), compared as the folders above, on
  ``--folders-texts`` texts;
* with ``--llama-venv DIR``, the GGUF fixture and every variant of
  tests/gguf_variants.py against llama.cpp through llama-cpp-python in that
  environment (installed when missing, which compiles llama.cpp: 10-15
  minutes on two cores): ``encode`` with ``special="none"``, ``"all"`` and
  BOS/EOS as the file says (``tokenize(..., add_bos, special)``), and
  ``decode_bytes`` of the last with and without ``skip_special``
  (``llama_detokenize``), on ``--gguf-texts`` texts; and ``decode_bytes`` of
  as many random id lists (unknown, BOS, EOS and byte ids first, last and
  among others).

Each mismatch is printed with its text; the last line is a summary, and the
exit status 1 when anything differed.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from reference_env import reference_python  # noqa: E402

_RANGES = [(0x20, 0x7E), (0x00, 0x1F), (0xA0, 0x2FF), (0x300, 0x36F), (0x370, 0x52F), (0x590, 0x6FF),
           (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2580, 0x259F),
           (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xFE00, 0xFE0F),
           (0xFF00, 0xFFEF), (0x1F300, 0x1F6FF), (0x10000, 0x1FFFF), (0xE0000, 0xE007F)]
#: The transformers of the hf_slow goldens (tests/data/mistral-v*.model.jsonl).
TRANSFORMERS4 = "transformers==4.57.6"
#: The binding of llama.cpp the GGUF goldens come from (tests/data/llama-spm.gguf.jsonl).
LLAMA_CPP = "llama-cpp-python==0.3.36"
_WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u2581", "\u2581\u2581", "\u00a0", "\u3000", "\u200b",
               "\ufeff"]


class Texts:
    """Random texts of the kinds above."""

    def __init__(self, rng: random.Random, corpus: List[str], specials: List[str]) -> None:
        self.rng, self.corpus, self.specials = rng, corpus, specials

    def __call__(self, longest: int = 200) -> str:
        rng, parts = self.rng, []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.4:
                src = rng.choice(self.corpus)
                at = rng.randrange(len(src))
                parts.append(src[at : at + rng.choice([2, 8, 30, longest])])
            elif r < 0.65:
                lo, hi = rng.choice(_RANGES)
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 10))))
            elif r < 0.85:
                parts.append(rng.choice(self.specials))
            else:
                parts.append("".join(rng.choice(_WHITESPACE) for _ in range(rng.randint(1, 3))))
        return "".join(c for c in "".join(parts) if not 0xD800 <= ord(c) <= 0xDFFF)


def _corpus(folder: pathlib.Path) -> List[str]:
    files = sorted(folder.glob("*.txt")) or sorted((DATA / "corpus").glob("*.txt"))
    return [f.read_text(encoding="utf-8")[:3_000_000] for f in files]


class Report:
    def __init__(self) -> None:
        self.counts: Dict[str, List[int]] = {}
        #: The first mismatches of each kind, whole: (kind, input, spmbpe's, the reference's).
        self.examples: List[Tuple[str, Any, Any, Any]] = []

    def check(self, what: str, text: Any, mine: Any, theirs: Any) -> None:
        """Counts one comparison."""
        row = self.counts.setdefault(what, [0, 0])
        row[0] += 1
        if mine != theirs:
            row[1] += 1
            if row[1] <= 3:
                self.examples.append((what, text, mine, theirs))
                print(f"MISMATCH {what}: {text!r:.300}\n  spmbpe    {str(mine)[:300]}\n  reference {str(theirs)[:300]}",
                      flush=True)

    def failed(self) -> int:
        return sum(bad for _, bad in self.counts.values())

    def summary(self) -> str:
        """The totals, and each comparison that differed."""
        checks = sum(n for n, _ in self.counts.values())
        differed = "; ".join(f"{what}: {bad} of {n}" for what, (n, bad) in self.counts.items() if bad)
        return f"{self.failed():,} mismatches in {checks:,} comparisons of {len(self.counts)} kinds" + (
            f" ({differed})" if differed else "")


def run_libraries(texts: Texts, seconds: float, report: Report) -> None:
    """The .model files, the tokenizer.json and spmbpe's own batch paths."""
    import numpy as np
    import sentencepiece
    import tokenizers

    import spmbpe

    models = {name: (spmbpe.load(DATA / name), sentencepiece.SentencePieceProcessor(model_file=str(DATA / name)))
              for name in ("mistral-v1.model", "mistral-v3.model")}
    json_tok = spmbpe.load(DATA / "mistral-v1.tokenizer.json")
    json_ref = tokenizers.Tokenizer.from_file(str(DATA / "mistral-v1.tokenizer.json"))
    rng, end, n = texts.rng, time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
        text = texts(longest=rng.choice([200, 200, 200, 150_000]))
        for name, (tok, sp) in models.items():
            ids = sp.encode(text)
            report.check(f"{name} encode", text, tok.encode_ordinary(text), ids)
            report.check(f"{name} decode", ids, tok.decode(ids), sp.decode(ids))
            noise = [rng.randrange(tok.vocab_size) for _ in range(rng.randint(1, 24))]
            report.check(f"{name} decode of random ids", noise, tok.decode(noise), sp.decode(noise))
        ids = json_ref.encode(text, add_special_tokens=False).ids
        report.check("tokenizer.json encode", text, json_tok.encode(text, special="all"), ids)
        report.check("tokenizer.json decode", ids, json_tok.decode(ids), json_ref.decode(ids, skip_special_tokens=False))
        if n % 20 == 0:
            tok = rng.choice([json_tok, *(t for t, _ in models.values())])
            batch = [texts() for _ in range(rng.randint(1, 40))]
            each = [tok.encode(t, special="none") for t in batch]
            threads = rng.choice([1, 2])
            report.check("encode_batch", batch, tok.encode_batch(batch, special="none", num_threads=threads), each)
            flat, starts = tok.encode_batch(batch, special="none", num_threads=threads, return_numpy=True)
            report.check("encode_batch NumPy", batch, [flat[a:b].tolist() for a, b in zip(starts, starts[1:])], each)
            lines = [t.replace("\r", " ").replace("\n", " ") for t in batch]
            got = tok.encode_line_block("".join(t + "\n" for t in lines).encode("utf-8"), special="none",
                                         num_threads=threads)
            if got is not None:
                ids_, offsets = np.frombuffer(got[0], np.uint32), np.frombuffer(got[1], np.int64)
                report.check("line blocks", lines, [ids_[a:b].tolist() for a, b in zip(offsets, offsets[1:])],
                             [tok.encode(t, special="none") for t in lines])
    print(f"{n} texts through the .model files and the tokenizer.json", flush=True)


def _folder_specials() -> List[str]:
    from transformers5_folders import GOLDEN

    found = {"<s>", "</s>", "<unk>"}
    for config in GOLDEN.glob("*/tokenizer_config.json"):
        for entry in json.loads(config.read_text(encoding="utf-8")).get("added_tokens_decoder", {}).values():
            found.add(entry["content"])
    return sorted(found)


# ------------------------------------------------------------ references in environments of their own


def _id_lists(rng: random.Random, n: int, vocab_size: int) -> List[List[int]]:
    """n lists of up to 8 ids, with the sentinels of Llama's vocabularies
    (unknown 0, BOS 1, EOS 2) and byte pieces (3-258) first, last and
    between others."""
    return [[rng.choice([0, 1, 2, rng.randrange(3, 259), rng.randrange(vocab_size)])
             for _ in range(rng.randint(0, 8))] for _ in range(n)]


def _ask(python: str, kind: str, request: Dict[str, Any], tmp: str) -> Dict[str, Any]:
    """`kind`'s answer to `request`, from this script run by `python`."""
    asked, answer = pathlib.Path(tmp, f"{kind}-request.json"), pathlib.Path(tmp, f"{kind}-answer.json")
    asked.write_text(json.dumps(request), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    subprocess.run([python, __file__, "--reference-worker", kind, str(asked), str(answer)], check=True, env=env)
    return dict(json.loads(answer.read_text(encoding="utf-8")))


def run_folders(texts: Texts, n: int, venv: pathlib.Path, report: Report) -> None:
    """The transformers 5 folders: their ids and decodes from transformers 5
    in its environment, compared here."""
    from make_transformers5_goldens import REQUIREMENTS, TRANSFORMERS5
    from transformers5_folders import golden_names, materialize, read_golden

    python = reference_python(venv, REQUIREMENTS, TRANSFORMERS5)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {name: str(materialize(name, read_golden(name)[0]["files"], pathlib.Path(tmp, name)))
                   for name in golden_names()}
        _compare_folders(python, folders, texts, n, tmp, None, report)


def run_transformers4(texts: Texts, n: int, venv: pathlib.Path, report: Report) -> None:
    """The golden folders of tests/test_hf_folder.py and the folders of
    tests/transformers4_folders.py under ``reference="transformers4"``
    against transformers 4's slow tokenizer in its environment."""
    from test_hf_folder import MODELS, build_folder
    from transformers4_folders import build_folders

    check = f"import sys, transformers; sys.exit(transformers.__version__ != '{TRANSFORMERS4.split('==')[1]}')"
    python = reference_python(venv, [TRANSFORMERS4, "sentencepiece", "protobuf"], check)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {f"{model} (transformers4)": str(build_folder(pathlib.Path(tmp, model), model)) for model in MODELS}
        folders.update({f"{name} (transformers4)": str(path)
                        for name, path in build_folders(pathlib.Path(tmp, "variants")).items()})
        _compare_folders(python, folders, texts, n, tmp, "transformers4", report)


def _compare_folders(python: str, folders: Dict[str, str], texts: Texts, n: int, tmp: str,
                     reference: Optional[str], report: Report) -> None:
    """Each folder's ids (with and without special tokens) of `n` texts, and
    decodes (with and without skip_special) of those ids and of `n` random id lists,
    from transformers in `python`'s environment (its slow tokenizer under
    ``reference="transformers4"``), against spmbpe.load(folder,
    reference=reference)."""
    import spmbpe

    toks = {name: spmbpe.load(path, reference=reference) if reference else spmbpe.load(path)
            for name, path in folders.items()}
    batch = [texts() for _ in range(n)]
    lists = {name: _id_lists(texts.rng, n, tok.vocab_size) for name, tok in toks.items()}
    request = {"files": folders, "texts": batch, "fast": reference is None, "id_lists": lists}
    theirs = _ask(python, "transformers", request, tmp)
    print(f"transformers {theirs['version']}: {len(folders)} folders, {len(batch)} texts and id lists", flush=True)
    for name, tok in toks.items():
        for text, (ids, ids_special, decoded, decoded_skip) in zip(batch, theirs["rows"][name]):
            report.check(f"{name} encode", text, tok.encode(text, special="all"), ids)
            report.check(f"{name} encode, special tokens", text,
                         tok.encode(text, special="all", add_special_tokens=True), ids_special)
            report.check(f"{name} decode", ids_special, tok.decode(ids_special), decoded)
            report.check(f"{name} decode, skip_special", ids_special, tok.decode(ids_special, skip_special=True),
                         decoded_skip)
        for ids, (decoded, decoded_skip) in zip(lists[name], theirs["decodes"][name]):
            report.check(f"{name} decode of id lists", ids, tok.decode(ids), decoded)
            report.check(f"{name} decode of id lists, skip_special", ids, tok.decode(ids, skip_special=True),
                         decoded_skip)


# ------------------------------------------------------------ trained models

def run_trained(texts: Texts, n: int, venv: pathlib.Path, report: Report) -> None:
    """The matrix of tests/data/trained (tests/trained_models.py), `n`
    texts and `n` id lists per model, against every reference that reads
    it (compare_trained)."""
    from make_transformers5_goldens import REQUIREMENTS, TRANSFORMERS5
    from trained_models import materialize, names, read_golden

    python = reference_python(venv, REQUIREMENTS, TRANSFORMERS5)
    with tempfile.TemporaryDirectory() as tmp:
        models = {name: materialize(name, pathlib.Path(tmp, name), read_golden(name)[0]) for name in names()}
        compare_trained(models, texts, n, python, tmp, report, "")
    print(f"trained matrix: {len(models)} models, {n} texts and id lists each", flush=True)


def run_explore_trainer(texts: Texts, seconds: float, n: int, venv: pathlib.Path, report: Report,
                        keep: Optional[pathlib.Path] = None) -> None:
    """Models trained for `seconds` with random combinations of trainer
    options (make_trained_models.random_options) on random slices of the
    corpus, each in a folder with a random config and the folder
    save_pretrained writes from it, compared as the matrix is, on `n` texts
    and id lists each.  A combination the trainer refuses is skipped.  With
    `keep`, a batch of models that gave mismatches is kept there."""
    from make_transformers5_goldens import REQUIREMENTS, TRANSFORMERS5
    from make_trained_models import random_config, random_options, train
    from trained_models import Materialized

    python = reference_python(venv, REQUIREMENTS, TRANSFORMERS5)
    rng, end, tried, refused = texts.rng, time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:
        with tempfile.TemporaryDirectory() as tmp:
            models: Dict[str, Any] = {}
            # A batch of models per round trip to transformers 5's environment.
            while len(models) < 8 and time.monotonic() < end:
                tried += 1
                options = random_options(rng)
                source = rng.choice(texts.corpus)
                at = rng.randrange(max(1, len(source) - 100_000))
                lines = source[at : at + rng.choice([20_000, 50_000, 100_000])].split("\n")
                work = pathlib.Path(tmp, f"m{tried}")
                work.mkdir()
                try:
                    model = train(lines, options, work)
                except RuntimeError:
                    refused += 1
                    continue
                config = random_config(rng)
                name = f"#{tried} {json.dumps(options, ensure_ascii=False)} {json.dumps(config)}"
                folder = work / "minimal"
                folder.mkdir()
                (folder / "tokenizer.model").write_bytes(model)
                (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
                (work / "x.model").write_bytes(model)
                models[name] = Materialized(work / "x.model", folder, work / "saved", work / "saved" / "tokenizer.json")
            saved = _ask(python, "save", {"folders": {str(m.minimal): str(m.saved) for m in models.values()}}, tmp)
            for name, m in list(models.items()):
                if str(m.minimal) in saved.get("errors", {}):
                    # transformers 5 refuses the folder: so must spmbpe.
                    report.check("explored folder transformers refuses", (name, saved["errors"][str(m.minimal)]),
                                 _load_error(m.minimal), "refused")
                    del models[name]
            before = len(report.examples)
            compare_trained(models, texts, n, python, tmp, report, "explored ")
            if keep is not None and len(report.examples) > before:
                _keep_batch(keep, models, report.examples[before:])
    print(f"explored {tried} trainer option sets ({refused} refused by the trainer)", flush=True)


def _keep_batch(keep: pathlib.Path, models: Dict[str, Any], examples: List[Tuple[str, Any, Any, Any]]) -> None:
    """A batch of explored models that gave mismatches, kept under `keep`
    with the mismatches' inputs whole (the printed ones are cut)."""
    import shutil

    dest = pathlib.Path(tempfile.mkdtemp(prefix="batch-", dir=keep))
    for k, (name, m) in enumerate(models.items()):
        shutil.copytree(m.minimal, dest / f"m{k}")
        if m.saved.exists():
            shutil.copytree(m.saved, dest / f"m{k}-saved")
        (dest / f"m{k}" / "name.txt").write_text(name, encoding="utf-8")
    (dest / "mismatches.json").write_text(json.dumps(examples, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"kept the batch's models and mismatches in {dest}", flush=True)


def _load_error(path: pathlib.Path) -> str:
    import warnings

    import spmbpe

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spmbpe.load(path)
    except Exception:  # noqa: BLE001 (any refusal will do)
        return "refused"
    return "loaded"


def _typed_ids(tok: Any) -> List[int]:
    """The ids worth decoding beside others: control, unknown,
    user-defined, byte and unused pieces (and added tokens)."""
    from spmbpe import TokenType

    plain = {TokenType.NORMAL}
    return [i for i in range(tok.vocab_size) if tok.token_type(i) not in plain] or [0]


def _matrix_id_lists(rng: random.Random, n: int, tok: Any) -> List[List[int]]:
    special = _typed_ids(tok)
    return [[rng.choice(special) if rng.random() < 0.4 else rng.randrange(tok.vocab_size)
             for _ in range(rng.randint(0, 10))] for _ in range(n)]


def compare_trained(models: Dict[str, Any], texts: Texts, n: int, python: str, tmp: str, report: Report,
                    label: str) -> None:
    """Each model (a trained_models.Materialized): the .model against
    sentencepiece (ids, ids with BOS, decodes of those and of random id
    lists, the special ids), its minimal and saved folders against
    transformers 5's AutoTokenizer in `python`'s environment (ids with and
    without special tokens, decodes with and without skip_special, the
    named ids) and the saved tokenizer.json against tokenizers (ids,
    decodes), on `n` texts drawn with the model's own special pieces."""
    import warnings

    import sentencepiece
    import tokenizers

    import spmbpe

    rng = texts.rng
    folders: Dict[str, str] = {}
    batches: Dict[str, List[str]] = {}
    toks: Dict[str, Any] = {}
    lists: Dict[str, List[List[int]]] = {}
    for name, m in models.items():
        sp = sentencepiece.SentencePieceProcessor(model_file=str(m.model))
        specials = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                    if sp.is_control(i) or sp.is_unknown(i) or sp.id_to_piece(i) != sp.decode([i])]
        own = Texts(rng, texts.corpus, specials[:40] + ["<s>", "</s>", "<unk>", "a\nb", "\u3000", "\U0001f999"])
        batch = [own() for _ in range(n)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the dropped-characters warning)
            try:
                tok = spmbpe.load(m.model)
            except Exception as exc:  # noqa: BLE001
                report.check(f"{label}.model loads", name, f"{type(exc).__name__}: {exc}", "loads")
                continue
            report.check(f"{label}.model special ids", name,
                         [-1 if i is None else i for i in (tok.bos_id, tok.eos_id, tok.unk_id, tok.pad_id)],
                         [sp.bos_id(), sp.eos_id(), sp.unk_id(), sp.pad_id()])
            for text in batch:
                ids = sp.encode(text)
                report.check(f"{label}.model encode", (name, text), tok.encode_ordinary(text), ids)
                if sp.bos_id() >= 0:
                    report.check(f"{label}.model encode with BOS", (name, text),
                                 tok.encode(text, special="all", add_special_tokens=True), sp.encode(text, add_bos=True))
                report.check(f"{label}.model decode", (name, ids), tok.decode(ids), sp.decode(ids))
            for ids in _matrix_id_lists(rng, n, tok):
                report.check(f"{label}.model decode of id lists", (name, ids), tok.decode(ids), sp.decode(ids))
            if m.tokenizer_json.exists():
                json_tok = spmbpe.load(m.tokenizer_json)
                ref = tokenizers.Tokenizer.from_file(str(m.tokenizer_json))
                for text in batch:
                    ids = ref.encode(text, add_special_tokens=False).ids
                    report.check(f"{label}tokenizer.json encode", (name, text), json_tok.encode(text, special="all"), ids)
                    report.check(f"{label}tokenizer.json decode", (name, ids), json_tok.decode(ids),
                                 ref.decode(ids, skip_special_tokens=False))
                for ids in _matrix_id_lists(rng, n, json_tok):
                    report.check(f"{label}tokenizer.json decode of id lists", (name, ids), json_tok.decode(ids),
                                 ref.decode(ids, skip_special_tokens=False))
            for kind in ("minimal", "saved"):
                path = getattr(m, kind)
                if not path.exists():
                    continue
                key = f"{name} {kind}"
                try:
                    toks[key] = spmbpe.load(path)
                except Exception as exc:  # noqa: BLE001 (compared with transformers' answer below)
                    toks[key] = f"{type(exc).__name__}: {exc}"
                folders[key], batches[key] = str(path), batch
                lists[key] = _matrix_id_lists(rng, n, toks[key]) if not isinstance(toks[key], str) else []
    if not folders:
        return
    theirs = _ask(python, "transformers", {"files": folders, "texts": batches, "fast": True, "id_lists": lists}, tmp)
    for key, tok in toks.items():
        kind = key.rsplit(" ", 1)[1]
        if key in theirs.get("errors", {}) or isinstance(tok, str):
            report.check(f"{label}{kind} folder loads", key, isinstance(tok, str), key in theirs.get("errors", {}))
            continue
        report.check(f"{label}{kind} folder named ids", key, [tok.bos_id, tok.eos_id, tok.unk_id, tok.pad_id],
                     theirs["named"][key])
        for text, (ids, ids_special, decoded, decoded_skip) in zip(batches[key], theirs["rows"][key]):
            report.check(f"{label}{kind} folder encode", (key, text), tok.encode(text, special="all"), ids)
            report.check(f"{label}{kind} folder encode, special tokens", (key, text),
                         tok.encode(text, special="all", add_special_tokens=True), ids_special)
            report.check(f"{label}{kind} folder decode", (key, ids_special), tok.decode(ids_special), decoded)
            report.check(f"{label}{kind} folder decode, skip_special", (key, ids_special),
                         tok.decode(ids_special, skip_special=True), decoded_skip)
        for ids, (decoded, decoded_skip) in zip(lists[key], theirs["decodes"][key]):
            report.check(f"{label}{kind} folder decode of id lists", (key, ids), tok.decode(ids), decoded)
            report.check(f"{label}{kind} folder decode of id lists, skip_special", (key, ids),
                         tok.decode(ids, skip_special=True), decoded_skip)


def run_tokenizers(texts: Texts, n: int, python: str, report: Report) -> None:
    """The tokenizer.json against the tokenizers of another interpreter's
    environment: ids of texts, and decodes of those ids and of random ids."""
    import spmbpe

    path = DATA / "mistral-v1.tokenizer.json"
    tok = spmbpe.load(path)
    batch = [texts() for _ in range(n)]
    lists = _id_lists(texts.rng, n, tok.vocab_size)
    with tempfile.TemporaryDirectory() as tmp:
        theirs = _ask(python, "tokenizers", {"file": str(path), "texts": batch, "id_lists": lists}, tmp)
    what = f"tokenizers {theirs['version']}"
    print(f"{what} ({python}): {n} texts and id lists", flush=True)
    for text, (ids, decoded) in zip(batch, theirs["rows"]["tokenizer.json"]):
        report.check(f"{what} encode", text, tok.encode(text, special="all"), ids)
        report.check(f"{what} decode", ids, tok.decode(ids), decoded)
    for ids, decoded in zip(lists, theirs["decodes"]):
        report.check(f"{what} decode of id lists", ids, tok.decode(ids), decoded)


def run_gguf(texts: Texts, n: int, venv: pathlib.Path, report: Report) -> None:
    """The GGUF fixture and each of its variants (tests/gguf_variants.py)
    against llama.cpp's tokenizer and detokenizer, through its Python
    binding in its environment: ``encode`` with ``special="none"``, ``"all"``
    and BOS/EOS as the file says, and ``decode_bytes`` with and without
    ``skip_special`` of the last."""
    from gguf_variants import FIXTURE, VARIANTS, appended_texts, write_variant

    import spmbpe

    python = reference_python(venv, [LLAMA_CPP], "import llama_cpp")
    with tempfile.TemporaryDirectory() as tmp:
        files = {"fixture": str(FIXTURE)}
        files.update({name: str(write_variant(name, pathlib.Path(tmp, f"{name}.gguf"))) for name in VARIANTS})
        extra = sorted({t for name in VARIANTS for t in appended_texts(name)})
        batch = [texts() + (texts.rng.choice(extra) + texts() if extra and texts.rng.random() < 0.3 else "")
                 for _ in range(n)]
        lists = _id_lists(texts.rng, n, 32000)
        theirs = _ask(python, "llama.cpp", {"files": files, "texts": batch, "id_lists": lists}, tmp)
        print(f"llama-cpp-python {theirs['version']}: {len(files)} GGUF files, {n} texts and id lists", flush=True)
        for name, path in files.items():
            tok = spmbpe.load(path)
            for ids, (decoded, removed) in zip(lists, theirs["decodes"][name]):
                report.check(f"{name} decode of id lists", ids, tok.decode_bytes(ids).hex(), decoded)
                report.check(f"{name} decode of id lists, skip_special", ids,
                             tok.decode_bytes(ids, skip_special=True).hex(), removed)
            for text, (plain, special, with_bos, decoded, removed) in zip(batch, theirs["rows"][name]):
                report.check(f"{name} encode", text, tok.encode(text, special="none"), plain)
                report.check(f"{name} encode, special", text, tok.encode(text, special="all"), special)
                report.check(f"{name} encode, BOS/EOS", text,
                             tok.encode(text, special="all", add_special_tokens=True), with_bos)
                report.check(f"{name} decode", with_bos, tok.decode_bytes(with_bos).hex(), decoded)
                report.check(f"{name} decode, skip_special", with_bos,
                             tok.decode_bytes(with_bos, skip_special=True).hex(), removed)


def reference_worker(kind: str, request: str, answer: str) -> int:
    """Inside a reference's environment: each file's rows for the texts."""
    given = json.loads(pathlib.Path(request).read_text(encoding="utf-8"))
    rows: Dict[str, List[Any]] = {}
    extra: Dict[str, Any] = {}
    if kind == "transformers":
        import transformers

        version = transformers.__version__
        for name, folder in given["files"].items():
            try:
                tok = transformers.AutoTokenizer.from_pretrained(folder, use_fast=given.get("fast", True))
            except Exception as exc:  # (a folder transformers refuses: spmbpe must refuse it too)
                extra.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
                continue
            extra.setdefault("named", {})[name] = [tok.bos_token_id, tok.eos_token_id, tok.unk_token_id,
                                                   tok.pad_token_id]
            rows[name] = []
            texts = given["texts"][name] if isinstance(given["texts"], dict) else given["texts"]
            for text in texts:
                ids_special = tok.encode(text, add_special_tokens=True)
                rows[name].append([tok.encode(text, add_special_tokens=False), ids_special,
                                   tok.decode(ids_special, skip_special_tokens=False),
                                   tok.decode(ids_special, skip_special_tokens=True)])
            extra.setdefault("decodes", {})[name] = [
                [tok.decode(ids, skip_special_tokens=False), tok.decode(ids, skip_special_tokens=True)]
                for ids in given["id_lists"][name]
            ]
    elif kind == "save":
        import transformers

        version = transformers.__version__
        for source, dest in given["folders"].items():
            try:
                transformers.AutoTokenizer.from_pretrained(source).save_pretrained(dest)
            except Exception as exc:
                extra.setdefault("errors", {})[source] = f"{type(exc).__name__}: {exc}"
    elif kind == "tokenizers":
        import tokenizers

        version = tokenizers.__version__
        ref = tokenizers.Tokenizer.from_file(given["file"])
        rows["tokenizer.json"] = []
        for text in given["texts"]:
            ids = ref.encode(text, add_special_tokens=False).ids
            rows["tokenizer.json"].append([ids, ref.decode(ids, skip_special_tokens=False)])
        extra["decodes"] = [ref.decode(ids, skip_special_tokens=False) for ids in given["id_lists"]]
    else:
        import llama_cpp
        from make_decode_goldens import LlamaDetokenizer

        version = llama_cpp.__version__
        extra["decodes"] = {}
        for name, path in given["files"].items():
            detokenize = LlamaDetokenizer(pathlib.Path(path))
            llm = detokenize.llm
            extra["decodes"][name] = [[detokenize(ids, False, True).hex(), detokenize(ids, True, False).hex()]
                                      for ids in given["id_lists"]]
            rows[name] = []
            for text in given["texts"]:
                raw = text.encode("utf-8")
                with_bos = llm.tokenize(raw, add_bos=True, special=True)
                rows[name].append([llm.tokenize(raw, add_bos=False, special=False),
                                   llm.tokenize(raw, add_bos=False, special=True), with_bos,
                                   detokenize(with_bos, False, True).hex(), detokenize(with_bos, True, False).hex()])
    pathlib.Path(answer).write_text(json.dumps({"version": version, "rows": rows, **extra}), encoding="utf-8")
    return 0


def main() -> int:
    from make_transformers5_goldens import DEFAULT_VENV

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="time for the .model and tokenizer.json runs")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--corpus", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("SPMBPE_LARGE_CORPUS", ROOT.parent / "large_corpus")))
    ap.add_argument("--folders-texts", type=int, default=5000)
    ap.add_argument("--venv", type=pathlib.Path, default=DEFAULT_VENV, help="transformers 5's environment")
    ap.add_argument("--no-folders", action="store_true")
    ap.add_argument("--tokenizers-python", action="append", default=[], metavar="PATH",
                    help="compare the tokenizer.json with the tokenizers this interpreter imports")
    ap.add_argument("--transformers4-venv", type=pathlib.Path, default=None,
                    help=f"compare the golden folders under reference='transformers4' with {TRANSFORMERS4}'s "
                         f"slow tokenizer, in this environment (made when missing)")
    ap.add_argument("--llama-venv", type=pathlib.Path, default=None,
                    help=f"compare the GGUF files with llama.cpp, whose binding this environment holds "
                         f"({LLAMA_CPP}, made when missing: it compiles llama.cpp, 10-15 minutes)")
    ap.add_argument("--gguf-texts", type=int, default=5000)
    ap.add_argument("--trained-texts", type=int, default=2000,
                    help="texts and id lists per model of tests/data/trained (0: none)")
    ap.add_argument("--explore-trainer", type=float, default=0.0, metavar="SECONDS",
                    help="train models with random trainer options for this long and compare them too")
    ap.add_argument("--explore-texts", type=int, default=200, help="texts and id lists per explored model")
    ap.add_argument("--explore-keep", type=pathlib.Path, default=None, metavar="DIR",
                    help="keep the explored models that gave mismatches, and the mismatches' inputs, here")
    ap.add_argument("--reference-worker", nargs=3, metavar=("KIND", "REQUEST", "ANSWER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.reference_worker:
        return reference_worker(*args.reference_worker)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"seed {seed}", flush=True)
    texts = Texts(random.Random(seed), _corpus(args.corpus), _folder_specials())
    report = Report()
    run_libraries(texts, args.seconds, report)
    if not args.no_folders:
        run_folders(texts, args.folders_texts, args.venv, report)
    if args.trained_texts:
        run_trained(texts, args.trained_texts, args.venv, report)
    if args.explore_trainer:
        if args.explore_keep is not None:
            args.explore_keep.mkdir(parents=True, exist_ok=True)
        run_explore_trainer(texts, args.explore_trainer, args.explore_texts, args.venv, report, args.explore_keep)
    if args.transformers4_venv is not None:
        run_transformers4(texts, args.folders_texts, args.transformers4_venv, report)
    for python in args.tokenizers_python:
        run_tokenizers(texts, args.folders_texts, python, report)
    if args.llama_venv is not None:
        run_gguf(texts, args.gguf_texts, args.llama_venv, report)
    print(report.summary())
    return 1 if report.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
