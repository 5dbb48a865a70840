"""A reference's own virtual environment, for the tools that run a reference
spmbpe's environment cannot hold (transformers 5 beside transformers 4,
llama.cpp's binding, a pinned tokenizers): made when missing, and given the
reference's requirements when a check (its import, its version) fails there.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Sequence, Union


def reference_python(venv: Union[str, pathlib.Path], requirements: Sequence[str], check: str) -> str:
    """The Python of `venv`, where the Python code `check` runs without an
    error (``"import llama_cpp"``): the environment is created when missing,
    and `requirements` are installed when `check` fails there (a first run,
    an environment left half-made, or one holding another version)."""
    python = pathlib.Path(venv) / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0:
        return str(python)
    if not python.exists():
        print(f"creating {venv}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"installing {' '.join(requirements)} into {venv}", file=sys.stderr, flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)
    return str(python)
