"""An unedited Paddle script for ``tests/test_run.py``: linear regression from fixed weights.

Run as ``python unedited_paddle.py`` under Paddle, ``python -m minidp.run unedited_paddle.py``
under minidp, or under either launcher with several ranks (each rank takes its share of every
batch of 8 through DistributedBatchSampler; DataParallel averages the gradients, so the losses, averaged
over the ranks, are those of one process). Prints ``RESULT {json}`` on rank 0.

``--fail`` raises after the first step (traceback and exit code), ``--exit N`` ends with
``sys.exit(N)``, ``--spawn`` runs the training on 2 ranks started by ``paddle.distributed.spawn``.
"""

import argparse
import json
import sys

import numpy as np

import paddle
import paddle.distributed as dist
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.io import DataLoader, DistributedBatchSampler, TensorDataset

STEPS = 4


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype("float32")
    y = (x @ np.array([[1.5], [-2.0], [0.5]], "float32") + 0.25).astype("float32")
    return x, y


def train(fail=False):
    world = dist.get_world_size()
    if world > 1:
        dist.init_parallel_env()
    model = nn.Linear(3, 1)
    model.weight.set_value(np.full((3, 1), 0.1, "float32"))
    model.bias.set_value(np.zeros((1,), "float32"))
    if world > 1:
        model = paddle.DataParallel(model)
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    x, y = data()
    dataset = TensorDataset([paddle.to_tensor(x), paddle.to_tensor(y)])
    sampler = DistributedBatchSampler(dataset, batch_size=8 // world, shuffle=False)
    losses = []
    for step in range(STEPS):
        for features, target in DataLoader(dataset, batch_sampler=sampler):
            loss = F.mse_loss(model(features), target)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            if world > 1:
                dist.all_reduce(loss)
                loss = loss / world
            losses.append(float(loss))
        if fail:
            raise ValueError("failing on purpose after step %d" % step)
    weight = model.weight if world == 1 else model._layers.weight
    return {"losses": losses, "weight": weight.numpy().ravel().tolist(), "world_size": world}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--exit", type=int, default=None)
    parser.add_argument("--spawn", action="store_true")
    args = parser.parse_args()
    if args.spawn:
        context = dist.spawn(train, nprocs=2)
        report = context.return_queues[0].get()
    else:
        report = train(args.fail)
    report["name"] = __name__
    report["argv"] = sys.argv[1:]
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(report))
    if args.exit is not None:
        sys.exit(args.exit)


if __name__ == "__main__":
    main()
