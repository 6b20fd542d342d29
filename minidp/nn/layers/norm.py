"""LayerNorm, BatchNorm1D and BatchNorm2D."""
from __future__ import annotations

import math
from typing import Any, Optional

from ... import backend
from ...autograd.tensor import Tensor
from ...ops._util import wrap
from .. import functional as F
from .. import initializer as init
from ..layer import Layer


class LayerNorm(Layer):
    """Normalise each sample over its trailing ``normalized_shape`` axes, then scale and shift.

    Weight (ones) and bias (zeros) hold prod(normalized_shape) values, as in Paddle.
    """

    def __init__(self, normalized_shape: Any, epsilon: float = 1e-05, weight_attr: Any = None,
                 bias_attr: Any = None, name: Optional[str] = None) -> None:
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self._normalized_shape, self._epsilon = shape, epsilon
        size = [math.prod(shape)]
        self.weight = self.create_parameter(size, attr=weight_attr, default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter(size, attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self._normalized_shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class _BatchNorm(Layer):
    """Per-channel normalisation with running statistics kept as persistable buffers
    ``_mean`` and ``_variance`` (Paddle's state-dict names)."""

    _input_ndims: tuple = ()
    _default_format = ""

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: Optional[str] = None, use_global_stats: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        super().__init__()
        self._num_features, self._momentum, self._epsilon = num_features, momentum, epsilon
        self._data_format = data_format or self._default_format
        self._use_global_stats = use_global_stats
        self.weight = self.create_parameter([num_features], attr=weight_attr,
                                            default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True)
        xp = backend.default_array_module()
        self.register_buffer("_mean", wrap(xp.zeros([num_features], self._dtype)))
        self.register_buffer("_variance", wrap(xp.ones([num_features], self._dtype)))

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self._input_ndims:
            raise ValueError(f"{type(self).__name__}: expects an input with {' or '.join(map(str, self._input_ndims))} "
                             f"dimensions, got shape {x.shape}")
        return F.batch_norm(x, self._mean, self._variance, self.weight, self.bias, self.training, self._momentum,
                            self._epsilon, self._data_format, self._use_global_stats)

    def extra_repr(self) -> str:
        return f"num_features={self._num_features}, momentum={self._momentum}, epsilon={self._epsilon}"


class BatchNorm1D(_BatchNorm):
    """Batch normalisation of [N, C] or [N, C, L] inputs (``data_format='NLC'`` for channels last)."""

    _input_ndims = (2, 3)
    _default_format = "NCL"


class BatchNorm2D(_BatchNorm):
    """Batch normalisation of [N, C, H, W] inputs (``data_format='NHWC'`` for channels last)."""

    _input_ndims = (4,)
    _default_format = "NCHW"
