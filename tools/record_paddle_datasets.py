"""Record what Paddle 3.3.1's ``paddle.vision.datasets`` read from the tiny synthetic files in
tests/fixtures/datasets/ (written by ``tests/dataset_cases.py``) into
tests/fixtures/paddle_datasets.npz (items) and tests/fixtures/paddle_datasets.json (lengths,
classes, samples, the kind of each item part).

Run by hand with the interpreter that has Paddle and Pillow (minidp never imports Paddle):

    /path/to/paddle-venv/bin/python tools/record_paddle_datasets.py [--write-files]

``--write-files`` first rewrites the synthetic files themselves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from command_line import answer_help

answer_help(__name__, __doc__)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import paddle  # noqa: E402
import paddle.vision  # noqa: E402
from dataset_cases import CASES, as_record, describe, write_all  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def main() -> int:
    if "--write-files" in sys.argv:
        write_all()
    arrays: dict = {}
    facts: dict = {"paddle_version": paddle.__version__, "cases": {}}
    for case_id, build, indices in CASES:
        dataset = build(paddle.vision)
        found = describe(dataset)
        for index in indices:
            item = dataset[index]
            for part, value in enumerate(item):
                kind, array = as_record(value)
                arrays[f"{case_id}/{index}/{part}"] = array
                found[f"{index}/{part}"] = [kind, str(array.dtype), list(array.shape), len(item), type(item).__name__]
        facts["cases"][case_id] = found
    np.savez_compressed(FIXTURES / "paddle_datasets.npz", **arrays)
    (FIXTURES / "paddle_datasets.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(CASES)} cases into tests/fixtures/paddle_datasets.npz and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
