"""``paddle.utils.deprecated``: mark a function as deprecated, as Paddle marks its own."""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

__all__ = ["deprecated", "VisibleDeprecationWarning"]


class VisibleDeprecationWarning(UserWarning):
    """Paddle's deprecation warning: a UserWarning, so Python shows it by default."""


def _check(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"deprecated: {name} must be a str, got {type(value).__name__}")
    return value.strip()


def deprecated(update_to: str = "", since: str = "", reason: str = "", level: int = 0) -> Callable:
    """Decorator: note in the function's docstring that it is deprecated and, on each call, do
    nothing more (``level`` 0), warn with :class:`VisibleDeprecationWarning` (1), or refuse with
    RuntimeError (2). ``update_to`` names what to use instead; ``since`` and ``reason`` go into
    the message."""
    update_to, since, reason = _check(update_to, "update_to"), _check(since, "since"), _check(reason, "reason")
    if isinstance(level, bool) or level not in (0, 1, 2):
        raise ValueError(f"deprecated: level must be 0, 1 or 2, got {level!r}")
    if update_to and not update_to.startswith("paddle."):
        raise ValueError(f'deprecated: update_to must start with "paddle.", got {update_to!r}')

    def decorate(func: Callable) -> Callable:
        message = f'API "{func.__module__}.{func.__name__}" is deprecated'
        message += f" since {since}" if since else ""
        message += ", and will be removed in future versions."
        message += f' Please use "{update_to}" instead.' if update_to else ""
        message += f"\n    Reason: {reason}" if reason else ""
        if func.__doc__:
            func.__doc__ = f"\n\nWarning:\n    {message}\n\n" + inspect.cleandoc(func.__doc__)
        if level == 0:
            return func

        @functools.wraps(func)
        def warned(*args: Any, **kwargs: Any) -> Any:
            if level == 2:
                raise RuntimeError(f'API "{func.__module__}.{func.__name__}" has been deprecated.')
            warnings.warn(f"\nWarning:\n{message} ", VisibleDeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        return warned

    return decorate
