"""``python -m skevidence``: the command line (see :mod:`skevidence.cli`)."""

import sys

from .cli import command

sys.exit(command())
