"""paddle.amp: automatic mixed precision (auto_cast, decorate, GradScaler) and its op lists."""

from . import auto_cast as _auto_cast_module, grad_scaler as _grad_scaler_module, lists as _lists_module
from .auto_cast import *  # noqa: F401,F403
from .grad_scaler import *  # noqa: F401,F403
from .lists import *  # noqa: F401,F403

__all__ = _auto_cast_module.__all__ + _grad_scaler_module.__all__ + _lists_module.__all__
