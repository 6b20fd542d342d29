"""Fleet's collective entry points for data-parallel training, as Paddle's docs write them:

    fleet.init(is_collective=True)
    model = fleet.distributed_model(model)
    optimizer = fleet.distributed_optimizer(optimizer)

``init`` joins the job the launcher described (``init_parallel_env``); ``distributed_model``
wraps the model in :class:`~minidp.distributed.DataParallel` with the strategy's bucket sizes
and ``find_unused_parameters``; ``distributed_optimizer`` returns the optimizer itself, since
DataParallel already averages the gradients. With ``strategy.sharding = True`` (stage from
``sharding_configs['stage']``: 1, 2 or 3) or ``hybrid_configs['sharding_degree']`` equal to the
world size (stage 1, Paddle's dygraph sharding optimizer), the two calls build the pair that
``minidp.distributed.sharding.group_sharded_parallel`` builds, levels ``os``, ``os_g`` and
``p_g_os``: call ``distributed_model`` first. minidp is data parallel only: a strategy asking
for tensor, pipeline or sequence parallelism, AMP or recomputation is refused, as is
parameter-server mode (``is_collective=False``). :class:`ParallelMode` names the kinds of
parallelism, as Paddle's ``fleet.base.topology`` does.
"""

from __future__ import annotations

from typing import Any, Optional

from ...core.layer import Layer
from ...core.distributed import collective
from ...core.distributed.data_parallel import DataParallel
from ...core.distributed.parallel import get_rank, get_world_size, init_parallel_env
from ..sharding.group_sharded import shard_optimizer
from ..sharding.model import GroupShardedModel

__all__ = [
    "DistributedStrategy",
    "ParallelMode",
    "barrier_worker",
    "distributed_model",
    "distributed_optimizer",
    "init",
    "is_first_worker",
    "worker_index",
    "worker_num",
]

_DEGREES = ("dp_degree", "mp_degree", "pp_degree", "sharding_degree", "sep_degree")
_UNSUPPORTED = ("amp", "recompute", "pipeline", "tensor_parallel", "gradient_merge", "lamb", "lars")
# Paddle's sharding_configs with its defaults; minidp reads stage and sharding_degree
_SHARDING_DEFAULTS = {
    "sharding_segment_strategy": "segment_broadcast_MB",
    "segment_broadcast_MB": 32.0,
    "segment_anchors": [],
    "sharding_degree": 8,
    "mp_degree": 1,
    "dp_degree": 1,
    "hybrid_dp": False,
    "gradient_merge_acc_step": 1,
    "optimize_offload": False,
    "pp_allreduce_in_optimize": False,
    "pp_degree": 1,
    "optimize_cast": False,
    "_dp_as_optimizer_sharding": False,
    "stage": 1,
    "enable_tuning": False,
    "use_calc_stream": False,
}
_LEVEL_OF_STAGE = {1: "os", 2: "os_g", 3: "p_g_os"}


class ParallelMode:
    """Integer codes of Paddle's kinds of parallelism (``paddle.distributed.ParallelMode``). minidp
    implements data parallelism; the other values exist so scripts that compare against them run
    unchanged."""

    DATA_PARALLEL = 0
    TENSOR_PARALLEL = 1
    PIPELINE_PARALLEL = 2
    SHARDING_PARALLEL = 3
    SEGMENT_PARALLEL = 4


class DistributedStrategy:
    """The settings ``distributed_model`` reads: ``fuse_grad_size_in_MB`` (bucket size, 32 as in
    Paddle), ``last_comm_group_size_MB`` (1), ``find_unused_parameters`` (False) and
    ``hybrid_configs`` (only ``dp_degree`` and ``sharding_degree`` may exceed 1), ``sharding``
    (False) and ``sharding_configs`` (Paddle's keys; ``stage`` picks the level). The switches
    of features minidp does not have (``amp``, ``recompute``, ...) may be set to False only."""

    def __init__(self) -> None:
        self.fuse_grad_size_in_MB = 32
        self.last_comm_group_size_MB = 1
        self.find_unused_parameters = False
        self.sharding = False
        self._hybrid_configs = {name: 1 for name in _DEGREES}
        self._sharding_configs = dict(_SHARDING_DEFAULTS)

    @property
    def sharding_configs(self) -> dict:
        return dict(self._sharding_configs)

    @sharding_configs.setter
    def sharding_configs(self, configs: dict) -> None:
        if not isinstance(configs, dict):
            raise TypeError(f"DistributedStrategy.sharding_configs must be a dict, got {configs!r}")
        unknown = [key for key in configs if key not in _SHARDING_DEFAULTS]
        if unknown:
            raise ValueError(
                f"DistributedStrategy.sharding_configs: unknown keys {unknown}; Paddle's are {list(_SHARDING_DEFAULTS)}"
            )
        if "stage" in configs and configs["stage"] not in _LEVEL_OF_STAGE:
            raise ValueError(f"DistributedStrategy.sharding_configs: stage must be 1, 2 or 3, got {configs['stage']!r}")
        self._sharding_configs.update(configs)

    def sharding_level(self, world_size: int) -> Optional[str]:
        """The ``group_sharded_parallel`` level this strategy asks for on ``world_size`` ranks,
        or None for plain data parallelism; ``ValueError`` for a sharding minidp cannot do."""
        hybrid = self._hybrid_configs["sharding_degree"]
        if not self.sharding and hybrid in (1, -1):
            return None
        configured = self._sharding_configs
        degree = hybrid if hybrid not in (1, -1) else configured["sharding_degree"]
        explicit = hybrid not in (1, -1) or configured["sharding_degree"] != _SHARDING_DEFAULTS["sharding_degree"]
        if explicit and degree != world_size or configured["dp_degree"] != 1:
            raise ValueError(
                f"DistributedStrategy: sharding_degree {degree} with dp_degree "
                f"{configured['dp_degree']} on {world_size} ranks; minidp shards over every rank, "
                f"so set sharding_degree={world_size} (or leave it unset) and dp_degree=1"
            )
        return _LEVEL_OF_STAGE[configured["stage"]]

    @property
    def hybrid_configs(self) -> dict:
        return dict(self._hybrid_configs)

    @hybrid_configs.setter
    def hybrid_configs(self, configs: dict) -> None:
        if not isinstance(configs, dict):
            raise TypeError(f"DistributedStrategy.hybrid_configs must be a dict, got {configs!r}")
        unknown = [key for key in configs if key not in _DEGREES]
        if unknown:
            raise ValueError(
                f"DistributedStrategy.hybrid_configs: unknown keys {unknown}; minidp knows {list(_DEGREES)}"
            )
        beyond = {
            key: value
            for key, value in configs.items()
            if key not in ("dp_degree", "sharding_degree") and value not in (1, -1)
        }
        if beyond:
            raise ValueError(
                f"DistributedStrategy.hybrid_configs: {beyond} asks for model parallelism; minidp is "
                "data parallel only, so every degree but dp_degree must be 1"
            )
        self._hybrid_configs.update(configs)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _UNSUPPORTED and value:
            raise ValueError(
                f"DistributedStrategy.{name}: minidp does not implement it (data parallel only, "
                "float32 or explicit 16-bit parameters); leave it False"
            )
        super().__setattr__(name, value)


_strategy: Optional[DistributedStrategy] = None
# The model distributed_model last wrapped for sharding, which distributed_optimizer pairs with.
_sharded_model: Optional[GroupShardedModel] = None


def init(
    role_maker: Any = None,
    is_collective: bool = False,
    strategy: Optional[DistributedStrategy] = None,
    log_level: Any = "INFO",
) -> None:
    """Join the collective job the environment describes (a single process needs nothing)."""
    global _strategy
    if not is_collective:
        raise ValueError(
            "fleet.init: parameter-server mode is not supported; pass is_collective=True for data-parallel training"
        )
    if strategy is not None and not isinstance(strategy, DistributedStrategy):
        raise TypeError(f"fleet.init: strategy must be a fleet.DistributedStrategy, got {type(strategy).__name__}")
    _strategy = strategy or DistributedStrategy()
    if get_world_size() > 1 and not collective.is_initialized():
        init_parallel_env()


def _initialised_strategy(caller: str) -> DistributedStrategy:
    if _strategy is None:
        raise RuntimeError(f"fleet.{caller}: call fleet.init(is_collective=True) first")
    return _strategy


def distributed_model(model: Layer) -> Layer:
    """``model`` in a DataParallel built from the strategy, or in the sharded model its
    sharding settings ask for; the model itself in a job of one process, where there is nothing
    to synchronise."""
    global _sharded_model
    strategy = _initialised_strategy("distributed_model")
    if get_world_size() < 2:
        return model
    level = strategy.sharding_level(get_world_size())
    if level is not None:
        _sharded_model = GroupShardedModel(model, level, buffer_max_size=strategy.fuse_grad_size_in_MB * 2**20 // 4)
        return _sharded_model
    return DataParallel(
        model,
        comm_buffer_size=strategy.fuse_grad_size_in_MB,
        last_comm_buffer_size=strategy.last_comm_group_size_MB,
        find_unused_parameters=strategy.find_unused_parameters,
    )


def distributed_optimizer(optimizer: Any, strategy: Optional[DistributedStrategy] = None) -> Any:
    """The optimizer itself: the gradients it reads are already averaged by DataParallel. Under
    sharding, the sharded optimizer paired with the model ``distributed_model`` wrapped."""
    current = _initialised_strategy("distributed_optimizer")
    if strategy is not None and not isinstance(strategy, DistributedStrategy):
        raise TypeError(
            f"fleet.distributed_optimizer: strategy must be a fleet.DistributedStrategy, got {type(strategy).__name__}"
        )
    if get_world_size() < 2 or current.sharding_level(get_world_size()) is None:
        return optimizer
    if _sharded_model is None:
        raise RuntimeError(
            "fleet.distributed_optimizer: with sharding, call fleet.distributed_model(model) "
            "first; the optimizer is then sharded like that model"
        )
    return shard_optimizer(_sharded_model, optimizer)


def worker_index() -> int:
    """This process's rank."""
    return get_rank()


def worker_num() -> int:
    """The number of ranks."""
    return get_world_size()


def is_first_worker() -> bool:
    """Whether this process is rank 0 (the one that logs and saves)."""
    return get_rank() == 0


def barrier_worker() -> None:
    """Wait for every rank (nothing to wait for in a job of one process)."""
    if collective.is_initialized():
        collective.barrier()
