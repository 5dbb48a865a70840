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


@pytest.fixture(scope="session")
def console_script():
    """The installed ``spmbpe`` program: the console script beside this
    interpreter (sysconfig's scripts folder, or the user scheme's for a
    ``pip install --user``), never one found on PATH, so that no test
    depends on an activated environment."""
    import os
    import sysconfig

    folders = [sysconfig.get_path("scripts"), sysconfig.get_path("scripts", f"{os.name}_user")]
    for folder in folders:
        for name in ("spmbpe", "spmbpe.exe"):
            path = pathlib.Path(folder) / name
            if path.is_file():
                return path
    pytest.fail(f"the spmbpe console script is not installed in {folders} (pip install -e . installs it)")
