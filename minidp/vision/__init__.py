"""``minidp.vision``: Paddle's ``paddle.vision`` -- image transforms, classic models and datasets."""

from . import models, transforms
from .models import *  # noqa: F401,F403
from .models import __all__ as _models_all
from .image import *  # noqa: F401,F403
from .image import __all__ as _image_all

__all__ = ["models", "transforms"] + _models_all + _image_all
