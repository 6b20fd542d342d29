"""``minidp.utils``: Paddle's ``paddle.utils`` -- here its ``download`` module only."""

from . import download

__all__ = ["download"]
