"""MultiHeadAttention and the Transformer encoder/decoder layers, with Paddle's structure.

Sublayer names and creation order follow Paddle (``self_attn.q_proj.weight``, ``linear1``,
``norm1`` ...), so state dicts carry the same keys in the same order.
"""

from __future__ import annotations

import collections
from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import wrap
from .. import functional as F
from ..functional.attention import additive_mask, attend
from ...core.layer import Layer
from .common import Dropout, Linear
from .container import LayerList
from .norm import LayerNorm

__all__ = [
    "MultiHeadAttention",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]


def _attrs(attr: Any, count: int, layer: str) -> list:
    """Paddle's weight_attr/bias_attr for a Transformer layer: one for all parts, or one per part."""
    if isinstance(attr, (list, tuple)):
        if len(attr) == 1:
            return list(attr) * count
        if len(attr) != count:
            raise ValueError(f"{layer}: weight_attr/bias_attr lists must have 1 or {count} entries, got {len(attr)}")
        return list(attr)
    return [attr] * count


class MultiHeadAttention(Layer):
    """Attention with ``num_heads`` heads over [batch, seq_len, embed_dim] inputs.

    ``attn_mask`` broadcasts to [batch, num_heads, L, S]: boolean/integer masks keep True
    positions, float masks are added to the scores. Returns the output, then the attention
    weights when ``need_weights``, then the updated cache when one is given.

    Caches serve step-by-step decoding as in Paddle: a :class:`Cache` holds the keys and values
    of the steps so far (projected, [batch, num_heads, steps, head_dim]) and grows by the new
    step's; a :class:`StaticCache` holds the keys and values of a fixed memory, computed once.
    Both come from :meth:`gen_cache`.
    """

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        kdim: Optional[int] = None,
        vdim: Optional[int] = None,
        need_weights: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(
                f"MultiHeadAttention: embed_dim ({embed_dim}) must be a positive multiple of num_heads ({num_heads})"
            )
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim = embed_dim // num_heads
        self.need_weights = need_weights
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)

    def _heads(self, x: Tensor) -> Tensor:
        batch, length = x.shape[:2]
        return ops.transpose(ops.reshape(x, [batch, length, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def _keys_values(self, key: Tensor, value: Tensor) -> tuple:
        return self._heads(self.k_proj(key)), self._heads(self.v_proj(value))

    def gen_cache(self, key: Tensor, value: Optional[Tensor] = None, type: Any = None) -> Any:
        """A cache to start decoding with: ``StaticCache`` of the projected ``key``/``value`` (a
        memory), or an empty ``Cache`` for ``key``'s batch (``value`` None), or a ``Cache``
        holding ``key`` and ``value`` as they are."""
        kind = self.Cache if type is None else type
        if kind is self.StaticCache:
            return self.StaticCache(*self._keys_values(key, key if value is None else value))
        if kind is not self.Cache:
            raise ValueError("gen_cache: type must be MultiHeadAttention.Cache or MultiHeadAttention.StaticCache")
        if value is not None:
            return self.Cache(key, value)
        xp = backend.get_array_module(key._data)
        empty = xp.zeros((key.shape[0], self.num_heads, 0, self.head_dim), dtype=key._data.dtype)
        return self.Cache(wrap(empty), wrap(empty.copy()))

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor] = None,
        value: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None,
        cache: Any = None,
    ) -> Any:
        if cache is not None and not isinstance(cache, (self.Cache, self.StaticCache)):
            raise TypeError(
                f"MultiHeadAttention: cache must be a Cache or StaticCache from gen_cache, got {type(cache).__name__}"
            )
        key = query if key is None else key
        value = query if value is None else value
        q = self._heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self._keys_values(key, value)
            if cache is not None:
                k, v = ops.concat([cache.k, k], axis=2), ops.concat([cache.v, v], axis=2)
                cache = self.Cache(k, v)
        mask = additive_mask(attn_mask, q._data.dtype)
        out, weights = attend(q, k, v, mask, self.dropout, self.training, self.head_dim**-0.5)
        out = ops.reshape(ops.transpose(out, [0, 2, 1, 3]), [out.shape[0], out.shape[2], self.embed_dim])
        outputs = [self.out_proj(out)]
        if self.need_weights:
            outputs.append(weights)
        if cache is not None:
            outputs.append(cache)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


class _FeedForwardBlock(Layer):
    """What encoder and decoder layers share: Paddle's constructor, which builds the attention
    sublayers named in ``_attentions`` and the position-wise feed-forward net, each followed by
    a LayerNorm and a dropout (state-dict keys and order as in Paddle)."""

    _attentions: tuple = ()

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float = 0.1,
        activation: str = "relu",
        attn_dropout: Optional[float] = None,
        act_dropout: Optional[float] = None,
        normalize_before: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
        layer_norm_eps: float = 1e-05,
    ) -> None:
        super().__init__()
        layer = type(self).__name__
        if not hasattr(F, activation):
            raise ValueError(f"{layer}: unknown activation {activation!r}; use e.g. 'relu' or 'gelu'")
        if d_model <= 0 or nhead <= 0 or dim_feedforward <= 0:
            raise ValueError(f"{layer}: d_model, nhead and dim_feedforward must be positive")
        self._config = dict(
            d_model=d_model,
            nhead=nhead,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            attn_dropout=attn_dropout,
            act_dropout=act_dropout,
            normalize_before=normalize_before,
            weight_attr=weight_attr,
            bias_attr=bias_attr,
            layer_norm_eps=layer_norm_eps,
        )
        self.normalize_before = normalize_before
        self._attn_dropout = dropout if attn_dropout is None else attn_dropout
        self._act_dropout = dropout if act_dropout is None else act_dropout
        self._activation = getattr(F, activation)
        parts = len(self._attentions) + 1
        weights, biases = _attrs(weight_attr, parts, layer), _attrs(bias_attr, parts, layer)
        for name, weight, bias in zip(self._attentions, weights, biases):
            setattr(
                self, name, MultiHeadAttention(d_model, nhead, self._attn_dropout, weight_attr=weight, bias_attr=bias)
            )
        self.linear1 = Linear(d_model, dim_feedforward, weights[-1], biases[-1])
        self.dropout = Dropout(self._act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weights[-1], biases[-1])
        for index in range(1, parts + 1):
            setattr(self, f"norm{index}", LayerNorm(d_model, layer_norm_eps))
        for index in range(1, parts + 1):
            setattr(self, f"dropout{index}", Dropout(dropout, mode="upscale_in_train"))

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self._activation(self.linear1(x))))

    def _attention_block(
        self,
        x: Tensor,
        attention: MultiHeadAttention,
        memory: Optional[Tensor],
        mask: Optional[Tensor],
        cache: Any,
        norm: Layer,
        drop: Layer,
    ) -> tuple:
        """x + drop(attention over ``memory`` or x itself), normalised before or after; returns the
        result and the attention's updated cache (None without one)."""
        query = norm(x) if self.normalize_before else x
        source = query if memory is None else memory
        if cache is None:
            out = attention(query, source, source, mask)
        else:
            out, cache = attention(query, source, source, mask, cache)
        out = x + drop(out)
        return (out if self.normalize_before else norm(out)), cache

    def _residual(self, x: Tensor, block: Any, norm: Layer, drop: Layer) -> Tensor:
        """x + drop(block(x)) with ``norm`` before the block (pre-norm) or after the sum (post-norm)."""
        out = block(norm(x) if self.normalize_before else x)
        out = x + drop(out)
        return out if self.normalize_before else norm(out)


class TransformerEncoderLayer(_FeedForwardBlock):
    """Self-attention and a feed-forward net, each with a residual connection and LayerNorm
    (after the sum by default, before the block with ``normalize_before``)."""

    _attentions = ("self_attn",)

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None, cache: Any = None) -> Any:
        """The layer's output; with a ``cache`` (from :meth:`gen_cache`), also the updated cache."""
        out, cache = self._attention_block(src, self.self_attn, None, src_mask, cache, self.norm1, self.dropout1)
        out = self._residual(out, self._feed_forward, self.norm2, self.dropout2)
        return out if cache is None else (out, cache)

    def gen_cache(self, src: Tensor) -> Any:
        """An empty self-attention cache for ``src``'s batch."""
        return self.self_attn.gen_cache(src, type=self.self_attn.Cache)


class _LayerStack(Layer):
    """What the encoder and the decoder share: ``num_layers`` layers of ``_layer_type`` (the given
    one, then fresh copies of its configuration), followed by ``norm`` when given."""

    _layer_type: type = Layer

    def __init__(self, layer: Layer, num_layers: int, norm: Optional[LayerNorm]) -> None:
        super().__init__()
        if not isinstance(layer, self._layer_type) or num_layers < 1:
            raise ValueError(f"{type(self).__name__}: needs a {self._layer_type.__name__} and num_layers >= 1")
        self.layers = LayerList([layer] + [type(layer)(**layer._config) for _ in range(num_layers - 1)])
        self.num_layers = num_layers
        self.norm = norm

    def _run(self, out: Tensor, cache: Any, *args: Any) -> Any:
        """Each layer on ``out`` and ``args`` (and its own cache when ``cache`` is given), then
        ``norm``; with ``cache``, also the updated caches."""
        new_caches = []
        for index, layer in enumerate(self.layers):
            if cache is None:
                out = layer(out, *args)
            else:
                out, layer_cache = layer(out, *args, cache[index])
                new_caches.append(layer_cache)
        if self.norm is not None:
            out = self.norm(out)
        return out if cache is None else (out, new_caches)


class TransformerEncoder(_LayerStack):
    """``num_layers`` encoder layers (the given one, then fresh copies of its configuration),
    followed by ``norm`` when given."""

    _layer_type = TransformerEncoderLayer

    def __init__(
        self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Optional[LayerNorm] = None
    ) -> None:
        super().__init__(encoder_layer, num_layers, norm)

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None, cache: Any = None) -> Any:
        """The stack's output; with ``cache`` (one per layer, from :meth:`gen_cache`), also the
        updated caches."""
        return self._run(src, cache, src_mask)

    def gen_cache(self, src: Tensor) -> list:
        """One empty cache per layer."""
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(_FeedForwardBlock):
    """Masked self-attention, attention over the encoder's output, and a feed-forward net, each
    with a residual connection and LayerNorm."""

    _attentions = ("self_attn", "cross_attn")

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        cache: Any = None,
    ) -> Any:
        """The layer's output; with ``cache`` = (incremental, static) from :meth:`gen_cache`, also
        the updated pair (the static one, over ``memory``, does not change)."""
        incremental, static = (None, None) if cache is None else cache
        out, incremental = self._attention_block(
            tgt, self.self_attn, None, tgt_mask, incremental, self.norm1, self.dropout1
        )
        out, static = self._attention_block(
            out, self.cross_attn, memory, memory_mask, static, self.norm2, self.dropout2
        )
        out = self._residual(out, self._feed_forward, self.norm3, self.dropout3)
        return out if cache is None else (out, (incremental, static))

    def gen_cache(self, memory: Tensor) -> tuple:
        """An empty self-attention cache and the cross-attention keys and values of ``memory``."""
        return (
            self.self_attn.gen_cache(memory, type=self.self_attn.Cache),
            self.cross_attn.gen_cache(memory, memory, type=self.cross_attn.StaticCache),
        )


class TransformerDecoder(_LayerStack):
    """``num_layers`` decoder layers, followed by ``norm`` when given."""

    _layer_type = TransformerDecoderLayer

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Optional[LayerNorm] = None
    ) -> None:
        super().__init__(decoder_layer, num_layers, norm)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        cache: Any = None,
    ) -> Any:
        """The stack's output; with ``cache`` (one per layer), also the updated caches."""
        return self._run(tgt, cache, memory, tgt_mask, memory_mask)

    def gen_cache(self, memory: Tensor, do_zip: bool = False) -> list:
        """One cache pair per layer (``do_zip``: all incremental caches, then all static ones)."""
        cache = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*cache)) if do_zip else cache


class Transformer(Layer):
    """An encoder-decoder Transformer, each stack ending in a LayerNorm, as in Paddle."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str = "relu",
        attn_dropout: Optional[float] = None,
        act_dropout: Optional[float] = None,
        normalize_before: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
        custom_encoder: Optional[Layer] = None,
        custom_decoder: Optional[Layer] = None,
    ) -> None:
        super().__init__()
        options = dict(
            dropout=dropout,
            activation=activation,
            attn_dropout=attn_dropout,
            act_dropout=act_dropout,
            normalize_before=normalize_before,
        )
        weights, biases = _attrs(weight_attr, 3, "Transformer"), _attrs(bias_attr, 3, "Transformer")
        if custom_encoder is None:
            custom_encoder = TransformerEncoder(
                TransformerEncoderLayer(
                    d_model,
                    nhead,
                    dim_feedforward,
                    weight_attr=[weights[0], weights[2]],
                    bias_attr=[biases[0], biases[2]],
                    **options,
                ),
                num_encoder_layers,
                LayerNorm(d_model),
            )
        if custom_decoder is None:
            custom_decoder = TransformerDecoder(
                TransformerDecoderLayer(
                    d_model, nhead, dim_feedforward, weight_attr=weights, bias_attr=biases, **options
                ),
                num_decoder_layers,
                LayerNorm(d_model),
            )
        self.encoder, self.decoder = custom_encoder, custom_decoder
        self.d_model, self.nhead = d_model, nhead

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Optional[Tensor] = None,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
    ) -> Tensor:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

    def generate_square_subsequent_mask(self, length: int) -> Tensor:
        """A [length, length] float mask: 0 on and below the diagonal, -inf above (no peeking ahead)."""
        xp = backend.default_array_module()
        return wrap(xp.triu(xp.full((length, length), -xp.inf, dtype="float32"), 1))
