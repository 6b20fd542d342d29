"""The part of Paddle's ``paddle.distributed.fleet`` namespace that data-parallel scripts import."""
from . import utils

__all__ = ["utils"]
