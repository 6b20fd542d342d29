"""minidp: a minimal deep-learning runtime for data-parallel training.

The public names follow PaddlePaddle's, so a script written for ``paddle`` runs after replacing
the import. NumPy runs everything on the CPU, CuPy on NVIDIA GPUs (``set_device('gpu:0')``).
"""
from . import autograd, backend, log_config
from .autograd import Parameter, PyLayer, Tensor, no_grad, is_grad_enabled, set_grad_enabled
from .backend import get_device, is_compiled_with_cuda, set_device
from .ops import *  # noqa: F401,F403  (the op functions are the top-level API)
from .ops import __all__ as _op_names
from . import io, nn, optimizer, distributed
from .serialization import load, save
from .distributed.data_parallel import DataParallel
from . import linalg
from .ops.creation import shape

float16 = backend.DTYPES["float16"]
bfloat16 = backend.DTYPES["bfloat16"]
float32 = backend.DTYPES["float32"]
float64 = backend.DTYPES["float64"]
int32 = backend.DTYPES["int32"]
int64 = backend.DTYPES["int64"]
bool = backend.DTYPES["bool"]  # noqa: A001  (Paddle exposes paddle.bool)

__version__ = "0.1.0"

log_config.configure_from_environment()
