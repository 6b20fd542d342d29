"""scaled_dot_product_attention, MultiHeadAttention and the Transformer layers.

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float32) with the weights
that ``fill`` sets.
"""

import numpy as np
import pytest

import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, fill_weights, t

rng = np.random.default_rng(0)
X = np.cos(np.arange(24.0) * 0.3).reshape(2, 3, 4).astype("float32")
MASK = np.array([[True, True, False], [True, True, True], [False, True, True]])
PADDLE_MHA = [
    [0.477272, 0.491624, 0.274758, -0.071331],
    [0.441905, 0.488558, 0.305435, -0.021339],
    [0.40909, 0.486262, 0.334738, 0.025781],
]
PADDLE_WEIGHTS = [[0.454062, 0.545938, 0.0], [0.311529, 0.35039, 0.338081], [0.0, 0.504982, 0.495018]]
PADDLE_ENCODER = [
    [-0.087763, -0.441473, -0.107075, -0.585333],
    [-0.085564, -0.420006, -0.09526, -0.559894],
    [-0.379025, 0.162136, -0.117949, -0.438694],
]
PADDLE_ENCODER_PRE_GELU = [
    [-0.952026, -0.610846, -0.258947, 0.027954],
    [0.033, 0.49152, 0.862876, 1.070218],
    [0.90498, 1.033385, 1.056708, 0.945072],
]


def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_attention(q, k, v, mask=None):
    """[B, H, L, D] inputs."""
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return np_softmax(scores) @ v


def test_sdpa_matches_numpy_with_masks_and_gradients():
    q, k, v = rng.normal(size=(2, 3, 2, 4)), rng.normal(size=(2, 5, 2, 4)), rng.normal(size=(2, 5, 2, 4))

    def heads(a):
        return a.transpose(0, 2, 1, 3)

    out = F.scaled_dot_product_attention(t(q), t(k), t(v)).numpy()
    np.testing.assert_allclose(out, heads(np_attention(heads(q), heads(k), heads(v))), rtol=1e-10)
    keep = rng.random((3, 5)) > 0.3
    keep[:, 0] = True
    masked = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(keep)).numpy()
    np.testing.assert_allclose(
        masked, heads(np_attention(heads(q), heads(k), heads(v), np.where(keep, 0, -1e9))), rtol=1e-10
    )
    check_grad(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=t(keep)), q, k, v)
    causal = F.scaled_dot_product_attention(t(q), t(q), t(q), is_causal=True).numpy()
    tril = np.where(np.tril(np.ones((3, 3), bool)), 0, -1e9)
    np.testing.assert_allclose(causal, heads(np_attention(heads(q), heads(q), heads(q), tril)), rtol=1e-10)


def test_sdpa_grouped_query_heads_and_errors():
    q, kv = rng.normal(size=(1, 3, 4, 2)), rng.normal(size=(1, 3, 2, 2))
    out = F.scaled_dot_product_attention(t(q), t(kv), t(kv)).numpy()
    repeated = np.repeat(kv, 2, axis=2)
    np.testing.assert_allclose(out, F.scaled_dot_product_attention(t(q), t(repeated), t(repeated)).numpy())
    with pytest.raises(ValueError, match="heads"):
        F.scaled_dot_product_attention(t(q), t(kv), t(kv), enable_gqa=False)
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(t(q), t(q), t(q), attn_mask=t(MASK), is_causal=True)
    with pytest.raises(ValueError, match="head_dim"):
        F.scaled_dot_product_attention(t(q[0]), t(q[0]), t(q[0]))


def test_multi_head_attention_matches_paddle():
    layer = fill_weights(nn.MultiHeadAttention(4, 2, need_weights=True))
    assert list(layer.state_dict()) == [
        "q_proj.weight",
        "q_proj.bias",
        "k_proj.weight",
        "k_proj.bias",
        "v_proj.weight",
        "v_proj.bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    out, weights = layer(t(X), t(X), t(X), t(MASK))
    np.testing.assert_allclose(out.numpy()[0], PADDLE_MHA, atol=2e-6)
    np.testing.assert_allclose(weights.numpy()[0, 0], PADDLE_WEIGHTS, atol=2e-6)
    assert weights.shape == [2, 2, 3, 3]
    plain = nn.MultiHeadAttention(4, 2)
    assert plain(t(X)).shape == [2, 3, 4]


def test_multi_head_attention_numpy_reference_and_gradients():
    layer = fill_weights(nn.MultiHeadAttention(4, 2, kdim=3, vdim=5)).to(dtype="float64")
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 5))
    state = {name: p.numpy() for name, p in layer.named_parameters()}

    def project(x, name):
        y = x @ state[f"{name}.weight"] + state[f"{name}.bias"]
        return y.reshape(y.shape[0], y.shape[1], 2, 2).transpose(0, 2, 1, 3)

    mixed = np_attention(project(q, "q_proj"), project(k, "k_proj"), project(v, "v_proj"))
    expected = mixed.transpose(0, 2, 1, 3).reshape(2, 3, 4) @ state["out_proj.weight"] + state["out_proj.bias"]
    np.testing.assert_allclose(layer(t(q), t(k), t(v)).numpy(), expected, rtol=1e-10)
    check_grad(lambda a, b, c: layer(a, b, c), q, k, v)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        nn.MultiHeadAttention(5, 2)
    with pytest.raises(TypeError, match="Cache or StaticCache"):
        layer(t(q), cache=object())


@pytest.mark.parametrize(
    "normalize_before, activation, expected", [(False, "relu", PADDLE_ENCODER), (True, "gelu", PADDLE_ENCODER_PRE_GELU)]
)
def test_encoder_layer_matches_paddle(normalize_before, activation, expected):
    layer = fill_weights(
        nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=activation, normalize_before=normalize_before)
    )
    np.testing.assert_allclose(layer(t(X)).numpy()[1], expected, atol=3e-6)


def test_encoder_layer_gradients_and_stack():
    layer = fill_weights(nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0)).to(dtype="float64")
    x = rng.normal(size=(2, 3, 4))
    check_grad(lambda a: layer(a, t(np.where(MASK, 0.0, -1e9))), x, rtol=1e-4, atol=1e-6)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 6), 3, nn.LayerNorm(4))
    names = [name for name, _ in encoder.named_parameters()]
    assert names[:3] == [
        "layers.0.self_attn.q_proj.weight",
        "layers.0.self_attn.q_proj.bias",
        "layers.0.self_attn.k_proj.weight",
    ]
    assert names[-2:] == ["norm.weight", "norm.bias"] and len(encoder.layers) == 3
    assert encoder.layers[1].linear1.weight is not encoder.layers[0].linear1.weight
    encoder.eval()
    assert encoder(t(X)).shape == [2, 3, 4]
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(4, 2, 6, activation="swishy")
    with pytest.raises(ValueError, match="TransformerEncoder: needs a TransformerEncoderLayer"):
        nn.TransformerEncoder(nn.TransformerDecoderLayer(4, 2, 6), 2)
    with pytest.raises(ValueError, match="TransformerDecoder: needs a TransformerDecoderLayer and num_layers >= 1"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 6), 0)


def test_decoder_and_transformer_structure_and_masks():
    model = nn.Transformer(4, 2, 1, 1, 6, dropout=0.0)
    keys = list(model.state_dict())
    assert keys[:2] == ["encoder.layers.0.self_attn.q_proj.weight", "encoder.layers.0.self_attn.q_proj.bias"]
    assert "decoder.layers.0.cross_attn.out_proj.bias" in keys and keys[-2:] == [
        "decoder.norm.weight",
        "decoder.norm.bias",
    ]
    mask = model.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
    src, tgt = t(rng.normal(size=(2, 4, 4)).astype("float32")), t(X)
    out = model(src, tgt, tgt_mask=mask)
    assert out.shape == [2, 3, 4]
    # causal masking: the first target position does not depend on later ones
    changed = X.copy()
    changed[:, 2] += 1.0
    np.testing.assert_allclose(model(src, t(changed), tgt_mask=mask).numpy()[:, 0], out.numpy()[:, 0], atol=1e-6)
    decoder_layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, normalize_before=True)
    assert nn.TransformerDecoder(decoder_layer, 2)(tgt, src).shape == [2, 3, 4]


def test_cached_decoding_matches_the_full_causal_pass():
    decoder = fill_weights(nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0), 2, nn.LayerNorm(4)))
    decoder.to(dtype="float64")
    tgt, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    full = decoder(t(tgt), t(memory), t(np.triu(np.full((3, 3), -1e9), 1))).numpy()
    cache = decoder.gen_cache(t(memory))
    steps = []
    for step in range(3):
        out, cache = decoder(t(tgt[:, step : step + 1]), t(memory), None, None, cache)
        steps.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-12)
    incremental, static = cache[0]
    assert incremental.k.shape == [2, 2, 3, 2] and static.k.shape == [2, 2, 5, 2]
    zipped = decoder.gen_cache(t(memory), do_zip=True)
    assert len(zipped) == 2 and len(zipped[0]) == 2 and isinstance(zipped[1][0], nn.MultiHeadAttention.StaticCache)


def test_encoder_cache_and_static_attention_cache():
    encoder = fill_weights(nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0), 2)).to(
        dtype="float64"
    )
    src = rng.normal(size=(2, 3, 4))
    full = encoder(t(src), t(np.triu(np.full((3, 3), -1e9), 1))).numpy()
    cache = encoder.gen_cache(t(src))
    outs = []
    for step in range(3):
        out, cache = encoder(t(src[:, step : step + 1]), None, cache)
        outs.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(outs, axis=1), full, atol=1e-12)
    attention = fill_weights(nn.MultiHeadAttention(4, 2, need_weights=True)).to(dtype="float64")
    query, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    static = attention.gen_cache(t(memory), t(memory), type=attention.StaticCache)
    out, weights, same = attention(t(query), None, None, None, static)
    assert same is static and weights.shape == [2, 2, 3, 5]
    np.testing.assert_allclose(out.numpy(), attention(t(query), t(memory), t(memory))[0].numpy(), atol=1e-12)
    given = attention.gen_cache(static.k, static.v)
    assert isinstance(given, attention.Cache) and given.k is static.k
    with pytest.raises(ValueError, match="type"):
        attention.gen_cache(t(memory), type=dict)


def test_transformer_layers_hold_paddles_state_dict_keys_in_paddles_order():
    attention = [f"{part}.{kind}" for part in ("q_proj", "k_proj", "v_proj", "out_proj") for kind in ("weight", "bias")]
    feed_forward = ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
    norms = [f"norm{i}.{kind}" for i in (1, 2, 3) for kind in ("weight", "bias")]
    encoder = list(nn.TransformerEncoderLayer(4, 2, 8).state_dict())
    decoder = list(nn.TransformerDecoderLayer(4, 2, 8).state_dict())
    assert encoder == [f"self_attn.{key}" for key in attention] + feed_forward + norms[:4]
    assert decoder == (
        [f"self_attn.{key}" for key in attention] + [f"cross_attn.{key}" for key in attention] + feed_forward + norms
    )
    with pytest.raises(ValueError, match="TransformerDecoderLayer: weight_attr/bias_attr lists must have 1 or 3"):
        nn.TransformerDecoderLayer(4, 2, 8, weight_attr=[None, None])
