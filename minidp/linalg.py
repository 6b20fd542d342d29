"""``minidp.linalg``: the names of Paddle's ``paddle.linalg`` namespace.

The ops live in :mod:`minidp.ops.linalg`, forward and backward together; this module gathers them.
"""

from .ops.linalg import (
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    cond,
    corrcoef,
    cov,
    cross,
    det,
    diagonal,
    eigh,
    eigvalsh,
    inv,
    matmul,
    matrix_norm,
    matrix_power,
    matrix_rank,
    matrix_transpose,
    multi_dot,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    triangular_solve,
    vecdot,
    vector_norm,
)
from .ops.linalg import lstsq
from .ops.linalg import matrix_exp

__all__ = [
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "cond",
    "corrcoef",
    "cov",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "triangular_solve",
    "vecdot",
    "vector_norm",
]
__all__ += ["lstsq"]
__all__ += ["matrix_exp"]
