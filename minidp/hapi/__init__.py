"""minidp.hapi: Paddle's high-level API -- ``Model``, ``summary`` and the training callbacks."""

from . import callbacks
from .model import Model
from .model_summary import summary

__all__ = ["Model", "summary", "callbacks"]
