"""Integer AVG rounds toward zero, as Paddle's does.

Paddle's AVG is NCCL's ``ncclAvg``, which for integer types sums and then divides with C
semantics (the quotient is truncated toward zero: -7 / 2 == -3, where floor division gives -4).
Every backend finishes AVG with ``backends/base.py: divide_by_size``.
"""
import numpy as np
import pytest

from minidp.distributed.backends.base import divide_by_size


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_average_truncates_toward_zero_like_paddle(dtype):
    sums = np.array([-7, 7, -1, 1, -6, 0, np.iinfo(dtype).min + 1], dtype)
    divide_by_size(sums, 2)
    assert sums.tolist() == [-3, 3, 0, 0, -3, 0, (np.iinfo(dtype).min + 1) // 2 + 1]


def test_float_average_divides_exactly():
    sums = np.array([-7.0, 7.0, -1.0], np.float32)
    divide_by_size(sums, 2)
    assert sums.tolist() == [-3.5, 3.5, -0.5]
