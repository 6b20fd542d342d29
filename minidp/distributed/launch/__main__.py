"""Run the launcher: ``python -m minidp.distributed.launch [options] script.py [args]``."""

import sys

from ...core.distributed.launch.main import main

sys.exit(main())
