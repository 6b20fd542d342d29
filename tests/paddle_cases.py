"""Fixed op cases that minidp must answer as Paddle does: the table both sides read.

``tools/record_paddle_fixtures.py`` runs each case with Paddle (in its own virtual environment)
and stores the outputs and input gradients in ``tests/fixtures/paddle_ops.npz``;
``tests/test_paddle_parity.py`` runs the same case with minidp and compares. Inputs are drawn
here, from a fixed seed, so both sides see the same numbers. Neither side's framework is
imported by this module.

A case is ``(id, function path without the framework prefix, inputs, keyword arguments)``.
An input is ``(kind, shape)`` or ``(kind, shape, high)``: ``real`` in [-2, 2), ``pos`` in
[0.5, 2), ``unit`` in (-0.9, 0.9), ``away`` with |x| in [0.2, 2) (no kinks at 0),
``index`` integers in [0, high) (int64), ``mask`` booleans. Floating inputs are float64 and
take part in the gradient check; the others do not. An input whose spec ends with ``"=name"``
is passed as the keyword ``name``; the keyword ``"*"`` lists leading positional arguments that are
not tensors (``einsum``'s equation).
"""
from __future__ import annotations

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
    ("lerp", "lerp", [("real", (3, 4)), ("real", (3, 4)), ("unit", (3, 4))], {}),
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
    ("take_along_axis", "take_along_axis", [("real", (3, 5)), ("index", (3, 2), 5)],
     {"axis": 1}),
    ("masked_fill", "masked_fill", [("real", (3, 4)), ("mask", (3, 4))], {"value": 0.5}),
    ("index_add", "index_add", [("real", (4, 3)), ("index", (2,), 4),
                               ("real", (2, 3), "=value")], {"axis": 0}),
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
    ("smooth_l1_loss", "nn.functional.smooth_l1_loss", [("real", (4, 3)), ("real", (4, 3))],
     {}),
    ("kl_div", "nn.functional.kl_div", [("real", (4, 3)), ("pos", (4, 3))],
     {"reduction": "batchmean"}),
    ("binary_cross_entropy", "nn.functional.binary_cross_entropy",
     [("prob", (4, 3)), ("prob", (4, 3))], {}),
    ("nll_loss", "nn.functional.nll_loss", [("real", (5, 4)), ("index", (5,), 4)], {}),
    ("normalize", "nn.functional.normalize", [("real", (3, 4))], {"axis": 1}),
    ("cosine_similarity", "nn.functional.cosine_similarity", [("real", (3, 4)),
                                                              ("real", (3, 4))], {"axis": 1}),
    ("pad_reflect", "nn.functional.pad", [("real", (1, 2, 4, 5))],
     {"pad": [1, 2, 2, 1], "mode": "reflect"}),
    ("interpolate_bilinear", "nn.functional.interpolate", [("real", (1, 2, 3, 4))],
     {"scale_factor": 2, "mode": "bilinear", "align_corners": False}),
    ("interpolate_nearest", "nn.functional.interpolate", [("real", (1, 2, 3, 4))],
     {"size": [5, 7], "mode": "nearest"}),
    ("group_norm", "nn.functional.group_norm", [("real", (2, 4, 3, 3))], {"num_groups": 2}),
    ("one_hot", "nn.functional.one_hot", [("index", (5,), 4)], {"num_classes": 4}),
    ("cross_entropy_smooth", "nn.functional.cross_entropy", [("real", (5, 4)),
                                                             ("index", (5,), 4)],
     {"label_smoothing": 0.1}),
]

_SEED = 20261123


def make_inputs(case_index: int, specs: list) -> list:
    """The case's input arrays, identical on every machine for a given case position."""
    rng = np.random.default_rng(_SEED + case_index)
    arrays = []
    for spec in specs:
        kind, shape = spec[0], spec[1]
        if kind == "real":
            arrays.append(rng.uniform(-2.0, 2.0, shape))
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
    positional = list(kwargs.get("*", []))
    keywords = {k: v for k, v in kwargs.items() if k != "*"}
    for spec, t in zip(specs, tensors):
        if isinstance(spec[-1], str) and spec[-1].startswith("="):
            keywords[spec[-1][1:]] = t
        else:
            positional.append(t)
    return fn(*positional, **keywords), tensors
