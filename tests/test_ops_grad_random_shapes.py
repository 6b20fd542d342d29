"""Gradient checks over randomly drawn shapes: broadcasting pairs, size-1 axes, reduction axes.

The fixed cases of test_ops_grad.py name the shapes someone thought of; these let hypothesis
draw others (kept small, so finite differences stay cheap).
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minidp
from gradcheck import check_grad

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)
BINARY_OPS = [minidp.add, minidp.subtract, minidp.multiply, minidp.divide, minidp.maximum, minidp.minimum,
              minidp.logaddexp, minidp.hypot, minidp.fmax, minidp.fmin, minidp.atan2]
NEEDS_NONZERO_Y = (minidp.divide, minidp.atan2)


def values(shape, seed, away_from_zero=False):
    v = np.random.default_rng(seed).uniform(-2.0, 2.0, shape)
    if away_from_zero:
        v = np.where(np.abs(v) < 0.3, 0.3 + np.abs(v), v)
    return v


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       op=st.sampled_from(BINARY_OPS), seed=st.integers(0, 2**16))
def test_broadcasting_binary_ops(shapes, op, seed):
    x_shape, y_shape = shapes.input_shapes
    check_grad(op, values(x_shape, seed), values(y_shape, seed + 1, away_from_zero=op in NEEDS_NONZERO_Y))


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), data=st.data(),
       op=st.sampled_from([minidp.sum, minidp.mean, minidp.max, minidp.logsumexp, minidp.prod, minidp.amin,
                           minidp.nansum]),
       keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_reductions_over_drawn_axes(shape, data, op, keepdim, seed):
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape),
                              unique_by=lambda a: a % len(shape)))
    axis = axes[0] if len(axes) == 1 else axes
    check_grad(lambda x: op(x, axis=axis, keepdim=keepdim), values(shape, seed))
