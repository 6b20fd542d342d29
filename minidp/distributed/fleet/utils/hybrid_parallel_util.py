"""Where Paddle scripts import ``fused_allreduce_gradients`` from; the code lives in data_parallel."""

from ....core.distributed.data_parallel import fused_allreduce_gradients

__all__ = ["fused_allreduce_gradients"]
