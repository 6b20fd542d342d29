"""Train an MLP or a small CNN on scikit-learn's handwritten digits with minidp.

The data are the 1,797 real 8x8 images bundled with scikit-learn (no download). A fixed 20%
of them are held out for testing. After every epoch the script prints the mean training loss
and the test accuracy; at the end it writes a checkpoint (model, optimizer, epoch) that
``--resume`` continues from:

    python examples/train_digits.py --model cnn --epochs 10
    python examples/train_digits.py --model cnn --epochs 15 --resume   # runs epochs 11..15

Started by a launcher, the same script trains data-parallel: every rank wraps the model in
``minidp.DataParallel`` and reads its own shard of each epoch, and rank 0 prints and saves:

    python -m minidp.distributed.launch --nproc_per_node 2 examples/train_digits.py --epochs 8

Batches come from a DistributedBatchSampler whose shuffle depends only on the epoch, so a
resumed run sees exactly the batches the uninterrupted run would have seen, and ends with the
same weights.

Needs the ``examples`` extra: ``pip install 'minidp[examples]'`` (scikit-learn, tqdm).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.nn.functional as F
from minidp.io import DataLoader, DistributedBatchSampler, TensorDataset

SPLIT_SEED = 0
TEST_FRACTION = 0.2


class MLP(nn.Layer):
    """64 -> 128 -> 64 -> 10 with ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)
        )

    def forward(self, x: minidp.Tensor) -> minidp.Tensor:
        return self.net(x)


class CNN(nn.Layer):
    """Two 3x3 convolutions with max pooling (8x8 -> 4x4 -> 2x2), then a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2),
            nn.Conv2D(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x: minidp.Tensor) -> minidp.Tensor:
        return self.classifier(self.features(x))


MODELS = {"mlp": MLP, "cnn": CNN}


def load_split() -> tuple:
    """(train_images, train_labels, test_images, test_labels); images [N, 1, 8, 8] in [0, 1]."""
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(labels))
    n_test = int(len(labels) * TEST_FRACTION)
    test, train = order[:n_test], order[n_test:]
    return images[train], labels[train], images[test], labels[test]


def evaluate(model: nn.Layer, images: np.ndarray, labels: np.ndarray) -> float:
    """Accuracy of ``model`` on the given images (evaluation mode, no graph)."""
    model.eval()
    with minidp.no_grad():
        logits = model(minidp.to_tensor(images))
    model.train()
    return float((logits.numpy().argmax(axis=1) == labels).mean())


def shows_progress() -> bool:
    """Whether a progress bar reaches a terminal: ours, or the launcher's (whose ranks write to a
    pipe; it says ``MINIDP_LAUNCHER_TTY=1`` when its own output is a terminal)."""
    return sys.stderr.isatty() or os.environ.get("MINIDP_LAUNCHER_TTY") == "1"


def train(args: argparse.Namespace) -> dict:
    """Train as ``args`` says; returns {'epoch', 'loss', 'test_accuracy', 'seconds'} of the last epoch."""
    minidp.seed(args.seed)
    train_x, train_y, test_x, test_y = load_split()
    model = MODELS[args.model]()
    parallel = dist.get_world_size() > 1
    if parallel:
        dist.init_parallel_env()
        buckets = (
            {}
            if args.bucket_kb is None
            else {"comm_buffer_size": args.bucket_kb / 1024, "last_comm_buffer_size": args.bucket_kb / 1024}
        )
        model = minidp.DataParallel(model, **buckets)
    leader = dist.get_rank() == 0
    if parallel and leader:
        print(
            f"data-parallel on {dist.get_world_size()} ranks, "
            f"{len(train_y) // dist.get_world_size()} training images per rank per epoch"
        )
    optimizer = minidp.optimizer.Adam(learning_rate=args.lr, parameters=model.parameters())
    dataset = TensorDataset([minidp.to_tensor(train_x), minidp.to_tensor(train_y)])
    sampler = DistributedBatchSampler(dataset, batch_size=args.batch_size, shuffle=True)
    loader = DataLoader(dataset, batch_sampler=sampler)

    start_epoch = 0
    if args.resume:
        if not os.path.exists(args.checkpoint):
            raise SystemExit(f"--resume: no checkpoint at {args.checkpoint}; run without --resume first")
        state = minidp.load(args.checkpoint)
        if state["model_name"] != args.model:
            raise SystemExit(f"--resume: {args.checkpoint} holds a {state['model_name']} model, not {args.model}")
        model.set_state_dict(state["model"])
        optimizer.set_state_dict(state["optimizer"])
        start_epoch = state["epoch"]
        if leader:
            print(f"resumed from {args.checkpoint} after epoch {start_epoch}")

    summary = {
        "epoch": start_epoch,
        "loss": float("nan"),
        "test_accuracy": evaluate(model, test_x, test_y),
        "seconds": 0.0,
    }
    started = time.perf_counter()
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        progress = tqdm(
            loader,
            desc=f"epoch {epoch + 1}/{args.epochs}",
            leave=False,
            disable=args.quiet or not leader or not shows_progress(),
        )
        for images, labels in progress:
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            total += loss.item()
            batches += 1
            progress.set_postfix(loss=f"{total / batches:.4f}")
        mean_loss = minidp.to_tensor([total / batches])
        if parallel:
            dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        accuracy = evaluate(model, test_x, test_y)
        summary = {
            "epoch": epoch + 1,
            "loss": mean_loss.item(),
            "test_accuracy": accuracy,
            "seconds": time.perf_counter() - started,
        }
        if leader:
            print(f"epoch {epoch + 1:3d}  loss {summary['loss']:.4f}  test accuracy {accuracy:.4f}", flush=True)

    if not leader:
        return summary
    minidp.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": summary["epoch"],
            "model_name": args.model,
        },
        args.checkpoint,
    )
    print(
        f"final test accuracy {summary['test_accuracy']:.4f} after {summary['epoch']} epochs "
        f"({summary['seconds']:.1f} s); checkpoint written to {args.checkpoint}"
    )
    if parallel:
        print_communication_summary(model.communication_stats(), summary["seconds"])
    return summary


def print_communication_summary(stats: dict, seconds: float) -> None:
    """One line on how long rank 0 waited for gradient all-reduces after backward (the
    communication backward did not hide), in total, per step, and as a share of the run."""
    steps, waited = stats["steps"], stats["wait_seconds"]
    per_step = waited / steps * 1e3 if steps else 0.0
    share = waited / seconds * 100 if seconds > 0 else 0.0
    print(
        f"waited for gradient communication {waited:.2f} s over {steps} steps "
        f"({per_step:.2f} ms per step, {share:.1f}% of the training time)"
    )


def parse_args(argv: list = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), default="cnn")
    parser.add_argument("--epochs", type=int, default=15, help="train until this many epochs are done")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default=None, help="checkpoint file (default: checkpoints/digits_<model>.ckpt)")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--bucket-kb",
        type=float,
        default=None,
        help="DataParallel's gradient bucket size in KiB (default: its own, 25 MiB "
        "and 1 MiB for the last); small buckets overlap backward more",
    )
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or (args.bucket_kb is not None and args.bucket_kb <= 0):
        parser.error("--epochs, --batch-size and --bucket-kb must be positive")
    if args.checkpoint is None:
        args.checkpoint = os.path.join("checkpoints", f"digits_{args.model}.ckpt")
    return args


if __name__ == "__main__":
    train(parse_args(sys.argv[1:]))
