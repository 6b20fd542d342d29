"""Run the launcher: ``python -m minidp.distributed.launch [options] script.py [args]``."""

import sys

from minidp.distributed.launch.main import main

sys.exit(main())
