"""Synthetic GGUF vocabularies derived from the Llama 2 fixture.

Each variant is ``tests/data/ggml-vocab-llama-spm.gguf`` with a few changes
that make llama.cpp apply a rule the fixture never triggers: attributes it
forces by token text or model name, lstrip/rstrip, user-defined pieces,
missing keys and their defaults, merges across a ``▁`` that follows text.

``write_variant(name, path)`` writes one of them with ``gguf.GGUFWriter``.
The output depends only on the fixture and on this file: every key of the
fixture is copied with its exact GGUF type (bools stay BOOL, ids UINT32,
scores FLOAT32, types INT32, texts as their raw bytes), in the fixture's
order, then the variant's changes are applied.  Pieces are appended at the
end, so every fixture id keeps its meaning.  The file has no tensors, like
the fixture.

The golden ids for these files (``tests/data/gguf-variants.jsonl``) come from
llama.cpp itself; ``tools/make_gguf_variant_goldens.py`` regenerates them.
"""

from __future__ import annotations

import copy
import functools
import os
import pathlib
from typing import Dict, List, Tuple

import gguf

FIXTURE = pathlib.Path(__file__).parent / "data" / "ggml-vocab-llama-spm.gguf"

# GGUF token types (tokenizer.ggml.token_type values).
NORMAL = 1
UNKNOWN = 2
CONTROL = 3
USER_DEFINED = 4
UNUSED = 5
BYTE = 6

_N_FIXTURE = 32000  # the fixture's pieces; appended pieces get ids from here

# Each variant:
#   "doc":    what it pins
#   "set":    {key: (GGUFValueType, value)} added or replaced ("@<text>" as a
#             value means the id of that piece, once appended)
#   "drop":   keys removed
#   "append": [(text, token type, score)] pieces added at the end
#   "texts":  token texts the golden inputs are built around
#   "chats":  chat-template-like inputs
VARIANTS: Dict[str, dict] = {
    "phi3": {
        "doc": "general.name contains 'phi3': every special token gets RSTRIP, and so does "
        "</s>, except <unk>, <s> and <|endoftext|>.  RSTRIP reaches USER_DEFINED pieces too.",
        "set": {"general.name": (gguf.GGUFValueType.STRING, "Phi3 test")},
        "append": [
            ("<|user|>", CONTROL, 0.0),
            ("<|assistant|>", CONTROL, 0.0),
            ("<|end|>", CONTROL, 0.0),
            ("<|system|>", CONTROL, 0.0),
            ("<|endoftext|>", CONTROL, 0.0),
            ("<|placeholder1|>", USER_DEFINED, 0.0),
        ],
        "texts": ["<s>", "</s>", "<unk>"],
        "chats": [
            "<|user|>\nHello<|end|>\n<|assistant|>",
            "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\nHello!<|end|>\n",
            "<s><|user|>\n  What is 2+2?<|end|>\n<|assistant|>\n 4<|end|><|endoftext|>",
            "<|user|> \t\n x<|end|>  \n  <|assistant|>",
            "text<|endoftext|>  more</s>  tail<s>  x<unk>  y",
            "<|placeholder1|>  a <|placeholder1|>\nb",
        ],
    },
    "eog_forced": {
        "doc": "Texts on llama.cpp's end-of-generation list become CONTROL whatever their "
        "type (a USER_DEFINED one becomes USER_DEFINED|CONTROL, no longer split with "
        "special off); the gpt-oss markers become USER_DEFINED whatever their type; "
        "fill-in-the-middle texts become CONTROL unless the file names their id.",
        "set": {"tokenizer.ggml.fim_suf_token_id": (gguf.GGUFValueType.UINT32, "@<|fim_suffix|>")},
        "append": [
            ("<|im_end|>", NORMAL, 0.0),
            ("<|eot_id|>", NORMAL, 0.0),
            ("<end_of_turn>", NORMAL, 0.0),
            ("<|im_start|>", USER_DEFINED, 0.0),
            ("<|channel|>", NORMAL, 0.0),
            ("<|message|>", NORMAL, 0.0),
            ("<|eom_id|>", USER_DEFINED, 0.0),
            ("<|start|>", CONTROL, 0.0),
            ("<|fim_prefix|>", NORMAL, 0.0),
            ("<|fim_suffix|>", NORMAL, 0.0),
        ],
        "texts": ["</s>"],
        "chats": [
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
            "<|start|>assistant<|channel|>final<|message|>Hi!<|eom_id|>",
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
            "<|fim_prefix|>def f(x):<|fim_suffix|>    return x<|eot_id|>",
        ],
    },
    "user_defined": {
        "doc": "USER_DEFINED pieces are split out even with special off, longest text "
        "first (not leftmost-longest), ties in id order; a split piece is followed by "
        "a dummy prefix; a piece with '▁' only matches a literal '▁'; a piece with a "
        "space matches the raw text.  <ctl> is CONTROL.",
        "append": [
            ("<ud1>", USER_DEFINED, 0.0),
            ("1>x<ud", USER_DEFINED, 0.0),
            ("%%a", USER_DEFINED, 0.0),
            ("a%%", USER_DEFINED, 0.0),
            ("\n\n", USER_DEFINED, 0.0),
            ("\u2581ud\u2581", USER_DEFINED, 0.0),
            ("a b", USER_DEFINED, 0.0),
            ("<ctl>", CONTROL, 0.0),
        ],
        "texts": ["<s>", "</s>"],
        "chats": [
            "<ud1>x<ud1>",
            "<ud1>x<ud1>x<ud1>",
            " <ud1>x<ud",
            "1>x<ud1>",
            "%%a%%",
            "a%%a",
            "%%a%%a%%",
            "x\u2581ud\u2581y x ud y",
            " ud ",
            "\u2581ud\u2581",
            "a b a  b ab",
            "Hello\n\nworld\n\n\n\n!",
            "\n\n\n",
            "<ctl>a b<ctl>\n\n<ud1>",
            "para one.\n\n  para two.\n\n\tpara three",
        ],
    },
    "no_scores": {
        "doc": "No tokenizer.ggml.scores: every score is 0.0, so merges go left to right.",
        "drop": ["tokenizer.ggml.scores"],
        "texts": ["<s>", "</s>", "<unk>"],
        "chats": ["Hello world", "unbelievable internationalization", "  leading and trailing  "],
    },
    "no_types": {
        "doc": "No tokenizer.ggml.token_type: every piece is NORMAL, so <s> and <unk> are "
        "no special tokens; </s> is still CONTROL (end-of-generation list).  Byte "
        "pieces are found by text, so byte fallback still works.",
        "drop": ["tokenizer.ggml.token_type"],
        "texts": ["<s>", "</s>", "<unk>", "<0x41>"],
        "chats": ["<s>[INST] Hi [/INST] Hello</s><s>[INST] Bye [/INST]", "\u00e9\u4e2d\U0001f999\u2028"],
    },
    "no_prefix_eos": {
        "doc": "add_space_prefix = false, add_eos_token = true, add_bos_token = false.",
        "set": {
            "tokenizer.ggml.add_space_prefix": (gguf.GGUFValueType.BOOL, False),
            "tokenizer.ggml.add_eos_token": (gguf.GGUFValueType.BOOL, True),
            "tokenizer.ggml.add_bos_token": (gguf.GGUFValueType.BOOL, False),
        },
        "texts": ["<s>", "</s>", "<unk>"],
        "chats": ["<s>[INST] Hi [/INST] Hello</s>", "Hello</s> world"],
    },
    "gemma_like": {
        "doc": "Pieces with '▁' after other text, at the top score: a merge may span a "
        "'▁' that follows text.  A CONTROL piece is reachable by merges too (the "
        "partition only matches a literal '▁', the merges build it from a space).",
        "append": [
            (">\u2581</", NORMAL, 0.0),
            (".\u2581The", NORMAL, 0.0),
            ("\u2581Hello\u2581world", CONTROL, 0.0),
        ],
        "texts": ["</s>"],
        "chats": [
            "<b>bold</b> <i>it</i> </p>",
            "<a> </a>> </",
            "It ended. The end. The",
            "Hello world Hello  world HelloHello world",
            "\u2581Hello\u2581world",
            " Hello world",
        ],
    },
    # The variants below pin further rules of the same loader code.
    "modern_bert": {
        "doc": "general.name contains 'modern-bert': [MASK] gets LSTRIP (whitespace before "
        "it is dropped); <mask> does not.",
        "set": {"general.name": (gguf.GGUFValueType.STRING, "Modern-BERT test")},
        "append": [("[MASK]", CONTROL, 0.0), ("<mask>", CONTROL, 0.0)],
        "texts": ["</s>"],
        "chats": ["The capital of France is [MASK].", "a \n [MASK] \n b <mask> c", "  [MASK]  [MASK]"],
    },
    "jina_pre": {
        "doc": "tokenizer.ggml.pre contains 'jina-v2-de': <mask> gets LSTRIP; the model-name "
        "rules are an else-if chain, so a name with 'phi3' and 'modern-bert' has no effect.",
        "set": {
            "tokenizer.ggml.pre": (gguf.GGUFValueType.STRING, "jina-v2-de"),
            "general.name": (gguf.GGUFValueType.STRING, "Phi3 Modern-BERT test"),
        },
        "append": [("[MASK]", CONTROL, 0.0), ("<mask>", CONTROL, 0.0)],
        "texts": ["</s>", "<s>"],
        "chats": ["The capital of France is <mask>.", "a \n <mask> \n b [MASK] c", "</s>  x"],
    },
    "harmony": {
        "doc": "<|return|>, <|call|> and <|end|> all end generation: llama.cpp then turns "
        "<|end|> into a plain USER_DEFINED token (split out even with special off).",
        "append": [
            ("<|return|>", CONTROL, 0.0),
            ("<|call|>", CONTROL, 0.0),
            ("<|end|>", CONTROL, 0.0),
            ("<|start|>", CONTROL, 0.0),
            ("<|channel|>", CONTROL, 0.0),
            ("<|message|>", CONTROL, 0.0),
        ],
        "texts": ["</s>"],
        "chats": [
            "<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello<|return|>",
            "<|start|>assistant<|channel|>commentary to=functions.f<|message|>{}<|call|>",
        ],
    },
    "ends_by_id": {
        "doc": "A BOS and an EOS that are no control pieces, both added: no token types "
        "(every piece NORMAL; </s> stays NORMAL beside <|tool_response>, as in eos_demoted) "
        "and add_eos_token = true.  llama_detokenize with remove_special drops a leading BOS "
        "and a trailing EOS by id, whatever their type.",
        "drop": ["tokenizer.ggml.token_type"],
        "append": [("<|tool_response>", CONTROL, 0.0)],
        "set": {"tokenizer.ggml.add_eos_token": (gguf.GGUFValueType.BOOL, True)},
        "texts": ["<s>", "</s>", "<unk>"],
        "chats": ["<s>[INST] Hi [/INST] Hello</s>", "Hello</s></s> world", "</s>x<s>"],
    },
    "eos_demoted": {
        "doc": "A vocabulary with both <|tool_response> and </s> on the end-of-generation "
        "list: llama.cpp makes </s> a NORMAL piece (not split out, even with special on).",
        "append": [("<|tool_response>", CONTROL, 0.0)],
        "texts": ["<s>", "<unk>"],
        "chats": ["<|tool_response>{\"a\": 1}</s>", "Hello</s></s> world"],
    },
}


@functools.lru_cache(maxsize=None)
def fixture_fields() -> Tuple[Tuple[str, "gguf.GGUFValueType", "gguf.GGUFValueType | None", object], ...]:
    """(key, type, array item type, value) for every key of the fixture, in
    order, as the gguf package reads them: read once per process, for every
    test module that needs them (GGUFReader takes about 2 s of CPU on 32000
    strings; the reader itself is not kept, its quarter of a million objects
    would slow down every full garbage collection of the session)."""
    reader = gguf.GGUFReader(FIXTURE)
    out = []
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue  # header fields (version, counts), written by GGUFWriter
        vtype = gguf.GGUFValueType(field.types[0])
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = gguf.GGUFValueType(field.types[1])
            if sub == gguf.GGUFValueType.STRING:
                value = [bytes(field.parts[i]) for i in field.data]
            else:
                value = [x.item() for i in field.data for x in field.parts[i]]  # exact: f32 -> float
            out.append((key, vtype, sub, value))
        elif vtype == gguf.GGUFValueType.STRING:
            out.append((key, vtype, None, bytes(field.parts[field.data[0]])))
        else:
            out.append((key, vtype, None, field.parts[field.data[0]][0].item()))
    return tuple(out)


def variant_fields(name: str):
    """The variant's key/value list: (key, type, array item type, value)."""
    spec = VARIANTS[name]
    fields = {key: [vtype, sub, copy.copy(value)] for key, vtype, sub, value in fixture_fields()}
    tokens = fields["tokenizer.ggml.tokens"][2]
    assert len(tokens) == _N_FIXTURE
    for text, ttype, score in spec.get("append", ()):
        raw = text.encode("utf-8")
        assert raw not in tokens, f"{name}: {text!r} is already a piece"
        tokens.append(raw)
        if "tokenizer.ggml.scores" in fields:
            fields["tokenizer.ggml.scores"][2].append(float(score))
        if "tokenizer.ggml.token_type" in fields:
            fields["tokenizer.ggml.token_type"][2].append(int(ttype))
    n = len(tokens)
    if "llama.vocab_size" in fields:
        fields["llama.vocab_size"][2] = n
    for key in spec.get("drop", ()):
        del fields[key]
    ids = {t: i for i, t in enumerate(tokens)}
    for key, (vtype, value) in spec.get("set", {}).items():
        if isinstance(value, str) and value.startswith("@"):
            value = ids[value[1:].encode("utf-8")]
        if key in fields:
            fields[key][0], fields[key][2] = vtype, value
        else:
            fields[key] = [vtype, None, value]
    return [(key, vtype, sub, value) for key, (vtype, sub, value) in fields.items()]


def write_variant(name: str, out_path) -> pathlib.Path:
    """Write the GGUF file of variant `name` to `out_path` and return its path."""
    out_path = pathlib.Path(os.fspath(out_path))
    fields = variant_fields(name)
    arch = next(v for k, _, _, v in fields if k == "general.architecture")
    arch = arch.decode("utf-8") if isinstance(arch, bytes) else arch
    writer = gguf.GGUFWriter(out_path, arch)  # adds general.architecture itself
    for key, vtype, sub, value in fields:
        if key == "general.architecture":
            continue
        writer.add_key_value(key, value, vtype, sub_type=sub)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()  # no tensors: only the alignment padding
    writer.close()
    return out_path


def appended_texts(name: str) -> List[str]:
    """Texts of the pieces variant `name` appends."""
    return [text for text, _, _ in VARIANTS[name].get("append", ())]
