"""``ParallelMode``: the names Paddle gives its kinds of parallelism (``paddle.distributed``
re-exports it from ``fleet.base.topology``). minidp implements data parallelism; the other
values exist so scripts that compare against them run unchanged."""


class ParallelMode:
    """Integer codes of the parallel modes, with Paddle's values."""

    DATA_PARALLEL = 0
    TENSOR_PARALLEL = 1
    PIPELINE_PARALLEL = 2
    SHARDING_PARALLEL = 3
    SEGMENT_PARALLEL = 4
