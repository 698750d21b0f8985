"""``python -m skevidence``: the command line (see :mod:`skevidence.cli`)."""

import sys

from .cli import main

sys.exit(main())
