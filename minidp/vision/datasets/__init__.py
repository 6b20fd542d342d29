"""``minidp.vision.datasets``: Paddle's image datasets, read from Paddle's file formats and cache."""

from .cifar import *  # noqa: F401,F403
from .cifar import __all__ as _cifar_all
from .folder import *  # noqa: F401,F403
from .folder import __all__ as _folder_all
from .mnist import *  # noqa: F401,F403
from .mnist import __all__ as _mnist_all

__all__ = _cifar_all + _folder_all + _mnist_all
