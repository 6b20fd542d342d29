"""Channels-last convolution and pooling cases (``data_format`` NLC, NHWC, NDHWC) that minidp must
answer as Paddle 3.3.1 does, and one runner both frameworks go through.

``tools/record_paddle_channels_last.py`` runs each case with Paddle and stores what
:func:`run_case` returns in ``tests/fixtures/paddle_channels_last.npz``; ``test_conv.py``,
``test_pooling.py`` and ``test_volume.py`` run the same cases with minidp and compare. Cases take
the form of ``paddle_cases.CASES`` (``lambda P, F, *inputs`` written once for both frameworks) and
draw their inputs with its machinery; neither framework is imported here.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from paddle_cases import call, function, output_weights

CONV = [
    (
        "conv2d_nhwc_stride_bias",
        lambda P, F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1, data_format="NHWC"),
        [("real", (2, 7, 6, 4)), ("real", (6, 4, 3, 3)), ("real", (6,))],
        {},
    ),
    (
        "conv2d_nhwc_groups_dilation",
        lambda P, F, x, w: F.conv2d(x, w, padding=[1, 2], dilation=2, groups=2, data_format="NHWC"),
        [("real", (1, 8, 7, 4)), ("real", (4, 2, 3, 2))],
        {},
    ),
    (
        "conv2d_nhwc_same",
        lambda P, F, x, w: F.conv2d(x, w, stride=2, padding="SAME", data_format="NHWC"),
        [("real", (2, 5, 7, 3)), ("real", (4, 3, 3, 3))],
        {},
    ),
    (
        "conv2d_nhwc_valid_four_pads",
        lambda P, F, x, w: F.conv2d(
            F.conv2d(x, w, padding="VALID", data_format="NHWC"), w, padding=[1, 0, 2, 1], data_format="NHWC"
        ),
        [("real", (1, 6, 6, 3)), ("real", (3, 3, 2, 2))],
        {},
    ),
    (
        "conv2d_transpose_nhwc",
        lambda P, F, x, w, b: F.conv2d_transpose(
            x, w, b, stride=2, padding=1, output_padding=1, groups=2, data_format="NHWC"
        ),
        [("real", (1, 4, 5, 4)), ("real", (4, 3, 3, 3)), ("real", (6,))],
        {},
    ),
    (
        "conv2d_transpose_nhwc_dilation_output_size",
        lambda P, F, x, w: F.conv2d_transpose(
            x, w, stride=(2, 1), padding="VALID", dilation=2, output_size=[12, 8], data_format="NHWC"
        ),
        [("real", (2, 4, 4, 3)), ("real", (3, 2, 3, 3))],
        {},
    ),
    (
        "conv1d_nlc_same",
        lambda P, F, x, w, b: F.conv1d(x, w, b, stride=2, padding="SAME", data_format="NLC"),
        [("real", (2, 9, 4)), ("real", (6, 4, 3)), ("real", (6,))],
        {},
    ),
    (
        "conv1d_transpose_nlc",
        lambda P, F, x, w: F.conv1d_transpose(x, w, stride=2, padding=1, groups=2, dilation=2, data_format="NLC"),
        [("real", (2, 5, 4)), ("real", (4, 3, 3))],
        {},
    ),
]

VOLUME = [
    (
        "conv3d_ndhwc",
        lambda P, F, x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2, data_format="NDHWC"),
        [("real", (1, 4, 5, 4, 4)), ("real", (4, 2, 2, 3, 2)), ("real", (4,))],
        {},
    ),
    (
        "conv3d_transpose_ndhwc",
        lambda P, F, x, w: F.conv3d_transpose(x, w, stride=2, padding=[1, 0, 1], data_format="NDHWC"),
        [("real", (1, 3, 3, 2, 2)), ("real", (2, 3, 2, 3, 2))],
        {},
    ),
    (
        "max_pool3d_ndhwc",
        lambda P, F, x: F.max_pool3d(x, 2, stride=(1, 2, 2), padding=1, data_format="NDHWC"),
        [("real", (2, 4, 5, 4, 3))],
        {},
    ),
    (
        "avg_pool3d_ndhwc_same",
        lambda P, F, x: F.avg_pool3d(x, 3, stride=2, padding="SAME", data_format="NDHWC"),
        [("real", (1, 5, 4, 6, 2))],
        {},
    ),
    (
        "adaptive_avg_pool3d_ndhwc",
        lambda P, F, x: F.adaptive_avg_pool3d(x, [2, 3, None], data_format="NDHWC"),
        [("real", (1, 5, 4, 3, 2))],
        {},
    ),
]

POOLING = [
    (
        "max_pool2d_nhwc_ceil",
        lambda P, F, x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, data_format="NHWC"),
        [("real", (2, 6, 7, 3))],
        {},
    ),
    (
        "max_pool2d_nhwc_same",
        lambda P, F, x: F.max_pool2d(x, (2, 3), stride=(2, 1), padding="SAME", data_format="NHWC"),
        [("real", (1, 5, 6, 2))],
        {},
    ),
    (
        "avg_pool2d_nhwc_inclusive_ceil",
        lambda P, F, x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, exclusive=False, data_format="NHWC"),
        [("real", (2, 6, 7, 3))],
        {},
    ),
    (
        "avg_pool2d_nhwc_valid_divisor",
        lambda P, F, x: F.avg_pool2d(x, 2, padding="VALID", divisor_override=3, data_format="NHWC"),
        [("real", (1, 5, 4, 2))],
        {},
    ),
    (
        "adaptive_avg_pool2d_nhwc",
        lambda P, F, x: F.adaptive_avg_pool2d(x, [3, None], data_format="NHWC"),
        [("real", (2, 7, 5, 3))],
        {},
    ),
    (
        "lp_pool2d_nhwc",
        lambda P, F, x: F.lp_pool2d(x, 3.0, 2, stride=1, data_format="NHWC"),
        [("pos", (1, 4, 5, 2))],
        {},
    ),
    (
        "lp_pool1d_nlc",
        lambda P, F, x: F.lp_pool1d(x, 2.0, 3, stride=2, data_format="NLC"),
        [("pos", (2, 7, 3))],
        {},
    ),
    (
        "pool_layers_nhwc",
        lambda P, F, x: P.nn.AvgPool2D(2, data_format="NHWC")(P.nn.MaxPool2D(3, 1, 1, data_format="NHWC")(x)),
        [("real", (2, 6, 4, 3))],
        {},
    ),
    (
        "batch_norm_nhwc",
        lambda P, F, x, w, b: F.batch_norm(
            x, P.zeros([3], "float64"), P.ones([3], "float64"), w, b, training=True, data_format="NHWC"
        ),
        [("real", (2, 4, 3, 3)), ("pos", (3,)), ("real", (3,))],
        {},
    ),
]

CASES = CONV + VOLUME + POOLING


def run_case(framework: Any, case: tuple) -> dict:
    """Run ``case`` with ``framework`` (``paddle`` or ``minidp``): each output ``<id>/out<i>`` with
    its dtype name, and the gradient ``<id>/grad<j>`` of sum(output * w) over the floating outputs
    with respect to each input, as plain arrays."""
    case_id, path, specs, kwargs = case
    index = CASES.index(case)

    def to_tensor(array: np.ndarray) -> Any:
        tensor = framework.to_tensor(array)
        tensor.stop_gradient = array.dtype.kind != "f"
        return tensor

    result, tensors = call(function(path, framework), index, specs, kwargs, to_tensor)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    store = {}
    loss = 0
    for i, out in enumerate(outputs):
        store[f"{case_id}/out{i}"] = out.numpy()
        store[f"{case_id}/dtype{i}"] = np.array(str(out.dtype).replace("paddle.", ""))
        weights = framework.to_tensor(output_weights(index * 16 + i, tuple(out.shape)).astype(out.numpy().dtype))
        loss = loss + (out * weights).sum()
    loss.backward()
    for j, tensor in enumerate(tensors):
        if tensor.grad is not None:
            store[f"{case_id}/grad{j}"] = tensor.grad.numpy()
    return store


@functools.cache
def _fixture() -> dict:
    with np.load(Path(__file__).parent / "fixtures" / "paddle_channels_last.npz", allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def assert_matches_paddle(minidp: Any, case: tuple) -> None:
    """The outputs, dtypes and input gradients that ``minidp`` (the module) gives for ``case`` are
    those recorded from Paddle."""
    recorded = _fixture()
    want = {key: value for key, value in recorded.items() if key.split("/")[0] == case[0]}
    got = run_case(minidp, case)
    assert sorted(got) == sorted(want), f"{case[0]}: minidp gives {sorted(got)}, Paddle {sorted(want)}"
    for key, value in want.items():
        if value.dtype.kind == "U":
            assert str(got[key]) == str(value), key
        else:
            assert got[key].shape == value.shape, key
            np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-9, err_msg=key)


def recorded_cases() -> tuple:
    """The case ids the fixture holds, and the Paddle version it was recorded with."""
    recorded = _fixture()
    return {key.split("/")[0] for key in recorded if "/" in key}, str(recorded["paddle_version"])
