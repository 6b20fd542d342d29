"""Matrix multiplication and the other linear-algebra ops (products, triangles, diagonals, norms,
einsum, inverses and decompositions), each with its backward."""
from __future__ import annotations

import string
from typing import Any

from .. import backend
from ..autograd.tensor import Tensor
from ._util import normalize_axis, result, unbroadcast, wrap
from .math import abs as absolute, add, multiply, scale, subtract
from .reduction import max as reduce_max, min as reduce_min, sum as reduce_sum
from .shape import reshape, squeeze, transpose, unsqueeze

inf = float("inf")


def _t(a):
    return a.swapaxes(-1, -2)


def matmul(x: Tensor, y: Tensor, transpose_x: bool = False, transpose_y: bool = False,
           name: str = None) -> Tensor:
    """x @ y over the last two axes, broadcasting leading (batch) axes; 1-D operands are vectors."""
    xd, yd = x._data, y._data
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
        data = xd @ yd
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
            gx = unbroadcast(g @ _t(b), a.shape)
            gx = gx[0] if x_vec else (_t(gx) if transpose_x else gx)
        if not y.stop_gradient:
            gy = unbroadcast(_t(a) @ g, b.shape)
            gy = gy[:, 0] if y_vec else (_t(gy) if transpose_y else gy)
        return gx, gy

    return result(data, (x, y), backward)


def _batched_check(op: str, x: Tensor, ndim: int) -> None:
    if x._data.ndim != ndim:
        raise ValueError(f"{op}: expects {ndim}-D tensors, got shape {x.shape}")


def bmm(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Batched matrix product of two 3-D tensors [B, N, K] @ [B, K, M]."""
    _batched_check("bmm", x, 3)
    _batched_check("bmm", y, 3)
    if x._data.shape[0] != y._data.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: {x.shape} and {y.shape}")
    return matmul(x, y)


def mv(x: Tensor, vec: Tensor, name: str = None) -> Tensor:
    """Matrix-vector product of a 2-D x and a 1-D vec."""
    _batched_check("mv", x, 2)
    _batched_check("mv", vec, 1)
    return matmul(x, vec)


def dot(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Inner product of two 1-D tensors, or row by row of two 2-D tensors."""
    if x._data.shape != y._data.shape or x._data.ndim not in (1, 2):
        raise ValueError(f"dot: x and y must be 1-D or 2-D of one shape, got {x.shape} and {y.shape}")
    return reduce_sum(multiply(x, y), axis=-1)


def outer(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """The outer product of x and y (both flattened)."""
    return multiply(reshape(x, [-1, 1]), reshape(y, [1, -1]))


def inner(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Sums of products over the last axes: shape x.shape[:-1] + y.shape[:-1] (a scalar operand scales)."""
    if x._data.ndim == 0 or y._data.ndim == 0:
        return multiply(x, y)
    k = x._data.shape[-1]
    if y._data.shape[-1] != k:
        raise ValueError(f"inner: the last axes differ: {x.shape} and {y.shape}")
    product = matmul(reshape(x, [-1, k]), reshape(y, [-1, k]), transpose_y=True)
    return reshape(product, x.shape[:-1] + y.shape[:-1])


def t(input: Tensor, name: str = None) -> Tensor:
    """The transpose of a matrix; tensors with fewer than 2 axes are returned as they are."""
    if input._data.ndim > 2:
        raise ValueError(f"t: expects a tensor with at most 2 axes, got shape {input.shape}; use transpose")
    return transpose(input, [1, 0]) if input._data.ndim == 2 else input


def _triangle(x: Tensor, diagonal: int, pick: str) -> Tensor:
    xd = x._data
    if xd.ndim < 2:
        raise ValueError(f"{pick}: expects a tensor with at least 2 axes, got shape {x.shape}")
    fn = getattr(backend.get_array_module(xd), pick)
    return result(fn(xd, diagonal), (x,), lambda g: (fn(g, diagonal),))


def tril(x: Tensor, diagonal: int = 0, name: str = None) -> Tensor:
    """The lower triangle of the last two axes (entries above ``diagonal`` zeroed)."""
    return _triangle(x, diagonal, "tril")


def triu(x: Tensor, diagonal: int = 0, name: str = None) -> Tensor:
    """The upper triangle of the last two axes (entries below ``diagonal`` zeroed)."""
    return _triangle(x, diagonal, "triu")


def cross(x: Tensor, y: Tensor, axis: int = 9, name: str = None) -> Tensor:
    """Cross product of 3-vectors along ``axis`` (default: the first axis of length 3)."""
    xd, yd = x._data, y._data
    if xd.shape != yd.shape:
        raise ValueError(f"cross: x and y must have one shape, got {x.shape} and {y.shape}")
    if axis == 9:
        axis = next((i for i, n in enumerate(xd.shape) if n == 3), None)
        if axis is None:
            raise ValueError(f"cross: no axis of length 3 in shape {x.shape}")
    axis = normalize_axis(axis, xd.ndim)[0]
    if xd.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have length 3, got shape {x.shape}")
    xp = backend.get_array_module(xd)
    data = xp.cross(xd, yd, axis=axis)
    return result(data, (x, y), lambda g: (xp.cross(yd, g, axis=axis), xp.cross(g, xd, axis=axis)))


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
        return ((gb * y_spread).sum(axis=y_axes).reshape(xd.shape),
                (gb * x_spread).sum(axis=x_axes).reshape(yd.shape))

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


def diagonal(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str = None) -> Tensor:
    """The diagonal of the plane ``axis1``/``axis2`` (above it for offset > 0), as the last axis."""
    xd = x._data
    a1, a2 = normalize_axis([axis1, axis2], xd.ndim)
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 and axis2 must differ, both are {a1}")
    xp = backend.get_array_module(xd)
    index = _diagonal_index(xp, xd.shape, offset, a1, a2)

    def backward(g):
        gx = xp.zeros_like(xd)
        gx[index] = g
        return (gx,)

    return result(xd[index], (x,), backward)


def trace(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str = None) -> Tensor:
    """The sum of the diagonal of the plane ``axis1``/``axis2``."""
    return reduce_sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in the plane ``dim1``/``dim2`` of the result) whose diagonals hold the last axis of input."""
    xd = input._data
    nd = xd.ndim + 1
    d1, d2 = normalize_axis([dim1, dim2], nd)
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, both are {d1}")
    size = xd.shape[-1] + abs(offset)
    shape = list(xd.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, size)
    xp = backend.get_array_module(xd)
    index = _diagonal_index(xp, tuple(shape), offset, d1, d2)
    data = xp.zeros(shape, dtype=xd.dtype)
    data[index] = xd
    return result(data, (input,), lambda g: (g[index],))


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
        data = (magnitude ** p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
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
    if p not in (1, -1, inf, -inf):
        raise ValueError(f"norm: matrix norms support p='fro', 1, -1, inf, -inf; got {p!r} "
                         "(spectral and nuclear norms need a singular value decomposition)")
    summed_axis, picked_axis = (axes[0], axes[1]) if p in (1, -1) else (axes[1], axes[0])
    sums = reduce_sum(absolute(x), axis=summed_axis, keepdim=True)
    picked = (reduce_max if p > 0 else reduce_min)(sums, axis=picked_axis, keepdim=True)
    return picked if keepdim else squeeze(picked, list(axes))


def norm(x: Tensor, p: Any = None, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Vector or matrix norm, as Paddle's: ``axis`` None or an int gives a vector norm (2 by default,
    all elements when None); two axes give a matrix norm ('fro' by default, or 1, -1, inf, -inf)."""
    axes = normalize_axis(axis, x._data.ndim)
    if isinstance(p, str) and p not in ("fro",):
        raise ValueError(f"norm: p must be a number or 'fro', got {p!r}")
    if axes is not None and len(axes) == 2:
        return _matrix_norm(x, p, axes, keepdim)
    if axes is not None and len(axes) != 1:
        raise ValueError(f"norm: axis must be None, an int or two ints, got {axis}")
    return _vector_norm(x, 2.0 if p in (None, "fro") else float(p), axes, keepdim)


def vector_norm(x: Tensor, p: float = 2.0, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """The p-norm of the elements over ``axis`` (all of them when None), any number of axes."""
    return _vector_norm(x, float(p), normalize_axis(axis, x._data.ndim), keepdim)


def matrix_norm(x: Tensor, p: Any = "fro", axis: Any = (-2, -1), keepdim: bool = False, name: str = None) -> Tensor:
    """The matrix norm ('fro', 1, -1, inf, -inf) over the two axes ``axis``."""
    axes = normalize_axis(axis, x._data.ndim)
    if len(axes) != 2:
        raise ValueError(f"matrix_norm: axis must name two axes, got {axis}")
    return _matrix_norm(x, p, axes, keepdim)


def dist(x: Tensor, y: Tensor, p: float = 2, name: str = None) -> Tensor:
    """The p-norm of x - y (broadcast), over all elements."""
    return _vector_norm(subtract(x, y), float(p), None, False)


def cdist(x: Tensor, y: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
          name: str = None) -> Tensor:
    """Pairwise p-norm distances between the rows of x [..., P, M] and y [..., R, M]: [..., P, R]."""
    if x._data.ndim < 2 or x._data.shape[-1] != y._data.shape[-1]:
        raise ValueError(f"cdist: x and y must be [..., P, M] and [..., R, M], got {x.shape} and {y.shape}")
    diff = subtract(unsqueeze(x, -2), unsqueeze(y, -3))
    return _vector_norm(diff, float(p), (diff._data.ndim - 1,), False)


def addmm(input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str = None) -> Tensor:
    """beta * input + alpha * (x @ y) for 2-D x and y."""
    _batched_check("addmm", x, 2)
    _batched_check("addmm", y, 2)
    return add(scale(input, beta), scale(matmul(x, y), alpha))


def baddbmm(input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0,
            name: str = None) -> Tensor:
    """beta * input + alpha * bmm(x, y)."""
    return add(scale(input, beta), scale(bmm(x, y), alpha))


def _einsum_explicit(equation: str, shapes: list) -> tuple:
    """The subscripts of each operand and of the output, with ``...`` spelled out as letters."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} names {len(inputs)} operands, got {len(shapes)}")
    spare = [c for c in string.ascii_letters if c not in equation]
    widths = [len(shape) - (len(s) - 3) for s, shape in zip(inputs, shapes) if "..." in s]
    ellipsis = "".join(spare[:max(widths, default=0)])
    spelled = []
    for s, shape in zip(inputs, shapes):
        if "..." in s:
            width = len(shape) - (len(s) - 3)
            s = s.replace("...", ellipsis[len(ellipsis) - width:])
        if len(s) != len(shape):
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of shape {list(shape)}")
        spelled.append(s)
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
    full = xp.broadcast_to(contracted.reshape([contracted.shape[kept.index(c)] if c in kept else 1 for c in unique]),
                           [sizes[c] for c in unique])
    if len(unique) != len(own):
        grid = [xp.arange(sizes[c]).reshape((1,) * k + (sizes[c],) + (1,) * (len(unique) - k - 1))
                for k, c in enumerate(unique)]
        placed = xp.zeros([sizes[c] for c in own], dtype=g.dtype)
        placed[tuple(grid[unique.index(c)] for c in own)] = full
        full = placed
    return unbroadcast(full, shape)


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Sums of products over the indices an Einstein-summation ``equation`` names (as NumPy's)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    arrays = [t._data for t in operands]
    spelled, out = _einsum_explicit(equation, [a.shape for a in arrays])
    xp = backend.get_array_module(arrays[0])
    explicit = ",".join(spelled) + "->" + out
    try:
        data = xp.einsum(explicit, *arrays)
    except ValueError as error:
        raise ValueError(f"einsum: {equation!r} does not fit shapes {[list(a.shape) for a in arrays]} ({error})") from None

    def backward(g):
        return tuple(None if t.stop_gradient else _einsum_grad(xp, g, out, spelled, arrays, i)
                     for i, t in enumerate(operands))

    return result(xp.asarray(data), operands, backward)


def _square_check(op: str, x: Tensor) -> None:
    shape = x._data.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{op}: expects square matrices in the last two axes, got shape {list(shape)}")


def _mT(a: Any) -> Any:
    return a.swapaxes(-1, -2)


def inv(x: Tensor, name: str = None) -> Tensor:
    """The inverse of each square matrix in the last two axes."""
    _square_check("inv", x)
    xp = backend.get_array_module(x._data)
    data = xp.linalg.inv(x._data)
    return result(data, (x,), lambda g: (-(_mT(data) @ g @ _mT(data)),))


def det(x: Tensor, name: str = None) -> Tensor:
    """The determinant of each square matrix (its gradient needs the matrix to be invertible)."""
    _square_check("det", x)
    xd = x._data
    xp = backend.get_array_module(xd)
    data = xp.asarray(xp.linalg.det(xd))
    return result(data, (x,), lambda g: ((g * data)[..., None, None] * _mT(xp.linalg.inv(xd)),))


def slogdet(x: Tensor, name: str = None) -> Tensor:
    """Sign and log of the absolute determinant, stacked in one tensor of shape [2, ...]."""
    _square_check("slogdet", x)
    xd = x._data
    xp = backend.get_array_module(xd)
    sign, logabs = xp.linalg.slogdet(xd)
    data = xp.stack([xp.asarray(sign), xp.asarray(logabs)])
    return result(data, (x,), lambda g: (g[1][..., None, None] * _mT(xp.linalg.inv(xd)),))


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
