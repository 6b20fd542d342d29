# Source: PaddlePaddle/Paddle, python/paddle/regularizer.py,
# the docstring example of paddle.regularizer.L2Decay (Example1) (Paddle 3.3.1).
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
from paddle.regularizer import L2Decay

linear = paddle.nn.Linear(10, 10)
corpus_weights(linear, 0)
inp = paddle.to_tensor(corpus_uniform([10, 10], 0.0, 1.0, 1))
out = linear(inp)
loss = paddle.mean(out)
beta1 = paddle.to_tensor([0.9], dtype="float32")
beta2 = paddle.to_tensor([0.99], dtype="float32")
momentum = paddle.optimizer.Momentum(learning_rate=0.1, parameters=linear.parameters(), weight_decay=L2Decay(0.0001))
back = out.backward()
momentum.step()
momentum.clear_grad()

print(
    "RESULT " + json.dumps({"loss": float(loss), "params": [p.numpy().ravel().tolist() for p in linear.parameters()]})
)
