# Source: PaddlePaddle/Paddle, python/paddle/amp/grad_scaler.py, the docstring example of
# paddle.amp.GradScaler (Paddle 3.3.1).
# Changed for the corpus: the batch (paddle.rand([10, 3, 32, 32])) drawn from NumPy at [4, 3, 8, 8], the
# convolution's starting weights set from NumPy (the generators differ), and a final RESULT line.
import json

import numpy as np

import paddle

model = paddle.nn.Conv2D(3, 2, 3, bias_attr=True)
rng = np.random.RandomState(0)
for param in model.parameters():
    param.set_value(rng.uniform(-0.5, 0.5, param.shape).astype("float32"))
optimizer = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
scaler = paddle.amp.GradScaler(init_loss_scaling=1024)
data = paddle.to_tensor(rng.rand(4, 3, 8, 8).astype("float32"))
with paddle.amp.auto_cast():
    conv = model(data)
    loss = paddle.mean(conv)
scaled = scaler.scale(loss)  # scale the loss
scaled.backward()  # do backward
scaler.minimize(optimizer, scaled)  # update parameters
optimizer.clear_grad()
print("RESULT " + json.dumps({"loss": float(loss), "params": [p.numpy().ravel().tolist() for p in model.parameters()]}))
