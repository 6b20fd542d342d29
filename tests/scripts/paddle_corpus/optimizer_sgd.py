# Source: PaddlePaddle/Paddle, python/paddle/optimizer/sgd.py,
# the docstring example of paddle.optimizer.SGD (Paddle 3.3.1).
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

inp = paddle.to_tensor(corpus_uniform([10, 10], -0.1, 0.1, 1))
linear = paddle.nn.Linear(10, 10)
corpus_weights(linear, 0)
inp = paddle.to_tensor(inp)
out = linear(inp)
loss = paddle.mean(out)
sgd = paddle.optimizer.SGD(learning_rate=0.1, parameters=linear.parameters(), weight_decay=0.01)
out.backward()
sgd.step()
sgd.clear_grad()

print(
    "RESULT " + json.dumps({"loss": float(loss), "params": [p.numpy().ravel().tolist() for p in linear.parameters()]})
)
