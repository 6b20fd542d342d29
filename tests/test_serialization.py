"""minidp.save / minidp.load: round trips, atomic writes, clear errors, no pickle, exact resumption."""

import io
import os
import zipfile

import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
import minidp.optimizer as optim
from minidp.core.backend import BFLOAT16 as BF16
from minidp.serialization import load, save


def test_round_trip_keeps_types_structure_and_order(tmp_path):
    obj = {
        "tensor": minidp.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "array": np.array([[1, 2]], dtype=np.int16),
        "scalar": np.float32(1.5),
        "numbers": [1, 2.25, -7, True, None, "text", float("inf")],
        "tuple": (1, ("nested", [])),
        3: {"deep": {"empty": {}}},
        "big": 2**70,
    }
    path = tmp_path / "ckpt"
    save(obj, path)
    back = load(str(path))
    assert list(back) == list(obj)
    assert isinstance(back["tensor"], minidp.Tensor) and back["tensor"].dtype == np.float32
    np.testing.assert_array_equal(back["tensor"].numpy(), obj["tensor"].numpy())
    assert isinstance(back["array"], np.ndarray) and back["array"].dtype == np.int16
    assert back["scalar"] == np.float32(1.5) and isinstance(back["scalar"], np.float32)
    assert back["numbers"] == obj["numbers"] and isinstance(back["numbers"][3], bool)
    assert back["tuple"] == (1, ("nested", [])) and back[3] == {"deep": {"empty": {}}}
    assert back["big"] == 2**70
    as_numpy = load(path, return_numpy=True)
    assert isinstance(as_numpy["tensor"], np.ndarray)


def test_unsupported_objects_are_rejected_with_their_location(tmp_path):
    with pytest.raises(TypeError, match=r"obj\['model'\]"):
        save({"model": nn.Linear(2, 2)}, tmp_path / "x")
    with pytest.raises(TypeError, match="dtype object"):
        save({"a": np.array([{}], dtype=object)}, tmp_path / "x")
    with pytest.raises(TypeError, match="keys"):
        save({(1, 2): 1}, tmp_path / "x")
    assert not os.listdir(tmp_path)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "model.ckpt"
    save({"v": np.ones(3)}, path)
    original = path.read_bytes()

    def failing_write(entry, array, allow_pickle):
        entry.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", failing_write)
    with pytest.raises(OSError, match="disk full"):
        save({"v": np.zeros(3)}, path)
    assert path.read_bytes() == original
    assert os.listdir(path.parent) == ["model.ckpt"]


def test_missing_truncated_corrupted_and_foreign_files_raise_naming_the_path(tmp_path):
    path = tmp_path / "good.ckpt"
    save({"w": np.arange(1000, dtype=np.float64)}, path)
    data = path.read_bytes()
    with pytest.raises(FileNotFoundError, match="nowhere.ckpt"):
        load(tmp_path / "nowhere.ckpt")
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated.ckpt"):
        load(truncated)
    corrupted = tmp_path / "corrupted.ckpt"
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    corrupted.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match="corrupted.ckpt.*corrupted"):
        load(corrupted)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.ones(2))
    with pytest.raises(ValueError, match="foreign.npz.*not a minidp checkpoint"):
        load(foreign)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match="notes.txt"):
        load(text)
    with pytest.raises(ValueError, match="directory"):
        load(tmp_path)


def test_pickled_arrays_are_never_loaded(tmp_path):
    path = tmp_path / "evil.ckpt"
    save({"a": np.ones(2)}, path)
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"payload": 1}], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(path) as archive:
        meta = archive.read("minidp.json")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("minidp.json", meta)
        archive.writestr("arrays/0.npy", pickled.getvalue())
    with pytest.raises(ValueError, match="evil.ckpt"):
        load(path)


def make_model():
    return nn.Sequential(
        nn.Conv2D(1, 3, 3, padding=1), nn.BatchNorm2D(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 16, 5)
    )


def train_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.clear_grad()
    return loss.item()


def test_model_and_optimizer_resume_to_the_identical_next_step(tmp_path):
    minidp.seed(0)
    x = minidp.randn([8, 1, 4, 4])
    y = minidp.to_tensor(np.arange(8) % 5)
    model = make_model()
    opt = optim.AdamW(learning_rate=optim.lr.StepDecay(0.01, 2, 0.5), parameters=model.parameters())
    for _ in range(3):
        train_step(model, opt, x, y)
        opt._learning_rate.step()
    path = tmp_path / "run.ckpt"
    save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 3}, path)

    minidp.seed(123)
    resumed = make_model()
    resumed_opt = optim.AdamW(learning_rate=optim.lr.StepDecay(0.01, 2, 0.5), parameters=resumed.parameters())
    state = load(path)
    resumed.set_state_dict(state["model"])
    resumed_opt.set_state_dict(state["opt"])
    assert state["step"] == 3 and resumed_opt.get_lr() == opt.get_lr()
    assert train_step(resumed, resumed_opt, x, y) == train_step(model, opt, x, y)
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


# --- audit ---------------------------------------------------------------------------------------
def test_numpy_number_keys_and_edge_values_round_trip(tmp_path):
    obj = {
        np.int64(3): "three",
        np.bool_(True): None,
        "f16": np.ones(2, np.float16),
        "i64": minidp.to_tensor(np.arange(3, dtype=np.int64)),
        "zero_d": minidp.to_tensor(2.5),
        "empty": [],
        "tuple": (None, False, 0.5),
    }
    save(obj, tmp_path / "c")
    back = load(tmp_path / "c")
    assert back[3] == "three" and back[True] is None and type(list(back)[0]) is int
    assert back["f16"].dtype == np.float16 and back["i64"].dtype == np.int64
    assert isinstance(back["zero_d"], minidp.Tensor) and back["zero_d"].shape == [] and back["zero_d"].item() == 2.5
    assert back["empty"] == [] and back["tuple"] == (None, False, 0.5)


def test_saving_onto_a_directory_names_the_directory(tmp_path):
    with pytest.raises(IsADirectoryError, match=f"minidp.save: '{tmp_path}' is a directory"):
        save({"a": 1}, tmp_path)
    assert not os.listdir(tmp_path)


def test_save_accepts_paddles_protocol_argument(tmp_path):
    save({"a": np.ones(2)}, tmp_path / "p", protocol=4)
    np.testing.assert_array_equal(load(tmp_path / "p")["a"], np.ones(2))
    with pytest.raises(ValueError, match="protocol"):
        save({}, tmp_path / "q", protocol=5)


def test_a_file_name_at_the_length_limit_can_be_saved(tmp_path):
    path = tmp_path / ("m" * 250)
    save({"a": 1}, path)
    assert load(path) == {"a": 1} and os.listdir(tmp_path) == ["m" * 250]


def test_bfloat16_tensors_and_optimizer_state_survive_save_and_load(tmp_path):
    layer = minidp.nn.Linear(3, 2)
    layer.to(dtype="bfloat16")
    opt = optim.Adam(0.01, parameters=layer.parameters(), multi_precision=True)
    layer(minidp.ones([2, 3], "bfloat16")).sum().backward()
    opt.step()
    minidp.save(
        {"model": layer.state_dict(), "opt": opt.state_dict(), "array": np.ones(2, BF16), "scalar": BF16.type(1.5)},
        str(tmp_path / "ckpt"),
    )
    loaded = minidp.load(str(tmp_path / "ckpt"))
    for name, value in layer.state_dict().items():
        assert loaded["model"][name].dtype == BF16
        assert loaded["model"][name].numpy().tobytes() == value.numpy().tobytes()
    masters = loaded["opt"]["master_weights"]
    assert {name: m.dtype for name, m in masters.items()} == {p.name: np.float32 for p in layer.parameters()}
    assert loaded["array"].dtype == BF16 and loaded["scalar"] == 1.5 and loaded["scalar"].dtype == BF16
