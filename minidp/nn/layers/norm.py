"""Normalisation layers: LayerNorm, the batch norms (SyncBatchNorm too), GroupNorm, the instance norms,
LocalResponseNorm and SpectralNorm."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ...core.tensor import Tensor
from ...core.op_util import check_size, wrap
from .. import functional as F
from .. import initializer as init
from ..functional.norm import as_matrix, power_iteration, spectral_normalize, synced_batch_norm
from ...core.layer import Layer
from ...core.param_attr import ParamAttr
from ...core.distributed import collective
from ...core.distributed.parallel import get_world_size

__all__ = [
    "BatchNorm",
    "BatchNorm1D",
    "BatchNorm2D",
    "BatchNorm3D",
    "GroupNorm",
    "InstanceNorm1D",
    "InstanceNorm2D",
    "InstanceNorm3D",
    "LayerNorm",
    "LocalResponseNorm",
    "SpectralNorm",
    "SyncBatchNorm",
]


class LayerNorm(Layer):
    """Normalise each sample over its trailing ``normalized_shape`` axes, then scale and shift.

    Weight (ones) and bias (zeros) hold prod(normalized_shape) values, as in Paddle;
    ``elementwise_affine=False`` drops both, ``bias=False`` the bias.
    """

    def __init__(
        self,
        normalized_shape: Any,
        epsilon: float = 1e-05,
        *,
        elementwise_affine: bool = True,
        bias: bool = True,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        shape = [check_size("LayerNorm", "each normalized_shape entry", n) for n in shape]
        self._normalized_shape, self._epsilon = shape, epsilon
        size = [math.prod(shape)]
        if not elementwise_affine:
            weight_attr = bias_attr = False
        elif not bias:
            bias_attr = False
        self.weight = self.create_parameter(size, attr=weight_attr, default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter(size, attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self._normalized_shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class _BatchNorm(Layer):
    """Per-channel normalisation with running statistics ``_mean`` and ``_variance`` (Paddle's
    state-dict names), kept, as in Paddle, as non-trainable parameters: ``parameters()`` lists
    them (parameter counts match Paddle's) and no optimizer or reducer touches them."""

    _input_ndims: tuple = ()
    _default_format = ""

    def __init__(
        self,
        num_features: int,
        momentum: float = 0.9,
        epsilon: float = 1e-05,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: Optional[str] = None,
        use_global_stats: Optional[bool] = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        num_features = check_size(type(self).__name__, "num_features", num_features)
        self._num_features, self._momentum, self._epsilon = num_features, momentum, epsilon
        self._data_format = data_format or self._default_format
        self._use_global_stats = use_global_stats
        self.weight = self.create_parameter([num_features], attr=weight_attr, default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True)
        self._mean = self.create_parameter(
            [num_features], attr=ParamAttr(initializer=init.Constant(0.0), trainable=False)
        )
        self._variance = self.create_parameter(
            [num_features], attr=ParamAttr(initializer=init.Constant(1.0), trainable=False)
        )

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self._input_ndims:
            raise ValueError(
                f"{type(self).__name__}: expects an input with {' or '.join(map(str, self._input_ndims))} "
                f"dimensions, got shape {x.shape}"
            )
        return F.batch_norm(
            x,
            self._mean,
            self._variance,
            self.weight,
            self.bias,
            self.training,
            self._momentum,
            self._epsilon,
            self._data_format,
            self._use_global_stats,
        )

    def extra_repr(self) -> str:
        return f"num_features={self._num_features}, momentum={self._momentum}, epsilon={self._epsilon}"


def _sum_over_ranks() -> Callable[[Any], Any]:
    """The cross-rank sum for SyncBatchNorm: an all-reduce over the default group, or the
    identity when no group of two or more ranks is initialised."""
    if not collective.is_initialized() or get_world_size() < 2:
        return lambda array: array

    def all_reduce(array: Any) -> Any:
        summed = wrap(array.copy())
        collective.all_reduce(summed)
        return summed._data

    return all_reduce


class BatchNorm1D(_BatchNorm):
    """Batch normalisation of [N, C] or [N, C, L] inputs (``data_format='NLC'`` for channels last)."""

    _input_ndims = (2, 3)
    _default_format = "NCL"


class BatchNorm2D(_BatchNorm):
    """Batch normalisation of [N, C, H, W] inputs (``data_format='NHWC'`` for channels last)."""

    _input_ndims = (4,)
    _default_format = "NCHW"


class BatchNorm3D(_BatchNorm):
    """Batch normalisation of [N, C, D, H, W] inputs (``data_format='NDHWC'`` for channels last)."""

    _input_ndims = (5,)
    _default_format = "NCDHW"


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation of [N, C, ...] inputs whose training statistics cover the whole
    data-parallel batch: the per-channel sums are all-reduced over the default group (and so are
    the two sums the input gradient needs, in backward), as Paddle does. Without an initialised
    group of two or more ranks it is exactly BatchNorm. In evaluation it uses the running
    statistics, which every rank updates with the same global values.
    """

    _input_ndims = (2, 3, 4, 5)
    _default_format = "NCHW"

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self._use_global_stats:
            return super().forward(x)
        return synced_batch_norm(
            x,
            self._mean,
            self._variance,
            self.weight,
            self.bias,
            self._momentum,
            self._epsilon,
            self._data_format,
            _sum_over_ranks(),
        )

    @classmethod
    def convert_sync_batchnorm(cls, layer: Layer) -> Layer:
        """``layer`` with every BatchNorm*D inside it (or itself) replaced by a SyncBatchNorm that
        shares its parameters and running statistics."""
        if isinstance(layer, _BatchNorm) and not isinstance(layer, SyncBatchNorm):
            converted = cls(
                layer._num_features,
                layer._momentum,
                layer._epsilon,
                weight_attr=False if layer.weight is None else None,
                bias_attr=False if layer.bias is None else None,
                data_format=layer._data_format,
            )
            if layer.weight is not None:
                converted.weight, converted.bias = layer.weight, layer.bias
            converted._mean, converted._variance = layer._mean, layer._variance
            return converted
        for name, sublayer in list(layer.named_children()):
            layer.add_sublayer(name, cls.convert_sync_batchnorm(sublayer))
        return layer


class BatchNorm(_BatchNorm):
    """Paddle's older batch normalisation layer, for inputs with 2 to 5 axes.

    ``act`` names an activation of :mod:`minidp.nn.functional` applied to the output;
    ``is_test`` or ``use_global_stats`` make it use the running statistics.
    """

    _input_ndims = (2, 3, 4, 5)

    def __init__(
        self,
        num_channels: int,
        act: Optional[str] = None,
        is_test: bool = False,
        momentum: float = 0.9,
        epsilon: float = 1e-05,
        param_attr: Any = None,
        bias_attr: Any = None,
        dtype: Any = "float32",
        data_layout: str = "NCHW",
        in_place: bool = False,
        moving_mean_name: Optional[str] = None,
        moving_variance_name: Optional[str] = None,
        do_model_average_for_mean_and_var: bool = True,
        use_global_stats: bool = False,
        trainable_statistics: bool = False,
    ) -> None:
        if act is not None and not hasattr(F, act):
            raise ValueError(f"BatchNorm: unknown activation {act!r}; use a name from minidp.nn.functional")
        super().__init__(
            num_channels,
            momentum,
            epsilon,
            param_attr,
            bias_attr,
            data_layout,
            True if (use_global_stats or is_test) else None,
        )
        self._act = act

    def forward(self, x: Tensor) -> Tensor:
        out = super().forward(x)
        return out if self._act is None else getattr(F, self._act)(out)


class GroupNorm(Layer):
    """Group normalisation over ``num_groups`` groups of channels, with a per-channel affine map."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        epsilon: float = 1e-05,
        *,
        affine: bool = True,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        num_groups = check_size("GroupNorm", "num_groups", num_groups)
        num_channels = check_size("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self._num_groups, self._num_channels, self._epsilon = num_groups, num_channels, epsilon
        self._data_format = data_format
        if not affine:
            weight_attr = bias_attr = False
        self.weight = self.create_parameter([num_channels], attr=weight_attr, default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter([num_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.group_norm(x, self._num_groups, self._epsilon, self.weight, self.bias, self._data_format)

    def extra_repr(self) -> str:
        return f"num_groups={self._num_groups}, num_channels={self._num_channels}, epsilon={self._epsilon}"


class _InstanceNorm(Layer):
    """Instance normalisation; Paddle names the weight ``scale`` and keeps no running statistics."""

    _default_format = ""

    def __init__(
        self,
        num_features: int,
        epsilon: float = 1e-05,
        momentum: float = 0.9,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: Optional[str] = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        if (weight_attr is False) != (bias_attr is False):
            raise ValueError(f"{type(self).__name__}: weight_attr and bias_attr must both be False or neither")
        num_features = check_size(type(self).__name__, "num_features", num_features)
        self._num_features, self._epsilon = num_features, epsilon
        self._data_format = data_format or self._default_format
        self.scale = self.create_parameter([num_features], attr=weight_attr, default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon, data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


class InstanceNorm1D(_InstanceNorm):
    """Instance normalisation of [N, C, L] inputs."""

    _default_format = "NCL"


class InstanceNorm2D(_InstanceNorm):
    """Instance normalisation of [N, C, H, W] inputs."""

    _default_format = "NCHW"


class InstanceNorm3D(_InstanceNorm):
    """Instance normalisation of [N, C, D, H, W] inputs."""

    _default_format = "NCDHW"


class LocalResponseNorm(Layer):
    """Local response normalisation across neighbouring channels (no parameters)."""

    def __init__(
        self,
        size: int,
        alpha: float = 0.0001,
        beta: float = 0.75,
        k: float = 1.0,
        data_format: str = "NCHW",
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k, self.data_format = size, alpha, beta, k, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k, self.data_format)

    def extra_repr(self) -> str:
        return f"size={self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class SpectralNorm(Layer):
    """Returns the weight it is given divided by its spectral norm: ``forward(weight)``.

    The power-iteration vectors ``weight_u`` [weight_shape[dim]] and ``weight_v`` [the product of
    the other axes] are frozen parameters drawn from a normal distribution; as in Paddle they are
    not updated by the forward pass, which runs ``power_iters`` rounds from them each time.
    The output matches Paddle's; the gradient treats the refined u and v as constants (the
    usual convention, PyTorch's too), where Paddle's kernel gives slightly different values.
    """

    def __init__(
        self, weight_shape: Any, dim: int = 0, power_iters: int = 1, eps: float = 1e-12, dtype: Any = "float32"
    ) -> None:
        super().__init__(dtype=dtype)
        shape = [int(s) for s in weight_shape]
        if not 0 <= dim < len(shape) or power_iters < 1:
            raise ValueError(f"SpectralNorm: dim must index weight_shape {shape} and power_iters be >= 1")
        self._dim, self._power_iters, self._eps = dim, power_iters, eps
        rows = shape[dim]
        cols = math.prod(shape) // rows
        frozen = init.Normal(0.0, 1.0)
        self.weight_u = self.create_parameter([rows], attr=ParamAttr(trainable=False), default_initializer=frozen)
        self.weight_v = self.create_parameter([cols], attr=ParamAttr(trainable=False), default_initializer=frozen)

    def forward(self, weight: Tensor) -> Tensor:
        matrix = as_matrix(Tensor._wrap(weight._data), self._dim)._data
        u, v = power_iteration(matrix, self.weight_u._data, self.weight_v._data, self._power_iters, self._eps)
        return spectral_normalize(weight, self._dim, u, v)

    def extra_repr(self) -> str:
        return f"dim={self._dim}, power_iters={self._power_iters}, eps={self._eps}"
