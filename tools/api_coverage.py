"""How much of Paddle's public API minidp offers: which names it has, lacks, or leaves out on purpose.

Paddle's public names come from a snapshot, ``tools/paddle_api_<version>.json``, so the report can
be rebuilt (and checked by the tests) on a machine without Paddle. Refresh the snapshot with a
Python that has Paddle installed (kept in its own virtual environment; minidp never imports it):

    python tools/api_coverage.py --refresh /path/to/paddle-venv/bin/python
    python tools/api_coverage.py            # writes docs/api_coverage.md
    python tools/api_coverage.py --check    # exit 1 if docs/api_coverage.md is out of date

A name is *in scope* unless a group in ``EXCLUDED`` names it with the reason minidp leaves it out.
An exclusion that minidp implements after all is reported as stale, so the list stays honest.
``NAMESPACES`` lists what is counted; ``NOT_COUNTED`` says which Paddle namespaces are not, and why.
Only the standard library is imported at the top, so ``--help`` runs without Paddle or minidp.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tools" / "paddle_api_3.3.1.json"
REPORT = ROOT / "docs" / "api_coverage.md"

# Paddle namespace -> the minidp object whose attributes are compared with it.
NAMESPACES = {
    "paddle": "minidp",
    "paddle.Tensor": "minidp.Tensor",
    "paddle.nn": "minidp.nn",
    "paddle.nn.functional": "minidp.nn.functional",
    "paddle.distributed": "minidp.distributed",
    "paddle.optimizer": "minidp.optimizer",
    "paddle.optimizer.lr": "minidp.optimizer.lr",
    "paddle.io": "minidp.io",
    "paddle.linalg": "minidp.linalg",
    "paddle.nn.initializer": "minidp.nn.initializer",
    "paddle.regularizer": "minidp.regularizer",
    "paddle.autograd": "minidp.autograd",
    "paddle.metric": "minidp.metric",
    "paddle.hapi": "minidp.hapi",
    "paddle.callbacks": "minidp.callbacks",
    "paddle.vision": "minidp.vision",
    "paddle.vision.transforms": "minidp.vision.transforms",
    "paddle.vision.models": "minidp.vision.models",
    "paddle.vision.datasets": "minidp.vision.datasets",
    "paddle.amp": "minidp.amp",
    "paddle.distribution": "minidp.distribution",
    "paddle.jit": "minidp.jit",
    "paddle.static": "minidp.static",
    "paddle.base": "minidp.base",
    "paddle.utils": "minidp.utils",
    "paddle.device": "minidp.device",
    "paddle.device.cuda": "minidp.device.cuda",
    "paddle.distributed.fleet": "minidp.distributed.fleet",
}

# Namespaces whose ``__all__`` leaves out what scripts call: ``fleet.init`` and the other
# functions of the fleet singleton are bound at module level without being listed. These are
# counted by their public attributes (submodules left out), as are namespaces without ``__all__``.
BY_ATTRIBUTES = ("paddle.distributed.fleet",)

# Paddle namespaces this report does not count, with the reason; a script importing them fails.
NOT_COUNTED: Dict[Tuple[str, ...], str] = {
    ("paddle.fft", "paddle.signal", "paddle.audio"): "Fourier transforms and spectrograms work in complex "
    "numbers; minidp's tensors are real.",
    ("paddle.sparse",): "Sparse tensors: minidp's tensors are dense.",
    ("paddle.incubate",): "Experimental APIs outside Paddle's stable surface (fused GPU kernels, MoE, "
    "auto-parallel helpers).",
    ("paddle.inference", "paddle.onnx", "paddle.pir", "paddle.decomposition"): "Inference export and the "
    "static-graph intermediate representation: minidp is dygraph only.",
    ("paddle.quantization",): "Quantization-aware training and low-bit inference.",
    ("paddle.text", "paddle.geometric", "paddle.special", "paddle.profiler", "paddle.hub", "paddle.sysconfig"): (
        "Not counted yet: task libraries and tooling beyond the training loop; minidp has none of them today."
    ),
}

_DUMP = r"""
import importlib, json, sys, types
import paddle
names = {}
by_attributes = sys.argv[2].split(",")
for module in sys.argv[3:]:
    if module == "paddle.Tensor":
        names[module] = sorted(n for n in dir(paddle.Tensor) if not n.startswith("_"))
        continue
    mod = importlib.import_module(module)
    public = None if module in by_attributes else getattr(mod, "__all__", None)
    if not public:
        public = [n for n in dir(mod) if not n.startswith("_") and not isinstance(getattr(mod, n), types.ModuleType)]
    names[module] = sorted(set(public))
with open(sys.argv[1], "w") as f:
    json.dump({"paddle_version": paddle.__version__, "namespaces": names}, f, indent=1, sort_keys=True)
"""

# (reason, {namespace: [names or fnmatch patterns]}): what minidp leaves out, and why.
EXCLUDED: List[Tuple[str, Dict[str, List[str]]]] = [
    (
        "Complex numbers: minidp's tensors are real (float, int, bool).",
        {
            "paddle": [
                "as_complex",
                "as_real",
                "angle",
                "complex",
                "complex64",
                "complex128",
                "cdouble",
                "cfloat",
                "conj",
                "imag",
                "real",
                "polar",
                "view_as_complex",
                "view_as_real",
            ],
            "paddle.Tensor": [
                "as_complex",
                "as_real",
                "angle",
                "complex64",
                "complex128",
                "cdouble",
                "cfloat",
                "conj",
                "imag",
                "real",
                "polar",
                "view_as_complex",
                "view_as_real",
            ],
            "paddle.linalg": ["eig", "eigvals"],
        },
    ),
    (
        "Sparse tensors and selected rows (parameter-server formats).",
        {
            "paddle.Tensor": [
                "coalesce",
                "crows",
                "cols",
                "indices",
                "values",
                "is_sparse*",
                "to_sparse_*",
                "to_dense",
                "nnz",
                "sparse_dim",
                "dense_dim",
                "is_coalesced",
                "is_dense",
                "get_selected_rows",
                "is_selected_rows",
                "rows",
                "layout",
            ],
        },
    ),
    (
        "Static graph, program and inference internals: minidp is dygraph only.",
        {
            "paddle": [
                "LazyGuard",
                "disable_signal_handler",
                "enable_compat",
                "disable_compat",
                "check_shape",
            ],
            "paddle.Tensor": [
                "block",
                "get_tensor",
                "set_tensor",
                "get_map_tensor",
                "value",
                "set_string_list",
                "set_vocab",
                "create_parameter",
                "create_tensor",
                "reconstruct_from_",
            ],
            "paddle.static": [
                "BuildStrategy",
                "CompiledProgram",
                "Executor",
                "ExponentialMovingAverage",
                "IpuCompiledProgram",
                "IpuStrategy",
                "Print",
                "Program",
                "Variable",
                "WeightNormParamAttr",
                "accuracy",
                "append_backward",
                "auc",
                "cpu_places",
                "create_global_var",
                "ctr_metric_bundle",
                "cuda_places",
                "data",
                "default_main_program",
                "default_startup_program",
                "deserialize_persistables",
                "deserialize_program",
                "device_guard",
                "global_scope",
                "gradients",
                "ipu_shard_guard",
                "load",
                "load_from_file",
                "load_inference_model",
                "load_program_state",
                "name_scope",
                "normalize_program",
                "program_guard",
                "py_func",
                "save",
                "save_inference_model",
                "save_to_file",
                "scope_guard",
                "serialize_persistables",
                "serialize_program",
                "set_ipu_shard",
                "set_program_state",
                "xpu_places",
            ],
            "paddle.base": [
                "BuildStrategy",
                "CompiledProgram",
                "DataFeeder",
                "DenseTensorArray",
                "Executor",
                "Program",
                "Scope",
                "Variable",
                "WeightNormParamAttr",
                "append_backward",
                "cpu_places",
                "cuda_places",
                "create_lod_tensor",
                "create_random_int_lodtensor",
                "default_main_program",
                "default_startup_program",
                "device_guard",
                "global_scope",
                "gradients",
                "name_scope",
                "program_guard",
                "scope_guard",
            ],
            "paddle.jit": ["TranslatedLayer"],
            "paddle.device": ["device_guard"],
            "paddle.distributed.fleet": [
                "minimize",
                "save_persistables",
                "save_inference_model",
                "load_inference_model",
            ],
        },
    ),
    (
        "Paddle's own plumbing rather than an API to train with: the C++ core handles, the raw DenseTensor "
        "type, monkey patching, type-promotion hooks and autograd graph nodes.",
        {
            "paddle.base": [
                "DenseTensor",
                "core_suffix",
                "legacy_core",
                "monkey_patch_tensor",
                "monkey_patch_variable",
                "process_type_promotion",
            ],
            "paddle.Tensor": ["grad_fn"],
        },
    ),
    (
        "Hardware minidp does not run on: XPU, IPU and custom-device plugins (minidp runs on the CPU "
        "through NumPy and on NVIDIA GPUs through CuPy).",
        {
            "paddle.base": [
                "CustomPlace",
                "IPUPlace",
                "XPUPlace",
                "IpuCompiledProgram",
                "IpuStrategy",
                "ipu_shard_guard",
                "set_ipu_shard",
                "xpu_places",
            ],
            "paddle.device": ["IPUPlace", "XPUPlace", "get_all_custom_device_type", "get_available_custom_device"],
        },
    ),
    (
        "Places, memory layout and interop beyond NumPy/CuPy (strides, pinned memory, DLPack, mmap, custom devices).",
        {
            "paddle": [
                "CUDAPinnedPlace",
                "XPUPinnedPlace",
                "MmapStorage",
                "from_dlpack",
                "to_dlpack",
                "pstring",
                "raw",
                "as_strided",
            ],
            "paddle.base": ["CUDAPinnedPlace", "XPUPinnedPlace", "cuda_pinned_places"],
            "paddle.device": ["get_stream_from_external"],
            "paddle.Tensor": [
                "as_strided",
                "get_strides",
                "stride",
                "strides",
                "offset",
                "is_contiguous",
                "contiguous",
                "pin_memory",
                "data_ptr",
                "element_size",
                "is_dist",
                "placements",
                "process_mesh",
                "num_shard",
                "resize_",
                "set_",
            ],
        },
    ),
    (
        "Legacy typed tensor classes (PyTorch-style aliases of dtypes).",
        {
            "paddle": [
                "BFloat16Tensor",
                "BoolTensor",
                "ByteTensor",
                "CharTensor",
                "DoubleTensor",
                "FloatTensor",
                "HalfTensor",
                "IntTensor",
                "LongTensor",
                "ShortTensor",
            ],
            "paddle.device": [
                "BFloat16Tensor",
                "BoolTensor",
                "ByteTensor",
                "CharTensor",
                "DoubleTensor",
                "FloatTensor",
                "HalfTensor",
                "IntTensor",
                "LongTensor",
                "ShortTensor",
            ],
        },
    ),
    (
        "8-bit float dtypes: neither NumPy nor CuPy has them.",
        {"paddle": ["float8_*"]},
    ),
    (
        "Special functions whose derivatives NumPy cannot give (incomplete gamma, Bessel, polygamma).",
        {
            "paddle": [
                "gammainc*",
                "gammaincc*",
                "i0",
                "i0_",
                "i0e",
                "i1",
                "i1e",
                "polygamma*",
                "multigammaln*",
                "standard_gamma",
            ],
            "paddle.Tensor": [
                "gammainc*",
                "gammaincc*",
                "i0",
                "i0_",
                "i0e",
                "i1",
                "i1e",
                "polygamma*",
                "multigammaln*",
            ],
        },
    ),
    (
        "Signal processing and histograms of several dimensions.",
        {
            "paddle": ["histogramdd"],
            "paddle.Tensor": ["stft", "istft", "histogramdd"],
        },
    ),
    (
        "Auto-parallel, tensor/pipeline/sequence parallelism and sharding: minidp is data parallel only.",
        {
            "paddle.distributed": [
                "ColWiseParallel",
                "ContextParallel",
                "ConvParallel",
                "DistAttr",
                "DistModel",
                "LocalLayer",
                "Partial",
                "Placement",
                "PrepareContextParallel",
                "PrepareLayerInput",
                "PrepareLayerOutput",
                "ProcessMesh",
                "ReduceType",
                "Replicate",
                "RowWiseParallel",
                "SequenceParallel*",
                "Shard",
                "ShardedStateDict",
                "ShardedWeight",
                "ShardingStage*",
                "SplitPoint",
                "Strategy",
                "build_sharded_state_dict",
                "dtensor_from_fn",
                "get_mesh",
                "set_mesh",
                "local_map",
                "parallelize",
                "reshard",
                "shard_*",
                "to_distributed",
                "to_static",
                "unshard_dtensor",
                "split",
                "load_merged_state_dict",
                "save_state_dict",
                "load_state_dict",
                "io",
                "create_nccl_config",
            ],
            "paddle.distributed.fleet": [
                "CommunicateTopology",
                "HybridCommunicateGroup",
                "get_hybrid_communicate_group",
            ],
        },
    ),
    (
        "Parameter-server training (servers, sparse tables, trainers and their datasets), federated learning "
        "and the fault-tolerant restart of process groups: minidp trains data parallel with all-reduce.",
        {
            "paddle.base": [
                "DataFeedDesc",
                "DatasetFactory",
                "InMemoryDataset",
                "TrainerDesc",
                "MultiTrainer",
                "DistMultiTrainer",
                "PipelineTrainer",
                "HeterPipelineTrainer",
                "HeterXpuTrainer",
            ],
            "paddle.distributed.fleet": [
                "BoxPSDataset",
                "DatasetBase",
                "FileInstantDataset",
                "InMemoryDataset",
                "QueueDataset",
                "MultiSlotDataGenerator",
                "MultiSlotStringDataGenerator",
                "init_server",
                "run_server",
                "init_worker",
                "stop_worker",
                "is_server",
                "server_endpoints",
                "server_index",
                "server_num",
                "load_model",
                "load_one_table",
                "save_one_table",
                "save_cache_model",
                "save_cache_table",
                "save_dense_params",
                "check_save_pre_patch_done",
                "shrink",
                "print_table_stat",
                "set_date",
                "init_coordinator",
                "is_coordinator",
                "get_fl_client",
                "make_fl_strategy",
            ],
            "paddle.distributed": [
                "InMemoryDataset",
                "QueueDataset",
                "CountFilterEntry",
                "ProbabilityEntry",
                "ShowClickEntry",
                "restart_process_group",
                "shutdown_process_group",
            ],
        },
    ),
    (
        "Beam-search decoding, task-specific heads and losses (RNN-T, hierarchical sigmoid, "
        "margin softmax, adaptive softmax), fractional pooling and fused GPU attention, MoE and "
        "sampling kernels.",
        {
            "paddle.Tensor": ["top_p_sampling"],
            "paddle.nn": [
                "BeamSearchDecoder",
                "dynamic_decode",
                "RNNTLoss",
                "HSigmoidLoss",
                "AdaptiveLogSoftmaxWithLoss",
                "FractionalMaxPool*",
            ],
            "paddle.nn.functional": [
                "rnnt_loss",
                "hsigmoid_loss",
                "margin_cross_entropy",
                "class_center_sample",
                "adaptive_log_softmax_with_loss",
                "flash_attention_v3_varlen",
                "flash_attn_qkvpacked",
                "flash_attn_varlen_qkvpacked",
                "flashmask_attention",
                "moe_permute",
                "moe_unpermute",
                "sparse_attention",
                "fractional_max_pool*",
            ],
        },
    ),
    (
        "Decompositions without a stable gradient in minidp (LU, Householder, low-rank, FP8 GEMM).",
        {
            "paddle.linalg": [
                "lu",
                "lu_solve",
                "lu_unpack",
                "householder_product",
                "ormqr",
                "pca_lowrank",
                "svd_lowrank",
                "fp8_fp8_half_gemm_fused",
            ],
            "paddle.Tensor": [
                "lu",
                "lu_unpack",
                "householder_product",
                "ormqr",
                "pca_lowrank",
                "svd_lowrank",
                "eig",
                "eigvals",
            ],
        },
    ),
    (
        "Callbacks that log to third-party services (VisualDL, Weights & Biases): they need packages and "
        "accounts minidp does not depend on.",
        {"paddle.callbacks": ["VisualDL", "WandbCallback"]},
    ),
]


def load_snapshot(path: Path = SNAPSHOT) -> Dict[str, List[str]]:
    """Paddle's public names per namespace, as recorded in the snapshot."""
    return json.loads(path.read_text())["namespaces"]


def refresh_snapshot(paddle_python: str, path: Path = SNAPSHOT) -> None:
    """Record Paddle's public names with ``paddle_python`` (an interpreter that has Paddle)."""
    subprocess.run(
        [paddle_python, "-c", _DUMP, str(path), ",".join(BY_ATTRIBUTES), *NAMESPACES], check=True, timeout=600
    )


def _excluded(namespace: str, name: str) -> str:
    for reason, groups in EXCLUDED:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in groups.get(namespace, ())):
            return reason
    return ""


def _minidp_object(path: str):
    module, _, attr = path.rpartition(".")
    try:
        return importlib.import_module(path)
    except ImportError:
        if not module:
            return None
        try:
            return getattr(importlib.import_module(module), attr, None)
        except ImportError:
            return None


def coverage(snapshot: Dict[str, List[str]]) -> Dict[str, dict]:
    """Per namespace: the in-scope names minidp has and lacks, the exclusions, stale exclusions."""
    table = {}
    for namespace, target in NAMESPACES.items():
        obj = _minidp_object(target)
        have, lack, excluded, stale = [], [], {}, []
        for name in snapshot[namespace]:
            present = obj is not None and hasattr(obj, name)
            reason = _excluded(namespace, name)
            if reason:
                excluded.setdefault(reason, []).append(name)
                if present:
                    stale.append(name)
            else:
                (have if present else lack).append(name)
        table[namespace] = {"have": have, "lack": lack, "excluded": excluded, "stale": stale}
    return table


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def render(table: Dict[str, dict], version: str) -> str:
    """The Markdown report."""
    by_attributes = ", ".join(f"`{ns}`" for ns in BY_ATTRIBUTES)
    lines = [
        "# Paddle API coverage",
        "",
        f"Generated by `python tools/api_coverage.py` from Paddle {version}'s public names "
        "(`tools/paddle_api_3.3.1.json`); do not edit this file by hand. Each namespace below is counted "
        "by its `__all__`; one without `__all__`, and "
        f"{by_attributes} (whose `__all__` leaves out the functions scripts call, such as `fleet.init`), "
        "by its public attributes, submodules left out. `paddle.Tensor` counts the Tensor methods. "
        "A name is in scope unless it is left out on purpose below, with the reason.",
        "",
        "| namespace | Paddle names | excluded | in scope | minidp has | coverage |",
        "|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    for namespace, row in table.items():
        n_excluded = sum(len(v) for v in row["excluded"].values())
        scope = len(row["have"]) + len(row["lack"])
        total = scope + n_excluded
        for i, value in enumerate((total, n_excluded, scope, len(row["have"]))):
            totals[i] += value
        lines.append(
            f"| `{namespace}` | {total} | {n_excluded} | {scope} | {len(row['have'])} "
            f"| {_percent(len(row['have']), scope)} |"
        )
    lines.append(
        f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | **{_percent(totals[3], totals[2])}** |"
    )
    lines += ["", "## Missing (in scope, not yet in minidp)", ""]
    for namespace, row in table.items():
        if row["lack"]:
            lines.append(f"- `{namespace}` ({len(row['lack'])}): " + ", ".join(f"`{n}`" for n in row["lack"]))
    lines += ["", "## Left out on purpose", ""]
    for reason, _ in EXCLUDED:
        names = [f"`{ns}.{n}`" for ns, row in table.items() for n in row["excluded"].get(reason, [])]
        if names:
            lines.append(f"- **{reason}** ({len(names)}) {', '.join(names)}")
    lines += ["", "## Namespaces not counted", ""]
    lines += [f"- {', '.join(f'`{ns}`' for ns in group)}: {reason}" for group, reason in NOT_COUNTED.items()]
    return "\n".join(lines) + "\n"


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--refresh", metavar="PADDLE_PYTHON", help="re-record Paddle's names with this interpreter first"
    )
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the report is out of date")
    args = parser.parse_args(argv)
    if args.refresh:
        refresh_snapshot(args.refresh)
    sys.path.insert(0, str(ROOT))
    version = json.loads(SNAPSHOT.read_text())["paddle_version"]
    table = coverage(load_snapshot())
    stale = [f"{ns}.{n}" for ns, row in table.items() for n in row["stale"]]
    if stale:
        print("excluded but implemented (remove from EXCLUDED): " + ", ".join(stale))
        return 1
    text = render(table, version)
    if args.check:
        if not REPORT.exists() or REPORT.read_text() != text:
            print(f"{REPORT.relative_to(ROOT)} is out of date: run python tools/api_coverage.py")
            return 1
        return 0
    REPORT.write_text(text)
    print(text.split("\n## ")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
