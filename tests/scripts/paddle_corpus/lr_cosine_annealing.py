# Source: PaddlePaddle/Paddle, python/paddle/optimizer/lr.py, the dygraph example (Example1) of
# paddle.optimizer.lr.CosineAnnealingDecay (Paddle 3.3.1).
# Changed for the corpus: the batches (paddle.uniform) drawn from NumPy with fixed seeds, the Linear's
# starting weights set from NumPy (Paddle's and minidp's generators differ), 4 epochs instead of
# 20, and a final RESULT line reporting the losses and learning rates (verbose=True prints are kept).
import json

import numpy as np

import paddle


def corpus_weights(layer, seed):
    """The same starting weights under Paddle and minidp."""
    rng = np.random.RandomState(seed)
    for param in layer.parameters():
        param.set_value(rng.uniform(-0.5, 0.5, param.shape).astype("float32"))


# train on default dynamic graph mode
linear = paddle.nn.Linear(10, 10)
corpus_weights(linear, 0)
scheduler = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=0.5, T_max=10, verbose=True)
sgd = paddle.optimizer.SGD(learning_rate=scheduler, parameters=linear.parameters())
losses, lrs = [], []
for epoch in range(4):
    for batch_id in range(5):
        x = paddle.to_tensor(np.random.RandomState(epoch * 100 + batch_id).uniform(-1, 1, [10, 10]).astype("float32"))
        out = linear(x)
        loss = paddle.mean(out)
        loss.backward()
        sgd.step()
        sgd.clear_gradients()
        scheduler.step()  # If you update learning rate each step
        losses.append(float(loss))
        lrs.append(sgd.get_lr())
    # scheduler.step()        # If you update learning rate each epoch
print("RESULT " + json.dumps({"losses": losses, "lrs": lrs}))
