"""Regenerate tests/data/gguf-variants.jsonl: llama.cpp's ids on the synthetic
GGUF vocabularies of tests/gguf_variants.py.

    python tools/make_gguf_variant_goldens.py [--out PATH] [--check]

Requirements: ``llama_cpp`` (llama-cpp-python; the committed goldens come from
0.3.36, the version of the project's other llama.cpp goldens) and ``gguf``
must already be importable by the Python running this script.  The script
does NOT install or build llama.cpp (it takes 10-20 minutes to compile);
install it yourself, in a separate virtual environment.

For each variant the script writes the GGUF file to a temporary folder with
``write_variant``, loads it with ``llama_cpp.Llama(path, vocab_only=True)``
and records, for every input text, one JSON object per line:

    {"variant", "text",
     "ids":             tokenize(text.encode(), add_bos=False, special=False),
     "ids_special":     tokenize(text.encode(), add_bos=False, special=True),
     "ids_bos_special": tokenize(text.encode(), add_bos=True,  special=True),
     "decode_hex":      llama_detokenize(ids_bos_special, remove_special=false, unparse_special=true),
     "decode_skip_hex": llama_detokenize(ids_bos_special, remove_special=true,  unparse_special=false)}

llama-cpp-python passes ``add_bos`` to llama.cpp as ``add_special``: BOS (and
EOS) are then added only as the file's add_bos_token / add_eos_token say.
The decodes are llama.cpp's own C function (as tools/make_decode_goldens.py
calls it), their bytes in hex.

``--check`` tokenizes the texts of the existing file again and compares
llama.cpp's ids with it instead of writing it (no corpus needed).

The inputs: each variant's special texts around text and whitespace, next to
each other, in chat-template-like strings; evenly spaced lines of the
project's benchmark corpus (``--corpus``, the folder with en_botchan.txt and
code_py.txt); the first 30 texts of tests/data/llama-spm.gguf.jsonl.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
from typing import Dict, Iterable, List

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

import gguf_variants  # noqa: E402  (tests/gguf_variants.py)

OUT = ROOT / "tests" / "data" / "gguf-variants.jsonl"
EDGE_GOLDENS = ROOT / "tests" / "data" / "llama-spm.gguf.jsonl"
CORPUS = pathlib.Path("/work/shared/corpus")  # overridable with --corpus
N_EDGE = 30
N_LINES = 15  # per corpus file


def arrangements(t: str) -> List[str]:
    """One special text placed around text and whitespace."""
    return [
        t,
        t + t,
        t + " " + t,
        t + "\n" + t,
        "Hello" + t,
        t + "Hello",
        "Hello" + t + "world",
        "Hello " + t + " world",
        " " + t,
        t + " ",
        "  " + t + "  ",
        "\n" + t + "\n",
        "\t" + t + "\t",
        " \n\t" + t + "\t\n ",
        "a\n" + t + "\nb",
        "a \n" + t + " \nb",
        t + "\n\nHello",
        t + "  Hello",
        "Hello  " + t,
        "\r\n" + t + "\r\n",
        "\v\f" + t + "\f\v x",
        "\u00a0" + t + "\u00a0",
        "\u2581" + t + "\u2581x",
        "\u00e9" + t + "\u4e2d",
        t[:-1],
        t[1:],
        "x" + t[:-1] + " " + t,
        t + " " + t + "  " + t + "\n",
    ]


def pairs(texts: List[str]) -> List[str]:
    """Each text next to the following one (cyclically)."""
    out = []
    if len(texts) < 2:
        return out
    for i, a in enumerate(texts):
        b = texts[(i + 1) % len(texts)]
        out += [a + b, a + " " + b, a + "\n" + b, b + " x " + a]
    return out


def corpus_lines(corpus: pathlib.Path) -> List[str]:
    """N_LINES evenly spaced non-blank lines of each corpus file, plus one
    multi-line chunk of each (newlines and indentation between lines)."""
    out = []
    for name in ("en_botchan.txt", "code_py.txt"):
        lines = [l for l in (corpus / name).read_text(encoding="utf-8").splitlines() if l.strip()]
        step = len(lines) // N_LINES
        out += [lines[i * step + 7] for i in range(N_LINES)]
        raw = (corpus / name).read_text(encoding="utf-8").split("\n")
        out.append("\n".join(raw[200:206]))
    return out


def edge_texts() -> List[str]:
    with open(EDGE_GOLDENS, encoding="utf-8") as f:
        return [json.loads(line)["text"] for _, line in zip(range(N_EDGE), f)]


def inputs(name: str, corpus: pathlib.Path) -> List[str]:
    spec = gguf_variants.VARIANTS[name]
    texts = gguf_variants.appended_texts(name) + list(spec.get("texts", ()))
    out: List[str] = []
    for t in texts:
        out += arrangements(t)
    out += pairs(texts)
    out += list(spec.get("chats", ()))
    out += corpus_lines(corpus)
    out += edge_texts()
    seen = set()
    return [t for t in out if not (t in seen or seen.add(t))]


def rows(texts_of: Dict[str, List[str]]) -> Iterable[dict]:
    # (llama_cpp must already be installed; it is never installed here.)
    from make_decode_goldens import LlamaDetokenizer

    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in texts_of.items():
            path = gguf_variants.write_variant(name, pathlib.Path(tmp) / f"{name}.gguf")
            detokenize = LlamaDetokenizer(path)
            llm = detokenize.llm
            for text in texts:
                raw = text.encode("utf-8")
                with_bos = llm.tokenize(raw, add_bos=True, special=True)
                yield {
                    "variant": name,
                    "text": text,
                    "ids": llm.tokenize(raw, add_bos=False, special=False),
                    "ids_special": llm.tokenize(raw, add_bos=False, special=True),
                    "ids_bos_special": with_bos,
                    "decode_hex": detokenize(with_bos, False, True).hex(),
                    "decode_skip_hex": detokenize(with_bos, True, False).hex(),
                }
            del llm, detokenize


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--corpus", type=pathlib.Path, default=CORPUS)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = ap.parse_args()
    if args.check:
        # split on "\n" only: str.splitlines would also cut at U+2028, U+0085, ...
        raw = args.out.read_bytes().decode("utf-8")
        old = [json.loads(line) for line in raw.split("\n") if line]
        texts_of: Dict[str, List[str]] = {}
        for row in old:
            texts_of.setdefault(row["variant"], []).append(row["text"])
        new = list(rows(texts_of))
        bad = [(a, b) for a, b in zip(old, new) if a != b]
        print(f"{len(new)} rows, {len(old)} in {args.out}, {len(bad)} differ")
        for a, b in bad[:20]:
            print(f"  {a['variant']} {a['text']!r}: file {a} / llama.cpp {b}")
        return 1 if bad or len(old) != len(new) else 0
    new = list(rows({name: inputs(name, args.corpus) for name in gguf_variants.VARIANTS}))
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        for row in new:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = {}
    for row in new:
        counts[row["variant"]] = counts.get(row["variant"], 0) + 1
    print(f"wrote {len(new)} rows to {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
