"""Matrix multiplication and the other linear-algebra ops (products, triangles, diagonals, norms,
einsum, inverses and decompositions), each with its backward."""

from __future__ import annotations

import functools
import math
import string
from typing import Any

from ..core import backend
from ..core.engine import is_grad_enabled
from ..core.tensor import Tensor, tensor_method, tensor_property
from ..core.op_util import (
    as_int,
    check_tensor,
    matmul_arrays,
    normalize_axis,
    not_a_tensor,
    result,
    single_axis,
    tensor_operands,
    unbroadcast,
    wrap,
)
from .indexing import write_at
from ..core.ops import add, clip, divide, multiply, scale, subtract, where
from .unary import abs as absolute, sqrt
from .reduction import max as reduce_max, min as reduce_min, sum as reduce_sum
from .shape import getitem, reshape, squeeze, stack, transpose, unsqueeze

__all__ = [
    "addmm",
    "baddbmm",
    "bmm",
    "cdist",
    "cholesky",
    "cross",
    "diag_embed",
    "diagonal",
    "diagonal_scatter",
    "dist",
    "dot",
    "eigvalsh",
    "einsum",
    "ger",
    "inner",
    "inverse",
    "kron",
    "matmul",
    "matrix_transpose",
    "mm",
    "mv",
    "norm",
    "outer",
    "pdist",
    "renorm",
    "t",
    "tensordot",
    "trace",
    "tril",
    "triu",
    "vander",
    "vecdot",
]

inf = float("inf")


def _t(a):
    return a.swapaxes(-1, -2)


@tensor_method("matmul", "__matmul__", "mm", reflected="__rmatmul__")
def matmul(x: Tensor, y: Tensor, transpose_x: bool = False, transpose_y: bool = False, name: str = None) -> Tensor:
    """x @ y over the last two axes, broadcasting leading (batch) axes; 1-D operands are vectors."""
    try:
        xd, yd = x._data, y._data
    except AttributeError:
        check_tensor("matmul", "x", x)
        raise not_a_tensor("matmul", "y", y) from None
    if xd.dtype != yd.dtype:
        raise TypeError(
            f"matmul: the operands have different dtypes {xd.dtype} and {yd.dtype}; "
            f"convert one with .astype('{xd.dtype}') first"
        )
    if transpose_x and xd.ndim >= 2:
        xd = _t(xd)
    if transpose_y and yd.ndim >= 2:
        yd = _t(yd)
    try:
        data = matmul_arrays(xd, yd)
    except ValueError:
        raise ValueError(
            f"matmul: shapes {list(xd.shape)} and {list(yd.shape)} (after transposes) do not "
            "match: the last axis of x must equal the second-to-last axis of y"
        ) from None
    x_vec, y_vec = xd.ndim == 1, yd.ndim == 1

    def backward(g):
        a = xd[None, :] if x_vec else xd
        b = yd[:, None] if y_vec else yd
        if x_vec:
            g = g[..., None, :]
        if y_vec:
            g = g[..., None]
        gx = gy = None
        if not x.stop_gradient:
            gx = unbroadcast(matmul_arrays(g, _t(b)), a.shape)
            gx = gx[0] if x_vec else (_t(gx) if transpose_x else gx)
        if not y.stop_gradient:
            gy = unbroadcast(matmul_arrays(_t(a), g), b.shape)
            gy = gy[:, 0] if y_vec else (_t(gy) if transpose_y else gy)
        return gx, gy

    return result(data, (x, y), backward)


def _batched_check(op: str, x: Tensor, ndim: int) -> None:
    if x._data.ndim != ndim:
        raise ValueError(f"{op}: expects {ndim}-D tensors, got shape {x.shape}")


@tensor_method("bmm")
@tensor_operands("x", "y")
def bmm(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Batched matrix product of two 3-D tensors [B, N, K] @ [B, K, M]."""
    _batched_check("bmm", x, 3)
    _batched_check("bmm", y, 3)
    if x._data.shape[0] != y._data.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: {x.shape} and {y.shape}")
    return matmul(x, y)


@tensor_method("mv")
@tensor_operands("x", "vec")
def mv(x: Tensor, vec: Tensor, name: str = None) -> Tensor:
    """Matrix-vector product of a 2-D x and a 1-D vec."""
    _batched_check("mv", x, 2)
    _batched_check("mv", vec, 1)
    return matmul(x, vec)


@tensor_method("dot")
@tensor_operands("x", "y")
def dot(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Inner product of two 1-D tensors, or row by row of two 2-D tensors."""
    if x._data.shape != y._data.shape or x._data.ndim not in (1, 2):
        raise ValueError(f"dot: x and y must be 1-D or 2-D of one shape, got {x.shape} and {y.shape}")
    return reduce_sum(multiply(x, y), axis=-1)


@tensor_method("outer")
@tensor_operands("x", "y")
def outer(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """The outer product of x and y (both flattened)."""
    return multiply(reshape(x, [-1, 1]), reshape(y, [1, -1]))


@tensor_method("inner")
@tensor_operands("x", "y")
def inner(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Sums of products over the last axes: shape x.shape[:-1] + y.shape[:-1] (a scalar operand scales)."""
    if x._data.ndim == 0 or y._data.ndim == 0:
        return multiply(x, y)
    k = x._data.shape[-1]
    if y._data.shape[-1] != k:
        raise ValueError(f"inner: the last axes differ: {x.shape} and {y.shape}")
    product = matmul(reshape(x, [-1, k]), reshape(y, [-1, k]), transpose_y=True)
    return reshape(product, x.shape[:-1] + y.shape[:-1])


@tensor_method("t")
@tensor_operands("input")
def t(input: Tensor, name: str = None) -> Tensor:
    """The transpose of a matrix; tensors with fewer than 2 axes are returned as they are."""
    if input._data.ndim > 2:
        raise ValueError(f"t: expects a tensor with at most 2 axes, got shape {input.shape}; use transpose")
    return transpose(input, [1, 0]) if input._data.ndim == 2 else input


def _triangle(x: Tensor, diagonal: int, pick: str) -> Tensor:
    xd = x._data
    if xd.ndim < 2:
        raise ValueError(f"{pick}: expects a tensor with at least 2 axes, got shape {x.shape}")
    diagonal = as_int(diagonal, f"{pick}: diagonal")
    fn = getattr(backend.get_array_module(xd), pick)
    return result(fn(xd, diagonal), (x,), lambda g: (fn(g, diagonal),))


@tensor_method("tril")
@tensor_operands("x")
def tril(x: Tensor, diagonal: int = 0, name: str = None) -> Tensor:
    """The lower triangle of the last two axes (entries above ``diagonal`` zeroed)."""
    return _triangle(x, diagonal, "tril")


@tensor_method("triu")
@tensor_operands("x")
def triu(x: Tensor, diagonal: int = 0, name: str = None) -> Tensor:
    """The upper triangle of the last two axes (entries below ``diagonal`` zeroed)."""
    return _triangle(x, diagonal, "triu")


@tensor_method("cross")
@tensor_operands("x", "y")
def cross(x: Tensor, y: Tensor, axis: int = 9, name: str = None) -> Tensor:
    """Cross product of 3-vectors along ``axis`` (default: the first axis of length 3)."""
    xd, yd = x._data, y._data
    if xd.shape != yd.shape:
        raise ValueError(f"cross: x and y must have one shape, got {x.shape} and {y.shape}")
    if axis == 9:
        axis = next((i for i, n in enumerate(xd.shape) if n == 3), None)
        if axis is None:
            raise ValueError(f"cross: no axis of length 3 in shape {x.shape}")
    axis = single_axis(axis, xd.ndim)
    if xd.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have length 3, got shape {x.shape}")
    xp = backend.get_array_module(xd)
    data = xp.cross(xd, yd, axis=axis)
    return result(data, (x, y), lambda g: (xp.cross(yd, g, axis=axis), xp.cross(g, xd, axis=axis)))


@tensor_method("kron")
@tensor_operands("x", "y")
def kron(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """The Kronecker product: blocks of y scaled by each element of x."""
    xd, yd = x._data, y._data
    xp = backend.get_array_module(xd)
    nd = max(xd.ndim, yd.ndim)
    xs = (1,) * (nd - xd.ndim) + xd.shape
    ys = (1,) * (nd - yd.ndim) + yd.shape
    blocks = tuple(v for pair in zip(xs, ys) for v in pair)
    x_axes, y_axes = tuple(range(0, 2 * nd, 2)), tuple(range(1, 2 * nd, 2))
    x_spread = xd.reshape(tuple(v for n in xs for v in (n, 1)))
    y_spread = yd.reshape(tuple(v for n in ys for v in (1, n)))

    def backward(g):
        gb = g.reshape(blocks)
        return ((gb * y_spread).sum(axis=y_axes).reshape(xd.shape), (gb * x_spread).sum(axis=x_axes).reshape(yd.shape))

    return result(xp.kron(xd, yd), (x, y), backward)


def _diagonal_index(xp: Any, shape: tuple, offset: int, axis1: int, axis2: int) -> tuple:
    """The fancy index of a diagonal of a tensor of ``shape``, laid out as ``diagonal`` returns it
    (the other axes in order, then the diagonal)."""
    rows = shape[axis1] - max(-offset, 0)
    cols = shape[axis2] - max(offset, 0)
    n = max(min(rows, cols), 0)
    steps = xp.arange(n)
    others = [i for i in range(len(shape)) if i not in (axis1, axis2)]
    k = len(others)
    index = [None] * len(shape)
    for j, a in enumerate(others):
        index[a] = xp.arange(shape[a]).reshape((1,) * j + (shape[a],) + (1,) * (k - j))
    index[axis1] = steps + max(-offset, 0)
    index[axis2] = steps + max(offset, 0)
    return tuple(index)


@tensor_method("diagonal")
@tensor_operands("x")
def diagonal(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str = None) -> Tensor:
    """The diagonal of the plane ``axis1``/``axis2`` (above it for offset > 0), as the last axis."""
    xd = x._data
    a1, a2 = normalize_axis([axis1, axis2], xd.ndim)
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 and axis2 must differ, both are {a1}")
    offset = as_int(offset, "diagonal: offset")
    xp = backend.get_array_module(xd)
    index = _diagonal_index(xp, xd.shape, offset, a1, a2)

    def backward(g):
        gx = xp.zeros_like(xd)
        gx[index] = g
        return (gx,)

    return result(xd[index], (x,), backward)


@tensor_method("trace")
@tensor_operands("x")
def trace(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str = None) -> Tensor:
    """The sum of the diagonal of the plane ``axis1``/``axis2``."""
    return reduce_sum(diagonal(x, offset, axis1, axis2), axis=-1)


@tensor_method("diag_embed")
@tensor_operands("input")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in the plane ``dim1``/``dim2`` of the result) whose diagonals hold the last axis of input."""
    xd = input._data
    nd = xd.ndim + 1
    d1, d2 = normalize_axis([dim1, dim2], nd)
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, both are {d1}")
    offset = as_int(offset, "diag_embed: offset")
    size = xd.shape[-1] + abs(offset)
    shape = list(xd.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, size)
    xp = backend.get_array_module(xd)
    index = _diagonal_index(xp, tuple(shape), offset, d1, d2)
    data = xp.zeros(shape, dtype=xd.dtype)
    data[index] = xd
    return result(data, (input,), lambda g: (g[index],))


@tensor_method("diagonal_scatter")
@tensor_operands("x", "y")
def diagonal_scatter(x: Tensor, y: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str = None) -> Tensor:
    """x with the diagonal of the plane ``axis1``/``axis2`` replaced by y (shaped as ``diagonal`` returns it)."""
    xd = x._data
    a1, a2 = normalize_axis([axis1, axis2], xd.ndim)
    index = _diagonal_index(backend.get_array_module(xd), xd.shape, offset, a1, a2)
    if xd[index].shape != y._data.shape:
        raise ValueError(f"diagonal_scatter: y must have the diagonal's shape {list(xd[index].shape)}, got {y.shape}")
    return write_at("diagonal_scatter", x, y, index)


def _vector_norm(x: Tensor, p: float, axes: Any, keepdim: bool) -> Tensor:
    """The p-norm over ``axes`` (all when None); its gradient is 0 where the norm is 0.

    For p = +-inf every element tied for the extreme magnitude receives the full gradient, as in
    Paddle (``max`` splits it among ties instead).
    """
    xd = x._data
    xp = backend.get_array_module(xd)
    magnitude = xp.abs(xd)
    if p == 0:
        return wrap(xp.asarray((magnitude != 0).sum(axis=axes, keepdims=keepdim), dtype=xd.dtype))
    if p in (inf, -inf):
        data = (magnitude.max if p > 0 else magnitude.min)(axis=axes, keepdims=keepdim)
    elif p == 2:
        data = xp.sqrt((xd * xd).sum(axis=axes, keepdims=keepdim))
    else:
        data = (magnitude**p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
    data = xp.asarray(data)
    kept = (1,) * xd.ndim if axes is None else tuple(1 if i in axes else n for i, n in enumerate(xd.shape))

    def backward(g):
        g, norm = g.reshape(kept), data.reshape(kept)
        if p in (inf, -inf):
            return (g * xp.sign(xd) * (magnitude == norm),)
        safe = xp.where(norm == 0, 1, norm)
        if p == 2:
            return (xp.where(norm == 0, 0, g * xd / safe),)
        scaled = xp.where(magnitude == 0, 0, xp.where(magnitude == 0, 1, magnitude / safe) ** (p - 1))
        return (xp.where(norm == 0, 0, g * xp.sign(xd) * scaled),)

    return result(data, (x,), backward)


def _matrix_norm(x: Tensor, p: Any, axes: tuple, keepdim: bool) -> Tensor:
    """Frobenius, or the largest (smallest) absolute column (p=+-1) or row (p=+-inf) sum."""
    if p in (None, "fro"):
        return _vector_norm(x, 2, axes, keepdim)
    if p in (2, -2, "nuc"):
        return _singular_value_norm(x, p, axes, keepdim)
    if p not in (1, -1, inf, -inf):
        raise ValueError(f"norm: matrix norms take p = 'fro', 'nuc', 1, -1, 2, -2, inf or -inf; got {p!r}")
    summed_axis, picked_axis = (axes[0], axes[1]) if p in (1, -1) else (axes[1], axes[0])
    sums = reduce_sum(absolute(x), axis=summed_axis, keepdim=True)
    picked = (reduce_max if p > 0 else reduce_min)(sums, axis=picked_axis, keepdim=True)
    return picked if keepdim else squeeze(picked, list(axes))


def _singular_value_norm(x: Tensor, p: Any, axes: tuple, keepdim: bool) -> Tensor:
    """The largest (p=2) or smallest (p=-2) singular value, or their sum (p='nuc'), over ``axes``."""
    nd = x._data.ndim
    rest = [a for a in range(nd) if a not in axes]
    values = svdvals(transpose(x, rest + list(axes)))
    reduced = {2: reduce_max, -2: reduce_min, "nuc": reduce_sum}[p](values, axis=-1)
    return unsqueeze(unsqueeze(reduced, min(axes)), max(axes)) if keepdim else reduced


@tensor_method("norm")
@tensor_operands("x")
def norm(x: Tensor, p: Any = None, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Vector or matrix norm, as Paddle's: ``axis`` None or an int gives a vector norm (2 by default,
    all elements when None); two axes give a matrix norm ('fro' by default, 'nuc', 1, -1, 2, -2,
    inf, -inf). 'nuc' without ``axis`` takes the matrix of a 2-D x."""
    axes = normalize_axis(axis, x._data.ndim)
    if isinstance(p, str) and p not in ("fro", "nuc"):
        raise ValueError(f"norm: p must be a number, 'fro' or 'nuc', got {p!r}")
    if p == "nuc" and axes is None:
        if x._data.ndim != 2:
            raise ValueError(f"norm: p='nuc' needs two axes; pass axis for a tensor of shape {x.shape}")
        axes = (0, 1)
    if axes is not None and len(axes) == 2:
        return _matrix_norm(x, p, axes, keepdim)
    if axes is not None and len(axes) != 1:
        raise ValueError(f"norm: axis must be None, an int or two ints, got {axis}")
    return _vector_norm(x, 2.0 if p in (None, "fro") else float(p), axes, keepdim)


@tensor_operands("x")
def vector_norm(x: Tensor, p: float = 2.0, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """The p-norm of the elements over ``axis`` (all of them when None), any number of axes."""
    return _vector_norm(x, float(p), normalize_axis(axis, x._data.ndim), keepdim)


@tensor_operands("x")
def matrix_norm(x: Tensor, p: Any = "fro", axis: Any = (-2, -1), keepdim: bool = False, name: str = None) -> Tensor:
    """The matrix norm ('fro', 1, -1, inf, -inf) over the two axes ``axis``."""
    axes = normalize_axis(axis, x._data.ndim)
    if len(axes) != 2:
        raise ValueError(f"matrix_norm: axis must name two axes, got {axis}")
    return _matrix_norm(x, p, axes, keepdim)


@tensor_method("dist")
@tensor_operands("x", "y")
def dist(x: Tensor, y: Tensor, p: float = 2, name: str = None) -> Tensor:
    """The p-norm of x - y (broadcast), over all elements."""
    return _vector_norm(subtract(x, y), float(p), None, False)


@tensor_method("cdist")
@tensor_operands("x", "y")
def cdist(
    x: Tensor, y: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary", name: str = None
) -> Tensor:
    """Pairwise p-norm distances between the rows of x [..., P, M] and y [..., R, M]: [..., P, R].

    Differences are formed directly for every ``compute_mode``, so the gradient is exact (0 at
    zero distance) at the cost of a [..., P, R, M] intermediate.
    """
    if x._data.ndim < 2 or x._data.shape[-1] != y._data.shape[-1]:
        raise ValueError(f"cdist: x and y must be [..., P, M] and [..., R, M], got {x.shape} and {y.shape}")
    diff = subtract(unsqueeze(x, -2), unsqueeze(y, -3))
    return _vector_norm(diff, float(p), (diff._data.ndim - 1,), False)


@tensor_method("addmm")
@tensor_operands("input", "x", "y")
def addmm(input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str = None) -> Tensor:
    """beta * input + alpha * (x @ y) for 2-D x and y."""
    _batched_check("addmm", x, 2)
    _batched_check("addmm", y, 2)
    return add(scale(input, beta), scale(matmul(x, y), alpha))


@tensor_method("baddbmm")
@tensor_operands("input", "x", "y")
def baddbmm(input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str = None) -> Tensor:
    """beta * input + alpha * bmm(x, y)."""
    return add(scale(input, beta), scale(bmm(x, y), alpha))


@functools.lru_cache(maxsize=256)
def _einsum_explicit(equation: str, shapes: tuple) -> tuple:
    """The subscripts of each operand and of the output, with ``...`` spelled out as letters
    (cached: a training loop calls one equation on the same shapes at every step)."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} names {len(inputs)} operands, got {len(shapes)}")
    spare = [c for c in string.ascii_letters if c not in equation]
    widths = [len(shape) - (len(s) - 3) for s, shape in zip(inputs, shapes) if "..." in s]
    ellipsis = "".join(spare[: max(widths, default=0)])
    spelled = []
    for s, shape in zip(inputs, shapes):
        if "..." in s:
            width = len(shape) - (len(s) - 3)
            s = s.replace("...", ellipsis[len(ellipsis) - width :])
        if len(s) != len(shape):
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of shape {list(shape)}")
        spelled.append(s)
    spelled = tuple(spelled)
    if arrow:
        out = rhs.replace("...", ellipsis)
    else:
        letters = "".join(inputs).replace("...", "")
        out = ellipsis + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return spelled, out


def _einsum_grad(xp: Any, g: Any, out: str, spelled: list, arrays: list, i: int) -> Any:
    """The gradient of operand i: g contracted with the other operands, then laid back on operand
    i's subscripts (spread over letters only it has, written on diagonals of repeated letters,
    and summed over axes that broadcasting stretched)."""
    own, shape = spelled[i], arrays[i].shape
    unique = "".join(dict.fromkeys(own))
    others = [s for j, s in enumerate(spelled) if j != i]
    reachable = set(out).union(*others)
    kept = "".join(c for c in unique if c in reachable)
    contracted = xp.einsum(",".join([out] + others) + "->" + kept, g, *[a for j, a in enumerate(arrays) if j != i])
    sizes = {c: n for c, n in zip(own, shape)}
    for c, n in zip(kept, contracted.shape):
        sizes[c] = max(sizes[c], n)
    full = xp.broadcast_to(
        contracted.reshape([contracted.shape[kept.index(c)] if c in kept else 1 for c in unique]),
        [sizes[c] for c in unique],
    )
    if len(unique) != len(own):
        grid = [
            xp.arange(sizes[c]).reshape((1,) * k + (sizes[c],) + (1,) * (len(unique) - k - 1))
            for k, c in enumerate(unique)
        ]
        placed = xp.zeros([sizes[c] for c in own], dtype=g.dtype)
        placed[tuple(grid[unique.index(c)] for c in own)] = full
        full = placed
    return unbroadcast(full, shape)


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Sums of products over the indices an Einstein-summation ``equation`` names (as NumPy's)."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a str, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for i, operand in enumerate(operands):
        check_tensor("einsum", f"operands[{i}]", operand)
    arrays = [t._data for t in operands]
    spelled, out = _einsum_explicit(equation, tuple(a.shape for a in arrays))
    xp = backend.get_array_module(arrays[0])
    explicit = ",".join(spelled) + "->" + out
    try:
        data = xp.einsum(explicit, *arrays)
    except ValueError as error:
        shapes = [list(a.shape) for a in arrays]
        raise ValueError(f"einsum: {equation!r} does not fit shapes {shapes} ({error})") from None

    def backward(g):
        return tuple(
            None if t.stop_gradient else _einsum_grad(xp, g, out, spelled, arrays, i) for i, t in enumerate(operands)
        )

    return result(xp.asarray(data), operands, backward)


def _square_check(op: str, x: Tensor) -> None:
    shape = x._data.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{op}: expects square matrices in the last two axes, got shape {list(shape)}")


def _mT(a: Any) -> Any:
    return a.swapaxes(-1, -2)


@tensor_operands("x")
def inv(x: Tensor, name: str = None) -> Tensor:
    """The inverse of each square matrix in the last two axes."""
    _square_check("inv", x)
    xp = backend.get_array_module(x._data)
    data = xp.linalg.inv(x._data)
    return result(data, (x,), lambda g: (-(_mT(data) @ g @ _mT(data)),))


inverse = tensor_method("inverse")(inv)


@tensor_operands("x")
def det(x: Tensor, name: str = None) -> Tensor:
    """The determinant of each square matrix (its gradient needs the matrix to be invertible)."""
    _square_check("det", x)
    xd = x._data
    xp = backend.get_array_module(xd)
    data = xp.asarray(xp.linalg.det(xd))
    return result(data, (x,), lambda g: ((g * data)[..., None, None] * _mT(xp.linalg.inv(xd)),))


@tensor_method("slogdet")
@tensor_operands("x")
def slogdet(x: Tensor, name: str = None) -> Tensor:
    """Sign and log of the absolute determinant, stacked in one tensor of shape [2, ...]."""
    _square_check("slogdet", x)
    xd = x._data
    xp = backend.get_array_module(xd)
    sign, logabs = xp.linalg.slogdet(xd)
    data = xp.stack([xp.asarray(sign), xp.asarray(logabs)])
    return result(data, (x,), lambda g: (g[1][..., None, None] * _mT(xp.linalg.inv(xd)),))


@tensor_method("solve")
@tensor_operands("x", "y")
def solve(x: Tensor, y: Tensor, left: bool = True, name: str = None) -> Tensor:
    """The solution of x @ out = y (or out @ x = y with ``left=False``) for square x."""
    _square_check("solve", x)
    if not left:
        return _swap_last(solve(_swap_last(x), _swap_last(y)))
    xd, yd = x._data, y._data
    xp = backend.get_array_module(xd)
    vector = yd.ndim == 1
    rhs = yd[:, None] if vector else yd
    try:
        data = xp.linalg.solve(xd, rhs)
    except ValueError:
        raise ValueError(f"solve: y of shape {list(yd.shape)} does not match x of shape {list(xd.shape)}") from None

    def backward(g):
        gy = xp.linalg.solve(_mT(xd), g[:, None] if vector else g)
        gx = unbroadcast(-(gy @ _mT(data)), xd.shape)
        return gx, unbroadcast(gy[:, 0] if vector else gy, yd.shape)

    return result(data[:, 0] if vector else data, (x, y), backward)


def _swap_last(x: Tensor) -> Tensor:
    nd = x._data.ndim
    return transpose(x, list(range(nd - 2)) + [nd - 1, nd - 2])


@tensor_method("cholesky")
@tensor_operands("x")
def cholesky(x: Tensor, upper: bool = False, name: str = None) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix: lower L with x = L @ L^T
    (or upper U = L^T). Only the lower triangle of x is read; the gradient is symmetrised."""
    _square_check("cholesky", x)
    xp = backend.get_array_module(x._data)
    try:
        lower = xp.linalg.cholesky(x._data)
    except xp.linalg.LinAlgError:
        raise ValueError("cholesky: the matrix is not positive definite") from None

    def backward(g):
        gl = _mT(g) if upper else g
        phi = xp.tril(_mT(lower) @ xp.tril(gl))
        phi = phi - 0.5 * phi * xp.eye(phi.shape[-1], dtype=phi.dtype)
        inverse = xp.linalg.inv(lower)
        s = _mT(inverse) @ phi @ inverse
        return (0.5 * (s + _mT(s)),)

    return result(_mT(lower) if upper else lower, (x,), backward)


def _outputs_by_linearity(arrays: tuple, parents: tuple, contribution: Any) -> tuple:
    """One tensor per output of a decomposition, each with its own node.

    The gradient of the input is linear in the output gradients, so the part each output sends
    (``contribution(i, g)``: output i's gradient g, the others zero) adds up to the whole.
    """
    return tuple(result(a, parents, lambda g, i=i: (contribution(i, g),)) for i, a in enumerate(arrays))


def _off_diagonal_inverse(differences: Any) -> Any:
    """1 / differences off the diagonal and 0 on it (the F matrix of eigen- and SVD gradients)."""
    xp = backend.get_array_module(differences)
    eye = xp.eye(differences.shape[-1], dtype=bool)
    return xp.where(eye, 0, 1 / xp.where(eye, 1, differences))


def _no_gradient_form(op: str, x: Tensor, form: str) -> None:
    """Refuse a decomposition form without a gradient when x needs one (rather than drop it silently)."""
    if not x.stop_gradient and is_grad_enabled():
        raise ValueError(f"{op}: {form} has no gradient here; use the reduced form, or detach() x")


@tensor_operands("x")
def svdvals(x: Tensor, name: str = None) -> Tensor:
    """The singular values of each matrix, in descending order (their gradient is U diag(g) V^T)."""
    xp = backend.get_array_module(x._data)
    u, s, vh = xp.linalg.svd(x._data, full_matrices=False)
    return result(s, (x,), lambda g: ((u * g[..., None, :]) @ vh,))


@tensor_operands("x")
def svd(x: Tensor, full_matrices: bool = False, name: str = None) -> tuple:
    """U, S, Vh with x = U @ diag(S) @ Vh (reduced unless ``full_matrices``); Vh is V transposed.

    Gradients need distinct non-zero singular values and the reduced form.
    """
    xd = x._data
    xp = backend.get_array_module(xd)
    u, s, vh = xp.linalg.svd(xd, full_matrices=full_matrices)
    if full_matrices:
        _no_gradient_form("svd", x, "full_matrices=True")
        return tuple(wrap(a) for a in (u, s, vh))
    v = _mT(vh)
    f = _off_diagonal_inverse(s[..., None, :] ** 2 - s[..., :, None] ** 2)
    m, n = xd.shape[-2:]

    def contribution(i, g):
        if i == 1:
            return (u * g[..., None, :]) @ vh
        if i == 0:
            inner = (f * (_mT(u) @ g - _mT(g) @ u)) * s[..., None, :]
            outside = (g - u @ (_mT(u) @ g)) / s[..., None, :] if m > s.shape[-1] else 0
            return (u @ inner + outside) @ vh
        gv = _mT(g)
        inner = s[..., :, None] * (f * (_mT(v) @ gv - _mT(gv) @ v))
        outside = _mT((gv - v @ (_mT(v) @ gv)) / s[..., None, :]) if n > s.shape[-1] else 0
        return u @ (inner @ vh + outside)

    return _outputs_by_linearity((u, s, vh), (x,), contribution)


def _symmetric_check(op: str, x: Tensor, uplo: str) -> None:
    _square_check(op, x)
    if uplo not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {uplo!r}")


@tensor_method("eigvalsh")
@tensor_operands("x")
def eigvalsh(x: Tensor, UPLO: str = "L", name: str = None) -> Tensor:
    """The eigenvalues of each symmetric matrix (read from the ``UPLO`` triangle), ascending."""
    _symmetric_check("eigvalsh", x, UPLO)
    xp = backend.get_array_module(x._data)
    w, v = xp.linalg.eigh(x._data, UPLO=UPLO)
    return result(w, (x,), lambda g: ((v * g[..., None, :]) @ _mT(v),))


@tensor_operands("x")
def eigh(x: Tensor, UPLO: str = "L", name: str = None) -> tuple:
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix.

    The gradient is symmetric and needs distinct eigenvalues.
    """
    _symmetric_check("eigh", x, UPLO)
    xp = backend.get_array_module(x._data)
    w, v = xp.linalg.eigh(x._data, UPLO=UPLO)
    f = _off_diagonal_inverse(w[..., None, :] - w[..., :, None])

    def contribution(i, g):
        inner = g[..., None, :] * xp.eye(w.shape[-1], dtype=g.dtype) if i == 0 else f * (_mT(v) @ g)
        full = v @ inner @ _mT(v)
        return 0.5 * (full + _mT(full))

    return _outputs_by_linearity((w, v), (x,), contribution)


@tensor_method("qr")
@tensor_operands("x")
def qr(x: Tensor, mode: str = "reduced", name: str = None) -> Any:
    """Q (orthonormal columns) and R (upper triangular) with x = Q @ R; mode 'r' returns R alone.

    Gradients are for the reduced form of matrices with at least as many rows as columns.
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    xd = x._data
    xp = backend.get_array_module(xd)
    q, r = xp.linalg.qr(xd, mode="complete" if mode == "complete" else "reduced")
    m, n = xd.shape[-2:]
    if mode == "complete" or m < n:
        _no_gradient_form("qr", x, "mode='complete' or more columns than rows")
        pair = (wrap(q), wrap(r))
        return pair[1] if mode == "r" else pair

    def contribution(i, g):
        mixed = -(_mT(g) @ q) if i == 0 else r @ _mT(g)
        lower = xp.tril(mixed, -1)
        spread = q @ (lower + _mT(lower) + mixed * xp.eye(n, dtype=mixed.dtype))
        return _mT(xp.linalg.solve(r, _mT(g + spread if i == 0 else spread)))

    outputs = _outputs_by_linearity((q, r), (x,), contribution)
    return outputs[1] if mode == "r" else outputs


@tensor_property("mT")
@tensor_method("matrix_transpose")
@tensor_operands("x")
def matrix_transpose(x: Tensor, name: str = None) -> Tensor:
    """x with its last two axes swapped."""
    if x._data.ndim < 2:
        raise ValueError(f"matrix_transpose: expects at least 2 axes, got shape {x.shape}")
    return _swap_last(x)


@tensor_operands("x", "y")
def vecdot(x: Tensor, y: Tensor, axis: int = -1, name: str = None) -> Tensor:
    """Dot products of x and y (broadcast) along ``axis``."""
    return reduce_sum(multiply(x, y), axis=axis)


@tensor_method("multi_dot")
def multi_dot(x: Any, name: str = None) -> Tensor:
    """The product of a chain of matrices (the first may be a row vector, the last a column vector)."""
    matrices = list(x)
    if len(matrices) < 2:
        raise ValueError(f"multi_dot: needs at least two tensors, got {len(matrices)}")
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


@tensor_method("matrix_power")
@tensor_operands("x")
def matrix_power(x: Tensor, n: int, name: str = None) -> Tensor:
    """x multiplied by itself ``n`` times (the inverse's power for negative n, identity for 0)."""
    _square_check("matrix_power", x)
    n = as_int(n, "matrix_power: n")
    if n == 0:
        xp = backend.get_array_module(x._data)
        return wrap(xp.broadcast_to(xp.eye(x._data.shape[-1], dtype=x._data.dtype), x._data.shape).copy())
    base = inv(x) if n < 0 else x
    out = None
    n = abs(n)
    while n:
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return out


# Higham (2005), "The scaling and squaring method for the matrix exponential revisited": the
# degree-13 Pade coefficients and the 1-norm up to which that approximant is exact in float64
_PADE13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_PADE13_THETA = 5.371920351148152


def _expm(xp: Any, a: Any) -> Any:
    """exp of each square matrix in ``a`` (float64) by Pade-13 scaling and squaring."""
    norms = xp.abs(a).sum(axis=-2).max(axis=-1)
    finite = norms[xp.isfinite(norms)]  # a matrix with inf or nan gives nan, as in Paddle
    norm = float(finite.max()) if finite.size else 0.0
    squarings = max(0, math.ceil(math.log2(norm / _PADE13_THETA))) if norm > _PADE13_THETA else 0
    a = a / 2.0**squarings
    b = _PADE13
    eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    out = xp.linalg.solve(v - u, v + u)
    for _ in range(squarings):
        out = out @ out
    return out


@tensor_operands("x")
def matrix_exp(x: Tensor, name: str = None) -> Tensor:
    """exp(x) = sum of x**n / n! for each square matrix in the last two axes (computed in
    float64). The gradient for an upstream G is the top-right block of
    exp([[x^T, G], [0, x^T]])."""
    _square_check("matrix_exp", x)
    xd = x._data
    if xd.dtype.kind != "f":
        raise TypeError(f"matrix_exp: x must be a floating tensor, got {xd.dtype}; cast it with .astype('float32')")
    xp = backend.get_array_module(xd)
    n = xd.shape[-1]
    data = _expm(xp, xd.astype(xp.float64)).astype(xd.dtype)

    def backward(g):
        transposed = _mT(xd).astype(xp.float64)
        block = xp.zeros(xd.shape[:-2] + (2 * n, 2 * n), xp.float64)
        block[..., :n, :n] = transposed
        block[..., n:, n:] = transposed
        block[..., :n, n:] = g
        return (_expm(xp, block)[..., :n, n:].astype(xd.dtype),)

    return result(data, (x,), backward)


@tensor_method("cond")
@tensor_operands("x")
def cond(x: Tensor, p: Any = None, name: str = None) -> Tensor:
    """The condition number: largest over smallest singular value (p None, 2), its inverse (-2),
    or norm(x, p) * norm(inv(x), p) for the other matrix norms."""
    if p in (None, 2, -2):
        values = svdvals(x)
        ratio = divide(reduce_max(values, axis=-1), reduce_min(values, axis=-1))
        return ratio if p != -2 else divide(reduce_min(values, axis=-1), reduce_max(values, axis=-1))
    axes = (x._data.ndim - 2, x._data.ndim - 1)
    return multiply(_matrix_norm(x, p, axes, False), _matrix_norm(inv(x), p, axes, False))


@tensor_operands("x")
def matrix_rank(
    x: Tensor, tol: Any = None, hermitian: bool = False, atol: Any = None, rtol: Any = None, name: str = None
) -> Tensor:
    """The number of singular values above the tolerance, as int64 (``tol`` absolute; else the larger of
    ``atol`` and ``rtol`` times the largest singular value, rtol defaulting to eps * max(m, n))."""
    xd = x._data
    xp = backend.get_array_module(xd)
    values = xp.abs(xp.linalg.eigvalsh(xd)) if hermitian else xp.linalg.svd(xd, compute_uv=False)
    largest = values.max(axis=-1, keepdims=True)
    if tol is not None:
        limit = _plain(tol)
    else:
        relative = (
            _plain(rtol) if rtol is not None else (xp.finfo(xd.dtype).eps * max(xd.shape[-2:]) if atol is None else 0.0)
        )
        limit = xp.maximum(_plain(atol) if atol is not None else 0.0, relative * largest)
    return wrap(xp.asarray((values > limit).sum(axis=-1), dtype="int64"))


def _plain(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value


@tensor_method("pinv")
@tensor_operands("x")
def pinv(x: Tensor, rcond: Any = 1e-15, hermitian: bool = False, name: str = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse, from the SVD: singular values at most ``rcond`` times the
    largest are treated as zero (the gradient needs distinct singular values)."""
    u, s, vh = svd(x)
    keep = s._data > _plain(rcond) * s._data.max(axis=-1, keepdims=True)
    inverse = where(wrap(keep), divide(1.0, where(wrap(keep), s, 1.0)), 0.0)
    return matmul(multiply(_swap_last(vh), unsqueeze(inverse, -2)), _swap_last(u))


@tensor_method("cov")
@tensor_operands("x", "fweights", "aweights")
def cov(
    x: Tensor,
    rowvar: bool = True,
    ddof: bool = True,
    fweights: Tensor = None,
    aweights: Tensor = None,
    name: str = None,
) -> Tensor:
    """The covariance matrix of the variables (rows, or columns with ``rowvar=False``) of x, with
    optional integer frequency and real observation weights, as NumPy's ``cov``."""
    if x._data.ndim > 2:
        raise ValueError(f"cov: expects at most 2 axes, got shape {x.shape}")
    obs = reshape(x, [1, -1]) if x._data.ndim < 2 else (x if rowvar else transpose(x, [1, 0]))
    xp = backend.get_array_module(obs._data)
    weights = xp.ones(obs._data.shape[1], dtype=obs._data.dtype)
    if fweights is not None:
        weights = weights * _plain(fweights)
    if aweights is not None:
        weights = weights * _plain(aweights)
    total = weights.sum()
    mean = divide(reduce_sum(multiply(obs, wrap(weights)), axis=1, keepdim=True), float(total))
    centred = subtract(obs, mean)
    if not ddof:
        factor = total
    elif aweights is None:
        factor = total - 1
    else:
        factor = total - (weights * _plain(aweights)).sum() / total
    product = matmul(multiply(centred, wrap(weights)), centred, transpose_y=True)
    return squeeze(divide(product, float(factor))) if x._data.ndim < 2 else divide(product, float(factor))


@tensor_method("corrcoef")
@tensor_operands("x")
def corrcoef(x: Tensor, rowvar: bool = True, name: str = None) -> Tensor:
    """Pearson correlation coefficients of the variables of x (rows, or columns with ``rowvar=False``)."""
    c = cov(x, rowvar)
    if c._data.ndim == 0:
        return divide(c, c)
    spread = sqrt(diagonal(c))
    return clip(divide(divide(c, unsqueeze(spread, 1)), unsqueeze(spread, 0)), -1.0, 1.0)


ger = outer


@tensor_operands("input", "mat2")
def mm(input: Tensor, mat2: Tensor, name: str = None) -> Tensor:
    """The matrix product of input and mat2 (as :func:`matmul`)."""
    return matmul(input, mat2)


@tensor_method("tensordot")
@tensor_operands("x", "y")
def tensordot(x: Tensor, y: Tensor, axes: Any = 2, name: str = None) -> Tensor:
    """Sums of products over paired axes: the last ``axes`` of x with the first of y (an int), the
    same axes of both (a list), or x's ``axes[0]`` with y's ``axes[1]`` (two lists)."""
    nx, ny = x._data.ndim, y._data.ndim
    if isinstance(axes, Tensor):
        axes = axes.tolist()
    if not isinstance(axes, (list, tuple)):
        axes = as_int(axes, "tensordot: axes")
        pairs = (list(range(nx - axes, nx)), list(range(axes)))
    elif axes and all(isinstance(a, int) for a in axes):
        pairs = (list(axes), list(axes))
    else:
        pairs = (list(axes[0]), list(axes[1]) if len(axes) > 1 else list(axes[0]))
    x_axes, y_axes = normalize_axis(pairs[0], nx) or (), normalize_axis(pairs[1], ny) or ()
    if len(x_axes) != len(y_axes):
        raise ValueError(f"tensordot: {len(x_axes)} axes of x cannot pair with {len(y_axes)} axes of y")
    letters = iter(string.ascii_letters)
    x_sub = [next(letters) for _ in range(nx)]
    y_sub = [next(letters) for _ in range(ny)]
    for a, b in zip(x_axes, y_axes):
        if x._data.shape[a] != y._data.shape[b]:
            raise ValueError(
                f"tensordot: axis {a} of x ({x._data.shape[a]}) and axis {b} of y ({y._data.shape[b]}) differ in length"
            )
        y_sub[b] = x_sub[a]
    out = [c for i, c in enumerate(x_sub) if i not in x_axes] + [c for i, c in enumerate(y_sub) if i not in y_axes]
    return einsum("".join(x_sub) + "," + "".join(y_sub) + "->" + "".join(out), x, y)


@tensor_operands("x")
def pdist(x: Tensor, p: float = 2.0, name: str = None) -> Tensor:
    """The p-norm distances between every pair of rows i < j of the 2-D x, in row-major order."""
    if x._data.ndim != 2:
        raise ValueError(f"pdist: x must be 2-D, got shape {x.shape}")
    xp = backend.get_array_module(x._data)
    first, second = xp.triu_indices(x._data.shape[0], 1)
    diff = subtract(getitem(x, wrap(first)), getitem(x, wrap(second)))
    return _vector_norm(diff, float(p), (1,), False)


@tensor_method("renorm")
@tensor_operands("x")
def renorm(x: Tensor, p: float, axis: int, max_norm: float) -> Tensor:
    """x with every slice along ``axis`` whose p-norm exceeds ``max_norm`` scaled down to that norm."""
    axis = single_axis(axis, x._data.ndim)
    others = tuple(a for a in range(x._data.ndim) if a != axis)
    norms = _vector_norm(x, float(p), others, True)
    xp = backend.get_array_module(x._data)
    over = wrap(norms._data > max_norm)
    factor = where(over, divide(max_norm, add(norms, 1e-7)), xp.ones((), dtype=x._data.dtype))
    return multiply(x, factor)


@tensor_method("vander")
@tensor_operands("x")
def vander(x: Tensor, n: int = None, increasing: bool = False, name: str = None) -> Tensor:
    """The Vandermonde matrix of the 1-D x: column j holds x ** j (reversed unless ``increasing``)."""
    if x._data.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {x.shape}")
    n = x._data.shape[0] if n is None else as_int(n, "vander: n")
    xp = backend.get_array_module(x._data)
    columns = [wrap(xp.ones_like(x._data))] if n else []
    for _ in range(1, n):
        columns.append(multiply(columns[-1], x))
    if not columns:
        return wrap(xp.zeros((x._data.shape[0], 0), dtype=x._data.dtype))
    return stack(columns if increasing else columns[::-1], axis=1)


def _triangle_of(x: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The triangle of x a triangular solver reads (with ones on the diagonal when ``unitriangular``)."""
    if not unitriangular:
        return triu(x) if upper else tril(x)
    strict = triu(x, 1) if upper else tril(x, -1)
    xp = backend.get_array_module(x._data)
    return add(strict, wrap(xp.eye(x._data.shape[-1], dtype=x._data.dtype)))


@tensor_operands("x", "y")
def triangular_solve(
    x: Tensor, y: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False, name: str = None
) -> Tensor:
    """The solution of A @ out = y, A the upper (or lower) triangle of the square x (transposed with
    ``transpose``); only that triangle takes part, in values and in gradients."""
    _square_check("triangular_solve", x)
    matrix = _triangle_of(x, upper, unitriangular)
    return solve(_swap_last(matrix) if transpose else matrix, y)


def _from_factor(factor: Tensor, upper: bool) -> Tensor:
    """L @ L^T from a lower factor, U^T @ U from an upper one."""
    return matmul(factor, factor, transpose_x=upper, transpose_y=not upper)


@tensor_method("cholesky_solve")
@tensor_operands("x", "y")
def cholesky_solve(x: Tensor, y: Tensor, upper: bool = False, name: str = None) -> Tensor:
    """The solution of A @ out = x, where y is A's Cholesky factor (lower, or upper with ``upper``)."""
    _square_check("cholesky_solve", y)
    return solve(_from_factor(y, upper), x)


@tensor_method("cholesky_inverse")
@tensor_operands("x")
def cholesky_inverse(x: Tensor, upper: bool = False, name: str = None) -> Tensor:
    """The inverse of A, where x is A's Cholesky factor (lower, or upper with ``upper``)."""
    _square_check("cholesky_inverse", x)
    return inv(_from_factor(x, upper))


@tensor_method("fill_diagonal_tensor")
@tensor_operands("x", "y")
def fill_diagonal_tensor(
    x: Tensor, y: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1, name: str = None
) -> Tensor:
    """``Tensor.fill_diagonal_tensor``: the same as :func:`diagonal_scatter`."""
    return diagonal_scatter(x, y, offset, dim1, dim2)


def _diagonal_positions(shape: tuple, offset: int, wrap_rows: bool) -> Any:
    """Flat positions of the (offset) diagonal of a 2-D shape, or of the main diagonal of an
    n-D shape whose sides are equal; with ``wrap_rows`` a tall matrix's diagonal restarts below."""
    xp = backend.numpy
    if len(shape) != 2:
        if len(set(shape)) != 1:
            raise ValueError(f"fill_diagonal_: a tensor with more than 2 axes needs equal sides, got {list(shape)}")
        return xp.arange(shape[0]) * int(sum(shape[0] ** k for k in range(len(shape))))
    rows, cols = shape
    step = cols + 1
    if wrap_rows:
        return xp.arange(offset if offset >= 0 else -offset * cols, rows * cols, step)
    count = max(min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols), 0)
    first = offset if offset >= 0 else -offset * cols
    return first + xp.arange(count) * step


@tensor_operands("x")
def filled_diagonal(x: Tensor, value: float, offset: int = 0, wrap: bool = False, name: str = None) -> Tensor:
    """x with ``value`` written on its diagonal (the out-of-place op behind ``Tensor.fill_diagonal_``);
    the diagonal gets no gradient."""
    if x._data.ndim < 2:
        raise ValueError(f"fill_diagonal_: x needs at least 2 axes, got shape {x.shape}")
    xd = x._data
    xp = backend.get_array_module(xd)
    positions = xp.asarray(_diagonal_positions(xd.shape, offset, wrap))
    data = xd.copy()
    data.reshape(-1)[positions] = value

    def backward(g):
        gx = g.copy()
        gx.reshape(-1)[positions] = 0
        return (gx,)

    return result(data, (x,), backward)


_LSTSQ_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


@tensor_method("lstsq")
@tensor_operands("x", "y")
def lstsq(x: Tensor, y: Tensor, rcond: float = None, driver: str = None, name: str = None) -> tuple:
    """The least-squares solution of x @ solution = y (x is [..., M, N], y [..., M, K]), as Paddle's
    ``(solution, residuals, rank, singular_values)``.

    Which extras are filled depends on ``driver`` as in Paddle on the CPU: 'gelsy' (the default)
    gives the rank, 'gelsd'/'gelss' the rank and x's singular values, 'gels' none; the squared
    residuals per column come with every driver but 'gelsy' when M > N and x has full rank (else
    they are empty). Values below ``rcond`` times the largest singular value count as zero
    (default: machine epsilon times max(M, N)). Not differentiable, as in Paddle.
    """
    if driver not in _LSTSQ_DRIVERS:
        raise ValueError(f"lstsq: driver must be one of {list(_LSTSQ_DRIVERS)}, got {driver!r}")
    xd, yd = x._data, y._data
    if xd.ndim < 2 or yd.ndim != xd.ndim or xd.shape[:-1] != yd.shape[:-1]:
        raise ValueError(
            f"lstsq: x must be [..., M, N] and y [..., M, K] with the same leading shape, got {x.shape} and {y.shape}"
        )
    xp = backend.get_array_module(xd)
    batch, (m, n) = xd.shape[:-2], xd.shape[-2:]
    flat_x, flat_y = xd.reshape((-1, m, n)), yd.reshape((-1, m, yd.shape[-1]))
    solved = [xp.linalg.lstsq(a, b, rcond=rcond) for a, b in zip(flat_x, flat_y)]
    solution = xp.stack([s[0] for s in solved]).reshape(batch + (n, yd.shape[-1])).astype(xd.dtype)
    ranks = [int(s[2]) for s in solved]
    full_rank_tall = m > n and all(r == n for r in ranks)
    empty = xp.zeros((0,), dtype=xd.dtype)
    residuals = (
        xp.stack([s[1] for s in solved]).reshape(batch + (yd.shape[-1],)).astype(xd.dtype)
        if full_rank_tall and driver != "gelsy" and driver is not None
        else empty
    )
    rank = xp.zeros((0,), dtype="int64") if driver == "gels" else xp.asarray(ranks, dtype="int32").reshape(batch)
    singular = (
        xp.stack([s[3] for s in solved]).reshape(batch + (min(m, n),)).astype(xd.dtype)
        if driver in ("gelsd", "gelss")
        else empty
    )
    return tuple(wrap(a) for a in (solution, residuals, rank, singular))
