"""The ``DataParallel`` example from Paddle's documentation: one script, any launcher.

``train`` is the documentation's training function. The same file runs however the ranks are
started:

    python examples/paddle_doc_launch.py                      # spawns 2 ranks itself
    python -m minidp.distributed.launch --nproc_per_node 2 examples/paddle_doc_launch.py
    minidp-launch --nproc_per_node 2 examples/paddle_doc_launch.py
    mpirun -n 2 python examples/paddle_doc_launch.py          # with the mpi extra installed

Under a launcher the environment already says this process is one rank of several, so the
script calls ``train()`` directly (Paddle's "2. start by launch"); run plainly, it calls
``dist.spawn(train, nprocs=2)`` (Paddle's "1. start by spawn"). Each rank prints its loss.
"""

import argparse

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.optimizer as opt


class LinearNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self._linear1 = nn.Linear(10, 10)
        self._linear2 = nn.Linear(10, 1)

    def forward(self, x):
        return self._linear2(self._linear1(x))


def train():
    # 1. join the job described by the environment (spawn, launcher or mpirun)
    dist.init_parallel_env()

    # 2. the data-parallel layer and its optimizer
    layer = LinearNet()
    dp_layer = minidp.DataParallel(layer)
    loss_fn = nn.MSELoss()
    adam = opt.Adam(learning_rate=0.001, parameters=dp_layer.parameters())

    # 3. one step: backward() leaves every rank with the same averaged gradients
    inputs = minidp.randn([10, 10], "float32")
    outputs = dp_layer(inputs)
    labels = minidp.randn([10, 1], "float32")
    loss = loss_fn(outputs, labels)
    loss.backward()
    adam.step()
    adam.clear_grad()
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}: loss {float(loss.numpy()):.4f}")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    if dist.ParallelEnv().world_size > 1:
        train()
    else:
        dist.spawn(train, nprocs=2)
