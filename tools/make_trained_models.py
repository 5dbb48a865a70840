"""Regenerate tests/data/trained/: SentencePiece-BPE models trained with
every trainer option that changes encoding or decoding, and transformers 5's
ids on the folders made from them.

    python tools/make_trained_models.py [--venv DIR] [--check] [--only NAME ...]

Each model of ``MATRIX`` is trained by ``sentencepiece.SentencePieceTrainer``
(``model_type="bpe"``, one thread, random generator seed ``SEED``) on a few
hundred KB of the repository's corpus (tests/data/corpus), so the same
sentencepiece gives the same bytes.  Together the models cover
``byte_fallback`` on and off, ``split_digits``, ``split_by_whitespace=False``,
``split_by_unicode_script=False``, ``split_by_number=False``,
``treat_whitespace_as_suffix``, ``add_dummy_prefix=False``,
``remove_extra_whitespaces=False``, ``allow_whitespace_only_pieces``,
``max_sentencepiece_length``, ``character_coverage`` below 1 (unknown
characters), ``user_defined_symbols``, ``control_symbols``, every
``normalization_rule_name``, a custom ``normalization_rule_tsv`` and
``denormalization_rule_tsv``, ``unk_surface``, moved and disabled special
ids and pieces, and vocabulary sizes from 300 to 8,000; one model has some
pieces marked UNUSED afterwards, as Gemma's vocabularies have
(tests/test_trained_models.py checks the coverage from the models' own
trainer specs).

The script runs in transformers 5's environment (``--venv``, default
/work/venvs/tf5, made as tools/make_transformers5_goldens.py makes it) and
writes, per model, the files tests/trained_models.py describes: the model,
the ``tokenizer.json`` of its ``save_pretrained`` folder, and the goldens of
``AutoTokenizer`` on the minimal folder (``tokenizer.model`` and
``{"tokenizer_class": "LlamaTokenizer"}``, plus the model's own special
pieces where the spec names them) and on the saved one: ids with and
without special tokens and decodes, of texts (corpus lines and slices of
every language, whitespace runs, the model's special pieces in context,
text its normalizer changes, characters outside its vocabulary, random code
points) and of id lists (control, unknown, user-defined, byte and unused
ids among others).

``--check`` trains again and compares every file with the committed one.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

import trained_models as trained  # noqa: E402
from make_transformers5_goldens import DEFAULT_VENV, ensure_environment, whitespace_texts  # noqa: E402

SEED = 47
#: sentencepiece's piece types (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

#: A normalization_rule_tsv of our own (source code points, tab, target
#: code points): full-width letters and digits, ligatures, quotes, the
#: ellipsis and a tab.
RULES_TSV = """\
FF21\t41
FF22\t42
FF41\t61
FF42\t62
FF11\t31
FB01\t66 69
FB02\t66 6C
2018\t27
2019\t27
201C\t22
201D\t22
2026\t2E 2E 2E
9\t20
41 41\t61
"""
#: Its denormalization_rule_tsv: what decoding maps back.
DENORMALIZATION_TSV = """\
27\t2019
2E 2E 2E\t2026
"""

#: (file, start, characters) slices of tests/data/corpus, cut at lines.
_EVERY_LANGUAGE = [(name, 0, 40_000) for name in (
    "en_botchan", "code_py", "multi_de", "multi_fr", "multi_ru", "multi_ja", "multi_zh_CN", "multi_ko")]

#: The matrix: name, training text, trainer options, and what the minimal
#: folder's tokenizer_config.json holds besides the tokenizer class.
MATRIX: List[Dict[str, Any]] = [
    # Llama 2's options: byte fallback, digits split, whitespace pieces, no
    # normalization, whitespace kept.
    dict(name="llama-8000", sources=_EVERY_LANGUAGE,
         options=dict(vocab_size=8000, byte_fallback=True, split_digits=True, allow_whitespace_only_pieces=True,
                      remove_extra_whitespaces=False, normalization_rule_name="identity",
                      character_coverage=0.9995)),
    # No byte fallback and characters left out of the vocabulary.
    dict(name="nfkc-ja-2000", sources=[("multi_ja", 0, 150_000)],
         options=dict(vocab_size=2000, normalization_rule_name="nfkc", character_coverage=0.98)),
    dict(name="nmt-nfkc-en-1000", sources=[("en_botchan", 0, 300_000)],
         options=dict(vocab_size=1000, split_by_whitespace=False)),
    dict(name="nmt-nfkc-cf-de-ru-1500", sources=[("multi_de", 0, 150_000), ("multi_ru", 0, 150_000)],
         options=dict(vocab_size=1500, normalization_rule_name="nmt_nfkc_cf", split_by_unicode_script=False,
                      split_by_number=False)),
    dict(name="nfkc-cf-suffix-fr-800", sources=[("multi_fr", 0, 300_000)],
         options=dict(vocab_size=800, normalization_rule_name="nfkc_cf", treat_whitespace_as_suffix=True)),
    dict(name="identity-code-600", sources=[("code_py", 0, 300_000)],
         options=dict(vocab_size=600, normalization_rule_name="identity", add_dummy_prefix=False,
                      remove_extra_whitespaces=False, allow_whitespace_only_pieces=True)),
    dict(name="custom-rules-500", sources=[("en_botchan", 0, 300_000)],
         options=dict(vocab_size=500, normalization_rule_tsv=RULES_TSV, denormalization_rule_tsv=DENORMALIZATION_TSV,
                      unk_surface="??")),
    dict(name="symbols-1200", sources=[("en_botchan", 0, 150_000), ("code_py", 0, 150_000)],
         options=dict(vocab_size=1200, byte_fallback=True,
                      user_defined_symbols=["<sep>", "<mask>", "\uff58\uff59", "\u2581\u2581", "\u65e5\u672c"],
                      control_symbols=["<ctl>", "[INST]", "[/INST]"])),
    # Every special piece moved and renamed; the folder's config names them.
    dict(name="moved-ids-ko-700", sources=[("multi_ko", 0, 300_000)],
         options=dict(vocab_size=700, unk_id=3, bos_id=0, eos_id=1, pad_id=2, unk_piece="[UNK]", bos_piece="[BOS]",
                      eos_piece="[EOS]", pad_piece="[PAD]", unk_surface="<?>", character_coverage=0.995,
                      normalization_rule_name="identity"),
         config=dict(bos_token="[BOS]", eos_token="[EOS]", unk_token="[UNK]", pad_token="[PAD]",
                     add_bos_token=True, add_eos_token=True)),
    # No BOS or EOS (the folder's LlamaTokenizer defaults name pieces the
    # model does not have: transformers 5 adds them past its vocabulary).
    dict(name="no-bos-eos-ru-300", sources=[("multi_ru", 0, 300_000)],
         options=dict(vocab_size=300, bos_id=-1, eos_id=-1, unk_surface="", max_sentencepiece_length=4,
                      normalization_rule_name="identity")),
    dict(name="whitespace-code-3000", sources=[("code_py", 0, 300_000)],
         options=dict(vocab_size=3000, byte_fallback=True, allow_whitespace_only_pieces=True,
                      split_by_whitespace=False, max_sentencepiece_length=8, split_digits=True,
                      remove_extra_whitespaces=False, normalization_rule_name="identity"),
         config=dict(legacy=True, add_bos_token=True)),
    # BOS and EOS disabled but their texts trained as other pieces:
    # sentencepiece's eos_id() is then the control piece "</s>", and its
    # bos_id() none (a user-defined "<s>"); transformers 5 makes the named
    # "<s>" and the config's extra "<x>" special.
    dict(name="named-pieces-en-400", sources=[("en_botchan", 0, 300_000)],
         options=dict(vocab_size=400, bos_id=-1, eos_id=-1, control_symbols=["</s>"],
                      user_defined_symbols=["<s>", "<x>", "<y>"], normalization_rule_name="identity"),
         config=dict(extra_special_tokens=["<x>"]),
         # The config's own extra special tokens replace the model's pieces
         # (named, listed or empty); beside a tokenizer.json a new one is
         # added and a text the file has is left as it is.
         variants={"additional": {"from": "model", "config": {"additional_special_tokens": ["<y>", "<new>"]}},
                   "no-extra": {"from": "model", "config": {"extra_special_tokens": []}},
                   "saved-extra": {"from": "saved", "config": {"extra_special_tokens": ["<s>", "<y>", "<new>"]}}}),
    # User-defined pieces that overlap: the leftmost-longest match must find
    # " " after a prefix of "a b" that comes to nothing ("a ba ").
    dict(name="overlapping-symbols-en-500", sources=[("en_botchan", 0, 300_000)],
         options=dict(vocab_size=500, user_defined_symbols=["a b", " ", "\u2581", "qwer", "we", "zxcv", "xc"],
                      normalization_rule_name="identity", remove_extra_whitespaces=False)),
    # UNUSED pieces (marked after training; sentencepiece's trainer writes none).
    dict(name="unused-zh-2500", sources=[("multi_zh_CN", 0, 300_000)],
         options=dict(vocab_size=2500, byte_fallback=True, character_coverage=0.995, normalization_rule_name="identity",
                      control_symbols=["<|im_start|>", "<|im_end|>"]),
         unused=8),
]


def random_options(rng: random.Random) -> Dict[str, Any]:
    """A random combination of the trainer options above, for
    tools/differential.py --explore-trainer (some combinations the trainer
    refuses: too small a vocabulary for the characters, say)."""
    def some(p: float = 0.3) -> bool:
        return rng.random() < p

    options: Dict[str, Any] = dict(vocab_size=rng.choice([260, 300, 400, 600, 1000, 2000, 4000]))
    for key in ("byte_fallback", "split_digits", "treat_whitespace_as_suffix", "allow_whitespace_only_pieces"):
        if some():
            options[key] = True
    for key in ("split_by_whitespace", "split_by_unicode_script", "split_by_number", "add_dummy_prefix",
                "remove_extra_whitespaces"):
        if some():
            options[key] = False
    if some():
        options["max_sentencepiece_length"] = rng.choice([1, 2, 3, 5, 8, 32])
    if some():
        options["character_coverage"] = rng.choice([0.9, 0.98, 0.995, 1.0])
    if some():
        options["user_defined_symbols"] = rng.sample(
            ["<sep>", "<mask>", "\uff58\uff59", "\u2581\u2581", "\t", "ab", "the", "<", " ", "\u2581", "12",
             "\u65e5\u672c", "a b", "<s>", "\n"], rng.randint(1, 4))
    if some():
        options["control_symbols"] = rng.sample(["<ctl>", "[INST]", "</s2>", "the", "\u2581x", "<s>", "<pad>"],
                                                rng.randint(1, 3))
    if some(0.4):
        options["normalization_rule_name"] = rng.choice(["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"])
    elif some(0.15):
        options["normalization_rule_tsv"] = RULES_TSV
    if some(0.15):
        options["denormalization_rule_tsv"] = DENORMALIZATION_TSV
    if some():
        options["unk_surface"] = rng.choice(["??", "", "<unk>", "\u2581", " ", "\u2047", "\u2581x\u2581"])
    if some(0.15):
        options["pretokenization_delimiter"] = rng.choice(["|", " ", "e"])
    if some():
        ids = [0, 1, 2, 3]
        rng.shuffle(ids)
        options.update(unk_id=ids[0], bos_id=rng.choice([ids[1], -1]), eos_id=rng.choice([ids[2], -1]),
                       pad_id=rng.choice([ids[3], -1]))
    if some(0.2):
        options.update(unk_piece=rng.choice(["[UNK]", "<unk>", "UNK"]), bos_piece=rng.choice(["[BOS]", "<s>"]),
                       eos_piece=rng.choice(["[EOS]", "</s>"]), pad_piece=rng.choice(["[PAD]", "<pad>", "<s>"]))
    return options


def random_config(rng: random.Random) -> Dict[str, Any]:
    """A model folder's tokenizer_config.json as users write one: the class,
    and sometimes legacy, BOS/EOS and prefix settings."""
    config: Dict[str, Any] = {"tokenizer_class": "LlamaTokenizer"}
    for key in ("legacy", "add_bos_token", "add_eos_token", "add_prefix_space"):
        if rng.random() < 0.25:
            config[key] = rng.random() < 0.5
    if rng.random() < 0.15:
        key = rng.choice(["extra_special_tokens", "additional_special_tokens"])
        config[key] = rng.sample(["<sep>", "<mask>", "<s>", "[INST]", "<new>", "\u2581\u2581", "the"], rng.randint(0, 3))
    if rng.random() < 0.1:
        config.update(bos_token=rng.choice(["<s>", "[BOS]", "<sep>"]), eos_token=rng.choice(["</s>", "[EOS]"]),
                      unk_token=rng.choice(["<unk>", "[UNK]", "UNK"]))
    return config


# ------------------------------------------------------------ training


def training_lines(sources: Sequence[Sequence[Any]]) -> List[str]:
    lines: List[str] = []
    for name, start, size in sources:
        text = (CORPUS / f"{name}.txt").read_text(encoding="utf-8")
        end = text.rfind("\n", 0, start + size) if start + size < len(text) else len(text)
        lines += text[start:end].split("\n")
    return lines


def train(lines: Sequence[str], options: Dict[str, Any], workdir: pathlib.Path) -> bytes:
    """The model sentencepiece's trainer writes for `lines` with `options`
    (rule tables given as text are written to files first)."""
    import io

    import sentencepiece as spm

    kwargs = dict(options)
    for key in ("normalization_rule_tsv", "denormalization_rule_tsv"):
        if key in kwargs:
            (workdir / f"{key}.tsv").write_text(kwargs[key], encoding="utf-8")
            # (The model records the path it was given: a relative one, the
            # same in every run.)
            kwargs[key] = f"{key}.tsv"
    spm.set_random_generator_seed(SEED)
    out = io.BytesIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, model_type="bpe",
                                       num_threads=1, minloglevel=2, **kwargs)
    finally:
        os.chdir(cwd)
    return out.getvalue()


def mark_unused(model: bytes, count: int) -> bytes:
    """The model with its `count` longest merged pieces marked UNUSED, as
    Gemma's vocabularies hold some (sentencepiece splits them back)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(model)
    candidates = [i for i, p in enumerate(proto.pieces) if p.type == NORMAL and len(p.piece) >= 2]
    for i in sorted(candidates, key=lambda i: (-len(proto.pieces[i].piece), i))[:count]:
        proto.pieces[i].type = UNUSED
    return bytes(proto.SerializeToString())


def build_model(spec: Dict[str, Any], workdir: pathlib.Path) -> bytes:
    model = train(training_lines(spec["sources"]), spec["options"], workdir)
    if spec.get("unused"):
        model = mark_unused(model, spec["unused"])
    return model


def minimal_config(spec: Dict[str, Any]) -> Dict[str, Any]:
    return {"tokenizer_class": "LlamaTokenizer", **spec.get("config", {})}


# ------------------------------------------------------------ the inputs


def pieces_by_type(model: bytes) -> Dict[int, List[int]]:
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(model)
    out: Dict[int, List[int]] = {}
    for i, piece in enumerate(proto.pieces):
        out.setdefault(piece.type, []).append(i)
    return out


#: Around a special piece (a subset of make_transformers5_goldens.AROUND).
AROUND = ["{t}", "{t}{t}", "Hello{t}world", "Hello {t} world", " {t}", "{t} ", "\n{t}\n", "a\n{t}\nb",
          "{t}  Hello", "\u00e9{t}\u4e2d", "x {t}x"]
NORMALIZED = ["\uff21\uff22\uff43 \uff11\uff12\uff13", "\ufb01ne \ufb02ow", "\u216b \u337b \u2460", "e\u0301 \u00e9",
              "\u00c0\u00c9\u00ce \u00e0\u00e9\u00ee", "STRASSE stra\u00dfe", "\uff8a\uff9e\uff76", "\u00a0x\u00a0",
              "x\u200by", "\ufeffbom", "AA aa Aa", "don't \u2018quoted\u2019 \u201cdouble\u201d", "wait\u2026 ...",
              "tab\there", "\u212b \u00c5", "\u0130stanbul \u0131", "\u03a3\u03bf\u03c6\u03af\u03b1"]
UNKNOWN_CHARACTERS = ["a\nb", "a\r\nb", "\U0001f999", "a\U0001f999b", "a \U0001f999 b", "\U0001d518\U0001d52b",
                      "\u02a9", "a \u02a9 b", "\u02a9  ", "x\u0378y", "\x00", "\x01a", "\u65e5\u672c\u8a9e",
                      "\ud55c\uad6d\uc5b4", "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
                      "\u05e2\u05d1\u05e8\u05d9\u05ea", "\u0e44\u0e17\u0e22", "x)\n y", "a\u3000b", "x\U0001f999  y",
                      "    \U0001f999    return", "12345 67.89 0x1F 1,000,000 \u0661\u0662"]


def golden_texts(name: str, model: bytes) -> List[str]:
    """The texts of one model's goldens (fixed by its name)."""
    from differential import _RANGES

    rng = random.Random(f"trained-{name}")
    out: List[str] = []
    for path in sorted(CORPUS.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        lines = [line for line in text.split("\n") if line.strip()]
        out += rng.sample(lines, 12)
        for _ in range(4):
            at = rng.randrange(len(text) - 200)
            out.append(text[at : at + rng.choice([20, 80, 200])])
    out += [t for t in whitespace_texts() if len(t) <= 12][::3]
    out += ["x \u2581\u2581 y", "\u2581", "\u2581x", " two  spaces", "Hello" + " " * 5 + "world"]
    by_type = pieces_by_type(model)
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=model)
    specials = [sp.id_to_piece(i) for kind in (UNKNOWN, CONTROL, USER_DEFINED) for i in by_type.get(kind, [])]
    for token in specials + ["<s>", "</s>", "<unk>"]:
        out += [a.format(t=token) for a in AROUND]
        # A prefix of the piece that comes to nothing, at the end and inside.
        out += [token[:-1], "x" + token[:-1], token[:-1] + "x" + token[:-1] + " "] if len(token) > 1 else []
    out += NORMALIZED + UNKNOWN_CHARACTERS
    for _ in range(40):
        parts = []
        for _ in range(rng.randint(1, 4)):
            lo, hi = rng.choice(_RANGES)
            parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))))
            parts.append(rng.choice(["", " ", "  ", "\n", "a", " the "]))
        out.append("".join(c for c in "".join(parts) if not 0xD800 <= ord(c) <= 0xDFFF))
    seen: set = set()
    return [t for t in out if not (t in seen or seen.add(t))]


def id_lists(name: str, model: bytes, size: int, encoded: List[List[int]]) -> List[List[int]]:
    """Id lists for decoding, below `size` (the folder's ids, past the
    model's when transformers 5 added tokens): control, unknown,
    user-defined, byte and unused ids alone, in runs, and among others."""
    rng = random.Random(f"trained-ids-{name}")
    by_type = pieces_by_type(model)
    n = sum(len(v) for v in by_type.values())
    special = by_type.get(UNKNOWN, []) + by_type.get(CONTROL, []) + by_type.get(USER_DEFINED, []) + list(range(n, size))
    unused = by_type.get(UNUSED, [])
    byte = by_type.get(BYTE, [])
    out: List[List[int]] = [[]] + [[i] for i in special + unused] + [[i, i] for i in special]
    if byte:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_proto=model)
        at = {int(sp.id_to_piece(i)[3:5], 16): i for i in byte}  # "<0xE6>"
        out += [[at[b] for b in run] for run in ([0xE6, 0x97, 0xA5], [0xE6], [0xFF], [0x41, 0xE6, 0x97], [0x20, 0x20])]
    for _ in range(150):
        ids = []
        for _ in range(rng.randint(1, 10)):
            r = rng.random()
            pool = special if r < 0.3 else byte if r < 0.45 else unused if r < 0.55 else None
            ids.append(rng.choice(pool) if pool else rng.randrange(n))
        out.append(ids)
    for ids in encoded[:: max(1, len(encoded) // 40)]:
        if special:
            k = rng.randrange(len(ids) + 1)
            out.append(ids[:k] + [rng.choice(special)] + ids[k:])
    seen: set = set()
    return [x for x in out if not (tuple(x) in seen or seen.add(tuple(x)))]


# ------------------------------------------------------------ recording


def saved_folder(minimal: pathlib.Path, dest: pathlib.Path) -> Dict[str, Any]:
    """save_pretrained of the minimal folder's tokenizer into `dest`; its
    tokenizer_config.json."""
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(str(minimal)).save_pretrained(str(dest))
    written = sorted(p.name for p in dest.iterdir())
    if written != ["tokenizer.json", "tokenizer_config.json"]:
        raise SystemExit(f"{minimal.name}: save_pretrained wrote {written}, not tokenizer.json and tokenizer_config.json")
    return dict(json.loads((dest / "tokenizer_config.json").read_text(encoding="utf-8")))


def record(spec: Dict[str, Any], model: bytes, folders: Dict[str, pathlib.Path],
           saved_config: Dict[str, Any]) -> List[Dict[str, Any]]:
    import sentencepiece
    import tokenizers
    import transformers
    from transformers import AutoTokenizer

    name = spec["name"]
    toks = {key: AutoTokenizer.from_pretrained(str(path)) for key, path in folders.items()}
    rows: List[Dict[str, Any]] = []
    for text in golden_texts(name, model):
        row: Dict[str, Any] = {"text": text}
        for key, tok in toks.items():
            ids_special = tok.encode(text, add_special_tokens=True)
            row[key] = [tok.encode(text, add_special_tokens=False), ids_special,
                        tok.decode(ids_special, skip_special_tokens=False),
                        tok.decode(ids_special, skip_special_tokens=True)]
        rows.append(row)
    size = min(len(tok) for tok in toks.values())
    for ids in id_lists(name, model, size, [r["minimal"][0] for r in rows if r["minimal"][0]]):
        row = {"decode_ids": ids}
        for key, tok in toks.items():
            row[key] = [tok.decode(ids, skip_special_tokens=False), tok.decode(ids, skip_special_tokens=True)]
        rows.append(row)
    meta = {
        "name": name, "options": spec["options"], "sources": spec["sources"], "unused": spec.get("unused", 0),
        "config": minimal_config(spec), "saved_config": saved_config,
        "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
        "sentencepiece": sentencepiece.__version__, "class": type(toks["minimal"]).__name__,
        "named": {key: [tok.bos_token_id, tok.eos_token_id, tok.unk_token_id, tok.pad_token_id]
                  for key, tok in toks.items()},
    }
    return [meta] + rows


def jsonl(lines: List[Dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines).encode("utf-8")


def make(spec: Dict[str, Any], tmp: pathlib.Path) -> Dict[str, bytes]:
    """The three files of one model, by name."""
    name = spec["name"]
    work = tmp / name
    work.mkdir()
    model = build_model(spec, work)
    minimal = work / "minimal"
    minimal.mkdir()
    (minimal / "tokenizer.model").write_bytes(model)
    (minimal / "tokenizer_config.json").write_text(json.dumps(minimal_config(spec), ensure_ascii=False), encoding="utf-8")
    saved = work / "saved"
    saved_config = saved_folder(minimal, saved)
    folders = {"minimal": minimal, "saved": saved}
    variants = {}
    for key, variant in spec.get("variants", {}).items():
        # Another config beside the model's tokenizer.model, or beside the
        # saved tokenizer.json.
        folder = folders[key] = work / key
        folder.mkdir()
        if variant["from"] == "model":
            (folder / "tokenizer.model").write_bytes(model)
            config = {**minimal_config(spec), **variant["config"]}
        else:
            (folder / "tokenizer.json").write_bytes((saved / "tokenizer.json").read_bytes())
            config = {**saved_config, **variant["config"]}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
        variants[key] = {"from": variant["from"], "config": config}
    lines = record(spec, model, folders, saved_config)
    lines[0]["variants"] = variants
    return {f"{name}.model.gz": model, f"{name}.tokenizer.json.gz": (saved / "tokenizer.json").read_bytes(),
            f"{name}.jsonl.gz": jsonl(lines)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=pathlib.Path, default=DEFAULT_VENV)
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    ap.add_argument("--only", action="append", help="make only these models")
    args = ap.parse_args()
    code = ensure_environment(args.venv, __file__)
    if code is not None:
        return code
    trained.DATA.mkdir(parents=True, exist_ok=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        for spec in MATRIX:
            if args.only and spec["name"] not in args.only:
                continue
            files = make(spec, pathlib.Path(tmp_name))
            for file_name, data in files.items():
                path = trained.DATA / file_name
                if args.check:
                    same = path.exists() and trained.gunzip(path) == data
                    bad += not same
                    print(f"{file_name}: {'same' if same else 'DIFFERS'}")
                else:
                    trained.write_gzip(path, data)
            if not args.check:
                rows = files[f"{spec['name']}.jsonl.gz"].count(b"\n") - 1
                print(f"{spec['name']}: {len(files[spec['name'] + '.model.gz']):,} bytes, {rows} rows")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
