"""``minidp.vision.models``: LeNet, VGG, ResNet and MobileNet V1/V2/V3 with Paddle's layer names,
so Paddle's ``.pdparams`` load into them with ``set_state_dict``."""

from .lenet import *  # noqa: F401,F403
from .lenet import __all__ as _lenet
from .mobilenet import *  # noqa: F401,F403
from .mobilenet import __all__ as _mobilenet
from .resnet import *  # noqa: F401,F403
from .resnet import __all__ as _resnet
from .vgg import *  # noqa: F401,F403
from .vgg import __all__ as _vgg

__all__ = _lenet + _mobilenet + _resnet + _vgg
