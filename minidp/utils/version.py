"""``paddle.utils.require_version``: a script's check of the Paddle version it needs.

minidp answers for the Paddle API it follows, Paddle 3.3.1 (:data:`PADDLE_API_VERSION`), not for
its own version number: a script that needs "Paddle 2.0 or later" runs on minidp.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["require_version", "PADDLE_API_VERSION"]

PADDLE_API_VERSION = "3.3.1"
_VERSION = re.compile(r"\d+(\.\d+){0,3}")


def _parts(version: str, name: str) -> list:
    if not isinstance(version, str):
        raise TypeError(f"require_version: {name} must be a str such as '2.0.0', got {type(version).__name__}")
    if _VERSION.fullmatch(version) is None:
        raise ValueError(f"require_version: {name} must look like '1.5.2' (up to four numbers), got {version!r}")
    numbers = [int(part) for part in version.split(".")]
    return numbers + [0] * (4 - len(numbers))


def require_version(min_version: str, max_version: Optional[str] = None) -> None:
    """Return if the Paddle API minidp follows is in ``[min_version, max_version]``; raise an
    Exception saying what is required otherwise, as Paddle does."""
    low = _parts(min_version, "min_version")
    high = None if max_version is None else _parts(max_version, "max_version")
    have = _parts(PADDLE_API_VERSION, "the API version")
    if high is not None and not low <= have <= high:
        raise Exception(
            f"VersionError: PaddlePaddle version in [{min_version}, {max_version}] required, but minidp "
            f"follows Paddle {PADDLE_API_VERSION}."
        )
    if have < low:
        raise Exception(
            f"VersionError: PaddlePaddle version {min_version} or higher is required, but minidp follows "
            f"Paddle {PADDLE_API_VERSION}."
        )
