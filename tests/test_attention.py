"""The fused attention op (minidp.nn.functional.attention.fused_attention) against finite
differences and against the composition of ops it stands in for."""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from gradcheck import check_grad
from minidp.nn.functional.attention import attend, composed_attention, fused_attention

rng = np.random.default_rng(5)


def t(array, grad=False):
    tensor = minidp.to_tensor(np.asarray(array))
    tensor.stop_gradient = not grad
    return tensor


@pytest.mark.parametrize("mask_shape", [None, (1, 1, 3, 4), (2, 1, 1, 4)])
def test_fused_attention_gradients_match_finite_differences(mask_shape):
    q, k, v = rng.normal(size=(2, 2, 3, 2)), rng.normal(size=(2, 2, 4, 2)), rng.normal(size=(2, 2, 4, 3))
    arrays = [q, k, v] if mask_shape is None else [q, k, v, rng.normal(size=mask_shape)]

    def run(output):
        def fn(*tensors):
            mask = tensors[3] if len(tensors) == 4 else None
            return fused_attention(*tensors[:3], mask, 0.0, 0.7)[output]

        return fn

    check_grad(run(0), *arrays)
    check_grad(run(1), *arrays, wrt=[i for i in range(len(arrays)) if i != 2])  # weights: not of v


@pytest.mark.parametrize("dropout_p", [0.0, 0.3])
def test_fused_attention_matches_the_composed_ops_in_float32(dropout_p):
    q, k, v = (rng.normal(size=(2, 4, 5, 8)).astype("float32") for _ in range(3))
    mask = np.where(rng.random((2, 1, 5, 5)) < 0.2, -1e9, 0.0).astype("float32")
    g_out, g_weights = rng.normal(size=(2, 4, 5, 8)), rng.normal(size=(2, 4, 5, 5))
    runs = []
    for op in (fused_attention, composed_attention):
        tensors = [t(a, True) for a in (q, k, v)]
        minidp.seed(11)
        args = (*tensors, t(mask), dropout_p) + ((0.35,) if op is fused_attention else (True, 0.35))
        out, weights = op(*args)
        ((out * t(g_out.astype("float32"))).sum() + (weights * t(g_weights.astype("float32"))).sum()).backward()
        runs.append([out.numpy(), weights.numpy()] + [x.grad.numpy() for x in tensors])
    for fused, composed in zip(*runs):
        np.testing.assert_allclose(fused, composed, rtol=1e-5, atol=1e-6)


def test_attention_layers_use_one_graph_node():
    mha = nn.MultiHeadAttention(8, 2, need_weights=True)
    x = t(rng.normal(size=(2, 3, 8)).astype("float32"), True)
    _, weights = mha(x)
    assert weights._node.__class__.__name__ == "NodeOutput"  # an output of the fused op
    weights.sum().backward()
    assert mha.q_proj.weight.grad is not None


def test_other_dtypes_broadcast_keys_and_auto_cast_use_the_composed_ops():
    q = t(rng.normal(size=(1, 2, 3, 4)).astype("float16"))
    out, _ = attend(q, q, q, None, 0.0, True, 0.5)
    assert out.dtype == minidp.float16 and out._node is None
    q32 = t(rng.normal(size=(2, 2, 3, 4)).astype("float32"), True)
    shared = t(rng.normal(size=(1, 2, 3, 4)).astype("float32"))
    assert attend(q32, shared, shared, None, 0.0, True, 0.5)[0]._node.__class__.__name__ == "Node"
    with minidp.amp.auto_cast(dtype="bfloat16"):
        out, _ = attend(q32, q32, q32, None, 0.0, True, 0.5)
    assert out.dtype == minidp.bfloat16
