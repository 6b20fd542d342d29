# Source: PaddlePaddle/Paddle, python/paddle/hapi/model.py, the docstring example of paddle.Model
# ("1. A common example"; Paddle 3.3.1).
# Changed for the corpus: paddle.vision.datasets.MNIST (a download) replaced by 64 synthetic 28x28
# grey images of the same shape and dtype, the network's starting weights set from NumPy (the
# generators differ), shuffle=False in fit, and a final RESULT line with model.evaluate's result.
import json

import numpy as np

import paddle
import paddle.nn as nn
import paddle.vision.transforms as T
from paddle.static import InputSpec


class SyntheticMNIST(paddle.io.Dataset):
    """MNIST's samples (uint8 28x28x1 image, int64 label of shape [1]) drawn from a fixed seed."""

    def __init__(self, mode="train", transform=None, num=64):
        rng = np.random.RandomState(0 if mode == "train" else 1)
        self.labels = rng.randint(0, 10, (num, 1)).astype("int64")
        self.images = (rng.rand(num, 28, 28, 1) * 60 + self.labels[:, :, None, None] * 19).astype("uint8")
        self.transform = transform

    def __getitem__(self, idx):
        image = self.images[idx]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[idx]

    def __len__(self):
        return len(self.labels)


device = paddle.set_device("cpu")  # or 'gpu'

net = nn.Sequential(nn.Flatten(1), nn.Linear(784, 200), nn.Tanh(), nn.Linear(200, 10))
rng = np.random.RandomState(0)
for param in net.parameters():
    param.set_value(rng.uniform(-0.05, 0.05, param.shape).astype("float32"))

# inputs and labels are not required for dynamic graph.
input = InputSpec([None, 784], "float32", "x")
label = InputSpec([None, 1], "int64", "label")

model = paddle.Model(net, input, label)
optim = paddle.optimizer.SGD(learning_rate=1e-3, parameters=model.parameters())

model.prepare(optim, paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy())

transform = T.Compose([T.Transpose(), T.Normalize([127.5], [127.5])])
data = SyntheticMNIST(mode="train", transform=transform)
model.fit(data, epochs=2, batch_size=32, verbose=1, shuffle=False)
result = model.evaluate(data, batch_size=32, verbose=0)
print("RESULT " + json.dumps({"loss": float(np.ravel(result["loss"])[0]), "acc": float(result["acc"])}))
