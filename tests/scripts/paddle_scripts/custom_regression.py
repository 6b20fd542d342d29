"""Regression with hand-made pieces: a Layer built from create_parameter, a PyLayer custom op,
input gradients through paddle.grad, and the tensor utilities a training loop leans on.

The target is y = sin(2 x0) + 0.5 x1^2 - x2 plus noise. The model's hidden activation is a
PyLayer "soft clip" (forward x / (1 + |x|), backward written by hand), checked against autograd
with ``paddle.grad``; the worst-fitted samples are found with topk and upweighted with scatter
and where; after training, ``paddle.grad`` gives the input sensitivities (the target's are
known) and argsort/gather list the worst test errors.
Prints one ``RESULT`` JSON line.
"""

import json

import numpy as np

import paddle
import paddle.nn as nn
from paddle.autograd import PyLayer


class SoftClip(PyLayer):
    @staticmethod
    def forward(ctx, x):
        y = x / (1 + paddle.abs(x))
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensor()
        return grad_y / paddle.square(1 + paddle.abs(x))


class DenseLayer(nn.Layer):
    """y = x @ w + b with parameters made by create_parameter."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.w = self.create_parameter(
            shape=[in_features, out_features], default_initializer=nn.initializer.XavierUniform()
        )
        self.b = self.create_parameter(shape=[out_features], is_bias=True)

    def forward(self, x):
        return paddle.matmul(x, self.w) + self.b


class Regressor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.hidden = DenseLayer(3, 32)
        self.out = DenseLayer(32, 1)

    def forward(self, x):
        return self.out(SoftClip.apply(self.hidden(x))).squeeze(-1)


def make_data(num, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1.5, 1.5, size=(num, 3)).astype("float32")
    y = np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] ** 2 - x[:, 2] + rng.randn(num) * 0.05
    return paddle.to_tensor(x), paddle.to_tensor(y.astype("float32"))


def main():
    paddle.seed(3)
    x_train, y_train = make_data(256, seed=8)
    x_test, y_test = make_data(128, seed=9)
    model = Regressor()
    optimizer = paddle.optimizer.Adam(learning_rate=0.02, parameters=model.parameters())

    # the custom op's hand-written gradient agrees with autograd's
    probe = paddle.to_tensor([-2.0, -0.5, 0.0, 1.0, 3.0], stop_gradient=False)
    (custom_grad,) = paddle.grad(SoftClip.apply(probe).sum(), probe)
    (auto_grad,) = paddle.grad((probe / (1 + paddle.abs(probe))).sum(), probe)
    report = {
        "pylayer_grad_matches": bool(np.allclose(custom_grad.numpy(), auto_grad.numpy())),
        "parameter_shapes": [p.shape for p in model.parameters()],
        "bias_initially_zero": bool((model.hidden.b.numpy() == 0).all()),
        "losses": [],
    }

    weights = paddle.ones([x_train.shape[0]])
    for step in range(150):
        pred = model(x_train)
        residual = pred - y_train
        mse = (weights * residual**2).sum() / weights.sum()
        mse.backward()
        optimizer.step()
        optimizer.clear_grad()
        report["losses"].append(float(mse))
        if step % 50 == 49:
            # upweight the 16 worst-fitted samples for the next steps
            errors = paddle.abs(residual.detach())
            _, worst = paddle.topk(errors, k=16)
            weights = paddle.scatter(paddle.ones_like(weights), worst, paddle.full([16], 2.0))
            weights = paddle.where(errors > errors.mean() * 4, paddle.full_like(weights, 3.0), weights)
            print(f"step {step} mse {float(mse):.4f}")

    # d(pred)/d(x2) of the target is -1 everywhere
    x = x_test.clone()
    x.stop_gradient = False
    (dx,) = paddle.grad(model(x).sum(), x)
    report["mean_input_gradient"] = dx.mean(axis=0).numpy().tolist()
    report["paddle_grad_left_parameter_grads_alone"] = all(
        p.grad is None or float(p.grad.abs().sum()) == 0 for p in model.parameters()
    )

    with paddle.no_grad():
        pred = model(x_test)
        test_mse = float(((pred - y_test) ** 2).mean())
        order = paddle.argsort(paddle.abs(pred - y_test), descending=True)
        worst_errors = paddle.gather(paddle.abs(pred - y_test), order[:5])
    report["no_grad_stop_gradient"] = pred.stop_gradient
    report["worst_sorted"] = bool((worst_errors[:-1] >= worst_errors[1:]).all())
    report["worst_dtype_is_float32"] = worst_errors.dtype == paddle.float32
    report["order_dtype_is_int64"] = order.dtype == paddle.int64
    report["test_mse"] = test_mse
    report["target_variance"] = float(y_test.var())
    print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main()
