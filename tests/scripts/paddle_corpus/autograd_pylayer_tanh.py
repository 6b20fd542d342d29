# Source: PaddlePaddle/Paddle, python/paddle/autograd/py_layer.py, the docstring example of
# paddle.autograd.PyLayer (Paddle 3.3.1).
# Changed for the corpus: the input (paddle.randn after paddle.seed(2023)) drawn from NumPy, and a
# final RESULT line with the gradient the example prints.
import json

import numpy as np

import paddle
from paddle.autograd import PyLayer


class cus_tanh(PyLayer):
    def forward(ctx, x):
        y = paddle.tanh(x)
        # Pass tensors to backward.
        ctx.save_for_backward(y)
        return y

    def backward(ctx, dy):
        # Get the tensors passed by forward.
        (y,) = ctx.saved_tensor()
        grad = dy * (1 - paddle.square(y))
        return grad


paddle.seed(2023)
data = paddle.to_tensor(np.random.RandomState(2023).randn(2, 3))
data.stop_gradient = False
z = cus_tanh.apply(data)
z.mean().backward()

print(data.grad)
print("RESULT " + json.dumps({"grad": data.grad.numpy().tolist(), "dtype": str(data.grad.dtype)}))
