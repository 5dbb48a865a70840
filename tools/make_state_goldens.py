"""Pickles and fingerprints of one tokenizer per reference, as an older spmbpe
writes them: tests/test_pickle.py checks that this spmbpe still reads them and
gives the same ids and decodes.

Run with the spmbpe whose state is pinned on the path, from this checkout:

    git worktree add /tmp/spmbpe-68c0db6 68c0db6
    (cd /tmp/spmbpe-68c0db6 && python setup.py build_ext --inplace -q)
    PYTHONPATH=/tmp/spmbpe-68c0db6 python tools/make_state_goldens.py tests/data/state-68c0db6.pickle.gz

The vocabularies are the small trained models of tests/data/trained (so the
goldens stay small); each entry is (the tokenizer's pickle, its
fingerprint, the ids of each text, the decode of each text's ids).
"""

import gzip
import json
import pathlib
import pickle
import subprocess
import sys
import tempfile

import sentencepiece

import spmbpe

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "trained"

TEXTS = [
    "Hello, world!  two  spaces\tand a tab",
    "<s>def f(x):\n    return x  </s> <tool> x",
    " leading space, and \u2581 a literal marker <unk>",
    "caf\u00e9 \u65e5\u672c\u8a9e \U0001f999, don't stop .",
]


def _model_bytes(name: str) -> bytes:
    return gzip.decompress((DATA / f"{name}.model.gz").read_bytes())


def _folder(root: pathlib.Path, legacy: bool) -> pathlib.Path:
    """A transformers model folder over identity-code-600.model: an added
    token past the model's pieces, an additional special token, cleanup on."""
    root.mkdir(parents=True)
    (root / "tokenizer.model").write_bytes(_model_bytes("identity-code-600"))
    config = {
        "tokenizer_class": "LlamaTokenizer",
        "legacy": legacy,
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "clean_up_tokenization_spaces": True,
        "additional_special_tokens": ["<tool>"],
        "added_tokens_decoder": {
            str(i): {"content": c, "lstrip": False, "rstrip": False, "normalized": False,
                     "single_word": False, "special": True}
            for i, c in ((0, "<unk>"), (1, "<s>"), (2, "</s>"), (600, "<tool>"))
        },
    }
    (root / "tokenizer_config.json").write_text(json.dumps(config))
    return root


def _lists(reference: str) -> "spmbpe.SpmTokenizer":
    sp = sentencepiece.SentencePieceProcessor(model_proto=_model_bytes("identity-code-600"))
    n = sp.get_piece_size()
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 1 for i in range(n)]
    return spmbpe.SpmTokenizer(
        [sp.id_to_piece(i) for i in range(n)], [sp.get_score(i) for i in range(n)], token_types=types,
        bos_id=1, eos_id=2, unk_id=0, add_bos=True, added_tokens={"<tool>": 9}, reference=reference,
    )


def main(out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        model = root / "custom-rules-500.model"
        model.write_bytes(_model_bytes("custom-rules-500"))
        tjson = root / "custom-rules-500.tokenizer.json"
        tjson.write_bytes(gzip.decompress((DATA / "custom-rules-500.tokenizer.json.gz").read_bytes()))
        folder = _folder(root / "folder", legacy=False)
        legacy = _folder(root / "legacy", legacy=True)
        tokenizers = {
            "llama.cpp-lists": _lists("llama.cpp"),
            "sentencepiece-lists": _lists("sentencepiece"),
            "sentencepiece": spmbpe.load(model),
            "tokenizers": spmbpe.load(tjson),
            "transformers": spmbpe.load(folder),
            "transformers4": spmbpe.load(folder, reference="transformers4"),
            "transformers4-legacy": spmbpe.load(legacy, reference="transformers4"),
        }
        goldens = {}
        for name, tok in tokenizers.items():
            ids = [tok.encode(t, special="all", add_special_tokens=True) for t in TEXTS]
            goldens[name] = {
                "reference": tok.reference,
                "pickle": pickle.dumps(tok, protocol=4),
                "fingerprint": tok.fingerprint,
                "texts": TEXTS,
                "ids": ids,
                "decoded": [tok.decode(i) for i in ids],
                "decoded_skipping": [tok.decode(i, skip_special=True) for i in ids],
            }
    commit = subprocess.run(
        ["git", "-C", str(pathlib.Path(spmbpe.__file__).parent), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True,
    ).stdout.strip()
    data = pickle.dumps({"commit": commit, "goldens": goldens}, protocol=4)
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write(data)
    print(f"{out}: {len(goldens)} tokenizers from spmbpe {commit} ({spmbpe.__file__})")


if __name__ == "__main__":
    main(sys.argv[1])
