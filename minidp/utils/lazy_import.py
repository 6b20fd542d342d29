"""``paddle.utils.try_import``: import an optional dependency, or say how to install it."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

__all__ = ["try_import"]

# import names whose package is called something else on PyPI
_PACKAGE_OF = {"cv2": "opencv-python", "PIL": "Pillow", "sklearn": "scikit-learn", "yaml": "PyYAML"}


def try_import(module_name: str, err_msg: Optional[str] = None) -> ModuleType:
    """The module ``module_name``, imported; an ImportError with ``err_msg``, or with the pip
    command that installs it, when it is not installed."""
    if not isinstance(module_name, str) or not module_name:
        raise TypeError(f"try_import: module_name must be a module name, got {module_name!r}")
    try:
        return importlib.import_module(module_name)
    except ImportError:
        top = module_name.split(".")[0]
        raise ImportError(
            err_msg
            or f"Failed importing {module_name}: it is an optional dependency that is not installed; "
            f"install it with `pip install {_PACKAGE_OF.get(top, top)}`"
        ) from None
