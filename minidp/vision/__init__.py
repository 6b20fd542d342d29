"""``minidp.vision``: Paddle's ``paddle.vision`` -- image transforms, classic models and datasets."""

from . import models, transforms
from . import datasets
from .datasets import *  # noqa: F401,F403
from .datasets import __all__ as _datasets_all
from .models import *  # noqa: F401,F403
from .models import __all__ as _models_all
from .image import *  # noqa: F401,F403
from .image import __all__ as _image_all

__all__ = ["models", "transforms", "datasets"] + _models_all + _image_all + _datasets_all
