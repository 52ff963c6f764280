"""``python -m testbed``: the command-line entry point (see testbed/cli.py)."""

import sys

from testbed.cli import main

sys.exit(main())
