"""``minidp.Generator`` (``minidp/random.py``): an independent host generator with Paddle's
seed and state methods."""
import pytest

import minidp


def test_generator_is_an_independent_host_generator():
    g = minidp.Generator()
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    first = [g.random() for _ in range(3)]
    g.manual_seed(5)
    assert [g.random() for _ in range(3)] == first
    state = g.get_state()
    after = g.random()
    g.set_state(state)
    assert g.random() == after
    assert g.seed() == g.initial_seed()
    assert minidp.Generator("cpu") is not minidp.Generator(minidp.CPUPlace())
    with pytest.raises(ValueError, match="only host"):
        minidp.Generator("gpu:0")
