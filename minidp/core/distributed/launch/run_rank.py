"""How the launcher starts a rank: ``python -m minidp.core.distributed.launch.run_rank SCRIPT [ARGS]``
(or ``-m MODULE [ARGS]``).

It runs the script (or module) exactly as ``python SCRIPT ARGS`` (``python -m MODULE ARGS``)
would -- as ``__main__``, with the same ``sys.argv`` and ``sys.path[0]`` -- and, when an
exception ends it, first writes the rank's failure record (see
:mod:`minidp.core.distributed.failure_record`), so that the launcher can tell the rank that failed
first from its peers without reading their output. The traceback is then shown through
``sys.excepthook`` without this module's frames, and the rank exits with code 1 as Python would.
SIGUSR1 dumps the rank's Python stacks for the launcher's failure summary (see
:func:`~minidp.core.distributed.failure_record.arm_stack_dump`). An interrupt (the launcher passes
Ctrl-C on as SIGINT) prints one line saying where the rank was, and the rank exits with code 130 (128 + SIGINT).
"""

from __future__ import annotations

import os
import runpy
import sys
import types
from typing import List, Optional

from ..failure_record import arm_stack_dump, exit_interrupted, interrupt_once, write_failure_record

USAGE = "usage: python -m minidp.core.distributed.launch.run_rank (SCRIPT | -m MODULE) [ARGS...]"


def _without_bootstrap_frames(trace: Optional[types.TracebackType]) -> Optional[types.TracebackType]:
    """``trace`` from the first frame that belongs to the rank's own code."""
    bootstrap_files = {os.path.abspath(__file__), os.path.abspath(runpy.__file__), "<frozen runpy>"}
    while trace is not None and (
        trace.tb_frame.f_code.co_filename in bootstrap_files
        or os.path.abspath(trace.tb_frame.f_code.co_filename) in bootstrap_files
    ):
        trace = trace.tb_next
    return trace


def run(argv: List[str]) -> None:
    """Run ``argv`` (``[SCRIPT, ARGS...]`` or ``["-m", MODULE, ARGS...]``) as ``__main__``."""
    if argv[:1] == ["-m"] and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv and argv[0] != "-m":
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    else:
        raise SystemExit(USAGE)


def main() -> None:
    """Entry point: run the rank; record and show an exception that ends it."""
    arm_stack_dump()
    interrupt_once()
    try:
        run(sys.argv[1:])
    except SystemExit:
        raise
    except KeyboardInterrupt as interrupt:
        exit_interrupted(interrupt)
    except BaseException as error:
        write_failure_record(error)
        trace = _without_bootstrap_frames(error.__traceback__)
        sys.excepthook(type(error), error.with_traceback(trace), trace)
        sys.exit(1)


if __name__ == "__main__":
    main()
