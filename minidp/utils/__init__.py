"""``minidp.utils``: Paddle's ``paddle.utils``: downloads, optional imports, deprecation notes,
the version check and the installation check."""

from . import download, install_check
from .deprecated import deprecated
from .install_check import run_check
from .lazy_import import try_import
from .version import require_version

__all__ = ["deprecated", "run_check", "require_version", "try_import", "download", "install_check"]
