"""Data-parallel training, started by the launcher on several ranks (gloo on the CPU):

    python -m paddle.distributed.launch --nproc_per_node 2 data_parallel.py

Each rank reads its shard of the data through DistributedBatchSampler, DataParallel averages the
gradients, the ranks all-reduce their correct counts and losses so every rank sees the global
accuracy, and rank 0 alone logs and saves the model. Rank 0 prints one ``RESULT`` JSON line.
"""

import json
import os
import tempfile

import numpy as np

import paddle
import paddle.distributed as dist
import paddle.nn as nn
from paddle.io import DataLoader, DistributedBatchSampler, TensorDataset


def make_data(num, seed):
    """Two interleaved half-moons, lifted to 8 features by a fixed random projection."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, size=num)
    angle = rng.rand(num) * np.pi
    x = np.where(labels == 0, np.cos(angle), 1 - np.cos(angle))
    y = np.where(labels == 0, np.sin(angle), 0.5 - np.sin(angle))
    points = np.stack([x, y], axis=1) + rng.randn(num, 2) * 0.1
    lift = np.random.RandomState(42).randn(2, 8)
    return (points @ lift).astype("float32"), labels.astype("int64")


def main():
    dist.init_parallel_env()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    paddle.seed(100 + rank)

    features, labels = make_data(1024, seed=5)
    dataset = TensorDataset([paddle.to_tensor(features), paddle.to_tensor(labels)])
    sampler = DistributedBatchSampler(dataset, batch_size=32, shuffle=True, drop_last=True)
    loader = DataLoader(dataset, batch_sampler=sampler)

    model = paddle.DataParallel(
        nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
    )
    optimizer = paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9, parameters=model.parameters())
    loss_fn = nn.CrossEntropyLoss()

    report = {"world_size": world_size, "batches_per_rank": len(loader), "losses": [], "accuracies": []}
    for epoch in range(5):
        sampler.set_epoch(epoch)
        totals = paddle.zeros([3], dtype="float32")  # summed loss, correct, seen
        for x, y in loader:
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            correct = (logits.argmax(axis=-1) == y).astype("float32").sum()
            totals += paddle.stack([loss.detach() * y.shape[0], correct, paddle.to_tensor(float(y.shape[0]))])
        dist.all_reduce(totals)
        mean_loss, accuracy = float(totals[0] / totals[2]), float(totals[1] / totals[2])
        report["losses"].append(mean_loss)
        report["accuracies"].append(accuracy)
        report["samples_seen"] = int(totals[2])
        if rank == 0:
            print(f"epoch {epoch} loss {mean_loss:.4f} accuracy {accuracy:.4f}")

    gathered = []
    dist.all_gather(gathered, paddle.to_tensor([float(p.sum()) for p in model.parameters()]))
    report["replicas_identical"] = all(np.allclose(g.numpy(), gathered[0].numpy()) for g in gathered)
    dist.barrier()
    if rank == 0:
        path = os.path.join(tempfile.mkdtemp(), "dp_model.pdparams")
        paddle.save(model.state_dict(), path)
        report["saved_keys"] = sorted(paddle.load(path).keys())
        print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main()
