"""python -m spmbpe: the command line (see spmbpe.cli)."""

import sys

from .cli import main

sys.exit(main())
