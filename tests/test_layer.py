"""The Layer API (``minidp/core/layer.py``): registration order, state dicts, hooks, buffers, modes,
names and dtype casts."""

import warnings

import numpy as np
import pytest

import minidp
import minidp.nn as nn


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
        "first.scale",
        "first.fc.weight",
        "first.fc.bias",
        "first.norm.weight",
        "first.norm.bias",
        "first.norm._mean",
        "first.norm._variance",
        "head.weight",
        "head.bias",
        "blocks.0.weight",
        "blocks.0.bias",
        "blocks.1.weight",
        "blocks.1.bias",
    ]
    assert [name for name, _ in net.named_sublayers()] == [
        "first",
        "first.fc",
        "first.norm",
        "head",
        "blocks",
        "blocks.0",
        "blocks.1",
    ]
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
    assert keys[:7] == [
        "first.scale",
        "first.steps",
        "first.fc.weight",
        "first.fc.bias",
        "first.norm.weight",
        "first.norm.bias",
        "first.norm._mean",
    ]
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
    clipped = layer.create_parameter([2], attr=nn.ParamAttr(learning_rate=0.5, need_clip=False), dtype="float64")
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


# --- audit ---------------------------------------------------------------------------------------
def test_default_name_scopes_follow_paddles_snake_case():
    class MyMLP(nn.Layer):
        pass

    # Paddle 3.3: my_mlp_0, bce_with_logits_loss_0, batch_norm2d_0, re_lu_0, layer_list_0
    for layer, scope in [
        (MyMLP(), "my_mlp"),
        (nn.BCEWithLogitsLoss(), "bce_with_logits_loss"),
        (nn.BatchNorm2D(3), "batch_norm2d"),
        (nn.ReLU(), "re_lu"),
        (nn.LayerList(), "layer_list"),
        (nn.Conv2D(1, 1, 1), "conv2d"),
    ]:
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


# --- Paddle's other Layer methods -----------------------------------------------------------------
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
