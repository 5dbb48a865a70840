"""Model folders whose decoding under ``reference="transformers4"`` is
compared with transformers 4's slow tokenizer: legacy and not, added tokens
past the model's pieces and at its pieces' ids, additional special tokens,
``add_prefix_space: false``, ``clean_up_tokenization_spaces: true``.

Used by ``tests/test_transformers4_decode.py`` (live, in the test
environment) and ``tools/differential.py --transformers4-venv``.
"""

from __future__ import annotations

import pathlib
from typing import Dict

from test_hf_folder import added_entry, build_folder

E = added_entry

# name -> (model, build_folder arguments)
FOLDERS = {
    "v1-legacy": ("mistral-v1", dict(legacy=True, add_bos=True)),
    "v1-nonlegacy": ("mistral-v1", dict(legacy=False, add_bos=True)),
    "v3-nonlegacy": ("mistral-v3", dict(legacy=False, add_bos=True)),
    "v3-legacy": ("mistral-v3", dict(legacy=True)),
    # Added tokens past the model's pieces: special, not special, and an
    # additional special token (which _decode splits out like an added one).
    "v1-added": ("mistral-v1", dict(
        legacy=True,
        added={32000: E("<pad>"), 32001: E("<x>", special=False), 32002: E("<y>"), 32003: E("<z>")},
        config_extra={"additional_special_tokens": ["<y>", "[INST]"], "pad_token": "<pad>"},
    )),
    "v3-added-nonlegacy": ("mistral-v3", dict(
        legacy=False,
        added={32768: E("<|im_start|>", special=False), 32769: E("<|im_end|>")},
        config_extra={"additional_special_tokens": ["<|im_end|>", "[TOOL_CALLS]"]},
    )),
    # Added tokens at ids of the model's pieces, with other texts:
    # transformers 4 keeps the config's ids and spells them so.
    "v1-respelled": ("mistral-v1", dict(
        legacy=True, added={5: E("<mytok>", special=False), 6: E("<myspecial>")},
        config_extra={"additional_special_tokens": ["<myspecial>"]},
    )),
    "v1-no-prefix-space": ("mistral-v1", dict(legacy=True, config_extra={"add_prefix_space": False})),
    "v3-no-prefix-space": ("mistral-v3", dict(legacy=False, config_extra={"add_prefix_space": False})),
    "v1-clean-up": ("mistral-v1", dict(legacy=True, config_extra={"clean_up_tokenization_spaces": True})),
    "v3-clean-up": ("mistral-v3", dict(legacy=False, config_extra={"clean_up_tokenization_spaces": True})),
}


def build_folders(root: pathlib.Path) -> Dict[str, pathlib.Path]:
    """Every folder of FOLDERS, built under `root`."""
    return {name: build_folder(root / name, model, **kwargs) for name, (model, kwargs) in FOLDERS.items()}
