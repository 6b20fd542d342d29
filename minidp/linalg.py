"""``minidp.linalg``: the names of Paddle's ``paddle.linalg`` namespace.

The ops live in :mod:`minidp.ops.linalg`, forward and backward together; this module gathers them.
"""
from .ops.linalg import (cholesky, cross, det, inv, matmul, matrix_norm, norm, slogdet, solve,
                         vector_norm)

__all__ = ["cholesky", "cross", "det", "inv", "matmul", "matrix_norm", "norm", "slogdet", "solve",
           "vector_norm"]
