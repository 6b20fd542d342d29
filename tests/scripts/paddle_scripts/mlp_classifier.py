"""An MLP classifier: a custom Dataset and DataLoader, a learning-rate scheduler, checkpoints.

Trains on synthetic 4-class blobs for a few epochs and saves the model and optimizer state dicts;
then, as a user restarting a job would, runs itself again with ``--resume DIR``: the new process
restores both into a fresh model and optimizer, checks that they evaluate and schedule exactly
like the saved pair, and trains on. Prints one ``RESULT`` JSON line.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.io import DataLoader, Dataset


class BlobDataset(Dataset):
    """Points around one centre per class, as float32 features and int64 labels."""

    def __init__(self, num_samples, num_classes=4, dim=16, seed=0):
        super().__init__()
        rng = np.random.RandomState(seed)
        centres = np.random.RandomState(100).randn(num_classes, dim) * 0.6
        self.labels = rng.randint(0, num_classes, size=num_samples).astype("int64")
        noise = rng.randn(num_samples, dim)
        self.features = (centres[self.labels] + noise).astype("float32")

    def __getitem__(self, idx):
        return self.features[idx], self.labels[idx]

    def __len__(self):
        return len(self.labels)


class MLP(nn.Layer):
    def __init__(self, in_features=16, hidden=64, num_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.head(x)


def build():
    model = MLP()
    scheduler = paddle.optimizer.lr.StepDecay(learning_rate=0.01, step_size=2, gamma=0.5)
    optimizer = paddle.optimizer.Adam(learning_rate=scheduler, parameters=model.parameters())
    return model, scheduler, optimizer


def evaluate(model, loader):
    model.eval()
    correct, total = 0, 0
    with paddle.no_grad():
        for features, labels in loader:
            pred = paddle.argmax(model(features), axis=1)
            correct += int((pred == labels).astype("int64").sum())
            total += labels.shape[0]
    model.train()
    return correct / total


def train_epoch(model, loader, optimizer, scheduler):
    losses = []
    for features, labels in loader:
        loss = F.cross_entropy(model(features), labels)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(loss.item())
    scheduler.step()
    return float(np.mean(losses))


def first_run(train_loader, test_loader, workdir):
    features, labels = next(iter(train_loader))
    report = {
        "batch_shapes": [features.shape, labels.shape],
        "batch_dtypes_match": [features.dtype == paddle.float32, labels.dtype == paddle.int64],
        "batches_per_epoch": len(train_loader),
    }
    model, scheduler, optimizer = build()
    report["losses"] = []
    for epoch in range(3):
        report["losses"].append(train_epoch(model, train_loader, optimizer, scheduler))
        print(f"epoch {epoch} loss {report['losses'][-1]:.4f} lr {optimizer.get_lr():.5f}")
    paddle.save(model.state_dict(), os.path.join(workdir, "mlp.pdparams"))
    paddle.save(optimizer.state_dict(), os.path.join(workdir, "mlp.pdopt"))
    report["state_dict_keys"] = sorted(model.state_dict().keys())
    report["saved_accuracy"] = evaluate(model, test_loader)
    report["saved_lr"] = optimizer.get_lr()
    return report


def resumed_run(train_loader, test_loader, workdir):
    model, scheduler, optimizer = build()
    model.set_state_dict(paddle.load(os.path.join(workdir, "mlp.pdparams")))
    optimizer.set_state_dict(paddle.load(os.path.join(workdir, "mlp.pdopt")))
    report = {
        "restored_accuracy": evaluate(model, test_loader),
        "restored_lr": optimizer.get_lr(),
        "restored_scheduler_epoch": scheduler.last_epoch,
        "losses": [],
    }
    for epoch in range(3, 6):
        report["losses"].append(train_epoch(model, train_loader, optimizer, scheduler))
        print(f"epoch {epoch} loss {report['losses'][-1]:.4f} lr {optimizer.get_lr():.5f}")
    report["final_lr"] = optimizer.get_lr()
    report["test_accuracy"] = evaluate(model, test_loader)
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", help="directory of the checkpoint to resume from")
    args = parser.parse_args()
    paddle.device.set_device("gpu" if paddle.device.cuda.device_count() > 0 else "cpu")
    paddle.seed(2024)
    train_loader = DataLoader(BlobDataset(512, seed=1), batch_size=32, shuffle=True, drop_last=True)
    test_loader = DataLoader(BlobDataset(256, seed=2), batch_size=64, shuffle=False)
    if args.resume:
        print("RESULT " + json.dumps(resumed_run(train_loader, test_loader, args.resume)))
        return
    workdir = tempfile.mkdtemp()
    report = first_run(train_loader, test_loader, workdir)
    second = subprocess.run(
        [sys.executable, __file__, "--resume", workdir], capture_output=True, text=True, check=True, timeout=120
    )
    log, resumed = second.stdout.split("RESULT ", 1)
    print(log, end="")
    resumed = json.loads(resumed)
    report["losses"] += resumed.pop("losses")
    report.update(resumed)
    print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main()
