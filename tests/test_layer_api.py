"""The Layer API: registration order, state dicts, hooks, buffers, modes, containers."""
import inspect
import warnings

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from minidp.nn.layers.factory import FunctionalLayer


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.norm = nn.BatchNorm1D(4)
        self.scale = self.create_parameter([4], default_initializer=nn.initializer.Constant(2.0))
        self.register_buffer("steps", minidp.zeros([1]))
        self.register_buffer("cache", minidp.zeros([2]), persistable=False)

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.first = Block()
        self.head = nn.Linear(4, 2)
        self.blocks = nn.LayerList([nn.Linear(2, 2), nn.Linear(2, 2)])

    def forward(self, x):
        x = self.head(self.first(x))
        for block in self.blocks:
            x = block(x)
        return x


def test_named_members_follow_registration_order():
    net = Net()
    assert [name for name, _ in net.named_parameters()] == [
        "first.scale", "first.fc.weight", "first.fc.bias", "first.norm.weight", "first.norm.bias",
        "first.norm._mean", "first.norm._variance",
        "head.weight", "head.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"]
    assert [name for name, _ in net.named_sublayers()] == [
        "first", "first.fc", "first.norm", "head", "blocks", "blocks.0", "blocks.1"]
    assert [name for name, _ in net.named_buffers()] == ["first.steps", "first.cache"]
    assert list(net.children()) == [net.first, net.head, net.blocks]
    assert len(net.parameters(include_sublayers=False)) == 0
    assert net.sublayers(include_self=True)[0] is net
    assert len(net.parameters()) == 13
    # batch norm's running statistics are non-trainable parameters, as in Paddle
    assert [p.stop_gradient for p in net.first.norm.parameters()] == [False, False, True, True]


def test_state_dict_holds_parameters_and_persistable_buffers():
    net = Net()
    keys = list(net.state_dict())
    assert keys[:7] == ["first.scale", "first.steps", "first.fc.weight", "first.fc.bias", "first.norm.weight",
                        "first.norm.bias", "first.norm._mean"]
    assert "first.cache" not in keys and len(keys) == 14
    assert net.state_dict()["head.weight"] is net.head.weight
    prefixed = net.head.state_dict(structured_name_prefix="model.")
    assert list(prefixed) == ["model.weight", "model.bias"]


def test_set_state_dict_copies_in_place_and_reports_mismatches():
    source, target = Net(), Net()
    array = target.head.weight._data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert target.set_state_dict(source.state_dict()) == ([], [])
    assert target.head.weight._data is array
    for (name, a), b in zip(source.state_dict().items(), target.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)

    state = {k: v for k, v in source.state_dict().items() if k != "head.bias"}
    state["extra.weight"] = minidp.zeros([1])
    with pytest.warns(UserWarning) as record:
        missing, unexpected = target.set_dict(state)
    assert missing == ["head.bias"] and unexpected == ["extra.weight"]
    assert "head.bias" in str(record[0].message) and "extra.weight" in str(record[1].message)


def test_shape_mismatch_raises_and_loads_nothing():
    source, target = Net(), Net()
    before = {k: v.numpy().copy() for k, v in target.state_dict().items()}
    state = dict(source.state_dict())
    state["blocks.1.weight"] = minidp.zeros([3, 3])
    with pytest.raises(ValueError, match=r"blocks.1.weight.*\[2, 2\].*\[3, 3\]"):
        target.load_dict(state)
    for name, value in target.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[name])


def test_set_state_dict_by_tensor_names_and_numpy_values():
    layer = nn.Linear(2, 2)
    state = {layer.weight.name: np.ones((2, 2)), layer.bias.name: [5.0, 6.0]}
    assert layer.set_state_dict(state, use_structured_name=False) == ([], [])
    assert layer.weight.numpy().tolist() == [[1, 1], [1, 1]] and layer.bias.numpy().tolist() == [5, 6]


def test_parameter_names_and_full_names():
    layer = nn.Linear(2, 2)
    prefix = layer.full_name()
    assert prefix.startswith("linear_")
    assert (layer.weight.name, layer.bias.name) == (f"{prefix}.w_0", f"{prefix}.b_0")
    assert Net().first.full_name().startswith("block_")
    named = nn.Linear(2, 2, weight_attr=nn.ParamAttr(name="my_w", trainable=False))
    assert named.weight.name == "my_w" and named.weight.stop_gradient


def test_forward_hooks_can_replace_inputs_and_outputs():
    layer = nn.Linear(2, 2)
    calls = []

    def pre(module, inputs):
        calls.append(("pre", module))
        return (inputs[0] * 0,)

    def post(module, inputs, output):
        calls.append(("post", float(inputs[0].sum())))
        return output + 1

    pre_handle = layer.register_forward_pre_hook(pre)
    post_handle = layer.register_forward_post_hook(post)
    out = layer(minidp.ones([1, 2]))
    np.testing.assert_allclose(out.numpy(), layer.bias.numpy()[None] + 1)
    assert calls == [("pre", layer), ("post", 0.0)]
    pre_handle.remove()
    post_handle.remove()
    np.testing.assert_allclose(layer(minidp.ones([1, 2])).numpy(), layer.weight.numpy().sum(0)[None])


def test_train_eval_propagate_to_sublayers():
    net = Net()
    assert net.eval() is net
    assert not any(layer.training for layer in net.sublayers(include_self=True))
    net.train()
    assert all(layer.training for layer in net.sublayers(include_self=True))


def test_attribute_registration_rules():
    layer = nn.Layer()
    layer.w = minidp.Parameter(np.ones(2))
    layer.sub = nn.Linear(1, 1)
    layer.register_buffer("buf", minidp.ones([1]))
    assert list(layer._parameters) == ["w"] and list(layer._sub_layers) == ["sub"]
    with pytest.raises(TypeError, match="parameter"):
        layer.w = minidp.ones([2])
    layer.buf = minidp.zeros([3])
    assert layer.buffers()[0].shape == [3]
    layer.w = None
    assert layer.parameters() == layer.sub.parameters()
    layer.sub = nn.ReLU()
    assert layer.parameters() == [] and isinstance(layer._sub_layers["sub"], nn.ReLU)
    del layer.sub
    assert "sub" not in layer._sub_layers
    shared = nn.Linear(2, 2)
    layer.add_sublayer("a", shared)
    layer.add_sublayer("b", shared)
    assert len(layer.parameters()) == 2

    class Early(nn.Layer):
        def __init__(self):
            self.w = minidp.Parameter(np.ones(1))

    with pytest.raises(AttributeError, match="super"):
        Early()
    with pytest.raises(ValueError, match="buffer name"):
        layer.register_buffer("a.b", minidp.ones([1]))


def test_create_parameter_options():
    layer = nn.Layer()
    bias = layer.create_parameter([3], is_bias=True)
    assert bias.numpy().tolist() == [0, 0, 0] and bias.dtype == np.float32
    assert layer.create_parameter([2], attr=False) is None
    clipped = layer.create_parameter([2], attr=nn.ParamAttr(learning_rate=0.5, need_clip=False),
                                     dtype="float64")
    assert clipped.optimize_attr["learning_rate"] == 0.5 and not clipped.need_clip and clipped.dtype == np.float64
    assert layer.create_parameter([2], attr=nn.initializer.Constant(3.0)).numpy().tolist() == [3, 3]


def test_to_dtype_keeps_parameter_objects():
    net = Net()
    params = net.parameters()
    net.to(dtype="float64")
    assert net.parameters() == params and all(p.dtype == np.float64 for p in params)
    assert net.first.norm._mean.dtype == np.float64
    assert net(minidp.to_tensor(np.ones((2, 3)))).dtype == np.float64
    assert net.astype("float32").head.weight.dtype == np.float32


def test_clear_gradients_and_apply():
    net = Net()
    net(minidp.ones([2, 3])).sum().backward()
    assert net.head.weight.grad is not None
    net.clear_gradients(set_to_zero=False)
    assert all(p.grad is None for p in net.parameters())
    visited = []
    net.apply(lambda layer: visited.append(type(layer).__name__))
    assert visited[-1] == "Net" and visited.count("Linear") == 4


def test_sequential_and_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and len(seq[:2]) == 2
    named = nn.Sequential(("encode", nn.Linear(2, 2)), ("act", nn.Tanh()))
    assert list(named._sub_layers) == ["encode", "act"] and named["act"] is named[1]
    seq[1] = nn.Tanh()
    assert isinstance(list(seq)[1], nn.Tanh) and list(seq._sub_layers) == ["0", "1", "2"]
    del seq[1]
    assert len(seq) == 2
    assert "Sequential(" in repr(seq) and "Linear(in_features=2" in repr(seq)

    blocks = nn.LayerList([nn.Linear(1, 1)])
    blocks.append(nn.Linear(1, 2)).extend([nn.Linear(1, 3)])
    blocks.insert(0, nn.ReLU())
    assert [type(b).__name__ for b in blocks] == ["ReLU", "Linear", "Linear", "Linear"]
    assert list(blocks._sub_layers) == ["0", "1", "2", "3"]
    del blocks[0]
    assert blocks[0].weight.shape == [1, 1] and len(blocks) == 3
    with pytest.raises(IndexError):
        blocks[3]

    params = nn.ParameterList([minidp.Parameter(np.ones(1)), minidp.Parameter(np.ones(2))])
    params.append(minidp.Parameter(np.ones(3)))
    holder = nn.Layer()
    holder.params = params
    assert [p.shape for p in holder.parameters()] == [[1], [2], [3]]
    assert [name for name, _ in holder.named_parameters()] == ["params.0", "params.1", "params.2"]


# --- audit ---------------------------------------------------------------------------------------
def test_default_name_scopes_follow_paddles_snake_case():
    class MyMLP(nn.Layer):
        pass

    # Paddle 3.3: my_mlp_0, bce_with_logits_loss_0, batch_norm2d_0, re_lu_0, layer_list_0
    for layer, scope in [(MyMLP(), "my_mlp"), (nn.BCEWithLogitsLoss(), "bce_with_logits_loss"),
                         (nn.BatchNorm2D(3), "batch_norm2d"), (nn.ReLU(), "re_lu"), (nn.LayerList(), "layer_list"),
                         (nn.Conv2D(1, 1, 1), "conv2d")]:
        assert layer.full_name().rsplit("_", 1)[0] == scope


def test_set_state_dict_refuses_non_numeric_values_before_loading_anything():
    layer = nn.Linear(2, 2)
    before = [p.numpy().copy() for p in layer.parameters()]
    state = {"weight": np.ones((2, 2), np.float32), "bias": np.array(["a", "b"])}
    with pytest.raises(ValueError, match="'bias' must hold numbers"):
        layer.set_state_dict(state)
    for p, old in zip(layer.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), old)


def test_sublayer_names_are_checked_and_regularizers_are_checked():
    with pytest.raises(ValueError, match="no dots"):
        nn.Layer().add_sublayer("a.b", nn.Linear(1, 1))
    with pytest.raises(TypeError, match="L1Decay or L2Decay"):
        nn.ParamAttr(regularizer=object())


# --- Paddle's other Layer methods, nn.utils and the clipping strategies ------------------------------
def test_module_style_names_and_lookup_by_path():
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.BatchNorm1D(3), nn.ReLU()))
    assert [name for name, _ in net.named_modules()] == ["", "0", "1", "1.0", "1.1"]
    assert list(net.modules())[0] is net and len(list(net.modules())) == 5
    assert net.get_sublayer("1.0") is net[1][0] and net.get_submodule("") is net
    assert net.get_parameter("0.weight") is net[0].weight
    assert net.get_parameter("1.0._mean") is net[1][0]._mean
    with pytest.raises(ValueError, match="no sublayer 'x'"):
        net.get_sublayer("1.x")
    with pytest.raises(ValueError, match="no parameter"):
        net.get_parameter("0.gamma")
    replacement = nn.Tanh()
    net.set_sublayer("1.1", replacement)
    assert net[1][1] is replacement
    with pytest.raises(ValueError, match="no sublayer"):
        net.set_submodule("1.7", nn.ReLU(), strict=True)
    holder = nn.Layer()
    holder.add_module("fc", nn.Linear(2, 2))
    holder.register_parameter("scale", nn.Linear(1, 1).weight)
    assert [name for name, _ in holder.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert holder.fc is holder.get_sublayer("fc")


def test_dtype_casts_requires_grad_and_zero_grad():
    net = nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3))
    assert net.double() is net and all(p.dtype == minidp.float64 for p in net.parameters())
    net.float(excluded_layers=[nn.LayerNorm])
    assert net[0].weight.dtype == minidp.float32 and net[1].weight.dtype == minidp.float64
    net.half()
    assert all(p.dtype == minidp.float16 for p in net.parameters())
    net.type("float32")
    assert net(minidp.ones([1, 2])).dtype == minidp.float32
    with pytest.raises(TypeError, match="excluded_layers"):
        net.float(excluded_layers="LayerNorm")
    net.requires_grad_(False)
    assert all(p.stop_gradient for p in net.parameters())
    net.requires_grad_()
    net(minidp.ones([2, 2])).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.cpu() is net


def test_load_state_dict_is_strict_by_default():
    source, target = nn.Linear(2, 2), nn.Linear(2, 2)
    assert target.load_state_dict(source.state_dict()) == ([], [])
    np.testing.assert_array_equal(target.weight.numpy(), source.weight.numpy())
    with pytest.raises(RuntimeError, match=r"missing keys \['bias'\]"):
        target.load_state_dict({"weight": source.weight})
    with pytest.warns(UserWarning):
        assert target.load_state_dict({"weight": source.weight}, strict=False) == (["bias"], [])


def test_register_forward_hook_is_the_post_hook():
    layer = nn.Linear(2, 2)
    handle = layer.register_forward_hook(lambda module, inputs, output: output * 0)
    assert float(layer(minidp.ones([1, 2])).abs().sum()) == 0
    handle.remove()
    np.testing.assert_allclose(layer(minidp.ones([1, 2])).numpy(), layer.weight.numpy().sum(0, keepdims=True))


def test_clip_grad_norm_and_value_in_place():
    layer = nn.Linear(2, 2)
    (layer(minidp.ones([3, 2])) * 10).sum().backward()
    grads = [p.grad.numpy().copy() for p in layer.parameters()]
    total = np.sqrt(sum((g ** 2).sum() for g in grads))
    returned = nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
    np.testing.assert_allclose(returned.numpy(), total, rtol=1e-6)
    np.testing.assert_allclose(layer.weight.grad.numpy(), grads[0] / (total + 1e-6), rtol=1e-6)
    np.testing.assert_allclose(layer.weight.grad.numpy(), 0.40824828, rtol=1e-6)  # Paddle 3.3.1
    inf_norm = nn.utils.clip_grad_norm_(layer.weight, 0.1, norm_type=float("inf"))
    np.testing.assert_allclose(inf_norm.numpy(), 0.40824828, rtol=1e-6)
    nn.utils.clip_grad_value_(layer.parameters(), 0.05)
    np.testing.assert_allclose(layer.bias.grad.numpy(), [0.05, 0.05])
    with pytest.raises(ValueError, match="max_norm"):
        nn.utils.clip_grad_norm_(layer.parameters(), 0)


def test_parameters_to_vector_and_back():
    layer = nn.Linear(3, 2)
    vector = nn.utils.parameters_to_vector(layer.parameters())
    assert vector.shape == [8]
    np.testing.assert_array_equal(vector.numpy()[:6], layer.weight.numpy().reshape(-1))
    nn.utils.vector_to_parameters(minidp.arange(8, dtype="float32"), layer.parameters())
    np.testing.assert_array_equal(layer.bias.numpy(), [6, 7])
    with pytest.raises(ValueError, match="8 values"):
        nn.utils.vector_to_parameters(minidp.zeros([7]), layer.parameters())


def test_clip_by_value_and_by_norm_match_paddle():
    param = nn.Linear(3, 1).bias
    grad = minidp.to_tensor([0.3, -2.0, 1.0])
    by_norm = nn.ClipGradByNorm(1.0)([(param, grad)])[0][1].numpy()
    np.testing.assert_allclose(by_norm, [0.13297267, -0.88648444, 0.44324222], rtol=1e-6)  # Paddle 3.3.1
    np.testing.assert_allclose(nn.ClipGradByValue(0.5)([(param, grad)])[0][1].numpy(), [0.3, -0.5, 0.5])
    np.testing.assert_allclose(nn.ClipGradByValue(0.5, -0.1)([(param, grad)])[0][1].numpy(), [0.3, -0.1, 0.5])
    small = minidp.to_tensor([0.1, 0.2, 0.2])
    assert nn.ClipGradByNorm(1.0)([(param, small)])[0][1].numpy().tolist() == small.numpy().tolist()
    layer = nn.Linear(2, 1)
    opt = minidp.optimizer.SGD(learning_rate=1.0, parameters=layer.parameters(), grad_clip=nn.ClipGradByValue(0.01))
    before = layer.bias.numpy().copy()
    (layer(minidp.ones([4, 2])) * 100).sum().backward()
    opt.step()
    np.testing.assert_allclose(layer.bias.numpy(), before - 0.01, rtol=1e-6)
    with pytest.raises(ValueError, match="min <= max"):
        nn.ClipGradByValue(0.1, 0.5)
    with pytest.raises(ValueError, match="clip_norm"):
        nn.ClipGradByNorm(-1)


def test_weight_norm_reparameterises_and_trains():
    layer = nn.Linear(3, 4).to(dtype="float64")
    original = layer.weight.numpy().copy()
    nn.utils.weight_norm(layer)
    assert list(layer.state_dict()) == ["bias", "weight_v", "weight_g"]  # as Paddle 3.3.1
    np.testing.assert_allclose(layer.weight_g.numpy(), np.linalg.norm(original, axis=1))
    np.testing.assert_allclose(layer.weight.numpy(), original)
    x = np.random.default_rng(0).normal(size=(2, 3))
    layer(minidp.to_tensor(x)).sum().backward()
    v = layer.weight_v.numpy()
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    np.testing.assert_allclose(layer.weight_g.grad.numpy(), (x.sum(0)[:, None] * v / norms).sum(1))
    layer.weight_g.set_value(layer.weight_g.numpy() * 2)
    np.testing.assert_allclose(layer(minidp.to_tensor(x)).numpy(), x @ (2 * original) + layer.bias.numpy())
    nn.utils.remove_weight_norm(layer)
    assert list(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(layer.weight.numpy(), 2 * original)
    conv = nn.utils.weight_norm(nn.Conv2D(2, 3, 3), dim=None)
    assert conv.weight_g.shape == []
    with pytest.raises(ValueError, match="not weight-normalised"):
        nn.utils.remove_weight_norm(layer)
    with pytest.raises(ValueError, match="already"):
        nn.utils.weight_norm(conv)
    with pytest.raises(ValueError, match="no parameter"):
        nn.utils.weight_norm(nn.ReLU())


def test_orthogonal_dirac_bilinear_initializers_and_the_global_one():
    init = nn.initializer
    holder = nn.Layer()
    q = holder.create_parameter([3, 5], default_initializer=init.Orthogonal(gain=2.0)).numpy()
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(3), atol=1e-5)
    tall = holder.create_parameter([6, 2, 2], default_initializer=init.Orthogonal()).numpy().reshape(6, 4)
    np.testing.assert_allclose(tall.T @ tall, np.eye(4), atol=1e-5)
    dirac = holder.create_parameter([4, 2, 3], default_initializer=init.Dirac(groups=2)).numpy()
    assert dirac.reshape(4, -1).tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0]] * 2  # Paddle 3.3.1
    kernel = holder.create_parameter([2, 1, 4, 4], default_initializer=init.Bilinear()).numpy()[1, 0]
    np.testing.assert_allclose(kernel, [[0.0625, 0.28125, 0.375, 0.15625], [0.1875, 0.65625, 0.75, 0.21875],
                                        [0.1875, 0.46875, 0.375, 0.09375], [0.0625, 0.09375, 0.0, -0.03125]])
    init.set_global_initializer(init.Constant(0.5), init.Constant(-1.0))
    try:
        conv = nn.Conv2D(1, 2, 3)
        assert (conv.weight.numpy() == 0.5).all() and (conv.bias.numpy() == -1).all()
        own = nn.Linear(2, 2, weight_attr=nn.ParamAttr(initializer=init.Constant(3.0)))
        assert (own.weight.numpy() == 3).all()
    finally:
        init.set_global_initializer(None, None)
    assert not (nn.Linear(2, 2).weight.numpy() == 0.5).all()
    with pytest.raises(TypeError, match="weight_init"):
        init.set_global_initializer("zeros")


def test_state_dict_hooks():
    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    seen = []
    inner = net[0].register_state_dict_hook(lambda state: seen.append(("inner", len(state))))
    outer = net.register_state_dict_hook(lambda state: {k: v for k, v in state.items() if k.endswith("weight")})
    state = net.state_dict()
    assert list(state) == ["0.weight", "1.weight"] and seen == [("inner", 4)]
    assert list(net.state_dict(use_hook=False)) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert list(net.to_static_state_dict()) == ["0.weight", "1.weight"]
    inner.remove()
    outer.remove()
    assert len(net.state_dict()) == 4 and len(seen) == 2


def test_older_initializer_names():
    init = nn.initializer
    holder = nn.Layer()

    def make(initializer, shape=(200, 300)):
        return holder.create_parameter(list(shape), default_initializer=initializer).numpy()

    assert (make(init.ConstantInitializer(0.25), (2, 2)) == 0.25).all()
    normal = make(init.NormalInitializer(loc=1.0, scale=0.5))
    assert abs(normal.mean() - 1.0) < 0.01 and abs(normal.std() - 0.5) < 0.01
    assert make(init.UniformInitializer(-0.1, 0.1)).max() <= 0.1
    assert np.abs(make(init.TruncatedNormalInitializer(0.0, 1.0, a=-0.5, b=0.5))).max() <= 0.5
    limit = np.sqrt(6 / 500)
    assert np.abs(make(init.XavierInitializer())).max() <= limit
    assert abs(make(init.XavierInitializer(uniform=False)).std() - np.sqrt(2 / 500)) < 0.002
    assert abs(make(init.MSRAInitializer(uniform=False)).std() - np.sqrt(2 / 200)) < 0.003
    np.testing.assert_array_equal(make(init.NumpyArrayInitializer(np.eye(2)), (2, 2)), np.eye(2))
    with pytest.raises(ValueError, match="diag_num"):
        init.UniformInitializer(diag_num=2)


# Constructor parameters of Paddle 3.3.1's layers (names and defaults, in order), recorded with
# inspect.signature from Paddle itself: every table layer must take the same ones.
PADDLE_SIGNATURES = {
    "AdaptiveAvgPool1D": "(output_size, name=None)",
    "AdaptiveAvgPool2D": "(output_size, data_format='NCHW', name=None)",
    "AdaptiveAvgPool3D": "(output_size, data_format='NCDHW', name=None)",
    "AdaptiveMaxPool1D": "(output_size, return_mask=False, name=None)",
    "AdaptiveMaxPool2D": "(output_size, return_mask=False, name=None)",
    "AdaptiveMaxPool3D": "(output_size, return_mask=False, name=None)",
    "AlphaDropout": "(p=0.5, name=None)",
    "AvgPool1D": "(kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None)",
    "AvgPool2D": ("(kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, "
                  "divisor_override=None, data_format='NCHW', name=None)"),
    "AvgPool3D": ("(kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, "
                  "divisor_override=None, data_format='NCDHW', name=None)"),
    "BCELoss": "(weight=None, reduction='mean', name=None)",
    "BCEWithLogitsLoss": "(weight=None, reduction='mean', pos_weight=None, name=None)",
    "CELU": "(alpha=1.0, name=None)",
    "ChannelShuffle": "(groups, data_format='NCHW', name=None)",
    "CircularPad1D": "(padding, data_format='NCL', name=None)",
    "CircularPad2D": "(padding, data_format='NCHW', name=None)",
    "CircularPad3D": "(padding, data_format='NCDHW', name=None)",
    "ConstantPad1D": "(padding, value, data_format='NCL', name=None)",
    "ConstantPad2D": "(padding, value, data_format='NCHW', name=None)",
    "ConstantPad3D": "(padding, value, data_format='NCDHW', name=None)",
    "CosineEmbeddingLoss": "(margin=0, reduction='mean', name=None)",
    "CosineSimilarity": "(axis=1, eps=1e-08)",
    "CrossEntropyLoss": ("(weight=None, ignore_index=-100, reduction='mean', soft_label=False, axis=-1, "
                         "use_softmax=True, label_smoothing=0.0, name=None)"),
    "Dropout": "(p=0.5, inplace=False, axis=None, mode='upscale_in_train', name=None)",
    "Dropout2D": "(p=0.5, data_format='NCHW', name=None)",
    "Dropout3D": "(p=0.5, data_format='NCDHW', name=None)",
    "ELU": "(alpha=1.0, name=None)",
    "FeatureAlphaDropout": "(p=0.5, name=None)",
    "Flatten": "(start_axis=1, stop_axis=-1)",
    "Fold": "(output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None)",
    "GELU": "(approximate=False, name=None)",
    "GLU": "(axis=-1, name=None)",
    "GaussianNLLLoss": "(full=False, epsilon=1e-06, reduction='mean', name=None)",
    "Hardshrink": "(threshold=0.5, name=None)",
    "Hardsigmoid": "(name=None)",
    "Hardswish": "(name=None)",
    "Hardtanh": "(min=-1.0, max=1.0, name=None)",
    "HingeEmbeddingLoss": "(margin=1.0, reduction='mean', name=None)",
    "HuberLoss": "(reduction='mean', delta=1.0, is_huber=True, name=None)",
    "KLDivLoss": "(reduction='mean', log_target=False)",
    "L1Loss": "(reduction='mean', name=None)",
    "LPPool1D": ("(norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format='NCL', "
                 "name=None)"),
    "LPPool2D": ("(norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format='NCHW', "
                 "name=None)"),
    "LeakyReLU": "(negative_slope=0.01, name=None)",
    "LogSigmoid": "(name=None)",
    "LogSoftmax": "(axis=-1, name=None)",
    "MSELoss": "(reduction='mean')",
    "MarginRankingLoss": "(margin=0.0, reduction='mean', name=None)",
    "MaxPool1D": "(kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None)",
    "MaxPool2D": ("(kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, "
                  "data_format='NCHW', name=None)"),
    "MaxPool3D": ("(kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, "
                  "data_format='NCDHW', name=None)"),
    "MaxUnPool1D": "(kernel_size, stride=None, padding=0, data_format='NCL', output_size=None, name=None)",
    "MaxUnPool2D": "(kernel_size, stride=None, padding=0, data_format='NCHW', output_size=None, name=None)",
    "MaxUnPool3D": "(kernel_size, stride=None, padding=0, data_format='NCDHW', output_size=None, name=None)",
    "Maxout": "(groups, axis=1, name=None)",
    "Mish": "(name=None)",
    "MultiLabelMarginLoss": "(reduction='mean', name=None)",
    "MultiLabelSoftMarginLoss": "(weight=None, reduction='mean', name=None)",
    "MultiMarginLoss": "(p=1, margin=1.0, weight=None, reduction='mean', name=None)",
    "NLLLoss": "(weight=None, ignore_index=-100, reduction='mean', name=None)",
    "Pad1D": "(padding, mode='constant', value=0.0, data_format='NCL', name=None)",
    "Pad2D": "(padding, mode='constant', value=0.0, data_format='NCHW', name=None)",
    "Pad3D": "(padding, mode='constant', value=0.0, data_format='NCDHW', name=None)",
    "PairwiseDistance": "(p=2.0, epsilon=1e-06, keepdim=False, name=None)",
    "PixelShuffle": "(upscale_factor, data_format='NCHW', name=None)",
    "PixelUnshuffle": "(downscale_factor, data_format='NCHW', name=None)",
    "PoissonNLLLoss": "(log_input=True, full=False, epsilon=1e-08, reduction='mean', name=None)",
    "RReLU": "(lower=0.125, upper=0.3333333333333333, name=None)",
    "ReLU": "(name=None)",
    "ReLU6": "(name=None)",
    "ReflectionPad1D": "(padding, data_format='NCL', name=None)",
    "ReflectionPad2D": "(padding, data_format='NCHW', name=None)",
    "ReflectionPad3D": "(padding, data_format='NCDHW', name=None)",
    "ReplicationPad1D": "(padding, data_format='NCL', name=None)",
    "ReplicationPad2D": "(padding, data_format='NCHW', name=None)",
    "ReplicationPad3D": "(padding, data_format='NCDHW', name=None)",
    "SELU": "(scale=1.0507009873554805, alpha=1.6732632423543772, name=None)",
    "Sigmoid": "(name=None)",
    "Silu": "(inplace=False, name=None)",
    "SmoothL1Loss": "(reduction='mean', delta=1.0, is_huber=True, name=None)",
    "SoftMarginLoss": "(reduction='mean', name=None)",
    "Softmax": "(axis=-1, name=None)",
    "Softplus": "(beta=1, threshold=20, name=None)",
    "Softshrink": "(threshold=0.5, name=None)",
    "Softsign": "(name=None)",
    "Swish": "(name=None)",
    "Tanh": "(name=None)",
    "Tanhshrink": "(name=None)",
    "ThresholdedReLU": "(threshold=1.0, value=0.0, name=None)",
    "TransformerDecoderLayer": ("(d_model, nhead, dim_feedforward, dropout=0.1, activation='relu', "
                                "attn_dropout=None, act_dropout=None, normalize_before=False, "
                                "weight_attr=None, bias_attr=None, layer_norm_eps=1e-05)"),
    "TransformerEncoderLayer": ("(d_model, nhead, dim_feedforward, dropout=0.1, activation='relu', "
                                "attn_dropout=None, act_dropout=None, normalize_before=False, "
                                "weight_attr=None, bias_attr=None, layer_norm_eps=1e-05)"),
    "TripletMarginLoss": "(margin=1.0, p=2.0, epsilon=1e-06, swap=False, reduction='mean', name=None)",
    "TripletMarginWithDistanceLoss": ("(distance_function=None, margin=1.0, swap=False, reduction='mean', "
                                      "name=None)"),
    "Unfold": "(kernel_sizes, dilations=1, paddings=0, strides=1, name=None)",
    "Upsample": ("(size=None, scale_factor=None, mode='nearest', align_corners=False, align_mode=0, "
                 "data_format=None, recompute_scale_factor=None, name=None)"),
    "UpsamplingBilinear2D": "(size=None, scale_factor=None, data_format='NCHW', name=None)",
    "UpsamplingNearest2D": "(size=None, scale_factor=None, data_format='NCHW', name=None)",
    "ZeroPad1D": "(padding, data_format='NCL', name=None)",
    "ZeroPad2D": "(padding, data_format='NCHW', name=None)",
    "ZeroPad3D": "(padding, data_format='NCDHW', name=None)",

}


def _parameters(cls):
    params = inspect.signature(cls).parameters.values()
    return "(" + ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params) + ")"


def _table_layers():
    return sorted(name for name, value in vars(nn).items()
                  if isinstance(value, type) and issubclass(value, FunctionalLayer) and value.__name__ == name)


def test_every_table_layer_has_paddles_constructor_parameters():
    assert set(_table_layers()) <= set(PADDLE_SIGNATURES)
    for name, expected in PADDLE_SIGNATURES.items():
        assert _parameters(getattr(nn, name)) == expected, name


def test_every_table_row_forwards_only_options_its_function_takes():
    for name in _table_layers():
        layer = getattr(nn, name)
        accepted = set(inspect.signature(layer._function).parameters)
        options = set(layer._signature.parameters) - {"name"} | set(layer._fixed)
        options |= {"training"} if layer._passes_training else set()
        assert options <= accepted, (name, options - accepted)


def test_table_layers_keep_their_options_and_show_them_like_paddle():
    layer = nn.LeakyReLU(0.2)
    assert layer.negative_slope == 0.2 and repr(layer) == "LeakyReLU(negative_slope=0.2)"
    x = minidp.to_tensor(np.array([-1.0, 2.0]))
    layer.negative_slope = 0.5
    np.testing.assert_allclose(layer(x).numpy(), [-0.5, 2.0])
    assert repr(nn.ReLU()) == "ReLU()" and repr(nn.MSELoss()) == "MSELoss()"
    label = minidp.to_tensor(np.array([0.0, 0.0]))
    assert float(nn.MSELoss("sum")(input=x, label=label)) == 5.0 and nn.ReLU()(x=x).numpy().tolist() == [0.0, 2.0]
    assert repr(nn.MaxPool2D(2)) == "MaxPool2D(kernel_size=2, stride=None, padding=0)"
    assert repr(nn.Dropout()) == "Dropout(p=0.5, axis=None, mode=upscale_in_train, inplace=False)"
    assert repr(nn.ReflectionPad2D(1)) == ("ReflectionPad2D(padding=[1, 1, 1, 1], mode=reflect, value=0.0, "
                                           "data_format=NCHW)")
    assert repr(nn.ConstantPad1D([1, 2], 3.0)) == ("ConstantPad1D(padding=[1, 2], mode=constant, value=3.0, "
                                                   "data_format=NCL)")
    assert nn.Softmax.__doc__ == "Softmax along ``axis``." and nn.Softmax.__module__ == "minidp.nn.layers.activation"
    assert not hasattr(nn.ReLU(), "name")


def test_table_layers_keep_their_class_relations():
    assert isinstance(nn.ZeroPad2D(1), nn.Pad2D) and isinstance(nn.CircularPad3D(1), nn.Pad3D)
    assert isinstance(nn.ConstantPad1D(1, 0.0), nn.Pad1D) and not isinstance(nn.Pad1D(1), nn.Pad2D)
    assert isinstance(nn.HuberLoss(), nn.SmoothL1Loss) and isinstance(nn.LPPool2D(2, 2), nn.LPPool1D)
    assert isinstance(nn.FeatureAlphaDropout(), nn.AlphaDropout) and isinstance(nn.UpsamplingNearest2D(), nn.Upsample)
    assert isinstance(nn.ReLU(), nn.Layer) and nn.ReLU is nn.layers.activation.ReLU


def test_table_layers_reject_bad_arguments_naming_the_layer():
    with pytest.raises(TypeError, match="Maxout: missing a required argument: 'groups'"):
        nn.Maxout()
    with pytest.raises(TypeError, match="ReLU: too many positional arguments"):
        nn.ReLU(None, 1)
    with pytest.raises(TypeError, match="GELU: got an unexpected keyword argument 'approx'"):
        nn.GELU(approx=True)
    with pytest.raises(ValueError, match="L1Loss: reduction must be one of"):
        nn.L1Loss("avg")
    with pytest.raises(ValueError, match="KLDivLoss: reduction must be 'mean', 'sum', 'none' or 'batchmean'"):
        nn.KLDivLoss("avg")
    with pytest.raises(ValueError, match="ZeroPad2D: padding must be an int or 4 values"):
        nn.ZeroPad2D([1, 2])


def test_dropout_takes_paddles_inplace_option():
    x = minidp.ones([4, 50])
    layer = nn.Dropout(0.5, True)
    assert layer.inplace and layer.axis is None
    out = layer(x)
    assert out is x and set(np.unique(x.numpy())) <= {0.0, 2.0} and (x.numpy() == 0).any()
    kept = minidp.ones([4, 50])
    assert nn.Dropout(0.5)(kept) is not kept and (kept.numpy() == 1).all()


def test_transformer_layers_hold_paddles_state_dict_keys_in_paddles_order():
    attention = [f"{part}.{kind}" for part in ("q_proj", "k_proj", "v_proj", "out_proj") for kind in ("weight", "bias")]
    feed_forward = ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
    norms = [f"norm{i}.{kind}" for i in (1, 2, 3) for kind in ("weight", "bias")]
    encoder = list(nn.TransformerEncoderLayer(4, 2, 8).state_dict())
    decoder = list(nn.TransformerDecoderLayer(4, 2, 8).state_dict())
    assert encoder == [f"self_attn.{key}" for key in attention] + feed_forward + norms[:4]
    assert decoder == ([f"self_attn.{key}" for key in attention] + [f"cross_attn.{key}" for key in attention]
                       + feed_forward + norms)
    with pytest.raises(ValueError, match="TransformerDecoderLayer: weight_attr/bias_attr lists must have 1 or 3"):
        nn.TransformerDecoderLayer(4, 2, 8, weight_attr=[None, None])
