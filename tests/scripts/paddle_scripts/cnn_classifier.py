"""A small CNN: Conv2D, BatchNorm2D, MaxPool2D, Dropout, AdamW, gradient clipping, L2 decay.

Classifies synthetic 1x12x12 images (a bright bar whose orientation is the class, plus noise).
The convolutions are initialised with Kaiming, the classifier's weight gets an L2Decay through
its ParamAttr, AdamW decays every weight except biases and norm parameters (named through
``apply_decay_param_fun``), and ClipGradByGlobalNorm bounds each step. The learning rate warms
up linearly and then follows a cosine. Prints one ``RESULT`` JSON line.
"""

import json

import numpy as np

import paddle
import paddle.nn as nn
from paddle.io import DataLoader, TensorDataset


def make_images(num, size=12, seed=0):
    """Class 0: horizontal bar, 1: vertical bar, 2: diagonal, 3: anti-diagonal."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 4, size=num)
    images = rng.rand(num, 1, size, size).astype("float32") * 0.8
    for i, label in enumerate(labels):
        offset = rng.randint(2, size - 2)
        if label == 0:
            images[i, 0, offset, :] += 1.0
        elif label == 1:
            images[i, 0, :, offset] += 1.0
        elif label == 2:
            images[i, 0, np.arange(size), np.arange(size)] += 1.0
        else:
            images[i, 0, np.arange(size), size - 1 - np.arange(size)] += 1.0
    return images, labels.astype("int64")


class ConvNet(nn.Layer):
    def __init__(self, num_classes=4):
        super().__init__()
        conv_attr = paddle.ParamAttr(initializer=nn.initializer.KaimingNormal())
        self.features = nn.Sequential(
            nn.Conv2D(1, 8, kernel_size=3, padding=1, weight_attr=conv_attr),
            nn.BatchNorm2D(8),
            nn.ReLU(),
            nn.MaxPool2D(kernel_size=2, stride=2),
            nn.Conv2D(8, 16, kernel_size=3, padding=1),
            nn.BatchNorm2D(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2D(1),
        )
        self.dropout = nn.Dropout(p=0.2)
        self.classifier = nn.Linear(
            16, num_classes, weight_attr=paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(1e-4))
        )

    def forward(self, x):
        x = self.features(x)
        x = paddle.flatten(x, start_axis=1)
        return self.classifier(self.dropout(x))


def accuracy(model, images, labels):
    model.eval()
    with paddle.no_grad():
        logits = model(paddle.to_tensor(images))
    model.train()
    pred = logits.argmax(axis=-1).numpy()
    return float((pred == labels).mean())


def main():
    paddle.seed(7)
    train_x, train_y = make_images(384, seed=1)
    test_x, test_y = make_images(192, seed=2)
    loader = DataLoader(
        TensorDataset([paddle.to_tensor(train_x), paddle.to_tensor(train_y)]), batch_size=32, shuffle=True
    )

    model = ConvNet()
    epochs, steps_per_epoch = 4, len(loader)
    cosine = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=0.01, T_max=epochs * steps_per_epoch)
    scheduler = paddle.optimizer.lr.LinearWarmup(cosine, warmup_steps=5, start_lr=0.001, end_lr=0.01)
    decay_names = [
        p.name
        for n, p in model.named_parameters()
        if not any(skip in n for skip in ("bias", "features.1", "features.5"))
    ]
    optimizer = paddle.optimizer.AdamW(
        learning_rate=scheduler,
        parameters=model.parameters(),
        weight_decay=0.01,
        apply_decay_param_fun=lambda name: name in decay_names,
        grad_clip=nn.ClipGradByGlobalNorm(clip_norm=1.0),
    )
    loss_fn = nn.CrossEntropyLoss()

    report = {
        "num_parameters": int(sum(np.prod(p.shape) for p in model.parameters())),
        "num_decayed": len(decay_names),
        "losses": [],
        "initial_accuracy": accuracy(model, test_x, test_y),
    }
    for epoch in range(epochs):
        epoch_losses = []
        for images, labels in loader:
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            scheduler.step()
            epoch_losses.append(float(loss))
        report["losses"].append(float(np.mean(epoch_losses)))
        print(f"epoch {epoch} loss {report['losses'][-1]:.4f} lr {optimizer.get_lr():.5f}")

    bn = model.features[1]
    report["bn_buffers"] = sorted(name for name, _ in bn.named_buffers())
    report["bn_mean_moved"] = bool(np.abs(bn._mean.numpy()).sum() > 0)
    report["state_dict_keys"] = sorted(model.state_dict().keys())
    report["final_lr"] = optimizer.get_lr()
    report["test_accuracy"] = accuracy(model, test_x, test_y)
    print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main()
