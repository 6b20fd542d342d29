# Source: PaddlePaddle/Paddle, python/paddle/optimizer/lbfgs.py, the docstring example of
# paddle.optimizer.LBFGS (Paddle 3.3.1).
# Changed for the corpus: a final RESULT line with the losses the closure prints and the learned weight.
import json

import paddle
import numpy as np

np.random.seed(0)
np_w = np.random.rand(1).astype(np.float32)
np_x = np.random.rand(1).astype(np.float32)

inputs = [np.random.rand(1).astype(np.float32) for i in range(10)]
# y = 2x
targets = [2 * x for x in inputs]

losses = []


class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        w = paddle.to_tensor(np_w)
        self.w = paddle.create_parameter(
            shape=w.shape, dtype=w.dtype, default_initializer=paddle.nn.initializer.Assign(w)
        )

    def forward(self, x):
        return self.w * x


net = Net()
opt = paddle.optimizer.LBFGS(
    learning_rate=1,
    max_iter=1,
    max_eval=None,
    tolerance_grad=1e-07,
    tolerance_change=1e-09,
    history_size=100,
    line_search_fn="strong_wolfe",
    parameters=net.parameters(),
)


def train_step(inputs, targets):
    def closure():
        outputs = net(inputs)
        loss = paddle.nn.functional.mse_loss(outputs, targets)
        print("loss: ", loss.item())
        losses.append(loss.item())
        opt.clear_grad()
        loss.backward()
        return loss

    opt.step(closure)


for input_np, target_np in zip(inputs, targets):
    input = paddle.to_tensor(input_np)
    target = paddle.to_tensor(target_np)
    train_step(input, target)
print("RESULT " + json.dumps({"losses": losses, "w": net.w.numpy().tolist()}))
