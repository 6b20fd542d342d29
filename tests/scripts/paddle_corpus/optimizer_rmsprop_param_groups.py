# Source: PaddlePaddle/Paddle, python/paddle/optimizer/rmsprop.py,
# the docstring example of paddle.optimizer.RMSProp (its parameter-groups part) (Paddle 3.3.1).
# Changed for the corpus: random inputs (paddle.rand/uniform) drawn from NumPy with a fixed seed, every
# Linear's starting weights set from NumPy (corpus_weights: Paddle's and minidp's generators differ),
# and a final RESULT line reporting the loss and the updated parameters.
import json

import numpy as np


def corpus_weights(layer, seed):
    """The same starting weights under Paddle and minidp."""
    rng = np.random.RandomState(seed)
    for param in layer.parameters():
        param.set_value(rng.uniform(-0.5, 0.5, param.shape).astype("float32"))


def corpus_uniform(shape, low, high, seed):
    """A fixed draw in place of paddle.uniform / paddle.rand."""
    return np.random.RandomState(seed).uniform(low, high, shape).astype("float32")


import paddle

# Note that the learning_rate of linear_2 is 0.01.
linear_1 = paddle.nn.Linear(10, 10)
linear_2 = paddle.nn.Linear(10, 10)
corpus_weights(linear_1, 0)
corpus_weights(linear_2, 1)
inp = paddle.to_tensor(corpus_uniform([10, 10], -0.1, 0.1, 2))
out = linear_1(inp)
out = linear_2(out)
loss = paddle.mean(out)
opt = paddle.optimizer.RMSProp(
    learning_rate=0.1,
    parameters=[
        {"params": linear_1.parameters()},
        {"params": linear_2.parameters(), "weight_decay": 0.001, "learning_rate": 0.1},
    ],
    weight_decay=0.01,
)
out.backward()
opt.step()
opt.clear_grad()

print(
    "RESULT "
    + json.dumps(
        {
            "loss": float(loss),
            "params": [p.numpy().ravel().tolist() for p in linear_1.parameters() + linear_2.parameters()],
        }
    )
)
