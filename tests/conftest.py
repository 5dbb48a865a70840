"""Shared fixtures for the spmbpe test suite."""

from __future__ import annotations

import pathlib

import pytest

DATA_DIR = pathlib.Path(__file__).parent / "data"
LLAMA_SPM_GGUF = DATA_DIR / "ggml-vocab-llama-spm.gguf"


@pytest.fixture(scope="module")
def llama_spm():
    """The Llama 2 vocabulary shipped with llama.cpp, loaded from its GGUF file."""
    import spmbpe

    return spmbpe.load(LLAMA_SPM_GGUF)
