"""minidp.utils.lazy_import: try_import returns the module or says how to install it."""

import sys

import pytest

import minidp


def test_try_import_returns_the_module():
    import json

    assert minidp.utils.try_import("json") is json
    assert minidp.utils.try_import("os.path").join("a", "b").endswith("b")


def test_a_missing_module_is_named_with_its_pypi_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 now raises ImportError
    with pytest.raises(ImportError, match=r"Failed importing cv2.*pip install opencv-python"):
        minidp.utils.try_import("cv2")


def test_a_missing_module_gets_the_given_message_or_the_install_command():
    with pytest.raises(ImportError, match=r"pip install no_such_module_minidp"):
        minidp.utils.try_import("no_such_module_minidp.sub")
    with pytest.raises(ImportError, match="^install it yourself$"):
        minidp.utils.try_import("no_such_module_minidp", "install it yourself")
    with pytest.raises(TypeError, match="module_name"):
        minidp.utils.try_import(3)
