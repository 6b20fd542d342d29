# Source: PaddlePaddle/Paddle, python/paddle/hapi/callbacks.py, the docstring example of
# paddle.callbacks.EarlyStopping (Paddle 3.3.1).
# Changed for the corpus: paddle.vision.datasets.MNIST (a download) replaced by 64 synthetic 28x28 grey
# images per split, LeNet's starting weights set from NumPy (the generators differ), shuffle=False,
# 4 epochs instead of 20, and a final RESULT line (the epoch it stopped at, the evaluated loss).
import json

import numpy as np

import paddle
from paddle import Model
from paddle.vision.models import LeNet
from paddle.metric import Accuracy
from paddle.nn import CrossEntropyLoss
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


device = paddle.set_device("cpu")
sample_num = 200
save_dir = "./best_model_checkpoint"
transform = T.Compose([T.Transpose(), T.Normalize([127.5], [127.5])])
train_dataset = SyntheticMNIST(mode="train", transform=transform)
val_dataset = SyntheticMNIST(mode="test", transform=transform)
net = LeNet()
rng = np.random.RandomState(0)
for param in net.parameters():
    param.set_value(rng.uniform(-0.1, 0.1, param.shape).astype("float32"))
optim = paddle.optimizer.Adam(learning_rate=0.001, parameters=net.parameters())

inputs = [InputSpec([None, 1, 28, 28], "float32", "x")]
labels = [InputSpec([None, 1], "int64", "label")]

model = Model(net, inputs=inputs, labels=labels)
model.prepare(optim, loss=CrossEntropyLoss(reduction="sum"), metrics=[Accuracy()])
callbacks = paddle.callbacks.EarlyStopping(
    "loss", mode="min", patience=1, verbose=1, min_delta=0, baseline=None, save_best_model=True
)
model.fit(
    train_dataset,
    val_dataset,
    batch_size=64,
    log_freq=200,
    save_freq=10,
    save_dir=save_dir,
    epochs=4,
    callbacks=[callbacks],
    shuffle=False,
)
result = model.evaluate(val_dataset, batch_size=64, verbose=0)
report = {"stopped_epoch": callbacks.stopped_epoch, "best_value": float(callbacks.best_value)}
report["loss"] = float(np.ravel(result["loss"])[0])
print("RESULT " + json.dumps(report))
