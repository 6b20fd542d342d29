"""A short data-parallel training job for the timeline tests: an MLP whose gradients fill
several buckets, a DataLoader and an SGD step, for a few steps.

Run by a launcher (each process is one rank), or with ``--spawn`` as a plain script that starts
two ranks with ``minidp.distributed.spawn``.
"""

import sys

import numpy as np

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.nn.functional as F
from minidp.io import DataLoader, DistributedBatchSampler, TensorDataset

WIDTH = 384
HIDDEN = 4
STEPS = 5


def train() -> None:
    dist.init_parallel_env()
    minidp.seed(0)
    layers = [nn.Linear(64, WIDTH), nn.ReLU()]
    for _ in range(HIDDEN):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    layers.append(nn.Linear(WIDTH, 10))
    # Each WIDTH x WIDTH weight (576 KiB) closes a bucket of its own.
    model = dist.DataParallel(nn.Sequential(*layers), comm_buffer_size=0.5, last_comm_buffer_size=0.5)
    optimizer = minidp.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    rng = np.random.default_rng(0)
    images = minidp.to_tensor(rng.standard_normal((STEPS * 2 * 128, 64)).astype("float32"))
    labels = minidp.to_tensor(rng.integers(0, 10, STEPS * 2 * 128))
    dataset = TensorDataset([images, labels])
    loader = DataLoader(dataset, batch_sampler=DistributedBatchSampler(dataset, batch_size=128))
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()


if __name__ == "__main__":
    if "--spawn" in sys.argv:
        dist.spawn(train, nprocs=2)
    else:
        train()
