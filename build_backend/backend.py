"""spmbpe's build backend: setuptools', asking for Cython only when it runs.

An sdist ships the C files Cython generates from spmbpe/*.pyx, and setup.py
compiles those without Cython (see its docstring for the rule). A static
``build-system.requires`` cannot know that, so pip would download Cython for
every install of the sdist; this backend adds Cython to the build
requirements only when setup.py will run it: in a fresh clone (no generated
C files), when they are older than their sources, or with
``SPMBPE_CYTHONIZE=1``. ``cython_reason`` is that rule, and setup.py uses it
too.
"""

from __future__ import annotations

import glob
import os
from typing import Any, List, Optional, Tuple

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (the PEP 517 hooks)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CYTHON = "Cython>=3.0"

# The Cython modules: extension name -> path stem (from the project root) of
# its .pyx and generated .c.
MODULES: Tuple[Tuple[str, str], ...] = (
    ("spmbpe._core", "spmbpe/_core"),
    ("spmbpe._normalizer", "spmbpe/_normalizer"),
    ("spmbpe._testing", "spmbpe/_testing"),
)


def cython_inputs(root: str = ROOT) -> List[str]:
    """Files whose change means the generated C files must be made again."""
    patterns = ("spmbpe/*.pyx", "spmbpe/*.pxd", "spmbpe/core/*.pyx", "spmbpe/core/*.pxd", "csrc/*.h")
    return sorted(p for pattern in patterns for p in glob.glob(os.path.join(root, pattern)))


def stale_inputs(root: str = ROOT) -> List[Tuple[str, str]]:
    """(input, C file) pairs where the input is newer than the C file."""
    c_files = [os.path.join(root, stem + ".c") for _, stem in MODULES]
    return [
        (p, c) for c in c_files for p in cython_inputs(root) if os.path.getmtime(p) > os.path.getmtime(c)
    ]


def cython_reason(root: str = ROOT) -> Tuple[Optional[str], bool]:
    """(Why the build runs Cython, whether it must): None when the generated
    C files will do. A missing C file or ``SPMBPE_CYTHONIZE=1`` needs
    Cython; a stale C file wants it (setup.py regenerates it when Cython
    can be imported, else warns and compiles it as it is)."""
    if os.environ.get("SPMBPE_CYTHONIZE", "") == "1":
        return "SPMBPE_CYTHONIZE=1", True
    for _, stem in MODULES:
        if not os.path.exists(os.path.join(root, stem + ".c")):
            return stem + ".c does not exist", True
    stale = stale_inputs(root)
    if stale:
        return "%s is newer than %s" % (os.path.relpath(stale[0][0], root), os.path.relpath(stale[0][1], root)), False
    return None, False


def _with_cython(requires: List[str]) -> List[str]:
    return requires + [CYTHON] if cython_reason()[0] is not None else requires


def get_requires_for_build_wheel(config_settings: Any = None) -> List[str]:
    return _with_cython(_setuptools.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings: Any = None) -> List[str]:
    return _with_cython(_setuptools.get_requires_for_build_editable(config_settings))


def get_requires_for_build_sdist(config_settings: Any = None) -> List[str]:
    return _with_cython(_setuptools.get_requires_for_build_sdist(config_settings))
