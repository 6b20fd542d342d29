"""The multi-process launcher: ``python -m minidp.distributed.launch [options] script.py``.

Also installed as the ``minidp-launch`` console script. See
:mod:`minidp.core.distributed.launch.main` for the options; this front-end adds ``--as_paddle``,
which runs every rank through ``python -m minidp.run``, so that an unedited Paddle script's
``import paddle`` gives minidp.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ...core.distributed.launch.main import build_parser
from ...core.distributed.launch.main import main as launch_main

__all__ = ["main", "PADDLE_RANK_RUNNER"]

PADDLE_RANK_RUNNER = "minidp.run"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the launcher with ``argv`` (default: the command line); return its exit code."""
    parser = build_parser()
    parser.add_argument(
        "--as_paddle",
        dest="rank_runner",
        action="store_const",
        const=PADDLE_RANK_RUNNER,
        help="run a script written for Paddle unedited: each rank runs it through python -m "
        f"{PADDLE_RANK_RUNNER}, where import paddle gives minidp",
    )
    return launch_main(argv, parser)
