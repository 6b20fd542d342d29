# Source: PaddlePaddle/Paddle, python/paddle/distributed/parallel.py, the docstring example of
# paddle.DataParallel (dp-example, started by paddle.distributed.spawn on 2 processes; Paddle 3.3.1).
# Changed for the corpus: inputs and labels (paddle.randn) drawn from NumPy with a fixed seed per rank,
# the layer's starting weights set from NumPy (the generators differ), 3 steps instead of 1, and
# rank 0 prints a RESULT line with the losses averaged over the ranks and its updated parameters.
import json

import numpy as np

import paddle
import paddle.nn as nn
import paddle.optimizer as opt
import paddle.distributed as dist


class LinearNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self._linear1 = nn.Linear(10, 10)
        self._linear2 = nn.Linear(10, 1)

    def forward(self, x):
        return self._linear2(self._linear1(x))


def train():
    # 1. initialize parallel environment
    dist.init_parallel_env()

    # 2. create data parallel layer & optimizer
    layer = LinearNet()
    rng = np.random.RandomState(0)
    for param in layer.parameters():
        param.set_value(rng.uniform(-0.5, 0.5, param.shape).astype("float32"))
    dp_layer = paddle.DataParallel(layer)

    loss_fn = nn.MSELoss()
    adam = opt.Adam(learning_rate=0.001, parameters=dp_layer.parameters())

    # 3. run layer
    data = np.random.RandomState(1 + dist.get_rank())
    losses = []
    for step in range(3):
        inputs = paddle.to_tensor(data.randn(10, 10).astype("float32"))
        outputs = dp_layer(inputs)
        labels = paddle.to_tensor(data.randn(10, 1).astype("float32"))
        loss = loss_fn(outputs, labels)

        loss.backward()

        adam.step()
        adam.clear_grad()
        dist.all_reduce(loss)
        losses.append(float(loss) / dist.get_world_size())
    if dist.get_rank() == 0:
        params = [p.numpy().ravel().tolist() for p in layer.parameters()]
        print("RESULT " + json.dumps({"losses": losses, "params": params}), flush=True)


if __name__ == "__main__":
    # 1. start by ``paddle.distributed.spawn`` (default)
    dist.spawn(train, nprocs=2)
    # 2. start by ``paddle.distributed.launch``
    # train()
