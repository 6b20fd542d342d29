"""What each rank does in the random-number tests (tests/test_random.py), passed to ``spawn``."""

from typing import Any, Dict, Optional

import numpy


def draw_and_build(seed: Optional[int] = None) -> Dict[str, Any]:
    """Join the job, optionally seed, then report this rank's first shuffled batch, a dropout
    mask, its freshly initialised weights and the weights DataParallel leaves it with."""
    import minidp
    import minidp.distributed as dist

    dist.init_parallel_env()
    if seed is not None:
        minidp.seed(seed)
    dataset = minidp.io.TensorDataset([minidp.arange(64, dtype="float32").reshape([64, 1])])
    batch = next(iter(minidp.io.DataLoader(dataset, batch_size=8, shuffle=True)))[0]
    mask = minidp.nn.functional.dropout(minidp.ones([32]), p=0.5)
    model = minidp.nn.Linear(4, 3)
    initial = model.weight.numpy().copy()
    minidp.DataParallel(model)
    return {
        "batch": batch.numpy().ravel().tolist(),
        "mask": mask.numpy().tolist(),
        "initial": initial,
        "synced": numpy.array(model.weight.numpy()),
    }
