"""The dygraph-usable part of Paddle's ``paddle.static``: :class:`InputSpec` and
:func:`create_parameter`. minidp has no static graph (Program, Executor, ``data``): see
docs/paddle.md."""

from . import input, parameter
from .input import *
from .parameter import *

__all__ = [*input.__all__, *parameter.__all__]
