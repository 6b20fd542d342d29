"""The public namespaces (``minidp/__init__.py`` and the packages' ``__init__``): dtype and math
constants, ``newaxis``, and aliases that are the very same objects as the names they stand for."""

import math
import subprocess
import sys

import numpy as np

import minidp
import minidp.nn.functional as F


def test_dtype_constants_name_the_numpy_dtypes():
    expected = {
        "int8": "int8",
        "int16": "int16",
        "uint8": "uint8",
        "uint32": "uint32",
        "uint64": "uint64",
        "float": "float32",
        "double": "float64",
        "half": "float16",
        "uint16": "bfloat16",
    }
    for attr, name in expected.items():
        assert getattr(minidp, attr).name == name, attr
    assert isinstance(minidp.float32, minidp.dtype)
    assert minidp.zeros([2], minidp.int16).dtype == np.int16
    assert minidp.to_tensor([1, 2]).astype("uint64").dtype == np.uint64


def test_math_constants_and_newaxis():
    assert (minidp.e, minidp.pi) == (math.e, math.pi)
    assert minidp.inf == math.inf and math.isnan(minidp.nan)
    x = minidp.ones([2, 3])
    assert x[minidp.newaxis].shape == [1, 2, 3]


def test_aliases_are_the_same_objects():
    assert minidp.nn.SiLU is minidp.nn.Silu
    assert F.logsigmoid is F.log_sigmoid
    assert minidp.conv2d is F.conv2d and minidp.conv1d is F.conv1d and minidp.conv3d is F.conv3d
    assert minidp.layer_norm is F.layer_norm and minidp.group_norm is F.group_norm
    assert minidp.adaptive_avg_pool1d is F.adaptive_avg_pool1d
    assert minidp.manual_seed is minidp.seed
    x = minidp.to_tensor([0, 5], dtype="int32")
    np.testing.assert_array_equal(minidp.bitwise_invert(x).numpy(), [-1, -6])
    np.testing.assert_array_equal(x.bitwise_invert().numpy(), [-1, -6])


def test_namespaces_a_script_names_load_on_first_use():
    """``import minidp`` (paid by every rank) leaves vision, hapi, amp, ... unloaded until a
    script names them; then they and their top-level names are there as in Paddle."""
    code = (
        "import sys, minidp\n"
        "lazy = ['amp', 'callbacks', 'distribution', 'hapi', 'jit', 'metric', 'static', 'utils', 'vision']\n"
        "assert not [n for n in lazy if 'minidp.' + n in sys.modules], sys.modules.keys()\n"
        "assert set(lazy) <= set(dir(minidp))\n"
        "assert minidp.Model is minidp.hapi.Model and minidp.autocast is minidp.amp.autocast\n"
        "from minidp import summary, create_parameter\n"
        "assert minidp.vision.models.resnet18 and 'minidp.vision' in sys.modules\n"
        "try:\n"
        "    minidp.no_such_name\n"
        "except AttributeError as error:\n"
        "    assert 'no_such_name' in str(error)\n"
        "else:\n"
        "    raise AssertionError('an unknown name was found')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
