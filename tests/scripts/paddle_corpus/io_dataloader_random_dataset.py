# Source: PaddlePaddle/Paddle, python/paddle/io/reader.py, the docstring example of paddle.io.DataLoader
# (Paddle 3.3.1).
# Changed for the corpus: each sample drawn from a NumPy generator seeded by its index (so that the
# 2 workers give the same data under Paddle and minidp), shuffle=False, 4 batches and 2 epochs instead of
# 20 and 4, the Linear's starting weights set from NumPy (the generators differ), and a final RESULT line.
import json

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.io import Dataset, DataLoader

BATCH_NUM = 4
BATCH_SIZE = 16
EPOCH_NUM = 2

IMAGE_SIZE = 784
CLASS_NUM = 10


# define a random dataset
class RandomDataset(Dataset):
    def __init__(self, num_samples):
        self.num_samples = num_samples

    def __getitem__(self, idx):
        rng = np.random.RandomState(idx)
        image = rng.random([IMAGE_SIZE]).astype("float32")
        label = rng.randint(0, CLASS_NUM - 1, (1,)).astype("int64")
        return image, label

    def __len__(self):
        return self.num_samples


dataset = RandomDataset(BATCH_NUM * BATCH_SIZE)


class SimpleNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(IMAGE_SIZE, CLASS_NUM)

    def forward(self, image, label=None):
        return self.fc(image)


simple_net = SimpleNet()
rng = np.random.RandomState(0)
for param in simple_net.parameters():
    param.set_value(rng.uniform(-0.05, 0.05, param.shape).astype("float32"))
opt = paddle.optimizer.SGD(learning_rate=1e-3, parameters=simple_net.parameters())

loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=False, drop_last=True, num_workers=2)

losses = []
for e in range(EPOCH_NUM):
    for i, (image, label) in enumerate(loader()):
        out = simple_net(image)
        loss = F.cross_entropy(out, label)
        avg_loss = paddle.mean(loss)
        avg_loss.backward()
        opt.minimize(avg_loss)
        simple_net.clear_gradients()
        print("Epoch {} batch {}: loss = {}".format(e, i, np.mean(loss.numpy())))
        losses.append(float(avg_loss))
print("RESULT " + json.dumps({"losses": losses}))
