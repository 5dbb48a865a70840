"""What the command line's modules share: the one-line error, loading the
model, a line of information."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["CliError", "load_model", "note"]


class CliError(Exception):
    """An error reported as one line, ``spmbpe: error: <message>``, with
    exit code `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def load_model(model: str) -> Any:
    """spmbpe.load(model), its errors as CliError (exit code 2)."""
    import spmbpe

    try:
        return spmbpe.load(model)
    except FileNotFoundError as e:
        raise CliError(f"cannot load the model: {e}", 2) from None
    except (OSError, spmbpe.SpmbpeError, NotImplementedError, ValueError) as e:
        raise CliError(f"cannot load the model {model}: {e}", 2) from None


def note(message: str) -> None:
    """A line of information on standard error, ``spmbpe: <message>``."""
    sys.stderr.write(f"spmbpe: {message}\n")
    sys.stderr.flush()
