"""minidp.load reads Paddle's pickled checkpoints (tests/fixtures/, written by
tools/record_paddle_checkpoints.py with Paddle 3.3.1) and refuses any other pickle unexecuted."""

import collections
import os
import pickle
import tracemalloc
from pathlib import Path

import numpy
import pytest

import minidp

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Paddle's output of the saved model on X, and its parameters after one more Adam step from the
# saved optimizer state (printed by tools/record_paddle_checkpoints.py).
PADDLE_OUTPUT = [0.13452665507793427, 0.044212356209754944, 0.05133452266454697, 0.12243685871362686]
PADDLE_AFTER_SECOND_STEP = {
    "0.weight": [
        [-1.0362889766693115, 0.5604243874549866],
        [0.40571361780166626, -1.0142062902450562],
        [-0.2261935919523239, 0.9979432225227356],
    ],
    "0.bias": [-0.019991347566246986, -0.01999301090836525],
    "2.weight": [[0.32951754331588745], [0.40283530950546265]],
    "2.bias": [-0.01999996416270733],
}


def mlp():
    return minidp.nn.Sequential(minidp.nn.Linear(3, 2), minidp.nn.ReLU(), minidp.nn.Linear(2, 1))


def inputs():
    return minidp.arange(12, dtype="float32").reshape([4, 3]) / 10 - 0.5


def test_paddle_state_dict_loads_into_a_minidp_model_with_paddle_names():
    state = minidp.load(FIXTURES / "paddle_mlp.pdparams")
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(isinstance(value, minidp.Tensor) for value in state.values())
    assert state["0.weight"].shape == [3, 2]  # Paddle's Linear weight is [in, out]
    model = mlp()
    missing, unexpected = model.set_state_dict(state)
    assert not missing and not unexpected
    numpy.testing.assert_allclose(model(inputs()).numpy().ravel(), PADDLE_OUTPUT, rtol=1e-6)


def test_paddle_optimizer_state_continues_the_paddle_run():
    model = mlp()
    model.set_state_dict(minidp.load(FIXTURES / "paddle_mlp.pdparams"))
    opt = minidp.optimizer.Adam(0.01, parameters=model.parameters())
    opt.set_state_dict(minidp.load(FIXTURES / "paddle_mlp_adam.pdopt"))
    model(inputs()).sum().backward()
    opt.step()
    for name, value in model.state_dict().items():
        numpy.testing.assert_allclose(value.numpy(), PADDLE_AFTER_SECOND_STEP[name], rtol=1e-5, atol=1e-7)


def test_return_numpy_gives_arrays():
    state = minidp.load(FIXTURES / "paddle_mlp.pdparams", return_numpy=True)
    assert all(isinstance(value, numpy.ndarray) for value in state.values())


def test_general_objects_load_as_paddle_loads_them():
    loaded = minidp.load(FIXTURES / "paddle_misc_protocol2.pdparams")
    assert isinstance(loaded, collections.OrderedDict)
    assert loaded["scalar"] == 1.5 and isinstance(loaded["scalar"], numpy.float64)
    assert loaded["nested"] == [1, (2, 3.0), {"s": "text"}]
    assert loaded["ids"] == {1, 2} and loaded["none"] is None
    assert isinstance(loaded["tensor"], minidp.Tensor) and loaded["tensor"].dtype == minidp.int32
    numpy.testing.assert_array_equal(loaded["tensor"].numpy(), [[1, 2], [3, 4]])
    # Paddle leaves plain arrays as arrays when the object also holds tensors.
    numpy.testing.assert_array_equal(loaded["flags"], [True, False])


class _RunsCommand:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def test_a_pickle_that_calls_a_function_is_refused_without_running(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pdparams"
    path.write_bytes(pickle.dumps({"w": _RunsCommand(f"touch {marker}")}, protocol=4))
    with pytest.raises(ValueError, match=r"evil\.pdparams.*(posix|os)\.system.*refused"):
        minidp.load(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "payload, refused",
    [
        (pickle.dumps(collections.Counter(a=1)), "collections.Counter"),
        (pickle.dumps(numpy.array([object()], dtype=object)), "object dtype"),
        (b"\x80\x02c__builtin__\neval\nq\x00X\x06\x00\x00\x001 + 1q\x01\x85q\x02Rq\x03.", "__builtin__.eval"),
    ],
    ids=["other-class", "object-array", "protocol2-eval"],
)
def test_other_globals_and_object_arrays_are_refused(tmp_path, payload, refused):
    path = tmp_path / "bad.pdopt"
    path.write_bytes(payload)
    with pytest.raises(ValueError, match=refused.replace(".", r"\.")):
        minidp.load(path)


def test_a_truncated_paddle_checkpoint_is_reported(tmp_path):
    path = tmp_path / "cut.pdparams"
    path.write_bytes((FIXTURES / "paddle_mlp.pdparams").read_bytes()[:200])
    with pytest.raises(ValueError, match="cut.pdparams.*truncated or corrupted"):
        minidp.load(path)


def test_minidp_checkpoints_stay_pickle_free(tmp_path):
    path = tmp_path / "own.pdparams"
    minidp.save(mlp().state_dict(), path)
    assert not path.read_bytes().startswith(b"\x80")
    assert set(minidp.load(path)) == {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_keep_name_table_keeps_paddles_parameter_names():
    state = minidp.load(FIXTURES / "paddle_mlp.pdparams", keep_name_table=True)
    assert state["StructuredToParameterName@@"] == {
        "0.weight": "linear_0.w_0",
        "0.bias": "linear_0.b_0",
        "2.weight": "linear_1.w_0",
        "2.bias": "linear_1.b_0",
    }
    assert isinstance(state["0.weight"], minidp.Tensor)


def test_arrays_paddle_split_into_slices_are_joined(tmp_path):
    # The layout paddle.save writes with protocol 2 or 3 for arrays over 1 GiB, on a small array.
    whole = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    flat = whole.reshape(-1)
    saved = {
        "w@@.0": flat[:5],
        "w@@.1": flat[5:],
        "b": numpy.ones(2, numpy.float32),
        "UnpackBigParamInfor@@": {"w": {"OriginShape": (3, 4), "slices": ["w@@.0", "w@@.1"]}},
    }
    path = tmp_path / "big.pdparams"
    path.write_bytes(pickle.dumps(saved, protocol=2))
    loaded = minidp.load(path, return_numpy=True)
    assert set(loaded) == {"w", "b"}
    numpy.testing.assert_array_equal(loaded["w"], whole)
    saved["UnpackBigParamInfor@@"] = {"w": {"OriginShape": (3, 4), "slices": ["w@@.0", "w@@.9"]}}
    path.write_bytes(pickle.dumps(saved, protocol=2))
    with pytest.raises(ValueError, match="malformed UnpackBigParamInfor@@"):
        minidp.load(path)


class _SharesData:
    """Pickles as an array built from ``data``: every instance names the same bytes object, which
    pickle stores once, so each costs the file a few bytes however large ``data`` is."""

    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        reconstruct = numpy.ones(1).__reduce__()[0]
        return reconstruct, (numpy.ndarray, (0,), b"b"), (1, (len(self.data),), numpy.dtype("u1"), False, self.data)


def _peak_loading(path, **kwargs):
    tracemalloc.start()
    try:
        loaded = minidp.load(path, **kwargs)
        return loaded, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_array_referenced_many_times_is_built_once(tmp_path):
    path = tmp_path / "shared.pdparams"
    shared = numpy.ones(1 << 17)  # 1 MiB, referenced 200 times
    path.write_bytes(pickle.dumps({f"k{i}": shared for i in range(200)}, protocol=4))
    loaded, peak = _peak_loading(path)
    assert len(loaded) == 200 and all(isinstance(value, minidp.Tensor) for value in loaded.values())
    assert len({id(value) for value in loaded.values()}) == 1
    assert peak < 4 * path.stat().st_size, f"peak {peak} bytes for a {path.stat().st_size}-byte file"


def test_arrays_sharing_data_beyond_the_files_size_are_refused(tmp_path):
    path = tmp_path / "expands.pdparams"
    data = bytes(1 << 20)
    path.write_bytes(pickle.dumps([_SharesData(data) for _ in range(200)], protocol=4))
    with pytest.raises(ValueError, match=r"expands\.pdparams.*more than the file's"):
        _peak_loading(path, return_numpy=True)


def test_one_array_named_as_many_slices_of_a_split_array_is_refused(tmp_path):
    shared = numpy.ones(1 << 17)  # 1 MiB: joined 200 times it would be 200 MiB
    saved = {f"w@@.{i}": shared for i in range(200)}
    saved["UnpackBigParamInfor@@"] = {"w": {"OriginShape": (200 << 17,), "slices": list(saved)}}
    path = tmp_path / "joins.pdparams"
    path.write_bytes(pickle.dumps(saved, protocol=2))
    with pytest.raises(ValueError, match=r"joins\.pdparams.*joins one array more than once"):
        _peak_loading(path, return_numpy=True)


class _Reduces:
    def __init__(self, reduced):
        self.reduced = reduced

    def __reduce__(self):
        return self.reduced


def test_the_text_of_nested_shared_lists_is_refused(tmp_path):
    nested = ["x" * 1000]
    for _ in range(40):  # 2**40 copies of the text: about 1 PB from a file of about 1 KiB
        nested = [nested, nested]
    path = tmp_path / "text.pdparams"
    path.write_bytes(pickle.dumps(_Reduces((str, (nested,))), protocol=4))
    with pytest.raises(ValueError, match=r"text\.pdparams.*str of a list"):
        minidp.load(path)
