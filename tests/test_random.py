"""minidp.core.random: unseeded processes differ, seed() repeats a run, states round-trip, and every
consumer (creation ops, dropout, initializers, samplers, DataLoader shuffle) draws from it; and
``minidp.Generator``, an independent host generator with Paddle's seed and state methods."""

import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

import minidp
import minidp.core.random as mrandom
from minidp.distributed.spawn import spawn


import random_tasks

REPO = str(Path(__file__).resolve().parents[1])
DRAW = (
    "import minidp; d = minidp.io.DataLoader(list(range(20)), batch_size=20, shuffle=True); "
    "print(minidp.rand([4]).numpy().tolist(), next(iter(d)).numpy().tolist())"
)


def fresh_process_draw(prefix: str = "") -> str:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run(
        [sys.executable, "-c", prefix + DRAW], env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def test_unseeded_processes_draw_different_values():
    assert fresh_process_draw() != fresh_process_draw()


def test_seeded_processes_draw_identical_values():
    seeded = "import minidp; minidp.seed(5); "
    assert fresh_process_draw(seeded) == fresh_process_draw(seeded)


def test_seed_returns_the_host_generator_with_its_seed():
    generator = minidp.seed(123)
    assert isinstance(generator, mrandom.Generator)
    assert generator.initial_seed() == 123


@pytest.mark.parametrize(
    "draw",
    [
        lambda: minidp.randn([5]).numpy(),
        lambda: minidp.rand([5]).numpy(),
        lambda: minidp.uniform([5]).numpy(),
        lambda: minidp.randint(0, 100, [5]).numpy(),
        lambda: minidp.randperm(10).numpy(),
        lambda: minidp.nn.functional.dropout(minidp.ones([64]), p=0.5).numpy(),
        lambda: minidp.nn.Linear(4, 3).weight.numpy(),
        lambda: numpy.array(list(minidp.io.RandomSampler(list(range(30))))),
        lambda: next(iter(minidp.io.DataLoader(list(range(30)), batch_size=30, shuffle=True))).numpy(),
    ],
    ids=["randn", "rand", "uniform", "randint", "randperm", "dropout", "initializer", "sampler", "shuffle"],
)
def test_every_consumer_repeats_after_seed_and_after_state_restore(draw):
    minidp.seed(42)
    first = draw()
    minidp.seed(42)
    numpy.testing.assert_array_equal(draw(), first)
    state = minidp.get_rng_state()
    after_state = draw()
    assert not numpy.array_equal(after_state, draw())  # the stream moves on
    minidp.set_rng_state(state)
    numpy.testing.assert_array_equal(draw(), after_state)


def test_state_is_a_snapshot_not_a_live_view():
    minidp.seed(1)
    state = minidp.get_rng_state()
    expected = minidp.rand([3]).numpy()
    minidp.rand([100])
    minidp.set_rng_state(state)
    numpy.testing.assert_array_equal(minidp.rand([3]).numpy(), expected)
    minidp.set_rng_state(state)
    numpy.testing.assert_array_equal(minidp.rand([3]).numpy(), expected)


def test_cuda_states_are_empty_without_gpus_as_in_paddle():
    if minidp.core.backend.cuda_device_count():
        pytest.skip("a GPU is visible; the GPU test below covers this machine")
    assert minidp.get_cuda_rng_state() == []
    minidp.set_cuda_rng_state([])
    with pytest.raises(ValueError, match="0 visible GPUs"):
        minidp.set_cuda_rng_state(minidp.get_rng_state())


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: minidp.seed(1.5), TypeError, "must be an int"),
        (lambda: minidp.set_rng_state([]), ValueError, "one generator"),
        (lambda: minidp.set_rng_state(["state"]), TypeError, "GeneratorState"),
        (lambda: minidp.get_rng_state(device=3), TypeError, "device must be"),
    ],
)
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_forked_children_of_an_unseeded_process_draw_their_own_values(monkeypatch):
    monkeypatch.setattr(mrandom, "_explicitly_seeded", False)
    draws = []
    for _ in range(2):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write, minidp.rand([4]).numpy().tobytes())
            os._exit(0)
        os.waitpid(pid, 0)
        draws.append(os.read(read, 64))
        os.close(read)
        os.close(write)
    assert draws[0] != draws[1]


@pytest.mark.gpu
def test_gpu_dropout_repeats_after_seed_and_state_restore():
    if not minidp.core.backend.cuda_device_count():
        pytest.skip("needs a CUDA device")
    minidp.set_device("gpu:0")
    try:
        minidp.seed(3)
        first = minidp.nn.functional.dropout(minidp.ones([1001]), p=0.5).numpy()
        minidp.seed(3)
        numpy.testing.assert_array_equal(minidp.nn.functional.dropout(minidp.ones([1001]), p=0.5).numpy(), first)
        state = minidp.get_cuda_rng_state()
        expected = minidp.nn.functional.dropout(minidp.ones([7]), p=0.5).numpy()
        minidp.set_cuda_rng_state(state)
        numpy.testing.assert_array_equal(minidp.nn.functional.dropout(minidp.ones([7]), p=0.5).numpy(), expected)
    finally:
        minidp.set_device("cpu")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed, nprocs", [(None, 2), (None, 3), (9, 2)], ids=["unseeded-2", "unseeded-3", "seeded-2"])
def test_ranks_of_an_unseeded_job_draw_different_batches_but_start_from_equal_models(seed, nprocs):
    context = spawn(random_tasks.draw_and_build, args=(seed,), nprocs=nprocs)
    reports = [queue.get() for queue in context.return_queues]
    for first, second in zip(reports, reports[1:] + reports[:1]):
        if seed is None:
            assert first["batch"] != second["batch"]
            assert first["mask"] != second["mask"]
            assert not numpy.array_equal(first["initial"], second["initial"])
        else:
            assert first["batch"] == second["batch"]
            assert first["mask"] == second["mask"]
    for report in reports:  # DataParallel broadcast rank 0's parameters
        numpy.testing.assert_array_equal(report["synced"], reports[0]["initial"])


class _DeviceBuffer(numpy.ndarray):
    """A host array that offers the ``.data.ptr`` of a CuPy array."""

    @property
    def data(self):
        return type("Pointer", (), {"ptr": self.ctypes.data})()


class _StandinCupy:
    """Just what minidp.core.random needs from CuPy: empty() and the current device."""

    class cuda:  # noqa: N801  (CuPy's name)
        class Device:
            id = 0

    @staticmethod
    def empty(count, dtype):
        return numpy.empty(count, dtype).view(_DeviceBuffer)


class _StandinCurand:
    """cuRAND's calls: the value at stream position i is a fixed function of (seed, i)."""

    CURAND_RNG_PSEUDO_PHILOX4_32_10 = 5

    def __init__(self):
        self.offsets = []

    def createGenerator(self, method):  # noqa: N802  (cuRAND's names)
        assert method == self.CURAND_RNG_PSEUDO_PHILOX4_32_10
        return {"method": method}

    def destroyGenerator(self, handle):  # noqa: N802
        handle.clear()

    def setPseudoRandomGeneratorSeed(self, handle, seed):  # noqa: N802
        handle["seed"] = seed

    def setGeneratorOffset(self, handle, offset):  # noqa: N802
        handle["offset"] = offset
        self.offsets.append(offset)

    def generateUniform(self, handle, pointer, count):  # noqa: N802
        import ctypes

        positions = handle["offset"] + numpy.arange(count)
        values = ((handle["seed"] % 9973) * 7919 + positions * 104729) % 99991 / 99991.0 + 1e-6
        numpy.ctypeslib.as_array((ctypes.c_float * count).from_address(pointer))[:] = values


@pytest.fixture
def standin_gpu(monkeypatch):
    curand = _StandinCurand()
    monkeypatch.setattr(mrandom, "_curand", lambda: curand)
    monkeypatch.setattr(minidp.core.backend, "_cupy", lambda: _StandinCupy)
    monkeypatch.setattr(minidp.core.backend, "cuda_device_count", lambda: 1)
    monkeypatch.setattr(mrandom, "_device_generators", {})
    return curand


def test_gpu_generator_repeats_after_seed_and_restores_its_state(standin_gpu):
    minidp.seed(21)
    first = numpy.array(mrandom.device_uniform((2, 3)))
    assert first.shape == (2, 3) and len(set(first.ravel().tolist())) == 6
    minidp.seed(21)
    numpy.testing.assert_array_equal(mrandom.device_uniform((2, 3)), first)
    state = minidp.get_cuda_rng_state()
    assert len(state) == 1 and minidp.get_rng_state("gpu")[0].value == state[0].value
    expected = numpy.array(mrandom.device_uniform((5,)))
    minidp.set_cuda_rng_state(state)
    numpy.testing.assert_array_equal(mrandom.device_uniform((5,)), expected)
    # Each draw starts where the last one ended, rounded up to Philox's blocks of four values.
    assert standin_gpu.offsets == [0, 0, 8, 8]
    minidp.seed(22)
    assert not numpy.array_equal(mrandom.device_uniform((2, 3)), first)


def test_gpu_generators_of_unseeded_processes_start_from_the_os(standin_gpu, monkeypatch):
    monkeypatch.setattr(mrandom, "_explicitly_seeded", False)
    first = numpy.array(mrandom.device_uniform((4,)))
    monkeypatch.setattr(mrandom, "_device_generators", {})
    assert not numpy.array_equal(mrandom.device_uniform((4,)), first)


def test_uniform_with_its_own_seed_repeats_and_leaves_the_process_generator_alone():
    first = minidp.uniform([4], seed=3).numpy()
    numpy.testing.assert_array_equal(minidp.uniform([4], seed=3).numpy(), first)
    minidp.seed(1)
    expected = minidp.uniform([2]).numpy()
    minidp.seed(1)
    minidp.uniform([2], seed=5)
    numpy.testing.assert_array_equal(minidp.uniform([2]).numpy(), expected)


def test_generator_is_an_independent_host_generator():
    g = minidp.Generator()
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    first = [g.random() for _ in range(3)]
    g.manual_seed(5)
    assert [g.random() for _ in range(3)] == first
    state = g.get_state()
    after = g.random()
    g.set_state(state)
    assert g.random() == after
    assert g.seed() == g.initial_seed()
    assert minidp.Generator("cpu") is not minidp.Generator(minidp.CPUPlace())
    with pytest.raises(ValueError, match="only host"):
        minidp.Generator("gpu:0")
