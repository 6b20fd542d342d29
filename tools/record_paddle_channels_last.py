"""Record Paddle's answers to the channels-last cases of ``tests/channels_last_cases.py``.

Run by hand with an interpreter that has Paddle (kept in its own virtual environment; minidp
never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_channels_last.py

It stores, in ``tests/fixtures/paddle_channels_last.npz`` (plain arrays, no pickle), every output,
its dtype name and the input gradients of each case, as ``channels_last_cases.run_case`` returns
them, and the Paddle version.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from command_line import answer_help

answer_help(__name__, __doc__)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import paddle  # noqa: E402
from channels_last_cases import CASES, run_case  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "paddle_channels_last.npz"


def main() -> int:
    store: dict = {"paddle_version": np.array(paddle.__version__)}
    for case in CASES:
        store.update(run_case(paddle, case))
    np.savez_compressed(OUT, **store)
    print(f"recorded {len(CASES)} cases into {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
