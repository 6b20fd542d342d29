"""What each rank runs in the tests of Paddle's documented collective examples.

:func:`examples_worker` runs the examples of Paddle 3.3.1's ``paddle.distributed`` docs (reduce,
scatter, gather, alltoall, alltoall_single, the object collectives, isend/irecv,
batch_isend_irecv, wait, stream.*, destroy_process_group), restated for any number of ranks: on
two ranks the inputs are the documented ones. It also runs every reduce op through reduce and
reduce_scatter, a large ring exchange, the error cases and the timeouts, and returns what it
saw as a dict of plain values; the tests compute what each rank should have seen.

Run directly (``python collective_examples.py DIR``, e.g. under ``mpiexec -n 2``), it writes
that dict as JSON to ``DIR/rank<N>.json``.
"""

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict

import numpy as np


def _error(call: Callable[[], Any]) -> str:
    """``'TypeName: message'`` of what ``call`` raises, or ``'no error'``."""
    try:
        call()
    except Exception as error:  # the report carries it to the test, which checks it
        return f"{type(error).__name__}: {error}"
    return "no error"


def _values(tensors) -> list:
    return [t.numpy().tolist() for t in tensors]


def doc_examples(report: Dict[str, Any]) -> None:
    """The documented examples, for ``n`` ranks (the documented inputs when ``n == 2``)."""
    import minidp
    import minidp.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    to = minidp.to_tensor

    data = to([[4, 5, 6], [4, 5, 6]]) if rank == 0 else to([[1, 2, 3], [1, 2, 3]])
    dist.reduce(data, dst=0)
    report["reduce"] = data.numpy().tolist()

    first, second = to([7, 8, 9]), to([10, 11, 12])
    if rank == 1:
        first, second = to([1, 2, 3]), to([4, 5, 6])
        extra = [to([1 + 3 * k, 2 + 3 * k, 3 + 3 * k]) for k in range(2, n)]
        dist.scatter(first, tensor_list=[first, second, *extra], src=1)
    else:
        dist.scatter(first, src=1)
    report["scatter"] = [first.numpy().tolist(), second.numpy().tolist()]

    gather_list = []
    dist.gather(to([1 + 3 * rank, 2 + 3 * rank, 3 + 3 * rank]), gather_list, dst=0)
    report["gather"] = _values(gather_list)

    def block(source: int, k: int):
        return to((np.arange(1, 7) + 6 * (source * n + k)).reshape(2, 3))

    out_tensor_list = []
    dist.alltoall(out_tensor_list, [block(rank, k) for k in range(n)])
    report["alltoall"] = _values(out_tensor_list)

    if n == 2:
        if rank == 0:
            ins = [to([[1, 2, 3], [4, 5, 6]]), to([7])]
            outs = [minidp.zeros([2, 3], "int64"), minidp.zeros([3, 2], "int64")]
        else:
            ins = [to([[8, 9], [10, 11], [12, 13]]), to([[14, 15, 16, 17]])]
            outs = [minidp.zeros([1], "int64"), minidp.zeros([1, 4], "int64")]
    else:  # rank r sends rank k a (r + 1) x (k + 1) block of 10 r + k
        ins = [to(np.full([rank + 1, k + 1], 10 * rank + k)) for k in range(n)]
        outs = [minidp.zeros([j + 1, rank + 1], "int64") for j in range(n)]
    dist.alltoall(outs, ins)
    report["alltoall_unequal"] = _values(outs)

    output = minidp.zeros([n], "int64")
    dist.alltoall_single(output, minidp.arange(n, dtype="int64") + rank * n)
    report["alltoall_single"] = output.numpy().tolist()
    in_place = minidp.arange(n, dtype="int64") + rank * n
    dist.alltoall_single(in_place, in_place)
    blocks = [block(rank, k) for k in range(n)]
    dist.alltoall(blocks, blocks)
    report["alltoall_in_place"] = (in_place.numpy().tolist(), _values(blocks))
    in_split_sizes = [i + 1 for i in range(n)]
    out_split_sizes = [rank + 1 for _ in range(n)]
    data = minidp.ones([sum(in_split_sizes), n], "float32") * rank
    output = minidp.zeros([(rank + 1) * n, n], "float32")
    group = dist.new_group(list(range(n)))
    task = dist.alltoall_single(output, data, in_split_sizes, out_split_sizes, sync_op=False, group=group)
    task.wait()
    report["alltoall_single_split"] = output.numpy().tolist()

    object_list = []
    dist.all_gather_object(object_list, {"foo": [1, 2, 3]} if rank == 0 else {"bar": [4, 5, 6]})
    report["all_gather_object"] = object_list
    object_list = ["kept"]
    dist.all_gather_object(object_list, rank)
    report["all_gather_object_appends"] = object_list
    object_list = [{"foo": [1, 2, 3]}] if rank == 0 else [{"bar": [4, 5, 6]}]
    dist.broadcast_object_list(object_list, src=1)
    report["broadcast_object_list"] = object_list
    out_object_list = []
    in_object_list = (
        [{"foo": [1, 2, 3]}, {"foo": [4, 5, 6]}]
        if rank == 0
        else [{"bar": [1 + 3 * k, 2 + 3 * k, 3 + 3 * k]} for k in range(n)]
    )
    dist.scatter_object_list(out_object_list, in_object_list, src=1)
    report["scatter_object_list"] = out_object_list

    if rank == 0:
        data = ["hello", {"key": 100}, [1, 2, 3]]
        for peer in range(1, n):
            dist.send_object_list(data, dst=peer)
    else:
        data = [None] * 3
        dist.recv_object_list(data, src=0)
    report["send_object_list"] = data
    ends = dist.new_group([0, n - 1])
    if rank in (0, n - 1):
        inbox = [None, None]
        if rank == 0:
            dist.send_object_list([("to", ends.get_global_rank(1)), None], dst_in_group=1, group=ends)
        else:
            dist.recv_object_list(inbox, src_in_group=0, group=ends)
        report["object_list_in_group"] = inbox

    if rank == 0:
        data = to([7, 8, 9])
        tasks = [dist.isend(data, dst=peer) for peer in range(1, n)]
    else:
        data = to([1, 2, 3])
        tasks = [dist.irecv(data, src=0)]
    report["isend_irecv"] = ([task.wait() for task in tasks], data.numpy().tolist())

    send_t = minidp.arange(2) + rank
    recv_t = minidp.zeros([2], send_t.dtype)
    send_op = dist.P2POp(dist.isend, send_t, (rank + 1) % n)
    recv_op = dist.P2POp(dist.irecv, recv_t, (rank - 1 + n) % n)
    tasks = dist.batch_isend_irecv([send_op, recv_op])
    report["batch_isend_irecv"] = ([task.wait() for task in tasks], recv_t.numpy().tolist())

    tindata = minidp.randn([2, 3])
    dist.all_reduce(tindata, sync_op=True)
    report["wait"] = dist.wait(tindata)

    report["get_backend"] = dist.get_backend()
    report["is_available"] = dist.is_available()
    report["parallel_mode"] = dist.ParallelMode.DATA_PARALLEL
    report["get_group"] = (dist.get_group(group.id) is group, dist.get_group(0).ranks, group.get_global_rank(n - 1))


def stream_examples(report: Dict[str, Any]) -> None:
    """The documented examples of ``paddle.distributed.stream`` (``n`` ranks)."""
    import minidp
    import minidp.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    to = minidp.to_tensor
    data = to([[4, 5, 6], [4, 5, 6]]) if rank == 0 else to([[1, 2, 3], [1, 2, 3]])
    tensor_list = []
    dist.stream.all_gather(tensor_list, data, sync_op=False).wait()
    report["stream.all_gather"] = _values(tensor_list)
    whole = minidp.zeros([2 * n, 3], "int64")
    dist.stream.all_gather(whole, data, use_calc_stream=True)
    report["stream.all_gather_tensor"] = whole.numpy().tolist()

    data = to([[4, 5, 6], [4, 5, 6]]) if rank == 0 else to([[1, 2, 3], [1, 2, 3]])
    dist.stream.all_reduce(data, sync_op=False).wait()
    report["stream.all_reduce"] = data.numpy().tolist()

    out = minidp.zeros([2 * n, 3], "int64")
    source = to(np.concatenate([np.arange(1, 7).reshape(2, 3) + 6 * (rank * n + k) for k in range(n)]))
    dist.stream.alltoall(out, source, sync_op=False).wait()
    report["stream.alltoall"] = out.numpy().tolist()

    output = minidp.zeros([n], "int64")
    dist.stream.alltoall_single(output, to(np.arange(n) + rank * n), sync_op=False).wait()
    report["stream.alltoall_single"] = output.numpy().tolist()
    output = minidp.zeros([(rank + 1) * n, n], "float32")
    data = to(np.full([n * (n + 1) // 2, n], float(rank), "float32"))
    dist.stream.alltoall_single(output, data, [rank + 1] * n, [i + 1 for i in range(n)], sync_op=False).wait()
    report["stream.alltoall_single_split"] = output.numpy().tolist()

    data = to([[4, 5, 6], [4, 5, 6]]) if rank == 0 else to([[1, 2, 3], [1, 2, 3]])
    dist.stream.broadcast(data, src=1, sync_op=False).wait()
    report["stream.broadcast"] = data.numpy().tolist()

    data = to([[4, 5, 6], [4, 5, 6]]) if rank == 0 else to([[1, 2, 3], [1, 2, 3]])
    dist.stream.reduce(data, dst=0, sync_op=False).wait()
    report["stream.reduce"] = data.numpy().tolist()

    first = to([4 * rank, 4 * rank + 1])
    blocks = [to([4 * rank + 2 * k, 4 * rank + 2 * k + 1]) for k in range(n)]
    dist.stream.reduce_scatter(first, blocks)
    report["stream.reduce_scatter"] = first.numpy().tolist()
    dist.reduce_scatter(first, to(np.concatenate([b.numpy() for b in blocks])))
    report["reduce_scatter_tensor"] = first.numpy().tolist()

    if rank == 0:
        data = to([[4, 5, 6], [4, 5, 6]])
        tasks = [dist.stream.send(data, dst=peer, sync_op=False) for peer in range(1, n)]
    else:
        data = to([[1, 2, 3], [1, 2, 3]])
        tasks = [dist.stream.recv(data, src=0, sync_op=False)]
    [task.wait() for task in tasks]
    report["stream.send_recv"] = data.numpy().tolist()

    first, second = (to([1, 2, 3]), to([4, 5, 6])) if rank == 1 else (to([7, 8, 9]), None)
    if rank == 1:
        extra = [to([1 + 3 * k, 2 + 3 * k, 3 + 3 * k]) for k in range(2, n)]
        dist.stream.scatter(first, [first, second, *extra], src=1)
    else:
        dist.stream.scatter(first, src=1)
    report["stream.scatter"] = first.numpy().tolist()
    whole = to(np.arange(1, 3 * n + 1)) if rank == 1 else None
    dist.scatter(first, whole, src=1)
    report["scatter_tensor"] = first.numpy().tolist()

    gather_list = []
    dist.stream.gather(to([1 + 3 * rank, 2 + 3 * rank, 3 + 3 * rank]), gather_list, dst=0)
    report["stream.gather"] = _values(gather_list)
    report["stream.use_calc_stream_async"] = _error(
        lambda: dist.stream.all_reduce(to([1.0]), sync_op=False, use_calc_stream=True)
    )


def reduce_ops(report: Dict[str, Any]) -> None:
    """Every reduce op through reduce (to the last rank) and reduce_scatter, float and int."""
    import minidp
    import minidp.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    for op in ("SUM", "MAX", "MIN", "PROD", "AVG"):
        for dtype in ("float64", "int64"):
            data = minidp.to_tensor(np.array([rank + 1, -(rank + 2), 3 * rank - 1], dtype))
            work = dist.reduce(data, dst=n - 1, op=getattr(dist.ReduceOp, op), sync_op=False)
            dist.wait(data)
            report[f"reduce.{op}.{dtype}"] = (work.is_completed(), data.numpy().tolist())
            out = minidp.zeros([2], dtype)
            parts = [minidp.to_tensor(np.array([rank + k + 1, -(rank * k) - 1], dtype)) for k in range(n)]
            dist.reduce_scatter(out, parts, op=getattr(dist.ReduceOp, op))
            report[f"reduce_scatter.{op}.{dtype}"] = out.numpy().tolist()


def exchanges_and_async(report: Dict[str, Any]) -> None:
    """A ring of large tensors through batch_isend_irecv, batches with several peers and with
    this rank itself, bit-exact scatter, asynchronous gather, and wait over several works."""
    import minidp
    import minidp.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    count = 4 << 20  # 32 MiB of float64 each way: far beyond what socket buffers absorb
    outgoing = minidp.to_tensor(np.full(count, float(rank)))
    incoming = minidp.zeros([count], "float64")
    started = time.monotonic()
    dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, outgoing, (rank + 1) % n), dist.P2POp(dist.irecv, incoming, (rank - 1) % n)]
    )
    received = incoming.numpy()
    report["ring_large"] = (float(received.min()), float(received.max()), time.monotonic() - started)

    mine = minidp.to_tensor(np.array([rank], "int32"))
    inbox = [minidp.zeros([1], "int32") for _ in range(n)]
    ops = [dist.P2POp(dist.isend, mine, peer) for peer in range(n)]
    ops += [dist.P2POp(dist.irecv, inbox[peer], peer) for peer in reversed(range(n))]
    dist.batch_isend_irecv(ops)
    report["batch_all_peers"] = [int(t.numpy()[0]) for t in inbox]

    special = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-310, -5.5], "float64")
    target = minidp.zeros([6], "float64")
    pieces = [minidp.to_tensor(special * (k + 1)) for k in range(n)] if rank == 0 else None
    dist.scatter(target, pieces, src=0, sync_op=False)
    dist.wait(target)
    report["scatter_bits"] = (target.numpy().view("int64").tolist(), (special * (rank + 1)).view("int64").tolist())

    filled = [minidp.zeros([2], "float32") for _ in range(n)]
    work = dist.gather(
        minidp.to_tensor(np.array([rank, -rank], "float32")),
        filled if rank == n - 1 else None,
        dst=n - 1,
        sync_op=False,
    )
    pending = [minidp.to_tensor(np.full(1000, float(rank))) for _ in range(5)]
    for tensor in pending:
        dist.all_reduce(tensor, sync_op=False)
    dist.wait(pending[0])
    report["async_gather"] = (work.is_completed(), _values(filled))
    report["async_all_reduce"] = sorted({float(t.numpy()[0]) for t in pending})

    rich = {
        "tuple": (1, "a", None),
        "bytes": b"\x00\xff",
        7: [1.5, float("inf")],
        "array": np.arange(6, dtype="float32").reshape(2, 3),
        "scalar": np.float16(2.5),
        "tensor": minidp.to_tensor([1.0, 2.0], stop_gradient=False),
        "big": 2**80,
    }
    gathered = []
    dist.all_gather_object(gathered, {**rich, "rank": rank})
    report["rich_objects"] = [
        (
            g["tuple"],
            g["bytes"].hex(),
            g[7],
            g["array"].tolist(),
            str(g["array"].dtype),
            type(g["scalar"]).__name__,
            float(g["scalar"]),
            g["tensor"].numpy().tolist(),
            g["tensor"].stop_gradient,
            g["big"],
            g["rank"],
        )
        for g in gathered
    ]


def error_cases(report: Dict[str, Any]) -> None:
    """Bad arguments raise TypeError/ValueError naming the problem; missing peers time out."""
    import minidp
    import minidp.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    to = minidp.to_tensor
    one = to([1.0])
    errors = {
        "reduce_dst_out_of_range": lambda: dist.reduce(one, dst=n),
        "broadcast_src_negative": lambda: dist.broadcast(one, src=-1),
        "scatter_src_not_int": lambda: dist.scatter(one, None, src="0"),
        "all_gather_wrong_length": lambda: dist.all_gather([to([1.0])] * (n + 1), one),
        "reduce_scatter_mismatched": lambda: dist.reduce_scatter(one, [to([1.0])] * (n - 1) + [to([1, 2])]),
        "alltoall_wrong_length": lambda: dist.alltoall([], [one] * (n + 1)),
        "alltoall_mixed_dtypes": lambda: dist.alltoall([], [to([1.0])] * (n - 1) + [to([1])]),
        "alltoall_single_bad_split": lambda: dist.alltoall_single(
            minidp.zeros([n]), minidp.zeros([n]), [n + 1] + [0] * (n - 1)
        ),
        "p2pop_bad_op": lambda: dist.P2POp(dist.send, one, 0),
        "batch_empty": lambda: dist.batch_isend_irecv([]),
        "object_list_not_list": lambda: dist.all_gather_object((), 1),
        "send_object_list_empty": lambda: dist.send_object_list([], dst=0),
        "send_object_list_both_dst": lambda: dist.send_object_list([1], dst=0, dst_in_group=0),
    }
    report["errors"] = {name: _error(call) for name, call in errors.items()}
    alone = [dist.new_group([r]) for r in range(n)][rank]  # checks that only this rank sees
    report["scatter_wrong_length"] = _error(lambda: dist.scatter(one, [one, one], src=rank, group=alone))
    report["gather_wrong_shape"] = _error(lambda: dist.gather(one, [to([1.0, 2.0])], dst=rank, group=alone))
    report["scatter_no_list"] = _error(lambda: dist.scatter(one, src=rank, group=alone))

    report["unsendable_object"] = _error(lambda: dist.all_gather_object([], {1, 2} if rank == 0 else "fine"))
    if rank == 0:
        dist.set_object_serializer("pickle")
    report["pickle_refused"] = _error(lambda: dist.broadcast_object_list([rank], src=0))
    dist.set_object_serializer("pickle")
    object_list = [{"set": {1, 2}}] if rank == 0 else [None]
    dist.broadcast_object_list(object_list, src=0)
    report["pickle_opt_in"] = sorted(object_list[0]["set"])
    dist.set_object_serializer("typed")
    report["length_mismatch"] = _error(lambda: dist.broadcast_object_list([1, 2] if rank == 0 else [None], src=0))

    dist.barrier()
    impatient = dist.new_group([0, 1], timeout=2)
    started = time.monotonic()
    if rank == 0:
        report["timeout"] = _error(
            lambda: dist.batch_isend_irecv([dist.P2POp(dist.irecv, minidp.zeros([4]), 1, group=impatient)])
        )
    else:
        report["timeout"] = "did not take part"
    report["timeout_seconds"] = time.monotonic() - started
    dist.barrier()


def examples_worker() -> Dict[str, Any]:
    import minidp.distributed as dist

    dist.init_parallel_env()
    report: Dict[str, Any] = {"rank": dist.get_rank(), "world_size": dist.get_world_size()}
    started = time.monotonic()
    for section in (doc_examples, stream_examples, reduce_ops, exchanges_and_async, error_cases):
        section(report)
    report["seconds"] = time.monotonic() - started
    group = dist.new_group([0, 1])
    dist.barrier()  # rank 0 hosts the store: nobody may still be setting a group up when it exits
    dist.destroy_process_group(group)
    report["destroy"] = [dist.is_initialized()]
    dist.destroy_process_group()
    report["destroy"].append(dist.is_initialized())
    return report


if __name__ == "__main__":
    result = examples_worker()
    path = Path(sys.argv[1]) / f"rank{result['rank']}.json"
    path.write_text(json.dumps(result, default=repr))
