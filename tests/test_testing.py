"""minidp.testing: golden files repeat exactly, hold what they promise, and comparisons catch
a perturbed tensor; the equivalence check passes a correct job and fails a wrong one."""

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import minidp
import minidp.testing as mt
from minidp.testing.compare import main as compare_main

ROOT = Path(__file__).resolve().parent.parent
rng = np.random.default_rng(0)
DATA = [
    (rng.standard_normal((8, 5)).astype("float32"), rng.standard_normal((8, 1)).astype("float32")) for _ in range(3)
]


def model():
    return minidp.nn.Sequential(minidp.nn.Linear(5, 4), minidp.nn.Tanh(), minidp.nn.Linear(4, 1))


def mse(out, y):
    return ((out - y) ** 2).mean()


def sgd(params):
    return minidp.optimizer.SGD(0.1, parameters=params)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    directory = tmp_path_factory.mktemp("golden")
    paths = [mt.golden(model, mse, DATA, 2, 3, sgd, out=str(directory / f"run{i}.npz"), seed=3) for i in range(2)]
    return paths


def test_a_golden_file_repeats_exactly_from_its_seed(recorded):
    first, second = (np.load(p, allow_pickle=False) for p in recorded)
    assert first.files == second.files
    for key in first.files:
        assert np.array_equal(first[key], second[key]), key


def test_a_golden_file_holds_inputs_local_and_averaged_gradients_and_parameters(recorded):
    manifest = mt.read_manifest(recorded[0])
    assert manifest["format"] == "minidp-golden/1" and manifest["world_size"] == 2
    names = [p["name"] for p in manifest["parameters"]]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    data = np.load(recorded[0], allow_pickle=False)
    assert [k for k in data.files if k.startswith("init/")] == [f"init/param/{n}" for n in names]
    for step in range(3):
        for rank in range(2):
            assert np.array_equal(data[f"step{step}/rank{rank}/input0"], DATA[step][0][rank * 4 : (rank + 1) * 4])
        for name in names:
            local = [data[f"step{step}/rank{r}/local_grad/{name}"] for r in range(2)]
            assert not np.array_equal(local[0], local[1])  # each rank saw other rows
            averaged = data[f"step{step}/rank0/avg_grad/{name}"]
            np.testing.assert_allclose(averaged, (local[0] + local[1]) / 2, rtol=1e-6, atol=1e-7)
            assert np.array_equal(averaged, data[f"step{step}/rank1/avg_grad/{name}"])
            assert np.array_equal(data[f"step{step}/rank0/param/{name}"], data[f"step{step}/rank1/param/{name}"])


def run_compare(*args):
    return subprocess.run(
        [sys.executable, "-m", "minidp.testing", "compare", *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


class Outcome(NamedTuple):
    code: int
    stdout: str
    stderr: str


def compare_in_process(capsys, *args):
    """What ``python -m minidp.testing compare ARGS`` prints and returns, run in this process."""
    code = compare_main(["compare", *args])
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def test_compare_passes_identical_files_and_catches_a_perturbed_gradient(recorded, tmp_path):
    same = run_compare(*recorded)
    assert same.returncode == 0, same.stdout + same.stderr
    data = dict(np.load(recorded[0], allow_pickle=False))
    data["step1/rank1/avg_grad/2.weight"] = data["step1/rank1/avg_grad/2.weight"] + 1e-3
    theirs = tmp_path / "theirs.npz"
    np.savez(theirs, **data)
    result = run_compare(recorded[0], str(theirs), "--atol", "1e-6")
    assert result.returncode == 1
    bad = [line for line in result.stdout.splitlines() if line.endswith("NO")]
    assert len(bad) == 1 and "avg_grad/2.weight" in bad[0] and bad[0].split()[0] == "1"
    assert run_compare(recorded[0], str(theirs), "--atol", "1e-2").returncode == 0


def test_compare_refuses_files_with_nothing_in_common(recorded, tmp_path):
    other = tmp_path / "other.npz"
    np.savez(other, weights=np.zeros(3))
    result = run_compare(recorded[0], str(other))
    assert result.returncode == 2 and "lacks 94 of the 94 tensors" in result.stderr


def test_compare_checks_every_tensor_of_the_golden_file_and_says_so(recorded, capsys):
    result = compare_in_process(capsys, *recorded)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "94 of 94 tensors checked, all within rtol=1e-05, atol=1e-06"
    assert any(line.split()[:2] == ["init", "init/param/0.weight"] for line in result.stdout.splitlines())


def test_a_recording_with_one_of_the_golden_tensors_fails(recorded, tmp_path, capsys):
    theirs = tmp_path / "one.npz"
    with np.load(recorded[0], allow_pickle=False) as data:
        np.savez(theirs, **{"step0/rank0/loss": data["step0/rank0/loss"]})
    result = compare_in_process(capsys, recorded[0], str(theirs))
    assert result.code == 2, result.stdout + result.stderr
    assert "lacks 93 of the 94 tensors" in result.stderr and "--only" in result.stderr


def test_a_shifted_starting_weight_fails(recorded, tmp_path, capsys):
    data = dict(np.load(recorded[0], allow_pickle=False))
    data["init/param/0.weight"] = data["init/param/0.weight"] + 1e-3
    theirs = tmp_path / "shifted.npz"
    np.savez(theirs, **data)
    result = compare_in_process(capsys, recorded[0], str(theirs))
    assert result.code == 1, result.stdout + result.stderr
    bad = [line for line in result.stdout.splitlines() if line.endswith("NO")]
    assert [line.split()[:2] for line in bad] == [["init", "init/param/0.weight"]]


def test_only_compares_a_named_subset_and_counts_it(recorded, tmp_path, capsys):
    with np.load(recorded[0], allow_pickle=False) as data:
        params = {k: data[k] for k in data.files if "/param/" in k and k.startswith("step")}
    theirs = tmp_path / "params.npz"
    np.savez(theirs, **params)
    result = compare_in_process(capsys, recorded[0], str(theirs), "--only", "step*/rank*/param/*")
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith(
        "24 of 94 tensors checked (--only step*/rank*/param/*), all within"
    )
    typo = compare_in_process(capsys, recorded[0], str(theirs), "--only", "step*/rank*/params/*")
    assert typo.code == 2 and "matches none" in typo.stderr


def test_equivalence_passes_a_correct_job_and_fails_a_wrong_one():
    report = mt.assert_data_parallel_equivalent(model, mse, DATA, 2, sgd)
    assert report.startswith("2 ranks against one process, 3 steps: largest difference")

    def summed(out, y):  # not a mean: averaging the ranks' sums halves the gradient
        return ((out - y) ** 2).sum()

    with pytest.raises(AssertionError, match="differs from one process on the whole batch"):
        mt.assert_data_parallel_equivalent(model, summed, DATA, 2, sgd, steps=1)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"world_size": 3}, ValueError, "divisible by world_size=3"),
        ({"steps": 5}, ValueError, "fewer than steps=5"),
        ({"steps": 0}, ValueError, "positive int"),
        ({"model": lambda: "not a layer", "world_size": 1}, TypeError, "minidp.nn.Layer"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match, tmp_path):
    arguments = dict(
        model=model, loss=mse, data=DATA, world_size=2, steps=2, optimizer=sgd, out=str(tmp_path / "g.npz")
    )
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        mt.golden(**arguments)


def test_pytorch_ddp_matches_minidp_golden_file(tmp_path):
    """Optional: runs where PyTorch is installed (it is never a dependency of minidp)."""
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "torch_ddp_against_golden.py"), "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert summary.startswith("94 of 94 tensors checked, all within"), summary
