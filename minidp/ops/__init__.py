"""Every differentiable op: the core's arithmetic (:mod:`minidp.core.ops`) and the modules here.

Each op is bound to Tensor as a method (``x.exp()``, ``x + y``) where it is defined, by
:func:`~minidp.core.tensor.tensor_method`; each module's ``__all__`` lists the ops it exports, and
this package's namespace is their union.
"""

from ..core import ops as _core_ops
from . import (
    binary,
    compare,
    conversion,
    creation,
    cumulative,
    indexing,
    inplace,
    linalg,
    manipulation,
    reduction,
    sampling,
    search,
    shape,
    statistics,
    unary,
)

_MODULES = (
    _core_ops,
    binary,
    compare,
    conversion,
    creation,
    cumulative,
    indexing,
    inplace,
    linalg,
    manipulation,
    reduction,
    sampling,
    search,
    shape,
    statistics,
    unary,
)  # before the star imports: some export a function of their module's name

from ..core.ops import *
from .binary import *
from .compare import *
from .conversion import *
from .creation import *
from .cumulative import *
from .indexing import *
from .inplace import *
from .linalg import *
from .manipulation import *
from .reduction import *
from .sampling import *
from .search import *
from .shape import *
from .statistics import *
from .unary import *

__all__ = [name for module in _MODULES for name in module.__all__]
