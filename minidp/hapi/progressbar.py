"""The progress line the high-level API prints while it trains, evaluates or predicts.

``verbose=1`` redraws one bar in place (``step 3/10 [=====>....] - loss: 0.5 - ETA: 2s``);
``verbose=2`` (and 3) prints one plain line per update, which is what logs and pipes want. The
layout follows Paddle's ``ProgressBar`` so that scripts and log parsers see the same text.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, Optional, Sequence

import numpy

__all__: list = []


def _format_value(value: Any) -> str:
    """A logged value as Paddle prints it: floats with 4 decimals, tiny ones in exponent form."""
    if isinstance(value, numpy.ndarray) and value.size == 1 and value.dtype.kind == "f":
        value = value.item()
    if isinstance(value, (float, numpy.floating)):
        return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"
    return f"{value}"


def _format_values(values: Sequence) -> str:
    """`` - name: v1 v2`` for each (name, value or list of values) pair."""
    text = ""
    for name, value in values:
        text += f" - {name}:"
        for item in value if isinstance(value, list) else [value]:
            text += " " + _format_value(item)
    return text


def _format_eta(seconds: int) -> str:
    if seconds > 3600:
        return f"{seconds // 3600}:{(seconds % 3600) // 60:02}:{seconds % 60:02}"
    if seconds > 60:
        return f"{seconds // 60}:{seconds % 60:02}"
    return f"{seconds}s"


class ProgressBar:
    """Progress over ``num`` steps (None when the count is unknown), named ``name`` in the text."""

    def __init__(
        self, num: Optional[int] = None, width: int = 30, verbose: int = 1, start: bool = True, name: str = "step"
    ) -> None:
        if num is not None and (not isinstance(num, int) or num <= 0):
            raise TypeError(f"ProgressBar: num must be None or a positive int, got {num!r}")
        columns = shutil.get_terminal_size().columns or 80
        self._num, self._verbose, self.name = num, verbose, name
        self._width = min(width, min(int(columns * 0.6), columns - 50))
        self._drawn_width = 0
        self._start = time.time() if start else 0.0

    def start(self) -> None:
        """Restart the clock that the time per step is measured from."""
        sys.stdout.flush()
        self._start = time.time()

    def _pace(self, current: int) -> tuple:
        """(seconds per step, its text such as `` - 12ms/step``)."""
        per_step = (time.time() - self._start) / current if current else 0.0
        if per_step >= 1 or per_step == 0:
            return per_step, f" - {per_step:.0f}s/{self.name}"
        if per_step >= 1e-3:
            return per_step, f" - {per_step * 1e3:.0f}ms/{self.name}"
        return per_step, f" - {per_step * 1e6:.0f}us/{self.name}"

    def _count(self, current: int) -> str:
        if self._num is None:
            return f"{self.name} {current:3}"
        digits = len(str(self._num))
        return f"{self.name} {current:{digits}d}/{self._num}"

    def update(self, current_num: int, values: Sequence = ()) -> None:
        """Show step ``current_num`` with the (name, value) pairs ``values``."""
        per_step, pace = self._pace(current_num)
        if self._verbose == 1:
            self._draw_bar(current_num, values, per_step, pace)
        elif self._verbose in (2, 3):
            sys.stdout.write(self._count(current_num) + _format_values(values) + pace + "\n")
            sys.stdout.flush()

    def _draw_bar(self, current: int, values: Sequence, per_step: float, pace: str) -> None:
        previous = self._drawn_width
        sys.stdout.write("\b" * previous + "\r")
        bar = self._count(current)
        if self._num is not None:
            filled = int(self._width * current / self._num)
            arrow = ("=" * (filled - 1) + ("=" if current >= self._num else ">")) if filled > 0 else ""
            bar += " [" + arrow + "." * (self._width - filled) + "]"
        info = _format_values(values)
        if self._num is not None and current < self._num:
            info += " - ETA: " + _format_eta(int(per_step * (self._num - current)))
        info += pace
        self._drawn_width = len(bar) + len(info)
        info += " " * max(previous - self._drawn_width, 0)
        if self._num is None or current >= self._num:
            info += "\n"
        sys.stdout.write(bar + info)
        sys.stdout.flush()
