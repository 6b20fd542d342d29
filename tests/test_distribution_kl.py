"""minidp.distribution.kl_divergence: the lookup by type pair and register_kl (the formulas
themselves are checked against Paddle in the tests of each distribution)."""

import pytest

import minidp
from minidp.distribution import Bernoulli, Multinomial, Normal, Uniform, kl, kl_divergence, register_kl


def test_unregistered_pairs_raise_not_implemented():
    with pytest.raises(NotImplementedError, match=r"\(Normal, Bernoulli\)"):
        kl_divergence(Normal(0.0, 1.0), Bernoulli(0.3))
    probs = minidp.to_tensor([0.5, 0.5])
    with pytest.raises(NotImplementedError):
        kl_divergence(Multinomial(2, probs), Multinomial(2, probs))
    with pytest.raises(NotImplementedError):  # registered, but Paddle 3.3.1's Uniform has no formula
        kl_divergence(Uniform(0.0, 1.0), Uniform(0.0, 2.0))


def test_most_specific_registration_wins(monkeypatch):
    monkeypatch.setattr(kl, "_FORMULAS", dict(kl._FORMULAS))

    class Wide(Normal):
        pass

    @register_kl(Wide, Normal)
    def wide_normal(p, q):
        return minidp.to_tensor(7.0)

    assert float(kl_divergence(Wide(0.0, 1.0), Normal(0.0, 1.0))) == 7.0
    assert float(kl_divergence(Normal(0.0, 1.0), Wide(0.0, 1.0))) == 0.0

    @register_kl(Normal, Wide)
    def normal_wide(p, q):
        return minidp.to_tensor(9.0)

    with pytest.warns(RuntimeWarning, match="ambiguous"):
        kl_divergence(Wide(0.0, 1.0), Wide(0.0, 1.0))


def test_register_kl_checks_its_classes():
    with pytest.raises(TypeError, match="cls_p must be a subclass of Distribution"):
        register_kl(int, Normal)
