"""Padding (``minidp/nn/functional/padding.py``): pad in every mode and layout, and the padding
layers (Pad1D/2D/3D, the Constant, Zero, Reflection, Replication and Circular forms).

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float64).
"""

import numpy as np
import pytest

import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, t

rng = np.random.default_rng(0)
IMAGE = np.arange(6.0).reshape(1, 1, 2, 3)
NUMPY_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def test_pad_literals_from_paddle():
    np.testing.assert_array_equal(
        F.pad(t(IMAGE), [2, 1, 1, 0], mode="reflect").numpy(),
        [[[[5, 4, 3, 4, 5, 4], [2, 1, 0, 1, 2, 1], [5, 4, 3, 4, 5, 4]]]],
    )
    np.testing.assert_array_equal(
        F.pad(t(IMAGE), [1, 1, 1, 1], mode="circular").numpy(),
        [[[[5, 3, 4, 5, 3], [2, 0, 1, 2, 0], [5, 3, 4, 5, 3], [2, 0, 1, 2, 0]]]],
    )
    # all-axes form: pairs from the first axis (or from the last with pad_from_left_axis=False)
    x = np.arange(6.0).reshape(1, 2, 3)
    assert F.pad(t(x), [1, 2, 0, 0, 0, 0]).shape == [4, 2, 3]
    assert F.pad(t(x), [1, 2, 0, 0, 0, 0], pad_from_left_axis=False).shape == [1, 2, 6]
    np.testing.assert_array_equal(F.pad(t(np.arange(3.0)), [1, 1]).numpy(), [0, 0, 1, 2, 0])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape, pad, layout",
    [
        ((2, 2, 5), [2, 1], "NCL"),
        ((2, 2, 3, 4), [2, 1, 1, 2], "NCHW"),
        ((1, 2, 3, 3, 4), [1, 2, 0, 1, 2, 0], "NCDHW"),
        ((2, 3, 4, 2), [2, 1, 1, 2], "NHWC"),
    ],
)
def test_pad_modes_match_numpy_and_gradients(mode, shape, pad, layout):
    x = rng.normal(size=shape)
    spatial = list(range(2, len(shape))) if layout[1] == "C" else list(range(1, len(shape) - 1))
    widths = [(0, 0)] * len(shape)
    for i, axis in enumerate(reversed(spatial)):
        widths[axis] = (pad[2 * i], pad[2 * i + 1])
    kwargs = {"constant_values": 0.5} if mode == "constant" else {}
    expected = np.pad(x, widths, mode=NUMPY_MODE[mode], **kwargs)
    out = F.pad(t(x), pad, mode=mode, value=0.5, data_format=layout)
    np.testing.assert_array_equal(out.numpy(), expected)
    check_grad(lambda a: F.pad(a, pad, mode=mode, value=0.5, data_format=layout), x)


def test_pad_layers_and_errors():
    x = t(rng.normal(size=(1, 2, 3, 4)))
    assert nn.Pad2D(1)(x).shape == [1, 2, 5, 6]
    assert nn.Pad1D([1, 2], mode="replicate")(t(rng.normal(size=(1, 2, 3)))).shape == [1, 2, 6]
    assert nn.Pad3D(1, mode="reflect")(t(rng.normal(size=(1, 1, 3, 3, 3)))).shape == [1, 1, 5, 5, 5]
    np.testing.assert_array_equal(
        nn.ZeroPad2D([1, 0, 0, 1])(x).numpy(), np.pad(x.numpy(), [(0, 0)] * 2 + [(0, 1), (1, 0)])
    )
    np.testing.assert_array_equal(F.zeropad2d(x, [1, 0, 0, 1]).numpy(), nn.ZeroPad2D([1, 0, 0, 1])(x).numpy())
    with pytest.raises(ValueError, match="takes 8 pad values"):
        F.pad(x, [1, 2, 3])
    with pytest.raises(ValueError, match="mode"):
        F.pad(x, [1, 1, 1, 1], mode="wrap")
    with pytest.raises(ValueError, match="at most 2"):
        F.pad(x, [0, 0, 3, 0], mode="reflect")
    with pytest.raises(ValueError, match="spatial"):
        F.pad(x, [1, 0, 0, 0, 0, 0, 0, 0], mode="reflect")
    with pytest.raises(ValueError, match="padding"):
        nn.Pad2D([1, 2, 3])


@pytest.mark.parametrize(
    "layer, mode, widths",
    [
        (nn.ReflectionPad2D([1, 2, 0, 1]), "reflect", [(0, 1), (1, 2)]),
        (nn.ReplicationPad2D(1), "edge", [(1, 1), (1, 1)]),
        (nn.CircularPad2D([0, 1, 2, 0]), "wrap", [(2, 0), (0, 1)]),
        (nn.ZeroPad2d([1, 0, 0, 0]), "constant", [(0, 0), (1, 0)]),
    ],
)
def test_padding_classes(layer, mode, widths):
    x = rng.normal(size=(1, 2, 3, 4))
    np.testing.assert_array_equal(layer(t(x)).numpy(), np.pad(x, [(0, 0), (0, 0)] + widths, mode=mode))


def test_constant_1d_and_3d_padding_classes():
    seq = rng.normal(size=(1, 2, 3))
    np.testing.assert_array_equal(
        nn.ConstantPad1D(2, 0.5)(t(seq)).numpy(), np.pad(seq, [(0, 0), (0, 0), (2, 2)], constant_values=0.5)
    )
    cube = rng.normal(size=(1, 1, 2, 3, 3))
    np.testing.assert_array_equal(
        nn.CircularPad3D(1)(t(cube)).numpy(), np.pad(cube, [(0, 0)] * 2 + [(1, 1)] * 3, "wrap")
    )
    assert nn.ReflectionPad1D([1, 2])(t(seq)).shape == [1, 2, 6]
    assert nn.ReplicationPad3D(1)(t(cube)).shape == [1, 1, 4, 5, 5]
    assert nn.ZeroPad3D(1)(t(cube)).shape == [1, 1, 4, 5, 5]
    assert nn.ZeroPad1D(1)(t(seq)).shape == [1, 2, 5] and nn.ConstantPad3D(1, 2.0)(t(cube)).shape == [1, 1, 4, 5, 5]
