"""The pieces around a training loop: schedulers, train/eval modes, hooks, containers, data utils.

A two-tower model (a LayerDict of towers, a LayerList of residual blocks with Dropout) fits a
synthetic binary task. Along the way: random_split and Subset, a custom collate_fn with a
BatchSampler over a RandomSampler, a forward post-hook that records activations, ReduceOnPlateau
on the validation loss, a few schedulers stepped side by side, dropout active in train() and off
in eval(), clip_grad_norm_, parameters_to_vector, and a state_dict round trip that reports
missing and unexpected keys. Prints one ``RESULT`` JSON line.
"""

import json

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.io import BatchSampler, DataLoader, Dataset, RandomSampler, Subset, random_split


class PairDataset(Dataset):
    def __init__(self, num, seed):
        rng = np.random.RandomState(seed)
        self.a = rng.randn(num, 6).astype("float32")
        self.b = rng.randn(num, 4).astype("float32")
        self.y = ((self.a[:, :2].sum(1) * self.b[:, 0] + self.b[:, 1]) > 0).astype("float32")

    def __getitem__(self, idx):
        return {"a": self.a[idx], "b": self.b[idx], "y": self.y[idx]}

    def __len__(self):
        return len(self.y)


def collate(samples):
    return (
        paddle.to_tensor(np.stack([s["a"] for s in samples])),
        paddle.to_tensor(np.stack([s["b"] for s in samples])),
        paddle.to_tensor(np.array([s["y"] for s in samples], dtype="float32")),
    )


class Block(nn.Layer):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.norm(x + self.drop(F.gelu(self.fc(x))))


class TwoTower(nn.Layer):
    def __init__(self, width=32):
        super().__init__()
        self.towers = nn.LayerDict({"a": nn.Linear(6, width), "b": nn.Linear(4, width)})
        self.blocks = nn.LayerList([Block(width) for _ in range(2)])
        self.scale = self.create_parameter([1], default_initializer=nn.initializer.Constant(1.0))
        self.head = nn.Linear(width, 1)

    def forward(self, a, b):
        x = self.towers["a"](a) * self.towers["b"](b)
        for block in self.blocks:
            x = block(x)
        return self.head(x).squeeze(-1) * self.scale


def run_epoch(model, loader, optimizer=None):
    total, count = 0.0, 0
    for a, b, y in loader:
        loss = F.binary_cross_entropy_with_logits(model(a, b), y)
        if optimizer is not None:
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            optimizer.step()
            optimizer.clear_grad()
        total += float(loss) * y.shape[0]
        count += y.shape[0]
    return total / count


def main():
    paddle.seed(5)
    data = PairDataset(640, seed=6)
    train_set, val_set = random_split(data, [512, 128])
    probe_set = Subset(data, indices=list(range(8)))
    sampler = BatchSampler(sampler=RandomSampler(train_set), batch_size=32, drop_last=False)
    train_loader = DataLoader(train_set, batch_sampler=sampler, collate_fn=collate)
    val_loader = DataLoader(val_set, batch_size=64, collate_fn=collate)

    model = TwoTower()
    activations = []
    hook = model.blocks[0].register_forward_post_hook(lambda layer, inputs, output: activations.append(output.shape))
    plateau = paddle.optimizer.lr.ReduceOnPlateau(learning_rate=0.01, factor=0.5, patience=1)
    optimizer = paddle.optimizer.Adam(learning_rate=plateau, parameters=model.parameters())

    schedules = {
        "piecewise": paddle.optimizer.lr.PiecewiseDecay(boundaries=[2, 4], values=[0.1, 0.05, 0.01]),
        "exponential": paddle.optimizer.lr.ExponentialDecay(learning_rate=0.1, gamma=0.9),
        "multistep": paddle.optimizer.lr.MultiStepDecay(learning_rate=0.1, milestones=[1, 3], gamma=0.5),
        "lambda": paddle.optimizer.lr.LambdaDecay(learning_rate=0.1, lr_lambda=lambda e: 0.95**e),
        "polynomial": paddle.optimizer.lr.PolynomialDecay(learning_rate=0.1, decay_steps=5, end_lr=0.0),
        "onecycle": paddle.optimizer.lr.OneCycleLR(max_learning_rate=0.1, total_steps=8),
    }
    report = {
        "losses": [],
        "val_losses": [],
        "lrs": [],
        "schedules": {k: [] for k in schedules},
        "split_sizes": [len(train_set), len(val_set), len(probe_set)],
        "batches": len(train_loader),
    }
    for epoch in range(6):
        model.train()
        report["losses"].append(run_epoch(model, train_loader, optimizer))
        model.eval()
        with paddle.no_grad():
            report["val_losses"].append(run_epoch(model, val_loader))
        plateau.step(report["val_losses"][-1])
        report["lrs"].append(optimizer.get_lr())
        for name, schedule in schedules.items():
            report["schedules"][name].append(round(schedule.get_lr(), 8))
            schedule.step()
        print(
            f"epoch {epoch} loss {report['losses'][-1]:.4f} val {report['val_losses'][-1]:.4f}"
            f" lr {optimizer.get_lr():.4f}"
        )
    hook.remove()
    report["hook_calls"] = len(activations)
    report["hook_shape"] = activations[0]

    a, b, _ = collate([probe_set[i] for i in range(len(probe_set))])
    model.train()
    train_outputs = [model(a, b).numpy() for _ in range(2)]
    model.eval()
    eval_outputs = [model(a, b).numpy() for _ in range(2)]
    report["train_mode_is_random"] = not np.allclose(train_outputs[0], train_outputs[1])
    report["eval_mode_is_deterministic"] = bool(np.array_equal(eval_outputs[0], eval_outputs[1]))
    report["training_flags"] = [model.training, model.blocks[0].drop.training]

    state = model.state_dict()
    report["num_params_vector"] = nn.utils.parameters_to_vector(model.parameters()).shape
    fresh = TwoTower()
    state.pop("head.bias")
    state["extra.weight"] = paddle.zeros([1])
    missing, unexpected = fresh.set_state_dict(state)
    report["missing_keys"], report["unexpected_keys"] = list(missing), list(unexpected)
    fresh.eval()
    same = np.allclose(
        fresh(a, b).numpy() - fresh.head.bias.numpy() * fresh.scale.numpy(),
        eval_outputs[0] - model.head.bias.numpy() * model.scale.numpy(),
        atol=1e-5,
    )
    report["round_trip_matches"] = bool(same)
    report["val_accuracy"] = float(
        np.mean([float(((model(a, b) > 0).astype("float32") == y).astype("float32").mean()) for a, b, y in val_loader])
    )
    print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main()
