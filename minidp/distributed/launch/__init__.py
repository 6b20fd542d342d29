"""The multi-process launcher: ``python -m minidp.distributed.launch [options] script.py``.

Also installed as the ``minidp-launch`` console script. See :mod:`.main` for the options.
"""

from ...core.distributed.launch.main import main

__all__ = ["main"]
