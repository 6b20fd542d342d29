"""minidp: a minimal deep-learning runtime for data-parallel training.

The public names follow PaddlePaddle's, so a script written for ``paddle`` runs after replacing
the import. NumPy runs everything on the CPU, CuPy on NVIDIA GPUs (``set_device('gpu:0')``).
"""

import importlib as _importlib

from . import autograd
from .core import backend, host_memory, log_config
from .autograd import Parameter, PyLayer, Tensor, no_grad, is_grad_enabled, set_grad_enabled
from .core.backend import get_device, is_compiled_with_cuda, set_device
from .ops import *  # noqa: F401,F403  (the op functions are the top-level API)
from . import io, nn, optimizer, distributed
from .serialization import load, save
from .batch import batch
from .framework import CPUPlace, CUDAPlace, disable_static, enable_static, in_dynamic_mode
from .core.param_attr import ParamAttr
from . import regularizer
from . import device
from .core.random import get_cuda_rng_state, get_rng_state, set_cuda_rng_state, set_rng_state
from .core.distributed.data_parallel import DataParallel
from . import linalg
from .ops.creation import shape
from . import base  # binds Tensor._grad_ivar, which scripts call without naming paddle.base

# Paddle namespaces a script reaches only by naming them: loaded on first use (PEP 562), so that
# `import minidp`, which every rank of a job pays, costs what the core and the common surface cost.
_LAZY_MODULES = ("amp", "callbacks", "distribution", "hapi", "jit", "metric", "static", "utils", "vision")
_LAZY_NAMES = {
    "Model": "hapi",
    "summary": "hapi",
    "autocast": "amp",
    "get_autocast_cpu_dtype": "amp",
    "get_autocast_dtype": "amp",
    "get_autocast_gpu_dtype": "amp",
    "is_autocast_enabled": "amp",
    "create_parameter": "static",
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        return getattr(_importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module 'minidp' has no attribute {name!r}")


def __dir__() -> list:
    return sorted({*globals(), *_LAZY_MODULES, *_LAZY_NAMES})


float16 = backend.DTYPES["float16"]
bfloat16 = backend.DTYPES["bfloat16"]
float32 = backend.DTYPES["float32"]
float64 = backend.DTYPES["float64"]
int32 = backend.DTYPES["int32"]
int64 = backend.DTYPES["int64"]
bool = backend.DTYPES["bool"]  # noqa: A001  (Paddle exposes paddle.bool)

# gaps: dtypes and constants, autograd helpers, printing, top-level functional forms
import math as _math

from .core.engine import enable_grad
from .autograd.gradients import grad
from .dtypes import dtype, finfo, get_default_dtype, iinfo, set_default_dtype
from .ops.sampling import range  # noqa: A004  (Paddle exposes paddle.range; minidp.ops leaves it out)
from .nn.functional import adaptive_avg_pool1d, conv1d, conv2d, conv3d, group_norm, layer_norm
from .printing import set_printoptions
from .core.random import Generator
from .core.size import Size

manual_seed = seed
int8 = backend.DTYPES["int8"]
int16 = backend.DTYPES["int16"]
uint8 = backend.DTYPES["uint8"]
uint16 = bfloat16  # Paddle's old name for bfloat16
uint32 = backend.DTYPES["uint32"]
uint64 = backend.DTYPES["uint64"]
float = float32  # noqa: A001  (paddle.float is float32)
double = float64
half = float16
e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan
newaxis = None

__version__ = "0.1.0"

log_config.configure_from_environment()

host_memory.keep_freed_memory()  # training steps reuse the memory the last one freed, no page faults
