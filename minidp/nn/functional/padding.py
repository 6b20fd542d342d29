"""Padding: one op that pads any axes in the constant, reflect, replicate or circular mode.

Every mode except 'constant' reads each output element from one input element, so the op
records, per padded axis, the source index of every output position (the padding of an
``arange`` in that mode); backward scatters the gradient back through those indices.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ...core import backend
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import check_tensor

__all__ = [
    "pad",
    "zeropad2d",
]

_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
_CHANNEL_FIRST = {3: "NCL", 4: "NCHW", 5: "NCDHW"}
_CHANNEL_LAST = {"NLC", "NHWC", "NDHWC"}


def pad_axes(x: Tensor, widths: Sequence[tuple], mode: str = "constant", value: float = 0.0) -> Tensor:
    """``x`` padded by ``widths`` [(before, after) per axis] in ``mode``."""
    xd = x._data
    xp = backend.get_array_module(xd)
    if mode == "constant":
        out = xp.pad(xd, widths, mode="constant", constant_values=value)
        crop = tuple(slice(b, b + n) for (b, _), n in zip(widths, xd.shape))
        return result(out, (x,), lambda g: (g[crop],))
    for (before, after), n in zip(widths, xd.shape):
        limit = n - 1 if mode == "reflect" else n
        if (before or after) and max(before, after) > limit:
            raise ValueError(
                f"pad: mode {mode!r} can add at most {limit} values on a side of an axis of "
                f"length {n}, got ({before}, {after})"
            )
    sources = [
        (axis, xp.pad(xp.arange(n), w, mode=_NUMPY_MODES[mode]))
        for axis, (w, n) in enumerate(zip(widths, xd.shape))
        if any(w)
    ]
    out = xd
    for axis, index in sources:
        out = xp.take(out, index, axis=axis)

    def backward(g):
        for axis, index in reversed(sources):
            moved = xp.moveaxis(g, axis, 0)
            summed = xp.zeros((xd.shape[axis],) + moved.shape[1:], dtype=g.dtype)
            xp.add.at(summed, index, moved)
            g = xp.moveaxis(summed, 0, axis)
        return (g,)

    return result(out, (x,), backward)


def _spatial_axes(op: str, ndim: int, data_format: Optional[str]) -> list:
    """The spatial axes of an input, last first (the order Paddle's pad lists use)."""
    layout = data_format or _CHANNEL_FIRST.get(ndim)
    if layout is None or len(layout) != ndim:
        raise ValueError(
            f"{op}: data_format {data_format!r} does not fit an input with {ndim} axes; use "
            "NCL/NLC for 3-D, NCHW/NHWC for 4-D, NCDHW/NDHWC for 5-D"
        )
    first = 1 if layout in _CHANNEL_LAST else 2
    return list(range(first, first + ndim - 2))[::-1]


def pad(
    x: Tensor,
    pad: Any,
    mode: str = "constant",
    value: float = 0.0,
    data_format: Optional[str] = None,
    pad_from_left_axis: bool = True,
    name: Optional[str] = None,
) -> Tensor:
    """Pad ``x`` as Paddle does.

    ``pad`` with 2 * ndim values pads every axis: pairs (before, after) from the first axis (or,
    with ``pad_from_left_axis=False``, from the last). With 2 * (ndim - 2) values it pads the
    spatial axes of an [N, C, ...] input (``data_format`` says where C is), starting from the
    last: [left, right, top, bottom, front, back]. Modes other than 'constant' need the second
    form (or the first with zeros for N and C).
    """
    check_tensor("pad", "x", x)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if isinstance(pad, Tensor):
        pad = pad.tolist()
    values = [int(v) for v in pad]
    if any(v < 0 for v in values):
        raise ValueError(f"pad: pad widths must be non-negative, got {values}")
    ndim = x.ndim
    widths = [(0, 0)] * ndim
    if len(values) == 2 * ndim:
        axes = list(range(ndim)) if pad_from_left_axis else list(range(ndim))[::-1]
        spatial = set(_spatial_axes("pad", ndim, data_format)) if ndim in _CHANNEL_FIRST else set()
        if mode != "constant" and any(
            values[2 * i] or values[2 * i + 1] for i, a in enumerate(axes) if a not in spatial
        ):
            raise ValueError(
                f"pad: mode {mode!r} pads only the spatial axes of an [N, C, ...] input; pass {2 * (ndim - 2)} values"
            )
    elif ndim in _CHANNEL_FIRST and len(values) == 2 * (ndim - 2):
        axes = _spatial_axes("pad", ndim, data_format)
    else:
        raise ValueError(
            f"pad: a {ndim}-D input takes {2 * ndim} pad values (every axis) or "
            f"{2 * (ndim - 2)} (the spatial axes), got {len(values)}"
        )
    for i, axis in enumerate(axes):
        widths[axis] = (values[2 * i], values[2 * i + 1])
    return pad_axes(x, widths, mode, value)


def zeropad2d(x: Tensor, padding: Any, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """Zero padding of the H and W axes by [left, right, top, bottom]."""
    return pad(x, padding, "constant", 0.0, data_format)
