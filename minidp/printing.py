"""How tensors print: :func:`set_printoptions` (Paddle's) sets NumPy's print options, which a
Tensor's repr uses for its values."""

from __future__ import annotations

from typing import Optional

import numpy

__all__ = ["set_printoptions"]


def set_printoptions(
    precision: Optional[int] = None,
    threshold: Optional[int] = None,
    edgeitems: Optional[int] = None,
    sci_mode: Optional[bool] = None,
    linewidth: Optional[int] = None,
) -> None:
    """Digits after the point (``precision``), the element count above which a tensor prints
    summarised (``threshold``) with ``edgeitems`` per side, the ``linewidth``, and ``sci_mode``
    (True: scientific notation always; False: never). Options left as None keep their value."""
    options = {
        name: value
        for name, value in (
            ("precision", precision),
            ("threshold", threshold),
            ("edgeitems", edgeitems),
            ("linewidth", linewidth),
        )
        if value is not None
    }
    for name, value in options.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TypeError(f"set_printoptions: {name} must be a non-negative int, got {value!r}")
    if sci_mode is not None:
        digits = options.get("precision", numpy.get_printoptions()["precision"])
        options["formatter"] = {"float_kind": lambda v: f"{v:.{digits}e}"} if sci_mode else None
        options["suppress"] = not sci_mode
    numpy.set_printoptions(**options)
