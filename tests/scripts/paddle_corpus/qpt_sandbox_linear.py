# Source: QPT-Family/QPT, unit_test/sandbox_paddle_gpu/run.py (GitHub), a Paddle install check that
# trains a one-weight linear model.
# Changed for the corpus: the Linear's starting weights set from NumPy (Paddle's and minidp's generators
# differ), 2 epochs instead of 5, and a final RESULT line with the losses it prints.
import json

import numpy as np

# Author: Acer Zhang
# Datetime:2021/6/26
# Copyright belongs to the author.
# Please indicate the source for reprinting.

import paddle
from paddle.utils.install_check import run_check

run_check()

layer = paddle.nn.Linear(in_features=1, out_features=1)
layer.weight.set_value(np.full((1, 1), 0.5, "float32"))
layer.bias.set_value(np.zeros((1,), "float32"))

loss_func = paddle.nn.MSELoss()
opt = paddle.optimizer.SGD(learning_rate=0.001, parameters=layer.parameters())

losses = []
for i in range(2):
    loss = None
    for data in range(10):
        y_predict = layer(paddle.to_tensor([data], dtype="float32"))
        loss = loss_func(y_predict, paddle.to_tensor([data * 3], dtype="float32"))
        loss.backward()
        opt.step()
        opt.clear_grad()
    print("Epoch:", i, "loss:", loss)
    losses.append(float(loss))

print("PaddlePaddle测试成功！")
print("RESULT " + json.dumps({"losses": losses}))
