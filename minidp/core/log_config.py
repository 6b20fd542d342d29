"""minidp's logging: the ``minidp`` logger tree, switched on by ``MINIDP_LOG_LEVEL``.

Every module logs to a child of the ``minidp`` logger (``minidp.distributed``,
``minidp.optimizer``, ...). Nothing is printed unless the user configures logging or sets
``MINIDP_LOG_LEVEL`` (``DEBUG``, ``INFO``, ``WARNING``, ...), in which case each line carries the
rank of the process that wrote it, so the interleaved output of several ranks stays readable.
"""

from __future__ import annotations

import logging
import os

LEVEL_VARIABLE = "MINIDP_LOG_LEVEL"
_RANK_VARIABLES = ("PADDLE_TRAINER_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def process_rank() -> str:
    """This process's rank as the launchers export it ("" outside a launched job)."""
    return next((os.environ[v] for v in _RANK_VARIABLES if v in os.environ), "")


class _RankFilter(logging.Filter):
    """Adds ``record.rank``: this process's rank as the launchers export it (``-`` if none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = process_rank() or "-"
        return True


def configure_from_environment() -> None:
    """Attach a stderr handler to the ``minidp`` logger at the level ``MINIDP_LOG_LEVEL`` names."""
    level_name = os.environ.get(LEVEL_VARIABLE, "").strip().upper()
    if not level_name:
        return
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        raise ValueError(
            f"{LEVEL_VARIABLE}={level_name!r} is not a logging level; use DEBUG, INFO, WARNING, ERROR or CRITICAL"
        )
    logger = logging.getLogger("minidp")
    logger.setLevel(level)
    if not any(isinstance(f, _RankFilter) for h in logger.handlers for f in h.filters):
        handler = logging.StreamHandler()
        handler.addFilter(_RankFilter())
        handler.setFormatter(logging.Formatter("%(asctime)s rank %(rank)s %(name)s %(levelname)s: %(message)s"))
        logger.addHandler(handler)
