"""minidp.utils.deprecated: Paddle's deprecation decorator (values checked against Paddle 3.3.1)."""

import warnings

import pytest

import minidp
from minidp.utils.deprecated import VisibleDeprecationWarning


def old(x):
    """Doubles x."""
    return 2 * x


def test_level_0_only_notes_it_in_the_docstring():
    f = minidp.utils.deprecated(update_to="paddle.add", since="1.0")(old)
    assert f is old and f.__doc__.startswith("\n\nWarning:\n    API ") and "Doubles x." in f.__doc__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(2) == 4


def test_level_1_warns_as_paddle_does():
    f = minidp.utils.deprecated(update_to="paddle.add", since="1.0", reason="r", level=1)(lambda x: x + 1)
    with pytest.warns(VisibleDeprecationWarning) as caught:
        assert f(1) == 2
    # Paddle 3.3.1 prints, for a function f of __main__, the same text around the module name
    assert str(caught[0].message) == (
        f'\nWarning:\nAPI "{__name__}.<lambda>" is deprecated since 1.0, and will be removed in future versions. '
        'Please use "paddle.add" instead.\n    Reason: r '
    )
    assert issubclass(VisibleDeprecationWarning, UserWarning)


def test_level_2_refuses_and_bad_arguments_are_named():
    f = minidp.utils.deprecated(level=2)(lambda: None)
    with pytest.raises(RuntimeError, match="has been deprecated"):
        f()
    with pytest.raises(ValueError, match="level"):
        minidp.utils.deprecated(level=3)
    with pytest.raises(ValueError, match="update_to"):
        minidp.utils.deprecated(update_to="torch.add")
    with pytest.raises(TypeError, match="since"):
        minidp.utils.deprecated(since=1.0)
