"""Convolutions (``minidp/nn/functional/conv.py``): Conv1D and the transposed convolutions against
NumPy loops, finite differences and their layers. (Conv2D is specified in test_layers.py, the
3-D forms in test_volume.py.)

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float64).
"""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from channels_last_cases import CASES, CONV, assert_matches_paddle, recorded_cases
from gradcheck import check_grad, t
from minidp.nn.functional import sliding

rng = np.random.default_rng(0)


def np_conv1d(x, w, b, stride, pad, dilation=1, groups=1):
    x = np.pad(x, [(0, 0), (0, 0), pad])
    n, c, length = x.shape
    o, cg, k = w.shape
    span = (k - 1) * dilation + 1
    out_len = (length - span) // stride + 1
    out = np.zeros((n, o, out_len))
    per_group = o // groups
    for j in range(o):
        g = j // per_group
        for i in range(out_len):
            window = x[:, g * cg : (g + 1) * cg, i * stride : i * stride + span : dilation]
            out[:, j, i] = (window * w[j]).sum((1, 2))
    return out + (0 if b is None else b[None, :, None])


@pytest.mark.parametrize("stride, padding, dilation, groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, [2, 1], 2, 2)])
def test_conv1d_matches_numpy_and_gradients(stride, padding, dilation, groups):
    x, w, b = rng.normal(size=(2, 4, 9)), rng.normal(size=(6, 4 // groups, 3)), rng.normal(size=6)
    pad = (padding, padding) if isinstance(padding, int) else tuple(padding)
    out = F.conv1d(t(x), t(w), t(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(out.numpy(), np_conv1d(x, w, b, stride, pad, dilation, groups), rtol=1e-10)
    check_grad(lambda a, c, d: F.conv1d(a, c, d, stride, padding, dilation, groups), x, w, b)


def test_conv1d_layer_same_padding_and_channels_last():
    minidp.seed(0)
    layer = nn.Conv1D(4, 6, 3, padding="SAME", data_format="NLC")
    assert layer.weight.shape == [6, 4, 3] and list(layer.state_dict()) == ["weight", "bias"]
    x = rng.normal(size=(2, 9, 4)).astype("float32")
    out = layer(t(x))
    assert out.shape == [2, 9, 6]
    expected = np_conv1d(x.transpose(0, 2, 1), layer.weight.numpy(), layer.bias.numpy(), 1, (1, 1)).transpose(0, 2, 1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert abs(nn.Conv1D(50, 40, 5).weight.numpy().std() - np.sqrt(2 / 250)) < 0.01
    with pytest.raises(ValueError, match="divisible"):
        nn.Conv1D(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="data_format"):
        F.conv1d(t(x), layer.weight, data_format="NCHW")


def np_conv2d_transpose(x, w, stride, pads, dilation, groups, extra=(0, 0)):
    """Scatter every input pixel times the kernel into the output, then crop the padding."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    full = np.zeros(
        (n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + extra[0], (wd - 1) * sw + dw * (kw - 1) + 1 + extra[1])
    )
    per_group = c // groups
    for ci in range(c):
        g = ci // per_group
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for b in range(kw):
                        contribution = x[:, ci, i, j, None] * w[ci, :, a, b]
                        full[:, g * og : (g + 1) * og, i * sh + a * dh, j * sw + b * dw] += contribution
    top, bottom, left, right = pads
    return full[:, :, top : full.shape[2] - bottom, left : full.shape[3] - right]


@pytest.mark.parametrize(
    "stride, padding, output_padding, dilation, groups",
    [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), ((2, 1), (1, 0), 0, 2, 2), (2, (1, 0, 2, 1), 0, 1, 1)],
)
def test_conv2d_transpose_matches_numpy_and_gradients(stride, padding, output_padding, dilation, groups):
    x, w, b = rng.normal(size=(2, 4, 3, 3)), rng.normal(size=(4, 3, 3, 2)), rng.normal(size=3 * groups)
    w = w[:, :3]
    strides = (stride, stride) if isinstance(stride, int) else stride
    pads = (
        {0: (0, 0, 0, 0), 1: (1, 1, 1, 1)}.get(padding)
        if isinstance(padding, int)
        else ((padding[0], padding[0], padding[1], padding[1]) if len(padding) == 2 else padding)
    )
    extra = (output_padding, output_padding)
    expected = np_conv2d_transpose(x, w, strides, pads, (dilation, dilation), groups, extra) + b[None, :, None, None]
    out = F.conv2d_transpose(t(x), t(w), t(b), stride, padding, output_padding, dilation, groups)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    check_grad(lambda a, c, d: F.conv2d_transpose(a, c, d, stride, padding, output_padding, dilation, groups), x, w, b)


def test_conv_transpose_output_size_same_padding_and_layers():
    x, w = rng.normal(size=(1, 2, 3, 3)), rng.normal(size=(2, 3, 3, 3))
    assert F.conv2d_transpose(t(x), t(w), stride=2).shape == [1, 3, 7, 7]
    assert F.conv2d_transpose(t(x), t(w), stride=2, output_size=[8, 8]).shape == [1, 3, 8, 8]
    assert F.conv2d_transpose(t(x), t(w), stride=2, padding="SAME").shape == [1, 3, 5, 5]  # as Paddle 3.3.1
    with pytest.raises(ValueError, match="out of reach"):
        F.conv2d_transpose(t(x), t(w), stride=2, output_size=[10, 10])
    with pytest.raises(ValueError, match="output_padding"):
        F.conv2d_transpose(t(x), t(w), output_padding=1)
    layer = nn.Conv2DTranspose(2, 6, 3, stride=2, groups=2)
    assert layer.weight.shape == [2, 3, 3, 3] and list(layer.state_dict()) == ["weight", "bias"]
    limit = np.sqrt(6 / (3 * 9 + 2 * 9))  # Xavier-uniform over Paddle's fans, as Paddle draws it
    assert np.abs(layer.weight.numpy()).max() <= limit
    assert layer(t(x).astype("float32"), output_size=[8, 8]).shape == [1, 6, 8, 8]
    seq, kernel = rng.normal(size=(2, 4, 5)), rng.normal(size=(4, 3, 3))
    out = F.conv1d_transpose(t(seq), t(kernel), stride=3, padding=1, output_padding=2)
    expected = np_conv2d_transpose(seq[:, :, None], kernel[:, :, None], (1, 3), (0, 0, 1, 1), (1, 1), 1, (0, 2))
    np.testing.assert_allclose(out.numpy(), expected[:, :, 0], rtol=1e-10)
    check_grad(
        lambda a, c: F.conv1d_transpose(a, c, stride=2, data_format="NLC"),
        np.ascontiguousarray(seq.transpose(0, 2, 1)),
        kernel,
    )
    layer1d = nn.Conv1DTranspose(4, 6, 3, stride=2)
    assert layer1d.weight.shape == [4, 6, 3] and layer1d(t(seq).astype("float32")).shape == [2, 6, 11]


def test_channels_last_fixture_holds_every_case_from_paddle_3_3_1():
    assert recorded_cases() == ({case[0] for case in CASES}, "3.3.1")


@pytest.mark.parametrize("case", CONV, ids=[case[0] for case in CONV])
def test_channels_last_matches_paddle(case):
    assert_matches_paddle(minidp, case)


@pytest.mark.parametrize(
    "op, shapes, kwargs",
    [
        (F.conv2d, [(1, 5, 4, 4), (2, 2, 3, 2), (2,)], {"stride": 2, "padding": "SAME", "groups": 2}),
        (F.conv2d_transpose, [(1, 3, 2, 2), (2, 3, 2, 2), (3,)], {"stride": 2, "padding": 1, "groups": 1}),
        (F.conv1d, [(2, 5, 2), (3, 2, 2), (3,)], {"dilation": 2, "padding": [1, 0]}),
        (F.conv1d_transpose, [(1, 3, 2), (2, 2, 3), (2,)], {"stride": 2, "output_padding": 1}),
    ],
    ids=["conv2d", "conv2d_transpose", "conv1d", "conv1d_transpose"],
)
def test_channels_last_gradients_match_finite_differences(op, shapes, kwargs):
    data_format = "NHWC" if len(shapes[0]) == 4 else "NLC"
    check_grad(lambda x, w, b: op(x, w, b, data_format=data_format, **kwargs), *(rng.normal(size=s) for s in shapes))


def test_channels_last_layers_and_errors():
    minidp.seed(0)
    first, last = nn.Conv2D(4, 6, 3, stride=2, padding=1), nn.Conv2D(4, 6, 3, stride=2, padding=1, data_format="NHWC")
    last.set_state_dict(first.state_dict())
    x = rng.normal(size=(2, 4, 7, 5)).astype("float32")
    want = first(t(x)).numpy().transpose(0, 2, 3, 1)
    np.testing.assert_allclose(last(t(x.transpose(0, 2, 3, 1))).numpy(), want, rtol=1e-6)
    up = nn.Conv2DTranspose(6, 4, 2, stride=2, data_format="NHWC")
    assert up(t(want)).shape == [2, 8, 6, 4]
    with pytest.raises(ValueError, match="conv2d: data_format must be 'NCHW' or 'NHWC', got 'NCWH'"):
        F.conv2d(t(x), first.weight, data_format="NCWH")
    with pytest.raises(ValueError, match=r"conv2d: expects a 4-D input \[N, H, W, C\], got shape \[4, 7, 5\]"):
        F.conv2d(t(x[0]), first.weight, data_format="NHWC")
    with pytest.raises(ValueError, match="input has 5 channels"):
        F.conv2d(t(x), first.weight, data_format="NHWC")


@pytest.mark.parametrize(
    "x_shape,w_shape,options",
    [
        ((2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
        ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
        ((1, 2, 4, 5, 3), (3, 2, 2, 3, 3), dict(padding=1)),
    ],
)
def test_convolution_input_gradient_is_the_same_offset_by_offset_and_through_all_columns(
    x_shape, w_shape, options, monkeypatch
):
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(x_shape)]
    x_data, w = rng.normal(size=x_shape), t(rng.normal(size=w_shape))
    weights = t(rng.normal(size=conv(t(x_data), w, **options).shape))
    grads = []
    for limit in (0, 1 << 30):  # all columns first, then offset by offset
        monkeypatch.setattr(sliding, "OFFSET_BY_OFFSET_LIMIT", limit)
        x = minidp.to_tensor(x_data, stop_gradient=False)
        (conv(x, w, **options) * weights).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_transposed_conv_layers_pass_groups_and_dilation_by_name(nd):
    # Paddle orders the two differently: dilation, groups in 2-D; groups, dilation in 1-D and 3-D
    layer = getattr(nn, f"Conv{nd}DTranspose")(4, 6, 3, stride=2, groups=2, dilation=2, output_padding=1)
    x = t(np.random.default_rng(nd).normal(size=(1, 4) + (3,) * nd).astype("float32"))
    function = getattr(F, f"conv{nd}d_transpose")
    expected = function(x, layer.weight, layer.bias, stride=2, output_padding=1, dilation=2, groups=2)
    np.testing.assert_array_equal(layer(x).numpy(), expected.numpy())
