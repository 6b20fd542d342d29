"""CUDA kernels of minidp and their loader: bucket pack/unpack and the optimizer steps.

The kernels live as CUDA C sources next to this file (``*.cu``, sharing ``common.cuh``).
They are compiled by NVRTC through ``cupy.RawModule`` the first time a GPU path needs them;
importing this package does not import CuPy. The functions below take CuPy arrays, build
their arguments with :mod:`minidp.core.kernels.launch_args` (the code the CPU host runner of the
tests executes too) and launch on the device that holds the data, on its current CUDA stream.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any, Sequence

from minidp.core import backend
from minidp.core.kernels.launch_args import (
    NAME_EXPRESSIONS,
    KernelLaunch,
    fused_adam_launch,
    momentum_launch,
    pack_launch,
    sgd_launch,
)

# --fmad=false keeps every multiply and add separately rounded, as NumPy does, so GPU results
# match the CPU path bit for bit (the kernels are memory-bound: contraction would buy nothing),
# with one exception: CuPy appends -ftz=true to every compile, so float32 (not float64)
# operations read subnormals as zero and flush subnormal results to zero, which NumPy does not
# (docs/gpu.md; the host runs of the tests model it).
COMPILE_OPTIONS = ("--fmad=false",)

_INCLUDE = re.compile(r'^#include "(?P<header>[A-Za-z0-9_]+\.cuh)"$', re.MULTILINE)


def kernel_sources() -> tuple[str, ...]:
    """Names of the ``.cu`` files in this package, each one translation unit."""
    return tuple(sorted(NAME_EXPRESSIONS))


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def translation_unit(source: str) -> str:
    """The text of ``source`` with this package's ``#include "x.cuh"`` lines replaced by the header.

    NVRTC compiles from a string, and CuPy's kernel cache keys on that string: inlining the
    headers makes the cache see header changes and spares include paths.
    """
    if source not in NAME_EXPRESSIONS:
        raise ValueError(f"unknown kernel source {source!r}; known: {kernel_sources()}")
    return _INCLUDE.sub(lambda match: _read(match.group("header")), _read(source))


@functools.lru_cache(maxsize=None)
def _raw_module(source: str) -> Any:
    """The ``cupy.RawModule`` of one source, with every instantiation that source declares."""
    import cupy

    return cupy.RawModule(
        code=translation_unit(source),
        options=COMPILE_OPTIONS,
        name_expressions=list(NAME_EXPRESSIONS[source]),
    )


@functools.lru_cache(maxsize=None)
def _function(source: str, name: str, place: str) -> Any:
    """Kernel ``name`` of ``source`` loaded on ``place``'s device (the caller makes it current).

    ``RawModule.get_function`` builds a new kernel object on every call; launches reuse this one.
    """
    return _raw_module(source).get_function(name)


def launch(plan: KernelLaunch) -> None:
    """Run a launch built by :mod:`minidp.core.kernels.launch_args` on the device of its arrays.

    Every launch's first argument is an array on that device (a pointer table or the flat
    buffer); the device is made current around the launch, whatever device was current.
    """
    data = plan.args[0]
    with backend.device_guard(data):
        _function(plan.source, plan.name, backend.place_of(data))(plan.grid, plan.block, plan.args)


def pack(sources: Sequence[Any], flat: Any, offsets: Sequence[int], scale: float = 1.0) -> None:
    """Copy each CuPy array of ``sources`` times ``scale`` into ``flat`` at its offset.

    Offsets count elements of ``flat``; its dtype may differ from the sources' (see
    :func:`minidp.core.kernels.launch_args.pack_launch`).
    """
    launch(pack_launch(sources, flat, offsets, scale))


def fused_adam(
    params: Sequence[Any],
    grads: Sequence[Any],
    moment1s: Sequence[Any],
    moment2s: Sequence[Any],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    beta1_pow: float,
    beta2_pow: float,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    masters: Sequence[Any] | None = None,
) -> None:
    """One Adam (or AdamW, ``decoupled=True``) step over CuPy parameters in place, in one launch.

    See :func:`minidp.core.kernels.launch_args.fused_adam_launch` for the arguments.
    """
    launch(
        fused_adam_launch(
            params,
            grads,
            moment1s,
            moment2s,
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            epsilon=epsilon,
            beta1_pow=beta1_pow,
            beta2_pow=beta2_pow,
            weight_decay=weight_decay,
            decoupled=decoupled,
            masters=masters,
        )
    )


def sgd(
    params: Sequence[Any],
    grads: Sequence[Any],
    *,
    lr: float,
    weight_decay: float = 0.0,
    masters: Sequence[Any] | None = None,
) -> None:
    """One SGD step over CuPy parameters in place, in one launch (see ``sgd_launch``)."""
    launch(sgd_launch(params, grads, lr=lr, weight_decay=weight_decay, masters=masters))


def momentum(
    params: Sequence[Any],
    grads: Sequence[Any],
    velocities: Sequence[Any],
    *,
    lr: float,
    momentum: float,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    masters: Sequence[Any] | None = None,
) -> None:
    """One Momentum step over CuPy parameters in place, in one launch (see ``momentum_launch``)."""
    launch(
        momentum_launch(
            params,
            grads,
            velocities,
            lr=lr,
            momentum=momentum,
            weight_decay=weight_decay,
            nesterov=nesterov,
            masters=masters,
        )
    )


__all__ = [
    "COMPILE_OPTIONS",
    "KernelLaunch",
    "fused_adam",
    "kernel_sources",
    "launch",
    "momentum",
    "pack",
    "sgd",
    "translation_unit",
]
