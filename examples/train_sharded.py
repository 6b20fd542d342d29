"""Train an MLP with sharded data parallelism (``group_sharded_parallel``, level ``os_g``).

    python -m minidp.distributed.launch --nproc_per_node 2 examples/train_sharded.py
    python -m minidp.distributed.launch --nproc_per_node 2 examples/train_sharded.py --level p_g_os --save ckpt

Each rank keeps the Adam state of only its block of the parameters and, at ``os_g``, receives
only its block of the averaged gradients (``p_g_os``: of the parameters too, gathered around each
layer's forward). The data are synthetic: a fixed random teacher network labels Gaussian inputs,
and each rank reads its own shard of every epoch. Rank 0 prints the mean loss per epoch and the
bytes of optimizer state each rank holds; ``--save DIR`` writes an unsharded checkpoint
(``DIR/model.pdmodel``, ``DIR/model.pdopt``) that a plain model and optimizer load.
"""

from __future__ import annotations

import argparse

import numpy as np

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.nn.functional as F
from minidp.distributed.sharding import group_sharded_parallel, save_group_sharded_model
from minidp.io import DataLoader, DistributedBatchSampler, TensorDataset


def dataset(samples: int = 2048, features: int = 32, classes: int = 4) -> TensorDataset:
    """Gaussian inputs labelled by a fixed random linear teacher (the same on every rank)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, features)).astype("float32")
    labels = (x @ rng.standard_normal((features, classes))).argmax(axis=1).astype("int64")
    return TensorDataset([minidp.to_tensor(x), minidp.to_tensor(labels)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--level", choices=["os", "os_g", "p_g_os"], default="os_g")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--save", default=None, help="directory for an unsharded checkpoint")
    args = parser.parse_args()

    dist.init_parallel_env()
    rank = dist.get_rank()
    minidp.seed(0)
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    optimizer = minidp.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    # segment_size: layers with fewer elements stay whole on every rank (p_g_os only)
    model, optimizer, _ = group_sharded_parallel(model, optimizer, args.level, segment_size=1024)

    data = dataset()
    sampler = DistributedBatchSampler(data, batch_size=args.batch_size, shuffle=True, drop_last=True)
    loader = DataLoader(data, batch_sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        losses = []
        for x, labels in loader:
            loss = F.cross_entropy(model(x), labels)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            losses.append(float(loss))
        if rank == 0:
            print(f"epoch {epoch + 1}: mean loss {np.mean(losses):.4f}", flush=True)

    state = optimizer.state_dict()  # the whole state, gathered from every rank's blocks
    held = sum(
        slot.state[key].nbytes
        for slots in optimizer._slots
        for _, slot in slots
        for key in slot.state
        if key in ("moment1", "moment2")
    )
    whole = sum(value.numpy().nbytes for key, value in state.items() if key.endswith(("moment1_0", "moment2_0")))
    print(f"rank {rank}: holds {held} of {whole} bytes of Adam moments ({args.level})", flush=True)
    if args.save:
        save_group_sharded_model(model, args.save, optimizer=optimizer)
        if rank == 0:
            print(f"saved {args.save}/model.pdmodel and {args.save}/model.pdopt", flush=True)


if __name__ == "__main__":
    main()
