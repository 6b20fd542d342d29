"""The ``spawn`` example from Paddle's documentation, running on minidp.

A two-layer linear network takes one data-parallel Adam step on every rank. ``spawn`` starts the
ranks; each calls ``train``, which joins the job, wraps the network in ``DataParallel`` (passing
the group's process group, as Paddle's example does) and steps.

    python examples/paddle_doc_spawn.py             # usage 3: two ranks, each prints its loss
    python examples/paddle_doc_spawn.py --usage 1   # one rank per CPU (gloo) or visible GPU (nccl)

The four usages of the documentation:
  1. ``spawn(train)``: no arguments, as many ranks as devices;
  2. ``spawn(train, args=(True,))``: pass arguments to ``train``;
  3. ``spawn(train, args=(True,), nprocs=2)``: choose the number of ranks;
  4. ``spawn(train, args=(True,), nprocs=2, gpus='4,5')``: choose the GPUs (needs cards 4 and 5
     among CUDA_VISIBLE_DEVICES).
"""

import argparse

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.optimizer as opt


class LinearNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self._linear1 = nn.Linear(10, 10)
        self._linear2 = nn.Linear(10, 1)

    def forward(self, x):
        return self._linear2(self._linear1(x))


def train(print_result=False):
    # Join the job that spawn (or a launcher) described in this process's environment.
    group = dist.init_parallel_env()
    process_group = group.process_group if group else None

    # Wrap the network so that backward() averages the gradients over the ranks.
    layer = LinearNet()
    dp_layer = minidp.DataParallel(layer, group=process_group)
    loss_fn = nn.MSELoss()
    adam = opt.Adam(learning_rate=0.001, parameters=dp_layer.parameters())

    # One step on random data.
    inputs = minidp.randn([10, 10], "float32")
    outputs = dp_layer(inputs)
    labels = minidp.randn([10, 1], "float32")
    loss = loss_fn(outputs, labels)
    if print_result is True:
        print(f"rank {dist.get_rank()} loss:", loss.numpy())
    loss.backward()
    adam.step()
    adam.clear_grad()


USAGES = {
    1: lambda: dist.spawn(train),
    2: lambda: dist.spawn(train, args=(True,)),
    3: lambda: dist.spawn(train, args=(True,), nprocs=2),
    4: lambda: dist.spawn(train, args=(True,), nprocs=2, gpus="4,5"),
}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Paddle's spawn example on minidp.")
    parser.add_argument(
        "--usage",
        type=int,
        choices=sorted(USAGES),
        default=3,
        help="which of the documentation's four usages to run (default 3)",
    )
    USAGES[parser.parse_args().usage]()
