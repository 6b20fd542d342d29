# Source: PaddlePaddle/Paddle, python/paddle/optimizer/lamb.py,
# the docstring example of paddle.optimizer.Lamb (Paddle 3.3.1).
# Changed for the corpus: random inputs (paddle.rand/uniform) drawn from NumPy with a fixed seed, every
# Linear's starting weights set from NumPy (corpus_weights: Paddle's and minidp's generators differ),
# and a final RESULT line reporting the loss and the updated parameters.
# Fixed because it fails on Paddle 3.3.1 itself (SystemError from _C_ops.lamb_ when beta1/beta2 are
# Tensors): beta1/beta2 passed as the floats the Tensors held.
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
out = linear(inp)
loss = paddle.mean(out)
beta1 = 0.9
beta2 = 0.85
lamb = paddle.optimizer.Lamb(
    learning_rate=0.002, parameters=linear.parameters(), lamb_weight_decay=0.01, beta1=beta1, beta2=beta2
)
back = out.backward()
lamb.step()
lamb.clear_grad()

print(
    "RESULT " + json.dumps({"loss": float(loss), "params": [p.numpy().ravel().tolist() for p in linear.parameters()]})
)
