"""minidp.vision.models against Paddle 3.3.1: every model's state_dict names and shapes
(tests/fixtures/paddle_vision_models.json), forward passes of LeNet, ResNet-18 and
MobileNetV3-Small with the same made-up weights (tests/fixtures/paddle_vision.npz), a Paddle
``.pdparams`` file loaded by ``pretrained=True`` from Paddle's cache folder, and the errors."""

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import minidp
import minidp.vision.models as M
from minidp.vision.models import blocks
from minidp.utils import download
from vision_model_cases import FORWARD_CASES, MODELS, forward_weights

FIXTURES = Path(__file__).parent / "fixtures"
SHAPES = json.loads((FIXTURES / "paddle_vision_models.json").read_text())
OUTPUTS = np.load(FIXTURES / "paddle_vision.npz")


@pytest.mark.parametrize("name,kwargs", MODELS, ids=[f"{n}{sorted(k.items())}" for n, k in MODELS])
def test_state_dict_names_and_shapes_are_paddles(name, kwargs):
    model = getattr(M, name)(**kwargs)
    got = [[key, list(value.shape)] for key, value in model.state_dict().items()]
    assert got == SHAPES[f"{name}{sorted(kwargs.items())}"]


@pytest.mark.parametrize("case_id,name,kwargs,shape", FORWARD_CASES, ids=[c[0] for c in FORWARD_CASES])
def test_forward_matches_paddle(case_id, name, kwargs, shape):
    model = getattr(M, name)(**kwargs)
    model.eval()
    model.set_state_dict({k: minidp.to_tensor(v) for k, v in forward_weights(model.state_dict()).items()})
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(model(minidp.to_tensor(x)).numpy(), OUTPUTS[f"forward/{case_id}"], rtol=2e-4, atol=2e-4)


def test_lenet_trains_one_step():
    minidp.seed(0)
    model = M.LeNet()
    optimizer = minidp.optimizer.SGD(1e-4, parameters=model.parameters())
    x, y = minidp.randn([4, 1, 28, 28]), minidp.to_tensor([0, 1, 2, 3])
    loss = minidp.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    assert float(minidp.nn.functional.cross_entropy(model(x), y)) < float(loss)


def test_pretrained_reads_paddles_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(download, "WEIGHTS_HOME", str(tmp_path))
    monkeypatch.setattr(download, "RETRY_LIMIT", 1)
    with pytest.raises(ValueError, match="no pretrained weights for vgg13"):
        M.vgg13(pretrained=True)
    # A .pdparams as paddle.save writes it: a pickled dict of arrays, already in the cache.
    model = M.LeNet()
    state = {k: np.full(v.shape, 0.5, np.float32) for k, v in model.state_dict().items()}
    path = tmp_path / "lenet.pdparams"
    path.write_bytes(pickle.dumps(state, protocol=4))
    # Missing or with the wrong MD5, it is fetched again: here from a port nothing listens on.
    with pytest.raises(RuntimeError, match=r"http://127\.0\.0\.1:9/lenet\.pdparams.*put it in"):
        blocks.load_pretrained(model, "lenet", "http://127.0.0.1:9/lenet.pdparams", "0" * 32)
    blocks.load_pretrained(model, "lenet", "http://127.0.0.1:9/lenet.pdparams", download.md5_of(str(path)))
    assert float(model.fc[0].weight.mean()) == 0.5
    assert M.mobilenet.MODEL_URLS["mobilenetv1_1.0"][0].endswith("mobilenetv1_1.0.pdparams")


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        M.ResNet(M.BasicBlock, depth=20)
    with pytest.raises(ValueError, match="dilation"):
        M.BasicBlock(8, 8, dilation=2)
