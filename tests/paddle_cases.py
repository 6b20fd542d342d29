"""Fixed op cases that minidp must answer as Paddle does: the table both sides read.

``tools/record_paddle_fixtures.py`` runs each case with Paddle (in its own virtual environment)
and stores the outputs and input gradients in ``tests/fixtures/paddle_ops.npz``;
``tests/test_paddle_parity.py`` runs the same case with minidp and compares. Inputs are drawn
here, from a fixed seed, so both sides see the same numbers. Neither side's framework is
imported by this module.

A case is ``(id, function, inputs, keyword arguments)``: the function is a path without the
framework prefix (``"nn.functional.elu"``) or ``lambda P, F, *inputs`` written once for both
frameworks (``P`` is ``paddle`` or ``minidp``, ``F`` its ``nn.functional``).
An input is ``(kind, shape)`` or ``(kind, shape, high)``: ``real`` in [-2, 2), ``pos`` in
[0.5, 2), ``unit`` in (-0.9, 0.9), ``away`` with |x| in [0.2, 2) (no kinks at 0),
``wide`` in [-4, 4), ``index`` integers in [0, high) (int64), ``mask`` booleans. Floating inputs are float64 and
take part in the gradient check unless their kind ends with ``!`` (``"pos!"``: a label that
needs no gradient); the others never do. An input whose spec ends with ``"=name"``
is passed as the keyword ``name``; the keyword ``"*"`` lists leading positional arguments that are
not tensors (``einsum``'s equation).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

CASES = [
    # elementwise math
    ("sin", "sin", [("real", (3, 4))], {}),
    ("cos", "cos", [("real", (3, 4))], {}),
    ("tan", "tan", [("unit", (3, 4))], {}),
    ("asin", "asin", [("unit", (3, 4))], {}),
    ("acos", "acos", [("unit", (3, 4))], {}),
    ("atan", "atan", [("real", (3, 4))], {}),
    ("sinh", "sinh", [("real", (3, 4))], {}),
    ("cosh", "cosh", [("real", (3, 4))], {}),
    ("asinh", "asinh", [("real", (3, 4))], {}),
    ("atanh", "atanh", [("unit", (3, 4))], {}),
    ("expm1", "expm1", [("real", (3, 4))], {}),
    ("log2", "log2", [("pos", (3, 4))], {}),
    ("log10", "log10", [("pos", (3, 4))], {}),
    ("log1p", "log1p", [("pos", (3, 4))], {}),
    ("rsqrt", "rsqrt", [("pos", (3, 4))], {}),
    ("reciprocal", "reciprocal", [("away", (3, 4))], {}),
    ("erf", "erf", [("real", (3, 4))], {}),
    ("floor", "floor", [("real", (3, 4))], {}),
    ("round", "round", [("real", (3, 4))], {}),
    ("sign", "sign", [("away", (3, 4))], {}),
    ("atan2", "atan2", [("away", (3, 4)), ("away", (3, 4))], {}),
    ("remainder", "remainder", [("real", (3, 4)), ("pos", (3, 4))], {}),
    ("floor_divide", "floor_divide", [("real", (3, 4)), ("pos", (3, 4))], {}),
    ("fmax", "fmax", [("real", (3, 4)), ("real", (3, 4))], {}),
    ("logaddexp", "logaddexp", [("real", (3, 4)), ("real", (4,))], {}),
    ("hypot", "hypot", [("away", (3, 4)), ("away", (3, 4))], {}),
    # Paddle gives a tensor weight no gradient (minidp does): the weight is a number here
    ("lerp", "lerp", [("real", (3, 4)), ("real", (3, 4))], {"weight": 0.3}),
    ("logit", "logit", [("unit", (3, 4))], {"eps": 1e-6}),
    ("stanh", "stanh", [("real", (3, 4))], {}),
    ("isclose", "isclose", [("real", (3, 4)), ("real", (3, 4))], {}),
    # reductions
    ("prod", "prod", [("pos", (3, 4))], {"axis": 1}),
    ("cumsum", "cumsum", [("real", (3, 4))], {"axis": 1}),
    ("cumprod", "cumprod", [("pos", (3, 4))], {"dim": 0}),
    ("std", "std", [("real", (3, 5))], {"axis": 1}),
    ("var", "var", [("real", (3, 5))], {"axis": 0, "unbiased": False}),
    ("logsumexp", "logsumexp", [("real", (3, 4))], {"axis": -1}),
    ("logcumsumexp", "logcumsumexp", [("real", (3, 4))], {"axis": 1}),
    ("amax", "amax", [("real", (3, 4))], {"axis": 1}),
    ("median", "median", [("real", (3, 5))], {"axis": 1}),
    ("nansum", "nansum", [("real", (3, 4))], {"axis": 0}),
    ("all", "all", [("mask", (3, 4))], {"axis": 1}),
    ("any", "any", [("mask", (3, 4))], {}),
    # search and sort
    ("topk", "topk", [("real", (3, 6))], {"k": 2, "axis": 1}),
    ("sort", "sort", [("real", (3, 6))], {"axis": 1, "descending": True}),
    ("argsort", "argsort", [("real", (3, 6))], {"axis": -1}),
    ("masked_select", "masked_select", [("real", (3, 4)), ("mask", (3, 4))], {}),
    ("kthvalue", "kthvalue", [("real", (3, 6))], {"k": 2, "axis": 1}),
    # indexing
    ("gather", "gather", [("real", (5, 3)), ("index", (4,), 5)], {"axis": 0}),
    ("gather_nd", "gather_nd", [("real", (4, 5, 2)), ("index", (3, 2), 4)], {}),
    ("index_select", "index_select", [("real", (4, 5)), ("index", (3,), 5)], {"axis": 1}),
    ("take_along_axis", "take_along_axis", [("real", (3, 5)), ("index", (3, 2), 5)], {"axis": 1}),
    ("masked_fill", "masked_fill", [("real", (3, 4)), ("mask", (3, 4))], {"value": 0.5}),
    ("index_add", "index_add", [("real", (4, 3)), ("index", (2,), 4), ("real", (2, 3), "=value")], {"axis": 0}),
    # shape
    ("tile", "tile", [("real", (2, 3))], {"repeat_times": [2, 1]}),
    ("flip", "flip", [("real", (2, 3))], {"axis": [0, 1]}),
    ("roll", "roll", [("real", (3, 4))], {"shifts": 1, "axis": 1}),
    ("chunk", "chunk", [("real", (4, 6))], {"chunks": 3, "axis": 1}),
    ("unbind", "unbind", [("real", (3, 4))], {"axis": 0}),
    ("moveaxis", "moveaxis", [("real", (2, 3, 4))], {"source": 0, "destination": 2}),
    ("broadcast_to", "broadcast_to", [("real", (1, 3))], {"shape": [2, 3]}),
    ("repeat_interleave", "repeat_interleave", [("real", (2, 3))], {"repeats": 2, "axis": 1}),
    ("tril", "tril", [("real", (4, 4))], {"diagonal": -1}),
    ("triu", "triu", [("real", (4, 4))], {}),
    # linear algebra
    ("bmm", "bmm", [("real", (2, 3, 4)), ("real", (2, 4, 5))], {}),
    ("einsum", "einsum", [("real", (2, 3)), ("real", (3, 4))], {"*": ["ij,jk->ik"]}),
    ("dot", "dot", [("real", (5,)), ("real", (5,))], {}),
    ("mv", "mv", [("real", (3, 4)), ("real", (4,))], {}),
    ("outer", "outer", [("real", (3,)), ("real", (4,))], {}),
    ("cross", "cross", [("real", (4, 3)), ("real", (4, 3))], {"axis": 1}),
    ("kron", "kron", [("real", (2, 2)), ("real", (2, 3))], {}),
    ("trace", "trace", [("real", (4, 4))], {}),
    ("diagonal", "diagonal", [("real", (3, 4))], {"offset": 1}),
    ("norm_fro", "linalg.norm", [("real", (3, 4))], {}),
    # nn.functional
    ("leaky_relu", "nn.functional.leaky_relu", [("away", (3, 4))], {"negative_slope": 0.1}),
    ("elu", "nn.functional.elu", [("away", (3, 4))], {"alpha": 0.7}),
    ("selu", "nn.functional.selu", [("away", (3, 4))], {}),
    ("silu", "nn.functional.silu", [("real", (3, 4))], {}),
    ("mish", "nn.functional.mish", [("real", (3, 4))], {}),
    ("softplus", "nn.functional.softplus", [("real", (3, 4))], {"beta": 2.0}),
    ("hardswish", "nn.functional.hardswish", [("away", (3, 4))], {}),
    ("hardsigmoid", "nn.functional.hardsigmoid", [("away", (3, 4))], {}),
    ("log_sigmoid", "nn.functional.log_sigmoid", [("real", (3, 4))], {}),
    ("glu", "nn.functional.glu", [("real", (3, 4))], {"axis": -1}),
    ("log_softmax", "nn.functional.log_softmax", [("real", (3, 4))], {"axis": 1}),
    ("smooth_l1_loss", "nn.functional.smooth_l1_loss", [("real", (4, 3)), ("real", (4, 3))], {}),
    ("kl_div", "nn.functional.kl_div", [("real", (4, 3)), ("pos!", (4, 3))], {"reduction": "batchmean"}),
    ("binary_cross_entropy", "nn.functional.binary_cross_entropy", [("prob", (4, 3)), ("prob!", (4, 3))], {}),
    ("nll_loss", "nn.functional.nll_loss", [("real", (5, 4)), ("index", (5,), 4)], {}),
    ("normalize", "nn.functional.normalize", [("real", (3, 4))], {"axis": 1}),
    ("cosine_similarity", "nn.functional.cosine_similarity", [("real", (3, 4)), ("real", (3, 4))], {"axis": 1}),
    ("pad_reflect", "nn.functional.pad", [("real", (1, 2, 4, 5))], {"pad": [1, 2, 2, 1], "mode": "reflect"}),
    (
        "interpolate_bilinear",
        "nn.functional.interpolate",
        [("real", (1, 2, 3, 4))],
        {"scale_factor": 2, "mode": "bilinear", "align_corners": False},
    ),
    ("interpolate_nearest", "nn.functional.interpolate", [("real", (1, 2, 3, 4))], {"size": [5, 7], "mode": "nearest"}),
    # without weight and bias Paddle's input gradient is wrong (minidp's is exact)
    (
        "group_norm",
        "nn.functional.group_norm",
        [("real", (2, 4, 3, 3)), ("pos", (4,), "=weight"), ("real", (4,), "=bias")],
        {"num_groups": 2},
    ),
    ("one_hot", "nn.functional.one_hot", [("index", (5,), 4)], {"num_classes": 4}),
    (
        "cross_entropy_smooth",
        "nn.functional.cross_entropy",
        [("real", (5, 4)), ("index", (5,), 4)],
        {"label_smoothing": 0.1},
    ),
    # written once for both frameworks: P is paddle or minidp, F its nn.functional
    ("relu6", lambda P, F, t: F.relu6(t), [("wide", (3, 6))], {}),
    ("leaky_relu_wide", lambda P, F, t: F.leaky_relu(t, 0.2), [("wide", (3, 6))], {}),
    ("elu_wide", lambda P, F, t: F.elu(t, 0.7), [("wide", (3, 6))], {}),
    ("selu_wide", lambda P, F, t: F.selu(t), [("wide", (3, 6))], {}),
    ("celu", lambda P, F, t: F.celu(t, 1.5), [("wide", (3, 6))], {}),
    ("silu_wide", lambda P, F, t: F.silu(t), [("wide", (3, 6))], {}),
    ("swish", lambda P, F, t: F.swish(t), [("wide", (3, 6))], {}),
    ("mish_wide", lambda P, F, t: F.mish(t), [("wide", (3, 6))], {}),
    ("softplus_wide", lambda P, F, t: F.softplus(t, 2, 3), [("wide", (3, 6))], {}),
    ("softsign", lambda P, F, t: F.softsign(t), [("wide", (3, 6))], {}),
    ("softshrink", lambda P, F, t: F.softshrink(t, 0.7), [("wide", (3, 6))], {}),
    ("hardshrink", lambda P, F, t: F.hardshrink(t, 0.7), [("wide", (3, 6))], {}),
    ("tanhshrink", lambda P, F, t: F.tanhshrink(t), [("wide", (3, 6))], {}),
    ("hardsigmoid_wide", lambda P, F, t: F.hardsigmoid(t), [("wide", (3, 6))], {}),
    ("hardswish_wide", lambda P, F, t: F.hardswish(t), [("wide", (3, 6))], {}),
    ("hardtanh", lambda P, F, t: F.hardtanh(t, -2.0, 1.5), [("wide", (3, 6))], {}),
    ("log_sigmoid_wide", lambda P, F, t: F.log_sigmoid(t), [("wide", (3, 6))], {}),
    ("thresholded_relu", lambda P, F, t: F.thresholded_relu(t, 1.2, 0.3), [("wide", (3, 6))], {}),
    ("glu_wide", lambda P, F, t: F.glu(t, 1), [("wide", (3, 6))], {}),
    ("maxout", lambda P, F, t: F.maxout(t.reshape([3, 6, 1, 1]), 3, 1), [("wide", (3, 6))], {}),
    ("rrelu_eval", lambda P, F, t: F.rrelu(t, 0.1, 0.3, training=False), [("wide", (3, 6))], {}),
    ("log_softmax_wide", lambda P, F, t: F.log_softmax(t), [("wide", (3, 6))], {}),
    ("gelu_tanh", lambda P, F, t: F.gelu(t, approximate=True), [("wide", (3, 6))], {}),
    ("stanh_wide", lambda P, F, t: P.stanh(t), [("wide", (3, 6))], {}),
    ("logit_eps", lambda P, F, t: P.logit(t * 0.1 + 0.5, eps=0.2), [("wide", (3, 6))], {}),
    ("erf_wide", lambda P, F, t: P.erf(t), [("wide", (3, 6))], {}),
    ("erfinv", lambda P, F, t: P.erfinv(t * 0.2), [("wide", (3, 6))], {}),
    ("lgamma", lambda P, F, t: P.lgamma(t.abs() + 0.3), [("wide", (3, 6))], {}),
    ("digamma", lambda P, F, t: P.digamma(t.abs() + 0.3), [("wide", (3, 6))], {}),
    ("expm1_wide", lambda P, F, t: P.expm1(t), [("wide", (3, 6))], {}),
    ("rsqrt_wide", lambda P, F, t: P.rsqrt(t.abs() + 0.1), [("wide", (3, 6))], {}),
    ("reciprocal_wide", lambda P, F, t: P.reciprocal(t + 10), [("wide", (3, 6))], {}),
    ("frac", lambda P, F, t: P.frac(t), [("wide", (3, 6))], {}),
    ("deg2rad", lambda P, F, t: P.deg2rad(t), [("wide", (3, 6))], {}),
    ("asinh_wide", lambda P, F, t: P.asinh(t), [("wide", (3, 6))], {}),
    ("atan2_wide", lambda P, F, t: P.atan2(t, t * 0.5 + 1), [("wide", (3, 6))], {}),
    ("hypot_wide", lambda P, F, t: P.hypot(t, t * 0.5 + 1), [("wide", (3, 6))], {}),
    ("logaddexp_wide", lambda P, F, t: P.logaddexp(t, t * 0.5 + 1), [("wide", (3, 6))], {}),
    ("remainder_wide", lambda P, F, t: P.remainder(t, t * 0 + 1.7), [("wide", (3, 6))], {}),
    ("copysign", lambda P, F, t: P.copysign(t, t * -0.5 + 1), [("wide", (3, 6))], {}),
    ("fmax_wide", lambda P, F, t: P.fmax(t, t * -1), [("wide", (3, 6))], {}),
    ("maximum_ties", lambda P, F, t: P.maximum(t.round(), (t * 0.5).round()), [("wide", (3, 6))], {}),
    ("var_wide", lambda P, F, t: P.var(t, axis=1), [("wide", (3, 6))], {}),
    ("std_wide", lambda P, F, t: P.std(t, axis=0, unbiased=False), [("wide", (3, 6))], {}),
    ("median_wide", lambda P, F, t: P.median(t, axis=1), [("wide", (3, 6))], {}),
    ("median_ties", lambda P, F, t: P.median(t.round()), [("wide", (3, 6))], {}),
    ("quantile", lambda P, F, t: P.quantile(t, [0.2, 0.7], axis=1), [("wide", (3, 6))], {}),
    ("logcumsumexp_wide", lambda P, F, t: P.logcumsumexp(t, axis=1), [("wide", (3, 6))], {}),
    ("cumprod_wide", lambda P, F, t: P.cumprod(t, dim=1), [("wide", (3, 6))], {}),
    ("cumsum_wide", lambda P, F, t: P.cumsum(t), [("wide", (3, 6))], {}),
    ("prod_wide", lambda P, F, t: P.prod(t, axis=0), [("wide", (3, 6))], {}),
    ("cummax", lambda P, F, t: P.cummax(t, axis=1)[0], [("wide", (3, 6))], {}),
    ("cummin_ties", lambda P, F, t: P.cummin(t.round(), axis=1)[0], [("wide", (3, 6))], {}),
    ("nanmean", lambda P, F, t: P.nanmean(t, axis=1), [("wide", (3, 6))], {}),
    ("amax_ties", lambda P, F, t: P.amax(t.round(), axis=1), [("wide", (3, 6))], {}),
    ("logsumexp_wide", lambda P, F, t: P.logsumexp(t, axis=0), [("wide", (3, 6))], {}),
    ("sin_wide", lambda P, F, t: P.sin(t), [("wide", (3, 6))], {}),
    ("cos_wide", lambda P, F, t: P.cos(t), [("wide", (3, 6))], {}),
    ("tan_wide", lambda P, F, t: P.tan(t * 0.3), [("wide", (3, 6))], {}),
    ("asin_wide", lambda P, F, t: P.asin(t * 0.2), [("wide", (3, 6))], {}),
    ("acos_wide", lambda P, F, t: P.acos(t * 0.2), [("wide", (3, 6))], {}),
    ("atan_wide", lambda P, F, t: P.atan(t), [("wide", (3, 6))], {}),
    ("sinh_wide", lambda P, F, t: P.sinh(t), [("wide", (3, 6))], {}),
    ("cosh_wide", lambda P, F, t: P.cosh(t), [("wide", (3, 6))], {}),
    ("tanh", lambda P, F, t: P.tanh(t), [("wide", (3, 6))], {}),
    ("acosh", lambda P, F, t: P.acosh(t.abs() + 1.1), [("wide", (3, 6))], {}),
    ("atanh_wide", lambda P, F, t: P.atanh(t * 0.2), [("wide", (3, 6))], {}),
    ("exp", lambda P, F, t: P.exp(t), [("wide", (3, 6))], {}),
    ("log", lambda P, F, t: P.log(t.abs() + 0.1), [("wide", (3, 6))], {}),
    ("log2_wide", lambda P, F, t: P.log2(t.abs() + 0.1), [("wide", (3, 6))], {}),
    ("log10_wide", lambda P, F, t: P.log10(t.abs() + 0.1), [("wide", (3, 6))], {}),
    ("log1p_wide", lambda P, F, t: P.log1p(t.abs()), [("wide", (3, 6))], {}),
    ("sqrt", lambda P, F, t: P.sqrt(t.abs() + 0.1), [("wide", (3, 6))], {}),
    ("square", lambda P, F, t: P.square(t), [("wide", (3, 6))], {}),
    ("abs", lambda P, F, t: P.abs(t), [("wide", (3, 6))], {}),
    ("neg", lambda P, F, t: P.neg(t), [("wide", (3, 6))], {}),
    ("sign_wide", lambda P, F, t: P.sign(t), [("wide", (3, 6))], {}),
    ("floor_wide", lambda P, F, t: P.floor(t), [("wide", (3, 6))], {}),
    ("ceil", lambda P, F, t: P.ceil(t), [("wide", (3, 6))], {}),
    ("trunc", lambda P, F, t: P.trunc(t), [("wide", (3, 6))], {}),
    ("round_wide", lambda P, F, t: P.round(t), [("wide", (3, 6))], {}),
    ("sigmoid", lambda P, F, t: F.sigmoid(t), [("wide", (3, 6))], {}),
    ("relu", lambda P, F, t: F.relu(t), [("wide", (3, 6))], {}),
    ("rad2deg", lambda P, F, t: P.rad2deg(t), [("wide", (3, 6))], {}),
    ("logit_wide", lambda P, F, t: P.logit(t * 0.1 + 0.5), [("wide", (3, 6))], {}),
    ("heaviside", lambda P, F, t: P.heaviside(t, t * 0.5), [("wide", (3, 6))], {}),
    ("fmin", lambda P, F, t: P.fmin(t, t * -1), [("wide", (3, 6))], {}),
    ("lerp_wide", lambda P, F, t: P.lerp(t, t * t, 0.3), [("wide", (3, 6))], {}),
    ("addmm", lambda P, F, t: P.addmm(t[:, :2], t[:, :3], t[:3, 3:5], beta=0.5, alpha=2.0), [("wide", (3, 6))], {}),
    ("nansum_wide", lambda P, F, t: P.nansum(t, axis=0), [("wide", (3, 6))], {}),
    ("minimum_ties", lambda P, F, t: P.minimum(t.round(), (t * 0.5).round()), [("wide", (3, 6))], {}),
    ("max_ties", lambda P, F, t: P.max(t.round()), [("wide", (3, 6))], {}),
    ("mean_dtype", lambda P, F, t: P.mean(t, axis=[0, 1], keepdim=True), [("wide", (3, 6))], {}),
    ("clip", lambda P, F, t: P.clip(t, -1.5, 2.0), [("wide", (3, 6))], {}),
    ("sinc", lambda P, F, t: P.sinc(t * 0.3), [("wide", (3, 6))], {}),
    ("nan_to_num", lambda P, F, t: P.nan_to_num(P.log(t), nan=-1.0, neginf=-5.0), [("wide", (3, 6))], {}),
    ("ldexp", lambda P, F, t: P.ldexp(t, (t * 0 + 3).astype("int32")), [("wide", (3, 6))], {}),
    ("positive", lambda P, F, t: P.positive(t), [("wide", (3, 6))], {}),
    ("diff", lambda P, F, t: P.diff(t, n=2, axis=1), [("wide", (3, 6))], {}),
    ("diff_prepend", lambda P, F, t: P.diff(t, axis=0, prepend=t[:1] * 2, append=t[2:]), [("wide", (3, 6))], {}),
    ("trapezoid", lambda P, F, t: P.trapezoid(t, dx=0.5), [("wide", (3, 6))], {}),
    ("trapezoid_x", lambda P, F, t: P.trapezoid(t, x=(t[0] * 0 + 1).cumsum() ** 2, axis=1), [("wide", (3, 6))], {}),
    ("cumulative_trapezoid", lambda P, F, t: P.cumulative_trapezoid(t, axis=0), [("wide", (3, 6))], {}),
    ("nanquantile", lambda P, F, t: P.nanquantile(P.log(t), [0.3, 0.8], axis=1), [("wide", (3, 6))], {}),
    ("quantile_nearest", lambda P, F, t: P.quantile(t, 0.4, axis=0, interpolation="nearest"), [("wide", (3, 6))], {}),
    ("add_n", lambda P, F, t: P.add_n([t, t * 2, t * t]), [("wide", (3, 6))], {}),
    # 3-D max pooling's mask and max-unpooling by it; rounded values (gradient 1 kept) tie everywhere
    ("max_pool3d_mask", lambda P, F, t: F.max_pool3d(t, 3, 2, 1, True, True), [("real", (2, 2, 5, 6, 7))], {}),
    (
        "max_pool3d_mask_ties",
        lambda P, F, t: F.max_pool3d(t.round().detach() + (t - t.detach()), 2, 1, return_mask=True),
        [("wide", (1, 2, 4, 5, 6))],
        {},
    ),
    (
        "adaptive_max_pool3d_mask_ties",
        lambda P, F, t: F.adaptive_max_pool3d(t.round().detach() + (t - t.detach()), [2, 3, 4], return_mask=True),
        [("wide", (2, 2, 5, 6, 7))],
        {},
    ),
    (
        "max_unpool3d_of_max_pool3d",
        lambda P, F, t: F.max_unpool3d(
            *F.max_pool3d(t, (2, 3, 2), (1, 2, 3), (1, 0, 1), return_mask=True),
            (2, 3, 2),
            (1, 2, 3),
            (1, 0, 1),
            output_size=[5, 6, 7],
        ),
        [("real", (2, 2, 5, 6, 7))],
        {},
    ),
    (
        "max_unpool2d_layer_output_size",
        lambda P, F, t: P.nn.MaxUnPool2D(2)(*F.max_pool2d(t, 2, return_mask=True), output_size=[5, 5]),
        [("real", (1, 2, 5, 5))],
        {},
    ),
    (
        "dropout_inplace_infer",
        lambda P, F, t: F.dropout(t * 1, 0.3, training=False, inplace=True, mode="downscale_in_infer"),
        [("real", (3, 4))],
        {},
    ),
]

_SEED = 20261123


def make_inputs(case_index: int, specs: list) -> list:
    """The case's input arrays, identical on every machine for a given case position."""
    rng = np.random.default_rng(_SEED + case_index)
    arrays = []
    for spec in specs:
        kind, shape = spec[0].rstrip("!"), spec[1]
        if kind == "real":
            arrays.append(rng.uniform(-2.0, 2.0, shape))
        elif kind == "wide":
            arrays.append(rng.uniform(-4.0, 4.0, shape))
        elif kind == "pos":
            arrays.append(rng.uniform(0.5, 2.0, shape))
        elif kind == "unit":
            arrays.append(rng.uniform(-0.9, 0.9, shape))
        elif kind == "prob":
            arrays.append(rng.uniform(0.05, 0.95, shape))
        elif kind == "away":
            arrays.append(rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape))
        elif kind == "index":
            arrays.append(rng.integers(0, spec[2], shape).astype(np.int64))
        elif kind == "mask":
            arrays.append(rng.random(shape) < 0.5)
        else:
            raise ValueError(f"unknown input kind {kind!r}")
    return arrays


def output_weights(case_index: int, shape: tuple) -> np.ndarray:
    """Fixed weights w: gradients are those of sum(output * w), so no element hides another."""
    return np.random.default_rng(_SEED - 1 - case_index).uniform(0.5, 1.5, shape)


def call(fn, case_index: int, specs: list, kwargs: dict, to_tensor) -> tuple:
    """Call ``fn`` on the case's inputs (made tensors by ``to_tensor``); return (result, tensors)."""
    tensors = [to_tensor(a) for a in make_inputs(case_index, specs)]
    for spec, t in zip(specs, tensors):
        if spec[0].endswith("!"):
            t.stop_gradient = True
    positional = list(kwargs.get("*", []))
    keywords = {k: v for k, v in kwargs.items() if k != "*"}
    for spec, t in zip(specs, tensors):
        if isinstance(spec[-1], str) and spec[-1].startswith("="):
            keywords[spec[-1][1:]] = t
        else:
            positional.append(t)
    return fn(*positional, **keywords), tensors


def function(path: Any, framework: Any) -> Callable:
    """The case's function in ``framework`` (the ``paddle`` or the ``minidp`` module)."""
    if callable(path):
        return functools.partial(path, framework, framework.nn.functional)
    obj = framework
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj
