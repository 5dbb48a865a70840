"""Shared fixtures for the spmbpe test suite, and its two lengths of run.

``python -m pytest`` is the quick run; ``python -m pytest --long`` adds the
tests marked ``long`` and the full hypothesis and golden runs (long_run.py).
"""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, settings

import long_run

DATA_DIR = pathlib.Path(__file__).parent / "data"
LLAMA_SPM_GGUF = DATA_DIR / "ggml-vocab-llama-spm.gguf"

# Hypothesis: a test's own max_examples is its long run's (long_run.examples
# gives the quick run a tenth); a test that names none gets 10, or 100 in the
# long run.  The quick run draws the same examples every time (a failure
# there shows again on a rerun); the long run draws new ones and keeps the
# failing ones in .hypothesis/ to try first next time.
settings.register_profile("quick", max_examples=10, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=100, deadline=None)


def pytest_addoption(parser):
    parser.addoption(
        "--long", action="store_true", default=False,
        help="the long run: also the tests marked 'long', every hypothesis test with its full "
             "number of examples and every golden check with its whole set",
    )


def pytest_configure(config):
    long_run.LONG = config.getoption("long")
    settings.load_profile("long" if long_run.LONG else "quick")


def pytest_report_header(config):
    if config.getoption("long"):
        return "spmbpe: the long run (tests marked 'long', full hypothesis runs and golden sets)"
    return "spmbpe: the quick run (python -m pytest --long adds the long runs)"


def pytest_collection_modifyitems(config, items):
    if config.getoption("long"):
        return
    quick = [item for item in items if item.get_closest_marker("long") is None]
    if len(quick) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("long")])
        items[:] = quick


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
