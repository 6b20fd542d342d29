"""Paddle's AMP op lists and how custom lists amend them.

Names are Paddle's op names (``matmul_v2``, ``softmax``, ``reduce_sum`` ...), because that is what
``custom_white_list``/``custom_black_list`` hold in Paddle scripts. White-list ops run in the low
dtype (float16 or bfloat16), black-list ops in float32; every other op follows its inputs. The
lists are those of Paddle 3.3.1 (``paddle/amp/amp_lists.py``), recorded in
tests/fixtures/paddle_amp.json and compared there.
"""

from __future__ import annotations

from typing import Iterable, Optional

__all__ = ["white_list", "black_list"]

LEVELS = ("O0", "OD", "O1", "O2")
LOW_DTYPES = ("float16", "bfloat16")

_WHITE = frozenset(
    {
        "conv2d",
        "einsum",
        "matmul",
        "matmul_v2",
        "linear_v2",
        "max_pool2d_with_index",
        "mul",
        "fused_gemm_epilogue",
        "fused_rotary_position_embedding",
        "flash_attn",
    }
)
# fused and quantisation kernels that Paddle runs in float16 only
_FP16_ONLY_WHITE = frozenset(
    {
        "fake_quantize_dequantize_abs_max",
        "fake_quantize_dequantize_moving_average_abs_max",
        "fused_attention",
        "fused_feedforward",
    }
)
_BLACK = frozenset(
    {
        "tan",
        "acos",
        "asin",
        "sinh",
        "cosh",
        "atanh",
        "tanh_shrink",
        "erfinv",
        "exp",
        "expm1",
        "log",
        "log10",
        "log2",
        "reciprocal",
        "rsqrt",
        "pow",
        "square",
        "reduce_sum",
        "mean",
        "reduce_mean",
        "reduce_prod",
        "cumprod",
        "cumsum",
        "dist",
        "pnorm",
        "frobenius_norm",
        "renorm",
        "group_norm",
        "layer_norm",
        "softmax",
        "softmin",
        "softplus",
        "log_softmax",
        "softmax_with_cross_entropy",
        "sigmoid_cross_entropy_with_logits",
        "c_softmax_with_cross_entropy",
        "c_softmax_with_multi_label_cross_entropy",
        "cross_entropy",
        "cross_entropy2",
        "nll_loss",
        "huber_loss",
        "triplet_margin_loss",
        "log_loss",
        "hsigmoid_loss",
        "margin_cross_entropy",
    }
)
# ops kept in float32 at every level: interpolation, embedding lookup, scatter
_EXTRA_BLACK = frozenset(
    {
        "linear_interp_v2",
        "nearest_interp_v2",
        "bilinear_interp_v2",
        "bicubic_interp_v2",
        "trilinear_interp_v2",
        "lookup_table",
        "lookup_table_v2",
        "scatter",
    }
)


def white_list() -> dict:
    """``{dtype: {level: ops}}``: the ops each dtype and level runs in the low dtype."""
    fp16 = _WHITE | _FP16_ONLY_WHITE
    return {
        "float16": {"OD": fp16, "O1": fp16, "O2": fp16},
        "bfloat16": {"OD": _WHITE, "O1": _WHITE, "O2": _WHITE},
    }


def black_list() -> dict:
    """``{dtype: {level: ops}}``: the ops each dtype and level keeps in float32."""
    per_level = {"OD": frozenset(), "O1": _BLACK | _EXTRA_BLACK, "O2": _EXTRA_BLACK}
    return {"float16": dict(per_level), "bfloat16": dict(per_level)}


def _names(value: Optional[Iterable[str]], argument: str) -> frozenset:
    if value is None:
        return frozenset()
    if isinstance(value, str) or not all(isinstance(name, str) for name in value):
        raise TypeError(f"auto_cast: {argument} must be a set, list or tuple of op names, got {value!r}")
    return frozenset(value)


def effective_lists(
    custom_white_list: Optional[Iterable[str]], custom_black_list: Optional[Iterable[str]], level: str, dtype: str
) -> tuple:
    """(white, black) for ``level`` and ``dtype`` after the custom lists: a custom white op leaves
    the black list and joins the white one, a custom black op the other way round; an op in both
    custom lists is a ValueError, as in Paddle."""
    white_extra = _names(custom_white_list, "custom_white_list")
    black_extra = _names(custom_black_list, "custom_black_list")
    if level == "O0":
        return frozenset(), frozenset()
    both = white_extra & black_extra
    if both:
        raise ValueError(f"auto_cast: ops {sorted(both)} are in both custom_white_list and custom_black_list")
    white = (white_list()[dtype][level] | white_extra) - black_extra
    black = (black_list()[dtype][level] - white_extra) | black_extra
    return white, black
