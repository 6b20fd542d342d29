"""minidp/framework.py: Paddle's place objects and the execution mode (dynamic only), checked
against Paddle 3.3.1."""

import pytest

import minidp


def test_places_compare_and_print_as_paddles():
    assert minidp.CPUPlace() == minidp.CPUPlace() and repr(minidp.CPUPlace()) == "Place(cpu)"
    assert minidp.CUDAPlace(1) == minidp.CUDAPlace(1) != minidp.CUDAPlace(0)
    assert minidp.CUDAPlace(1).get_device_id() == 1
    with pytest.raises(TypeError, match="place must be a string"):
        minidp.to_tensor([1.0], place=0)
    with pytest.raises(TypeError, match="non-negative int"):
        minidp.CUDAPlace(-1)


def test_dynamic_mode_is_the_only_mode():
    assert minidp.in_dynamic_mode() is True
    assert minidp.disable_static() is None
    assert minidp.disable_static(minidp.CPUPlace()) is None
    with pytest.raises(RuntimeError, match="dynamic graph .* only"):
        minidp.enable_static()
    assert minidp.in_dynamic_mode()
