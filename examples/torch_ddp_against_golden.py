"""Check PyTorch DDP against minidp: the same MLP, the same data, the same starting point.

    python examples/torch_ddp_against_golden.py [--workdir DIR]

1. minidp trains a 5-4-1 MLP data-parallel on 2 ranks and writes a golden file
   (``minidp.testing.golden``).
2. PyTorch DDP trains the same MLP on 2 gloo ranks, starting from the golden file's initial
   parameters and feeding each rank the rows minidp's rank got, and records the same tensors
   under the same keys: every key of the golden file, its starting parameters and inputs included.
3. ``python -m minidp.testing compare`` compares the two, every tensor of the golden file; the
   exit status is its verdict.

Layouts differ and are converted here: minidp's (Paddle's) ``Linear`` weight is
``[in_features, out_features]``, PyTorch's is ``[out_features, in_features]``.
Needs PyTorch (``pip install torch``); minidp itself never imports it.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile

import numpy as np

STEPS, WORLD_SIZE, LR = 3, 2, 0.1


def minidp_golden(path: str) -> None:
    import minidp
    import minidp.testing

    rng = np.random.default_rng(0)
    data = [
        (rng.standard_normal((8, 5)).astype("float32"), rng.standard_normal((8, 1)).astype("float32"))
        for _ in range(STEPS)
    ]
    minidp.testing.golden(
        lambda: minidp.nn.Sequential(minidp.nn.Linear(5, 4), minidp.nn.Tanh(), minidp.nn.Linear(4, 1)),
        lambda out, y: ((out - y) ** 2).mean(),
        data,
        WORLD_SIZE,
        STEPS,
        lambda params: minidp.optimizer.SGD(LR, parameters=params),
        out=path,
        seed=0,
    )


def to_torch(name: str, array: np.ndarray) -> np.ndarray:
    """A minidp parameter in PyTorch's layout (and back: the conversion is its own inverse)."""
    return array.T.copy() if name.endswith("weight") else array


def torch_rank(rank: int, golden_path: str, out_dir: str, port: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    golden = np.load(golden_path)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(to_torch(name, golden[f"init/param/{name}"])))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    local = {}
    for name, p in model.named_parameters():
        p.register_hook(lambda g, name=name: local.__setitem__(name, g.detach().numpy().copy()))
    record = {}
    if rank == 0:  # the golden file holds rank 0's starting parameters (DDP broadcasts them)
        for name, p in model.named_parameters():
            record[f"init/param/{name}"] = to_torch(name, p.detach().numpy().copy())
    for step in range(STEPS):
        prefix = f"step{step}/rank{rank}"
        x = torch.from_numpy(golden[f"{prefix}/input0"])
        y = torch.from_numpy(golden[f"{prefix}/input1"])
        record[f"{prefix}/input0"], record[f"{prefix}/input1"] = x.numpy().copy(), y.numpy().copy()
        loss = ((ddp(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        record[f"{prefix}/loss"] = loss.detach().numpy()
        for name, p in model.named_parameters():
            record[f"{prefix}/local_grad/{name}"] = to_torch(name, local[name])
            record[f"{prefix}/avg_grad/{name}"] = to_torch(name, p.grad.numpy().copy())
        opt.step()
        for name, p in model.named_parameters():
            record[f"{prefix}/param/{name}"] = to_torch(name, p.detach().numpy().copy())
    np.savez(os.path.join(out_dir, f"torch_rank{rank}.npz"), **record)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", help="where the files go (default: a temporary folder)")
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="minidp-vs-torch-")
    golden_path = os.path.join(workdir, "golden.npz")
    minidp_golden(golden_path)
    port = free_port()
    ranks = [
        subprocess.Popen([sys.executable, __file__, "--rank", str(r), golden_path, workdir, str(port)])
        for r in range(WORLD_SIZE)
    ]
    if any(p.wait(timeout=300) != 0 for p in ranks):
        print("a PyTorch rank failed", file=sys.stderr)
        return 2
    merged = {}
    for r in range(WORLD_SIZE):
        merged.update(np.load(os.path.join(workdir, f"torch_rank{r}.npz")))
    theirs = os.path.join(workdir, "torch.npz")
    np.savez(theirs, **merged)
    from minidp.testing.compare import main as compare_main

    return compare_main(["compare", golden_path, theirs, "--rtol", "1e-4", "--atol", "1e-6"])


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--rank":
        torch_rank(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit(main())
