"""The process's random generators: one on the host (NumPy) and one per GPU (cuRAND).

As in Paddle, a process that never calls :func:`seed` starts from a seed drawn from the
operating system, so two ranks of a job draw different values (different dropout masks,
different shuffles); ``seed(n)`` resets every generator so that a run repeats exactly. A forked
child of an unseeded process draws a fresh seed too (NumPy generators would otherwise continue
the parent's stream in every child).

Initializers, ``randn``/``rand``/``uniform``/..., dropout on the CPU, ``RandomSampler`` and
``DataLoader(shuffle=True)`` draw from the host generator; dropout on a GPU draws from that
GPU's generator. A device generator's state is its seed and its offset in cuRAND's Philox
stream; every draw sets the offset explicitly, so a saved state replays exactly.
"""

from __future__ import annotations

import copy
import os
import weakref
from typing import Any, List, Optional, Sequence

import numpy

from . import backend

__all__ = [
    "Generator",
    "GeneratorState",
    "seed",
    "get_rng_state",
    "set_rng_state",
    "get_cuda_rng_state",
    "set_cuda_rng_state",
    "host_generator",
]

_SEED_LIMIT = 2**63


def _os_seed() -> int:
    """A seed from the operating system's entropy source."""
    return int.from_bytes(os.urandom(8), "little") % _SEED_LIMIT


def _check_seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)):
        raise TypeError(f"seed: the seed must be an int, got {type(value).__name__}")
    return int(value) % 2**64


class GeneratorState:
    """A snapshot of one generator, for :func:`set_rng_state` (opaque, as Paddle's)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any) -> None:
        self.kind, self.value = kind, value

    def __repr__(self) -> str:
        return f"GeneratorState({self.kind})"


class Generator:
    """A host generator: NumPy's PCG64 behind Paddle's ``Generator`` methods.

    ``minidp.Generator()`` makes an independent one, seeded from the OS (``manual_seed`` sets
    it); the process's own generator, which ``minidp.seed`` resets, is one of these too.
    Only host generators can be made this way: ``device`` must be None or the CPU.
    """

    def __init__(self, device: Any = None) -> None:
        if device is not None and not _is_cpu(_place_string(device)):
            raise ValueError(
                f"Generator: only host (CPU) generators can be created, got device {device!r}; "
                f"GPU draws use the per-device generators minidp.seed resets"
            )
        self.manual_seed(_os_seed())

    def manual_seed(self, seed_value: int) -> "Generator":
        """Restart the stream from ``seed_value``."""
        self._initial_seed = _check_seed(seed_value)
        self.numpy = numpy.random.default_rng(self._initial_seed)
        return self

    def seed(self) -> int:
        """Restart the stream from a fresh seed drawn from the OS; returns that seed."""
        self.manual_seed(_os_seed())
        return self._initial_seed

    def random(self) -> int:
        """A random unsigned 64-bit integer from the stream."""
        return int(self.numpy.integers(0, 2**64, dtype=numpy.uint64))

    def initial_seed(self) -> int:
        """The seed the current stream started from (drawn from the OS when never seeded)."""
        return self._initial_seed

    def get_state(self) -> GeneratorState:
        """A copy of the current position in the stream."""
        return GeneratorState("cpu", copy.deepcopy(self.numpy.bit_generator.state))

    def set_state(self, state: GeneratorState) -> None:
        """Continue from a state :meth:`get_state` returned."""
        if not isinstance(state, GeneratorState) or state.kind != "cpu":
            raise TypeError(f"set_state: expected a host GeneratorState from get_rng_state(), got {state!r}")
        self.numpy.bit_generator.state = copy.deepcopy(state.value)


def _curand() -> Any:
    """cuRAND's binding in CuPy (imported on first use: it needs the CUDA libraries)."""
    from cupy_backends.cuda.libs import curand

    return curand


class _DeviceGenerator:
    """One GPU's generator: cuRAND Philox with an offset this object owns."""

    def __init__(self, device_id: int, seed_value: int) -> None:
        self.device_id = device_id
        self.seed, self.offset = seed_value, 0
        self._curand_handle = None

    def get_state(self) -> GeneratorState:
        return GeneratorState("gpu", (self.device_id, self.seed, self.offset))

    def set_state(self, state: GeneratorState) -> None:
        if not isinstance(state, GeneratorState) or state.kind != "gpu" or state.value[0] != self.device_id:
            raise TypeError(
                f"set_cuda_rng_state: expected the state of GPU {self.device_id} from "
                f"get_cuda_rng_state(), got {state!r}"
            )
        _, self.seed, self.offset = state.value

    def uniform(self, shape: tuple) -> Any:
        """float32 values in (0, 1] on this GPU; advances the offset by what was drawn."""
        curand, cupy = _curand(), backend._cupy()
        if self._curand_handle is None:
            self._curand_handle = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
            weakref.finalize(self, curand.destroyGenerator, self._curand_handle)
        count = int(numpy.prod(shape, dtype=numpy.int64))
        padded = -(-count // 4) * 4  # Philox yields values in fours; keep every draw aligned
        out = cupy.empty(padded, dtype=numpy.float32)
        curand.setPseudoRandomGeneratorSeed(self._curand_handle, self.seed)
        curand.setGeneratorOffset(self._curand_handle, self.offset)
        curand.generateUniform(self._curand_handle, out.data.ptr, padded)
        self.offset += padded
        return out[:count].reshape(shape)


_host = Generator()
_explicitly_seeded = False
_device_generators: dict = {}


def host_generator() -> numpy.random.Generator:
    """The NumPy generator everything on the host draws from."""
    return _host.numpy


def _device_generator(device_id: int) -> _DeviceGenerator:
    generator = _device_generators.get(device_id)
    if generator is None:
        start = _host.initial_seed() + device_id + 1 if _explicitly_seeded else _os_seed()
        generator = _device_generators[device_id] = _DeviceGenerator(device_id, start % 2**64)
    return generator


def device_uniform(shape: tuple) -> Any:
    """Uniform float32 values on the current GPU, from its generator."""
    return _device_generator(backend._cupy().cuda.Device().id).uniform(tuple(shape))


def seed(value: int) -> Generator:
    """Reset every generator of this process (host and each GPU) so that the run repeats exactly.

    Returns the host generator, as Paddle returns its CPU generator.
    """
    global _explicitly_seeded
    _host.manual_seed(value)
    _explicitly_seeded = True
    for device_id, generator in _device_generators.items():
        generator.seed, generator.offset = (_host.initial_seed() + device_id + 1) % 2**64, 0
    return _host


def _visible_gpus() -> List[int]:
    return list(range(backend.cuda_device_count()))


def get_cuda_rng_state() -> List[GeneratorState]:
    """The state of every visible GPU's generator (empty without GPUs, as in Paddle)."""
    return [_device_generator(i).get_state() for i in _visible_gpus()]


def set_cuda_rng_state(state_list: Sequence[GeneratorState]) -> None:
    """Restore what :func:`get_cuda_rng_state` returned."""
    states = list(state_list)
    if len(states) != len(_visible_gpus()):
        raise ValueError(f"set_cuda_rng_state: got {len(states)} states for {len(_visible_gpus())} visible GPUs")
    for device_id, state in enumerate(states):
        _device_generator(device_id).set_state(state)


def _place_string(device: Any) -> Any:
    """A CPUPlace/CUDAPlace or an int (a GPU number) as a place string; anything else unchanged."""
    if isinstance(device, int) and not isinstance(device, bool):
        return f"gpu:{device}"
    return device if isinstance(device, str) else backend.place_name(device)


def _is_cpu(device: Optional[str]) -> bool:
    place = backend.get_device() if device is None else device
    if not isinstance(place, str):
        raise TypeError(f"get_rng_state: device must be 'cpu', 'gpu', 'gpu:N' or None, got {place!r}")
    return place.lower().startswith("cpu")


def get_rng_state(device: Optional[str] = None) -> List[GeneratorState]:
    """The generators' states for ``device`` (default: the current one): ``[host]`` on the CPU,
    one per visible GPU otherwise."""
    return [_host.get_state()] if _is_cpu(device) else get_cuda_rng_state()


def set_rng_state(state_list: Sequence[GeneratorState], device: Optional[str] = None) -> None:
    """Restore what :func:`get_rng_state` returned for the same device."""
    if not _is_cpu(device):
        set_cuda_rng_state(state_list)
        return
    states = list(state_list)
    if len(states) != 1:
        raise ValueError(f"set_rng_state: the CPU has one generator; got {len(states)} states")
    _host.set_state(states[0])


def _reseed_forked_child() -> None:
    """A forked child of an unseeded process starts its own streams, as a fresh process would."""
    if not _explicitly_seeded:
        _host.manual_seed(_os_seed())
        _device_generators.clear()


os.register_at_fork(after_in_child=_reseed_forked_child)
