# Source: PaddlePaddle/Paddle, python/paddle/hapi/model.py, the docstring example of
# paddle.Model.train_batch (Paddle 3.3.1).
# Changed for the corpus: the batch (paddle.rand / paddle.randint) drawn from NumPy, the network's
# starting weights set from NumPy (the generators differ), 3 calls of train_batch instead of 1, and a
# final RESULT line with the losses it printed.
import json

import numpy as np

import paddle
import paddle.nn as nn
from paddle.static import InputSpec

paddle.seed(2023)
device = paddle.set_device("cpu")  # or 'gpu'

net = nn.Sequential(nn.Linear(784, 200), nn.Tanh(), nn.Linear(200, 10))
rng = np.random.RandomState(0)
for param in net.parameters():
    param.set_value(rng.uniform(-0.05, 0.05, param.shape).astype("float32"))

input = InputSpec([None, 784], "float32", "x")
label = InputSpec([None, 1], "int64", "label")
model = paddle.Model(net, input, label)
optim = paddle.optimizer.SGD(learning_rate=1e-3, parameters=model.parameters())
model.prepare(optim, paddle.nn.CrossEntropyLoss())
data = paddle.to_tensor(rng.rand(4, 784).astype("float32"))
label = paddle.to_tensor(rng.randint(0, 10, (4, 1)).astype("int64"))
losses = []
for _ in range(3):
    loss = model.train_batch([data], [label])
    print(loss)
    losses.append(float(np.ravel(loss[0])[0]))
print("RESULT " + json.dumps({"losses": losses, "num_outputs": len(loss)}))
