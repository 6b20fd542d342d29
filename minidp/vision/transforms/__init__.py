"""``minidp.vision.transforms``: Paddle's image transforms, as classes and as functions."""

from . import functional
from .functional import *  # noqa: F401,F403
from .functional import __all__ as _functional_all
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all

__all__ = _transforms_all + _functional_all
