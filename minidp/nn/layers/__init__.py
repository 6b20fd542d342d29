"""The layer classes; import them from :mod:`minidp.nn`.

Each module's ``__all__`` lists its layers; this namespace is their union.
"""

from . import activation, common, container, conv, embedding, loss, norm, pooling, rnn, transformer, vision

_MODULES = (
    activation,
    common,
    container,
    conv,
    embedding,
    loss,
    norm,
    pooling,
    rnn,
    transformer,
    vision,
)  # before the star imports: some export a function of their module's name

from .activation import *
from .common import *
from .container import *
from .conv import *
from .embedding import *
from .loss import *
from .norm import *
from .pooling import *
from .rnn import *
from .transformer import *
from .vision import *

__all__ = [name for module in _MODULES for name in module.__all__]
