"""minidp.hapi.progressbar: the progress text, in Paddle's layout (the whole log of a fit is
compared with Paddle's in tests/test_model.py)."""

import re

import numpy as np
import pytest

from minidp.hapi.progressbar import ProgressBar


def test_one_line_per_update_with_paddles_number_format(capsys):
    bar = ProgressBar(num=12, verbose=2)
    bar.update(3, [("loss", [0.51234]), ("acc", np.float32(1e-4)), ("note", "x")])
    line = capsys.readouterr().out
    assert re.fullmatch(r"step  3/12 - loss: 0\.5123 - acc: 1\.0000e-04 - note: x - \d+(us|ms|s)/step\n", line)
    ProgressBar(verbose=2).update(7, [("v", np.array([2.0]))])
    assert capsys.readouterr().out.startswith("step   7 - v: 2.0000 - ")


def test_the_bar_is_redrawn_in_place_with_an_eta(capsys):
    bar = ProgressBar(num=4, width=8, verbose=1)
    bar.update(2, [("loss", 1.5)])
    first = capsys.readouterr().out
    assert re.fullmatch(r"\rstep 2/4 \[===>\.\.\.\.\] - loss: 1\.5000 - ETA: \d+s - \d+(us|ms|s)/step", first)
    bar.update(4)
    last = capsys.readouterr().out
    assert last.startswith("\b" * (len(first) - 1) + "\rstep 4/4 [========]") and last.endswith("\n")


def test_a_step_count_must_be_positive():
    with pytest.raises(TypeError, match="positive int"):
        ProgressBar(num=0)
