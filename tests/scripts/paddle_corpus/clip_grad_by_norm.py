# Source: PaddlePaddle/Paddle, python/paddle/nn/clip.py,
# the docstring example of paddle.nn.ClipGradByNorm (Paddle 3.3.1).
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

x = paddle.to_tensor(corpus_uniform([10, 10], -1.0, 1.0, 1))
linear = paddle.nn.Linear(
    in_features=10,
    out_features=10,
    weight_attr=paddle.ParamAttr(need_clip=True),
    bias_attr=paddle.ParamAttr(need_clip=False),
)
corpus_weights(linear, 0)
out = linear(x)
loss = paddle.mean(out)
loss.backward()
clip = paddle.nn.ClipGradByNorm(clip_norm=1.0)
sdg = paddle.optimizer.SGD(learning_rate=0.1, parameters=linear.parameters(), grad_clip=clip)
sdg.step()

print(
    "RESULT " + json.dumps({"loss": float(loss), "params": [p.numpy().ravel().tolist() for p in linear.parameters()]})
)
