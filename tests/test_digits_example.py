"""examples/train_digits.py end to end: accuracy on held-out digits, checkpoint, exact resumption."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "examples", "train_digits.py")


def run_example(*args):
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=path)
    done = subprocess.run(
        [sys.executable, SCRIPT, "--quiet", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def epoch_lines(output):
    return re.findall(r"^epoch +\d+ .*$", output, flags=re.MULTILINE)


def final_accuracy(output):
    return float(re.search(r"final test accuracy ([0-9.]+)", output).group(1))


@pytest.mark.timeout(180)
def test_cnn_reaches_95_percent_and_resumes_exactly(tmp_path):
    straight = run_example("--model", "cnn", "--epochs", "10", "--checkpoint", str(tmp_path / "straight.ckpt"))
    assert final_accuracy(straight) >= 0.95
    assert len(epoch_lines(straight)) == 10 and os.path.exists(tmp_path / "straight.ckpt")

    partial = tmp_path / "partial.ckpt"
    run_example("--model", "cnn", "--epochs", "4", "--checkpoint", str(partial))
    resumed = run_example("--model", "cnn", "--epochs", "10", "--checkpoint", str(partial), "--resume")
    assert "resumed from" in resumed and "after epoch 4" in resumed
    assert epoch_lines(resumed) == epoch_lines(straight)[4:]


@pytest.mark.timeout(120)
def test_mlp_trains(tmp_path):
    output = run_example("--model", "mlp", "--epochs", "10", "--checkpoint", str(tmp_path / "mlp.ckpt"))
    assert final_accuracy(output) >= 0.95


@pytest.mark.timeout(240)
def test_data_parallel_run_on_two_ranks_matches_its_resumed_run(tmp_path):
    """The README's main job: 2 gloo ranks under the launcher, rank 0 reports and checkpoints."""

    def launch(*args):
        env = dict(
            os.environ,
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
        )
        env = {k: v for k, v in env.items() if not k.startswith(("PADDLE_", "MASTER_"))}
        done = subprocess.run(
            [sys.executable, "-m", "minidp.distributed.launch", "--nproc_per_node", "2", SCRIPT, "--quiet", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    straight = launch("--epochs", "12", "--checkpoint", str(tmp_path / "dp.ckpt"))
    assert "[rank 0] data-parallel on 2 ranks, 719 training images per rank per epoch" in straight
    lines = re.findall(r"^\[rank (\d+)\] (epoch +\d+ .*)$", straight, flags=re.MULTILINE)
    assert [rank for rank, _ in lines] == ["0"] * 12, "only rank 0 reports epochs"
    assert final_accuracy(straight) >= 0.95
    waited = re.search(
        r"^\[rank 0\] waited for gradient communication [\d.]+ s over (\d+) steps "
        r"\([\d.]+ ms per step, [\d.]+% of the training time\)$",
        straight,
        flags=re.MULTILINE,
    )
    assert waited and int(waited.group(1)) > 0, straight

    partial = str(tmp_path / "partial.ckpt")
    launch("--epochs", "5", "--checkpoint", partial)
    resumed = launch("--epochs", "12", "--checkpoint", partial, "--resume")
    resumed_lines = re.findall(r"^\[rank 0\] (epoch +\d+ .*)$", resumed, flags=re.MULTILINE)
    assert resumed_lines == [line for _, line in lines][5:]
