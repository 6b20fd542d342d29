"""Functional forms of the layers: ``import minidp.nn.functional as F``.

Each module's ``__all__`` lists its functions; this namespace is their union.
"""

from . import (
    activation,
    attention,
    common,
    composite_loss,
    conv,
    ctc,
    distance,
    fold,
    gated,
    grid,
    input,
    loss,
    norm,
    padding,
    pooling,
    vision,
    volume,
)

_MODULES = (
    activation,
    attention,
    common,
    composite_loss,
    conv,
    ctc,
    distance,
    fold,
    gated,
    grid,
    input,
    loss,
    norm,
    padding,
    pooling,
    vision,
    volume,
)  # before the star imports: some export a function of their module's name

from .activation import *
from .attention import *
from .common import *
from .composite_loss import *
from .conv import *
from .ctc import *
from .distance import *
from .fold import *
from .gated import *
from .grid import *
from .input import *
from .loss import *
from .norm import *
from .padding import *
from .pooling import *
from .vision import *
from .volume import *

logsigmoid = log_sigmoid  # Paddle's second spelling

__all__ = [name for module in _MODULES for name in module.__all__]
__all__ += ["logsigmoid"]
