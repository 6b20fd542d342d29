"""minidp.utils.install_check: run_check trains a small model and says minidp works."""

import pytest

import minidp


def test_run_check_trains_and_says_minidp_works(capsys):
    minidp.utils.run_check()
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "Running verify minidp program ... ",
        "minidp works well on 1 CPU.",
        "minidp is installed successfully! Paddle dygraph scripts can run on it now.",
    ]


def test_run_check_fails_loudly_when_training_does_not_work(monkeypatch):
    monkeypatch.setattr(minidp.optimizer.Adam, "step", lambda self: None)
    with pytest.raises(RuntimeError, match="did not train"):
        minidp.utils.run_check()
