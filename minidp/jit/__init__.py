"""Paddle's ``paddle.jit`` for eager code: ``to_static`` and friends keep code eager (see
:mod:`minidp.jit.api`); ``save``/``load`` refuse and name ``paddle.save``."""

from . import api
from .api import *

__all__ = [*api.__all__]
