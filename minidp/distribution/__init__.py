"""``minidp.distribution``: Paddle's probability distributions (``paddle.distribution``).

Each class lives in its own module; ``kl`` holds ``kl_divergence`` and the table of formulas.
"""

from . import bernoulli, beta, categorical, dirichlet, distribution, kl, multinomial, normal, uniform
from .bernoulli import *  # noqa: F401,F403
from .beta import *  # noqa: F401,F403
from .categorical import *  # noqa: F401,F403
from .dirichlet import *  # noqa: F401,F403
from .distribution import *  # noqa: F401,F403
from .kl import *  # noqa: F401,F403
from .multinomial import *  # noqa: F401,F403
from .normal import *  # noqa: F401,F403
from .uniform import *  # noqa: F401,F403

__all__ = [
    *bernoulli.__all__,
    *beta.__all__,
    *categorical.__all__,
    *dirichlet.__all__,
    *distribution.__all__,
    *kl.__all__,
    *multinomial.__all__,
    *normal.__all__,
    *uniform.__all__,
]
