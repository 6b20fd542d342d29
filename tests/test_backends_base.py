"""The process-group base (``minidp/distributed/backends/base.py``): AVG, exact division for
floating types (bfloat16 too), truncation toward zero for integers.

Paddle's AVG is NCCL's ``ncclAvg``, which for integer types sums and then divides with C
semantics (the quotient is truncated toward zero: -7 / 2 == -3, where floor division gives -4).
The CPU backends finish AVG with ``backends/base.py: divide_by_size``; nccl uses ``ncclAvg``.
"""

import ml_dtypes
import numpy as np
import pytest

from minidp.distributed.backends.base import divide_by_size


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_average_truncates_toward_zero_like_paddle(dtype):
    sums = np.array([-7, 7, -1, 1, -6, 0, np.iinfo(dtype).min + 1], dtype)
    divide_by_size(sums, 2)
    assert sums.tolist() == [-3, 3, 0, 0, -3, 0, (np.iinfo(dtype).min + 1) // 2 + 1]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", ml_dtypes.bfloat16])
def test_floating_average_divides_exactly(dtype):
    sums = np.array([3.5, -7.0, 5.0, -1.0], dtype)
    divide_by_size(sums, 2)
    assert sums.dtype == np.dtype(dtype)
    assert sums.astype(np.float64).tolist() == [1.75, -3.5, 2.5, -0.5]
