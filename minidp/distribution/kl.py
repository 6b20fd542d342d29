"""``kl_divergence(p, q)``: the KL divergence looked up by the types of p and q.

Formulas are registered per pair of classes with ``register_kl``; a lookup takes the most
specific registered pair that both types derive from (p's class first), and warns when ordering
q's class first would pick a different formula.
"""

from __future__ import annotations

import warnings
from typing import Callable, Dict, Tuple, Type

from ..core.tensor import Tensor
from ..ops.unary import digamma, lgamma
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .normal import Normal
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_FORMULAS: Dict[Tuple[type, type], Callable] = {}


def register_kl(cls_p: Type[Distribution], cls_q: Type[Distribution]) -> Callable[[Callable], Callable]:
    """A decorator registering ``f(p, q)`` as KL(p || q) for p of ``cls_p`` and q of ``cls_q``."""
    for name, cls in (("cls_p", cls_p), ("cls_q", cls_q)):
        if not (isinstance(cls, type) and issubclass(cls, Distribution)):
            raise TypeError(f"register_kl: {name} must be a subclass of Distribution, got {cls!r}")

    def register(formula: Callable) -> Callable:
        _FORMULAS[cls_p, cls_q] = formula
        return formula

    return register


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched like the two distributions."""
    kinds = (type(p), type(q))
    matches = [pair for pair in _FORMULAS if issubclass(kinds[0], pair[0]) and issubclass(kinds[1], pair[1])]
    if not matches:
        raise NotImplementedError(f"no KL divergence registered for ({kinds[0].__name__}, {kinds[1].__name__})")

    def distance(pair: Tuple[type, type], side: int) -> int:
        return kinds[side].__mro__.index(pair[side])

    p_first = min(matches, key=lambda pair: (distance(pair, 0), distance(pair, 1)))
    q_first = min(matches, key=lambda pair: (distance(pair, 1), distance(pair, 0)))
    if _FORMULAS[p_first] is not _FORMULAS[q_first]:
        warnings.warn(
            f"ambiguous kl_divergence({kinds[0].__name__}, {kinds[1].__name__}): "
            f"register_kl({p_first[0].__name__}, {q_first[1].__name__}) to choose",
            RuntimeWarning,
        )
    return _FORMULAS[p_first](p, q)


def _by_method(p: Distribution, q: Distribution) -> Tensor:
    return p.kl_divergence(q)


for _cls in (Bernoulli, Categorical, Normal, Uniform):
    register_kl(_cls, _cls)(_by_method)


@register_kl(Beta, Beta)
def _beta_beta(p: Beta, q: Beta) -> Tensor:
    p_total, q_total = p.alpha + p.beta, q.alpha + q.beta
    return (
        lgamma(q.alpha)
        + lgamma(q.beta)
        + lgamma(p_total)
        - lgamma(p.alpha)
        - lgamma(p.beta)
        - lgamma(q_total)
        + (p.alpha - q.alpha) * digamma(p.alpha)
        + (p.beta - q.beta) * digamma(p.beta)
        + (q_total - p_total) * digamma(p_total)
    )


@register_kl(Dirichlet, Dirichlet)
def _dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    a_total = a.sum(axis=-1)
    return (
        lgamma(a_total)
        - lgamma(b.sum(axis=-1))
        - (lgamma(a) - lgamma(b)).sum(axis=-1)
        + ((a - b) * (digamma(a) - digamma(a_total).unsqueeze(-1))).sum(axis=-1)
    )
