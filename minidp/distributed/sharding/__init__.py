"""``paddle.distributed.sharding``: sharded data parallelism (ZeRO stages 1 to 3).

See :mod:`.group_sharded` for the levels, :mod:`.layout` for who holds what, :mod:`.model` and
:mod:`.optimizer` for the two wrappers, and ``docs/sharding.md`` for a picture.
"""

from .group_sharded import group_sharded_parallel, save_group_sharded_model

__all__ = ["group_sharded_parallel", "save_group_sharded_model"]
