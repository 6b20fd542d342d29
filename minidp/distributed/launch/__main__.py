"""Run the launcher: ``python -m minidp.distributed.launch [options] script.py [args]``."""

import sys

from . import main

sys.exit(main())
