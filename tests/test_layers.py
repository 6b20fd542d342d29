"""Layers and their functional ops: outputs against hand computation, gradients against finite differences."""

import math

import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, distinct

rng = np.random.default_rng(0)


def t(array, dtype=None):
    return minidp.to_tensor(np.asarray(array), dtype=dtype)


# --- linear -------------------------------------------------------------------------------------
@pytest.mark.parametrize("x_shape", [(3, 4), (2, 3, 4), (4,)])
def test_linear_matches_matmul_and_gradients(x_shape):
    x, w, b = rng.normal(size=x_shape), rng.normal(size=(4, 5)), rng.normal(size=5)
    np.testing.assert_allclose(F.linear(t(x), t(w), t(b)).numpy(), x @ w + b, rtol=1e-12)
    check_grad(F.linear, x, w, b)
    check_grad(lambda a, c: F.linear(a, c), x, w)


def test_linear_layer_has_paddle_layout_and_default_init():
    minidp.seed(1)
    layer = nn.Linear(30, 20)
    assert layer.weight.shape == [30, 20] and layer.bias.shape == [20]
    limit = math.sqrt(6 / (30 + 20))
    w = layer.weight.numpy()
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.8 * limit
    assert not layer.bias.numpy().any()
    assert nn.Linear(3, 2, bias_attr=False).bias is None
    x = rng.normal(size=(2, 30)).astype(np.float32)
    np.testing.assert_allclose(layer(t(x)).numpy(), x @ w + layer.bias.numpy(), rtol=1e-5)


def test_linear_rejects_mismatched_dtype_and_shape():
    with pytest.raises(TypeError, match="astype"):
        F.linear(t(np.ones((2, 3))), t(np.ones((3, 4), np.float32)))
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(3, 4)(t(np.ones((2, 5), np.float32)))


# --- conv2d -------------------------------------------------------------------------------------
def naive_conv2d(x, w, b, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    wo = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, ho, wo))
    per_group = o // groups
    for bi in range(n):
        for oc in range(o):
            g = oc // per_group
            for i in range(ho):
                for j in range(wo):
                    acc = b[oc]
                    for ci in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                acc += (
                                    w[oc, ci, p, q]
                                    * x[bi, g * cg + ci, i * stride + p * dilation, j * stride + q * dilation]
                                )
                    out[bi, oc, i, j] = acc
    return out


CONV_CASES = [(1, 0, 1, 1), (1, 1, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 0, 1, 2)]


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_matches_naive_loop(stride, padding, dilation, groups):
    x = rng.normal(size=(2, 4, 7, 6))
    w = rng.normal(size=(6, 4 // groups, 3, 2))
    b = rng.normal(size=6)
    out = F.conv2d(t(x), t(w), t(b), stride=stride, padding=padding, dilation=dilation, groups=groups)
    np.testing.assert_allclose(out.numpy(), naive_conv2d(x, w, b, stride, padding, dilation, groups), rtol=1e-10)


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_gradients(stride, padding, dilation, groups):
    x = rng.normal(size=(2, 2, 5, 5))
    w = rng.normal(size=(2, 2 // groups, 2, 3))
    b = rng.normal(size=2)
    check_grad(lambda a, c, d: F.conv2d(a, c, d, stride, padding, dilation, groups), x, w, b)


def test_conv2d_padding_forms_and_layer():
    x = rng.normal(size=(1, 2, 5, 5))
    w = rng.normal(size=(3, 2, 3, 3))
    same = F.conv2d(t(x), t(w), padding="SAME")
    assert same.shape == [1, 3, 5, 5]
    np.testing.assert_allclose(same.numpy(), F.conv2d(t(x), t(w), padding=[1, 1, 1, 1]).numpy())
    assert F.conv2d(t(x), t(w), padding="valid").shape == [1, 3, 3, 3]
    minidp.seed(0)
    layer = nn.Conv2D(8, 64, 3, stride=2, padding=1)
    assert layer.weight.shape == [64, 8, 3, 3]
    np.testing.assert_allclose(layer.weight.numpy().std(), math.sqrt(2 / (8 * 9)), rtol=0.05)
    assert layer(minidp.randn([2, 8, 9, 9])).shape == [2, 64, 5, 5]


def test_conv2d_argument_errors():
    x = t(np.ones((1, 3, 4, 4), np.float32))
    with pytest.raises(ValueError, match="groups"):
        F.conv2d(x, t(np.ones((2, 2, 3, 3), np.float32)))
    with pytest.raises(ValueError, match="NCHW"):
        F.conv2d(x, t(np.ones((2, 3, 3, 3), np.float32)), data_format="NHCW")
    with pytest.raises(ValueError, match="larger"):
        F.conv2d(x, t(np.ones((2, 3, 5, 5), np.float32)))
    with pytest.raises(ValueError, match="padding"):
        nn.Conv2D(3, 2, 3, padding_mode="reflect")


# --- pooling ------------------------------------------------------------------------------------
def naive_pool(x, k, s, p, reduce, ceil_mode=False, exclusive=True):
    n, c, h, w = x.shape

    def size(length):
        span = length + 2 * p - k
        out = (-(-span // s) if ceil_mode else span // s) + 1
        return out - 1 if ceil_mode and (out - 1) * s >= length + p else out

    ho, wo = size(h), size(w)
    out = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            r0, c0 = i * s - p, j * s - p
            rows = slice(max(r0, 0), min(r0 + k, h))
            cols = slice(max(c0, 0), min(c0 + k, w))
            window = x[:, :, rows, cols]
            if reduce == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                # Paddle (and PyTorch): without `exclusive` the padding counts, the ceil_mode overhang not
                count = (
                    window.shape[2] * window.shape[3]
                    if exclusive
                    else (min(r0 + k, h + p) - r0) * (min(c0 + k, w + p) - c0)
                )
                out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


POOL_CASES = [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 0, True), (2, 1, 1, False)]


@pytest.mark.parametrize("k,s,p,ceil_mode", POOL_CASES)
def test_max_pool2d_matches_naive_and_gradients(k, s, p, ceil_mode):
    x = distinct(rng, 2, 2, 7, 6)
    out = F.max_pool2d(t(x), k, s, p, ceil_mode=ceil_mode)
    np.testing.assert_allclose(out.numpy(), naive_pool(x, k, s, p, "max", ceil_mode))
    check_grad(lambda a: F.max_pool2d(a, k, s, p, ceil_mode=ceil_mode), x)


@pytest.mark.parametrize("k,s,p,ceil_mode", POOL_CASES)
@pytest.mark.parametrize("exclusive", [True, False])
def test_avg_pool2d_matches_naive_and_gradients(k, s, p, ceil_mode, exclusive):
    x = rng.normal(size=(2, 2, 7, 6))
    out = F.avg_pool2d(t(x), k, s, p, ceil_mode=ceil_mode, exclusive=exclusive)
    np.testing.assert_allclose(out.numpy(), naive_pool(x, k, s, p, "avg", ceil_mode, exclusive), rtol=1e-12)
    check_grad(lambda a: F.avg_pool2d(a, k, s, p, ceil_mode=ceil_mode, exclusive=exclusive), x)


def test_max_pool2d_mask_and_layers():
    x = distinct(rng, 1, 2, 4, 6)
    out, mask = F.max_pool2d(t(x), 2, return_mask=True)
    flat = x.reshape(1, 2, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, mask.numpy().reshape(1, 2, -1), 2).reshape(out.shape), out.numpy()
    )
    np.testing.assert_array_equal(nn.MaxPool2D(2)(t(x)).numpy(), out.numpy())
    np.testing.assert_allclose(nn.AvgPool2D(2, divisor_override=1)(t(x)).numpy(), naive_pool(x, 2, 2, 0, "avg") * 4)


# --- normalisation -------------------------------------------------------------------------------
def test_layer_norm_matches_formula_and_gradients():
    x = rng.normal(size=(3, 2, 4))
    w, b = rng.normal(size=8), rng.normal(size=8)
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-5) * w.reshape(2, 4) + b.reshape(2, 4)
    np.testing.assert_allclose(F.layer_norm(t(x), [2, 4], t(w), t(b)).numpy(), expected, rtol=1e-10)
    check_grad(lambda a, c, d: F.layer_norm(a, [2, 4], c, d), x, w, b)
    check_grad(lambda a: F.layer_norm(a, 4), x)
    layer = nn.LayerNorm(4)
    assert layer.weight.numpy().tolist() == [1.0] * 4 and not layer.bias.numpy().any()
    with pytest.raises(ValueError, match="trailing"):
        F.layer_norm(t(x), [3])


def test_batch_norm_training_statistics_and_running_update():
    x = rng.normal(size=(4, 3, 2, 2)).astype(np.float32)
    bn = nn.BatchNorm2D(3, momentum=0.8)
    out = bn(t(x)).numpy()
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    expected = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn._mean.numpy(), 0.2 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn._variance.numpy(), 0.8 + 0.2 * var, rtol=1e-5)
    bn.eval()
    running = bn(t(x)).numpy()
    expected = (x - bn._mean.numpy().reshape(1, 3, 1, 1)) / np.sqrt(bn._variance.numpy().reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(running, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn._mean.numpy(), 0.2 * mean, rtol=1e-5)
    assert list(bn.state_dict()) == ["weight", "bias", "_mean", "_variance"]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize(
    "shape,fmt", [((4, 3), "NCL"), ((3, 2, 4), "NCL"), ((2, 2, 3, 3), "NCHW"), ((2, 3, 3, 2), "NHWC")]
)
def test_batch_norm_gradients(shape, fmt, training):
    channels = shape[-1] if fmt == "NHWC" else shape[1]
    running_mean = t(rng.normal(size=channels))
    running_var = t(rng.uniform(0.5, 2, size=channels))
    check_grad(
        lambda a, w, b: F.batch_norm(a, running_mean, running_var, w, b, training=training, data_format=fmt),
        rng.normal(size=shape),
        rng.normal(size=channels),
        rng.normal(size=channels),
    )


def test_batch_norm_layers_check_input_rank():
    with pytest.raises(ValueError, match="dimensions"):
        nn.BatchNorm1D(3)(minidp.randn([2, 3, 4, 4]))
    with pytest.raises(ValueError, match="dimensions"):
        nn.BatchNorm2D(3)(minidp.randn([2, 3]))
    assert nn.BatchNorm1D(3)(minidp.randn([5, 3])).shape == [5, 3]


# --- embedding ----------------------------------------------------------------------------------
def test_embedding_lookup_padding_and_gradient():
    table = rng.normal(size=(5, 3))
    ids = np.array([[0, 2, 2], [4, 1, 0]])
    out = F.embedding(t(ids), t(table))
    np.testing.assert_array_equal(out.numpy(), table[ids])
    check_grad(lambda w: F.embedding(t(ids), w), table)
    check_grad(lambda w: F.embedding(t(ids), w, padding_idx=2), table)
    padded = F.embedding(t(ids), t(table), padding_idx=2).numpy()
    assert not padded[0, 1:].any() and np.array_equal(padded[1], table[[4, 1, 0]])
    weight = minidp.to_tensor(table, stop_gradient=False)
    F.embedding(t(ids), weight, padding_idx=-3).sum().backward()
    assert not weight.grad.numpy()[2].any() and weight.grad.numpy()[0].tolist() == [2.0] * 3
    layer = nn.Embedding(6, 4, padding_idx=1, sparse=True)
    assert not layer.weight.numpy()[1].any() and layer(t(np.array([1, 2]))).shape == [2, 4]


def test_embedding_rejects_bad_ids():
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        F.embedding(t(np.array([5])), t(np.ones((5, 2))))
    with pytest.raises(TypeError, match="integers"):
        F.embedding(t(np.array([1.0])), t(np.ones((5, 2))))


# --- dropout and activations -------------------------------------------------------------------------
def test_dropout_training_and_eval():
    minidp.seed(3)
    x = minidp.ones([200, 50])
    out = F.dropout(x, 0.3).numpy()
    dropped = (out == 0).mean()
    assert 0.27 < dropped < 0.33
    np.testing.assert_allclose(out[out != 0], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    np.testing.assert_allclose(F.dropout(x, 0.3, training=False, mode="downscale_in_infer").numpy(), 0.7)
    kept = F.dropout(x, 0.5, mode="downscale_in_infer").numpy()
    assert set(np.unique(kept)) <= {0.0, 1.0}
    rows = F.dropout(x, 0.5, axis=0).numpy()
    assert all(len(set(row)) == 1 for row in rows)
    assert not F.dropout(x, 1.0).numpy().any()
    minidp.seed(5)
    first = F.dropout(x, 0.5).numpy()
    minidp.seed(5)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), first)
    with pytest.raises(ValueError, match="probability"):
        F.dropout(x, 1.5)


def test_dropout_gradient_is_the_mask():
    minidp.seed(4)
    x = minidp.to_tensor(np.ones((10, 10)), stop_gradient=False)
    out = F.dropout(x, 0.4)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy())
    layer = nn.Dropout(0.4)
    layer.eval()
    assert layer(x) is x


def test_dropout_inplace_updates_x_by_the_inplace_rules():
    minidp.seed(6)
    x = minidp.ones([20, 10])
    assert F.dropout(x, 0.5, inplace=True) is x and x.inplace_version == 1
    assert set(np.unique(x.numpy())) == {0.0, 2.0}
    rows = minidp.ones([20, 10])
    assert F.dropout(rows, 0.5, axis=0, inplace=True) is rows and all(len(set(r)) == 1 for r in rows.numpy())
    infer = minidp.ones([2, 3])
    assert F.dropout(infer, 0.3, training=False, inplace=True, mode="downscale_in_infer") is infer
    np.testing.assert_allclose(infer.numpy(), 0.7)
    untouched = minidp.ones([2, 3])
    assert F.dropout(untouched, 0.0, inplace=True) is untouched and untouched.inplace_version == 0  # as Paddle
    w = minidp.to_tensor(np.ones((4, 5)), stop_gradient=False)
    with pytest.raises(ValueError, match="dropout_: .* leaf tensor that requires a gradient"):
        F.dropout(w, 0.5, inplace=True)
    h = w * 2
    assert F.dropout(h, 0.5, inplace=True) is h
    h.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), h.numpy())  # 2 * (the mask scaled by 1 / (1 - p))
    layer = nn.Dropout(0.5, inplace=True)
    y = minidp.ones([3, 4])
    assert layer(y) is y and y.inplace_version == 1


def test_inplace_dropout_in_evaluation_leaves_a_graph_result_and_its_readers_intact():
    # upscale_in_train is the identity in evaluation: x stays as it is (Paddle counts a version),
    # and the ops that read it before and after share its one graph node
    w = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    h = w * 2
    y = h * h
    assert F.dropout(h, 0.5, training=False, inplace=True) is h and h.inplace_version == 0
    (y + h * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [14.0, 22.0])


def test_dropout1d_ignores_inplace_with_a_warning_as_paddle():
    x = minidp.ones([2, 3, 4])
    with pytest.warns(UserWarning, match="dropout1d: inplace=True is not supported"):
        out = F.dropout1d(x, 0.5, inplace=True)
    assert out is not x and (x.numpy() == 1).all()


def test_activation_layers_match_ops():
    x = minidp.to_tensor(rng.normal(size=(3, 4)))
    for layer, op in [
        (nn.ReLU(), minidp.relu),
        (nn.Tanh(), minidp.tanh),
        (nn.Sigmoid(), minidp.sigmoid),
        (nn.GELU(), minidp.gelu),
        (nn.Softmax(0), lambda v: minidp.softmax(v, 0)),
        (nn.LogSoftmax(), minidp.log_softmax),
    ]:
        np.testing.assert_array_equal(layer(x).numpy(), op(x).numpy())
    np.testing.assert_array_equal(nn.GELU(approximate=True)(x).numpy(), minidp.gelu(x, approximate=True).numpy())
    assert nn.Flatten()(minidp.ones([2, 3, 4])).shape == [2, 12]
    assert nn.Identity()(x) is x


def test_seeded_models_are_identical():
    minidp.seed(11)
    a = nn.Sequential(nn.Conv2D(1, 2, 3), nn.Linear(4, 3))
    minidp.seed(11)
    b = nn.Sequential(nn.Conv2D(1, 2, 3), nn.Linear(4, 3))
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_layers_match_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, w, b = rng.normal(size=(2, 4, 7, 7)), rng.normal(size=(6, 2, 3, 3)), rng.normal(size=6)
    ours = F.conv2d(t(x), t(w), t(b), stride=2, padding=1, dilation=1, groups=2)
    theirs = tf.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=2, padding=1, groups=2)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    x = distinct(rng, 2, 3, 7, 7)
    np.testing.assert_allclose(
        F.max_pool2d(t(x), 3, 2, 1, ceil_mode=True).numpy(),
        tf.max_pool2d(torch.tensor(x), 3, 2, 1, ceil_mode=True).numpy(),
    )
    np.testing.assert_allclose(
        F.avg_pool2d(t(x), 3, 2, 1, exclusive=True).numpy(),
        tf.avg_pool2d(torch.tensor(x), 3, 2, 1, count_include_pad=False).numpy(),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        F.layer_norm(t(x), [7, 7]).numpy(), tf.layer_norm(torch.tensor(x), [7, 7]).numpy(), rtol=1e-8, atol=1e-10
    )


# --- audit: Paddle semantics checked against Paddle 3.3 itself -----------------------------------
def test_batch_norm_use_global_stats_false_uses_batch_statistics_in_eval_too():
    # Paddle: use_global_stats=False normalises with the batch's statistics and updates the
    # running ones whatever the mode; True never touches them.
    x = np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 0.0]], np.float32)
    bn = nn.BatchNorm1D(2, use_global_stats=False)
    bn.eval()
    out = bn(t(x)).numpy()
    np.testing.assert_allclose(out[:, 0], [-1.3363018, 0.2672603, 1.0690415], rtol=1e-4)  # Paddle's output
    np.testing.assert_allclose(bn._mean.numpy(), 0.1 * x.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(bn._variance.numpy(), 0.9 + 0.1 * x.var(axis=0), rtol=1e-6)
    frozen = nn.BatchNorm1D(2, use_global_stats=True)
    np.testing.assert_allclose(frozen(t(x)).numpy(), x / np.sqrt(1 + 1e-5), rtol=1e-6)
    assert not frozen._mean.numpy().any()


def test_conv2d_default_init_counts_every_input_channel():
    # Paddle's std is sqrt(2 / (in_channels * kh * kw)), whatever groups is.
    minidp.seed(0)
    layer = nn.Conv2D(64, 64, 3, groups=32)
    np.testing.assert_allclose(layer.weight.numpy().std(), math.sqrt(2 / (64 * 9)), rtol=0.05)


def test_conv2d_same_padding_sets_dilation_to_one_as_paddle_does():
    x = rng.normal(size=(1, 2, 7, 6))
    w = rng.normal(size=(3, 2, 3, 3))
    dilated = F.conv2d(t(x), t(w), padding="SAME", dilation=2)
    np.testing.assert_allclose(dilated.numpy(), F.conv2d(t(x), t(w), padding=1).numpy(), rtol=1e-12)


def test_avg_pool2d_ceil_mode_non_exclusive_divisor_matches_paddle():
    ones = minidp.ones([1, 1, 7, 6])
    # Paddle 3.3 (and PyTorch's count_include_pad): 9 * avg_pool2d(ones, 3, 2, 1, ceil_mode=True, exclusive=False)
    expected = [[4, 6, 6, 3], [6, 9, 9, 4.5], [6, 9, 9, 4.5], [4, 6, 6, 3]]
    out = F.avg_pool2d(ones, 3, 2, 1, ceil_mode=True, exclusive=False).numpy()[0, 0] * 9
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    out = F.avg_pool2d(ones, 3, 2, 0, ceil_mode=True, exclusive=False).numpy()[0, 0]
    np.testing.assert_allclose(out, np.ones((3, 3)), rtol=1e-6)  # the overhang is not counted


def test_truncated_normal_cut_offs_are_absolute_values():
    minidp.seed(0)
    values = (
        nn.Linear(1, 1)
        .create_parameter([20000], attr=nn.initializer.TruncatedNormal(mean=1.0, std=1.0, a=-1.0, b=2.0))
        .numpy()
    )
    assert values.min() >= -1.0 and values.max() <= 2.0
    assert values.min() < -0.9 and values.max() > 1.9
    narrow = nn.Linear(1, 1).create_parameter([20000], attr=nn.initializer.TruncatedNormal(0.0, 0.02)).numpy()
    np.testing.assert_allclose(narrow.std(), 0.02, rtol=0.05)  # [-2, 2] cuts nothing at std 0.02
    with pytest.raises(ValueError, match="a < b"):
        nn.initializer.TruncatedNormal(a=1.0, b=0.0)
    with pytest.raises(ValueError, match="absolute"):
        nn.initializer.TruncatedNormal(0.0, 0.01, a=1.0, b=2.0)


def test_kaiming_initializers_take_paddles_mode_argument():
    minidp.seed(0)
    p = nn.Linear(1, 1).create_parameter([400, 100], attr=nn.initializer.KaimingNormal(mode="fan_out"))
    np.testing.assert_allclose(p.numpy().std(), math.sqrt(2 / 100), rtol=0.03)
    p = nn.Linear(1, 1).create_parameter([400, 100], attr=nn.initializer.KaimingUniform(mode="fan_out"))
    np.testing.assert_allclose(np.abs(p.numpy()).max(), math.sqrt(6 / 100), rtol=0.01)
    with pytest.raises(ValueError, match="fan_out"):
        nn.initializer.KaimingNormal(fan_in=3, mode="fan_out")
    with pytest.raises(ValueError, match="mode"):
        nn.initializer.KaimingUniform(mode="avg")


# --- dropout variants, Unflatten, Identity ---------------------------------------------------------
def seeded(seed, fn):
    """``fn`` that reseeds minidp before each call, so every call draws the same mask."""

    def call(*args):
        minidp.seed(seed)
        return fn(*args)

    return call


def test_dropout2d_and_3d_drop_whole_channels():
    minidp.seed(3)
    x = np.ones((8, 6, 3, 4))
    out = F.dropout2d(t(x), 0.5).numpy()
    per_channel = out.reshape(8, 6, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.2 < (per_channel[..., 0] == 0).mean() < 0.8
    last = F.dropout2d(t(x.transpose(0, 2, 3, 1)), 0.5, data_format="NHWC").numpy()
    assert np.all((last == 0).all((1, 2)) | (last == 2).all((1, 2)))
    cube = nn.Dropout3D(0.25)(t(np.ones((4, 5, 2, 2, 2)))).numpy().reshape(4, 5, -1)
    assert np.all((cube == 0).all(-1) | np.isclose(cube, 1 / 0.75).all(-1))
    assert F.dropout2d(t(x), 0.5, training=False).numpy().tolist() == x.tolist()
    layer = nn.Dropout2D(0.5)
    layer.eval()
    np.testing.assert_array_equal(layer(t(x)).numpy(), x)
    mask = F.dropout2d(t(x), 0.5).numpy() / 2
    check_grad(seeded(3, lambda a: F.dropout2d(a, 0.5)), x[:2, :2, :2, :2])
    assert mask.shape == x.shape
    with pytest.raises(ValueError, match="4-D"):
        F.dropout2d(t(x[0]))
    with pytest.raises(ValueError, match="data_format"):
        F.dropout3d(t(np.ones((1, 1, 1, 1, 1))), data_format="NCHW")


def test_alpha_dropout_keeps_mean_and_variance():
    minidp.seed(0)
    x = rng.normal(size=(200, 500))
    out = F.alpha_dropout(t(x), 0.2).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    alpha = -1.0507009873554805 * 1.6732632423543772
    a = ((1 - 0.2) * (1 + 0.2 * alpha**2)) ** -0.5
    dropped_value = a * alpha * (1 - 0.2)  # a * alpha + b with b = -a * alpha * p
    assert 0.18 < np.isclose(out, dropped_value).mean() < 0.22
    np.testing.assert_array_equal(nn.AlphaDropout(0.2).eval()(t(x)).numpy(), x)
    features = F.feature_alpha_dropout(t(np.ones((6, 5, 3))), 0.5).numpy()
    assert np.all(np.isclose(features, features[:, :, :1]).all(-1))
    assert nn.FeatureAlphaDropout(0.5)(t(np.ones((2, 3, 4)))).shape == [2, 3, 4]
    check_grad(seeded(4, lambda a: F.alpha_dropout(a, 0.3)), x[:3, :4])
    with pytest.raises(ValueError, match="probability"):
        F.alpha_dropout(t(x), 1.5)


def test_unflatten_and_identity():
    x = t(rng.normal(size=(2, 12, 3)))
    assert nn.Unflatten(1, [3, 4])(x).shape == [2, 3, 4, 3]
    assert nn.Unflatten(-1, (3, 1))(x).shape == [2, 12, 3, 1]
    assert nn.Identity(54, unused_argument=0.1)(x) is x
    with pytest.raises(TypeError, match="shape"):
        nn.Unflatten(1, 12)


def test_embedding_max_norm_and_gradient_scaling_follow_paddle():
    table = rng.normal(size=(5, 3)) * 2
    ids = np.array([[0, 2], [2, 3]])
    weight = t(table.copy())
    out = F.embedding(t(ids), weight, max_norm=1.0).numpy()
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    renormed = np.where(norms > 1, table / (norms + 1e-7), table)
    np.testing.assert_allclose(out, renormed[ids], rtol=1e-6)
    np.testing.assert_allclose(weight.numpy()[[0, 2, 3]], renormed[[0, 2, 3]], rtol=1e-6)  # rows renormed in place
    np.testing.assert_array_equal(weight.numpy()[[1, 4]], table[[1, 4]])
    w = t(table)
    w.stop_gradient = False
    F.embedding(t(ids), w, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [1, 0, 1, 1, 0])  # id 2 occurs twice: 2 * 1/2
    layer = nn.Embedding(5, 3, max_norm=0.5)
    layer(t(ids))
    assert np.linalg.norm(layer.weight.numpy()[[0, 2, 3]], axis=1).max() <= 0.5 + 1e-6


def test_label_smooth_sequence_mask_and_dropout1d():
    label = np.eye(3)[[1, 0]]
    np.testing.assert_allclose(F.label_smooth(t(label), epsilon=0.1).numpy(), 0.9 * label + 0.1 / 3)
    prior = np.array([[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(F.label_smooth(t(label), t(prior), 0.1).numpy(), 0.9 * label + 0.1 * prior)
    check_grad(lambda a: F.label_smooth(a, epsilon=0.2), label)
    mask = F.sequence_mask(t([1, 3]), 4)
    assert mask.dtype == minidp.int64 and mask.numpy().tolist() == [[1, 0, 0, 0], [1, 1, 1, 0]]  # as Paddle 3.3.1
    assert F.sequence_mask(t([2, 0]), dtype="bool").numpy().tolist() == [[True, True], [False, False]]
    minidp.seed(1)
    out = F.dropout1d(t(np.ones((4, 6, 5))), 0.5).numpy()
    assert np.all((out == 0).all(-1) | (out == 2).all(-1))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        F.dropout1d(t(np.ones(3)))


def test_layer_dict_and_parameter_dict():
    blocks = nn.LayerDict({"conv": nn.Conv2D(1, 2, 3), "act": nn.ReLU()})
    blocks["fc"] = nn.Linear(2, 2)
    assert list(blocks) == ["conv", "act", "fc"] and "fc" in blocks and len(blocks) == 3
    assert [name for name, _ in blocks.named_parameters()] == ["conv.weight", "conv.bias", "fc.weight", "fc.bias"]
    assert blocks.pop("act").__class__ is nn.ReLU and list(blocks.keys()) == ["conv", "fc"]
    blocks.update([("extra", nn.Tanh())])
    assert list(blocks.values())[-1].__class__ is nn.Tanh
    blocks.clear()
    assert len(blocks) == 0
    params = nn.ParameterDict({"a": nn.Linear(1, 1).weight})
    params["b"] = nn.Linear(1, 1).bias
    assert list(params) == ["a", "b"] and len(params.parameters()) == 2 and params["b"].shape == [1]
    with pytest.raises(TypeError, match="pairs"):
        nn.LayerDict([nn.ReLU()])


def test_pytorch_style_aliases_are_the_same_classes():
    assert nn.Module is nn.Layer and nn.ModuleList is nn.LayerList and nn.ModuleDict is nn.LayerDict
    assert nn.Conv2d is nn.Conv2D and nn.AdaptiveAvgPool2d is nn.AdaptiveAvgPool2D and nn.ZeroPad2d is nn.ZeroPad2D


def test_gather_tree_follows_parent_beams():
    # the example of Paddle's documentation; Paddle 3.3.1 returns the same
    ids = t([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
    parents = t([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
    assert F.gather_tree(ids, parents).numpy().tolist() == [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]]
    with pytest.raises(ValueError, match="max_time"):
        F.gather_tree(ids, t(np.zeros((3, 2), "int64")))


def test_bilinear_function_and_layer():
    x1, x2, w, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 2)), rng.normal(size=(5, 4, 2)), rng.normal(size=(1, 5))
    np.testing.assert_allclose(
        F.bilinear(t(x1), t(x2), t(w), t(b)).numpy(), np.einsum("ni,oij,nj->no", x1, w, x2) + b, rtol=1e-10
    )
    check_grad(F.bilinear, x1, x2, w, b)
    layer = nn.Bilinear(4, 2, 5)
    assert layer.weight.shape == [5, 4, 2] and layer.bias.shape == [1, 5]
    assert layer(t(x1).astype("float32"), t(x2).astype("float32")).shape == [3, 5]
    with pytest.raises(ValueError, match="fit weight"):
        F.bilinear(t(x2), t(x1), t(w))
