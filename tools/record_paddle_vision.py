"""Record Paddle 3.3.1's answers for minidp.vision's tests into tests/fixtures/paddle_vision.npz
(transform outputs, the models' LeNet forward) and tests/fixtures/paddle_vision_models.json (each
model's state_dict names and shapes).

Run by hand with the interpreter that has Paddle and Pillow (minidp never imports Paddle):

    /path/to/paddle-venv/bin/python tools/record_paddle_vision.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

from command_line import answer_help

answer_help(__name__, __doc__)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import paddle  # noqa: E402
import paddle.vision.transforms as T  # noqa: E402
from PIL import Image  # noqa: E402
from vision_cases import CASES, as_array, images  # noqa: E402
from vision_model_cases import FORWARD_CASES, MODELS, forward_weights  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def record_transforms(store: dict) -> None:
    inputs = images()
    for case_id, name, seed, build in CASES:
        img = Image.fromarray(inputs[name]) if name.endswith("_pil") else inputs[name]
        transform = build(T)
        if seed is not None:
            random.seed(seed)
            np.random.seed(seed)
        store[f"transform/{case_id}"] = as_array(transform(img))


def record_models(store: dict) -> dict:
    shapes = {}
    for name, kwargs in MODELS:
        model = getattr(paddle.vision.models, name)(**kwargs)
        shapes[f"{name}{sorted(kwargs.items())}"] = [[k, list(v.shape)] for k, v in model.state_dict().items()]
    for case_id, name, kwargs, input_shape in FORWARD_CASES:
        model = getattr(paddle.vision.models, name)(**kwargs)
        model.eval()
        weights = forward_weights(model.state_dict())
        model.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
        x = np.random.default_rng(1).standard_normal(input_shape).astype(np.float32)
        store[f"forward/{case_id}"] = model(paddle.to_tensor(x)).numpy()
    return shapes


def main() -> int:
    store: dict = {}
    record_transforms(store)
    shapes = record_models(store)
    np.savez_compressed(FIXTURES / "paddle_vision.npz", **store)
    (FIXTURES / "paddle_vision_models.json").write_text(json.dumps(shapes, indent=0) + "\n")
    print(f"recorded {len(store)} arrays and {len(shapes)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
