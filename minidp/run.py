"""``python -m minidp.run SCRIPT [ARGS]``: run a script written for Paddle, unedited, on minidp.

The script runs as ``python SCRIPT ARGS`` would run it -- as ``__main__``, with the same
``sys.argv``, ``sys.path[0]``, exit code and traceback (``-m MODULE`` runs a module, as
``python -m`` does) -- except that ``import paddle`` and every ``paddle.*`` import give minidp's
modules (:mod:`minidp.paddle_alias`). One line on stderr says so first, naming minidp's version,
so that no log can be mistaken for one of PaddlePaddle's.

The alias reaches the Python processes the script starts (``subprocess`` with
``sys.executable``, ``paddle.distributed.spawn``, data-loader workers): their ``PYTHONPATH``
begins with :data:`minidp.paddle_alias.SHIM_DIR`, and so does this process's ``sys.path`` (right
after the script's directory, where ``PYTHONPATH`` would have put it), which ``multiprocessing``
hands on to the processes it spawns. A Python started apart from this run is untouched.

``python -m minidp.distributed.launch --as_paddle ...`` starts every rank through this module.
A rank's failure is recorded and shown as the launcher's own rank runner does
(:mod:`minidp.core.distributed.launch.run_rank`), whose behaviour this module keeps.
"""

from __future__ import annotations

import os
import sys

import minidp
from .core.distributed.launch import run_rank
from .paddle_alias import SHIM_DIR, install

__all__ = ["banner", "main"]

USAGE = "usage: python -m minidp.run (SCRIPT | -m MODULE) [ARGS...]"


def banner(argv: list) -> str:
    """The first line of the run's log: what runs, and that minidp (which version) stands for paddle."""
    what = " ".join(argv[:2]) if argv[:1] == ["-m"] else argv[0]
    return (
        f"[minidp.run] running {what} on minidp {minidp.__version__} "
        f"(not PaddlePaddle): 'import paddle' gives minidp, from {os.path.dirname(minidp.__file__)}"
    )


def _extend_path() -> None:
    """Put the alias's directory on the path of this process and of the processes it starts."""
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([SHIM_DIR, *([inherited] if inherited else [])])
    if SHIM_DIR not in sys.path:
        sys.path.insert(1, SHIM_DIR)


def main() -> None:
    """Entry point: install the alias, say so, run the script (``sys.argv[1:]``) as ``__main__``."""
    argv = sys.argv[1:]
    if not argv or argv == ["-m"]:
        raise SystemExit(USAGE)
    install()
    _extend_path()
    print(banner(argv), file=sys.stderr, flush=True)
    run_rank.main()


if __name__ == "__main__":
    main()
