"""python -m spmbpe: the command line (see spmbpe.cli)."""

import sys

from .cli import console_main

sys.exit(console_main())
