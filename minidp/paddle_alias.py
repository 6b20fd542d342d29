"""``paddle`` as another name of ``minidp``, for one process: the import hook behind ``minidp.run``.

:func:`install` puts :class:`PaddleAliasFinder` first on ``sys.meta_path``. From then on this
process imports ``paddle`` as the very ``minidp`` package and every ``paddle.X.Y`` as the module
``minidp.X.Y`` (``paddle.nn is minidp.nn``), so a script written for Paddle runs without an edit
and never reaches a real Paddle installation. Nothing outside the process changes: no file is
written and a later interpreter started without the hook imports whatever ``paddle`` it finds.

A module Paddle has and minidp lacks fails at its import with a ``ModuleNotFoundError`` that names
it and says minidp does not provide it, instead of an ``AttributeError`` later on.

Processes that the script starts get the alias through :data:`SHIM_DIR`, a directory whose only
module, ``paddle``, installs the hook and stands aside for ``minidp``; :mod:`minidp.run` puts it
on the path of its own process and of its children.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Optional, Sequence

import minidp

__all__ = ["PaddleAliasFinder", "SHIM_DIR", "install", "installed", "minidp_name"]

SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle_shim")
"""The directory that makes ``import paddle`` install the alias in a process started without it."""


def minidp_name(paddle_name: str) -> Optional[str]:
    """The minidp module standing for ``paddle_name`` (``paddle.nn`` -> ``minidp.nn``), or None
    when the name is not ``paddle`` or one of its submodules."""
    if paddle_name == "paddle" or paddle_name.startswith("paddle."):
        return "minidp" + paddle_name[len("paddle") :]
    return None


class _ExistingModule(importlib.abc.Loader):
    """Loads a ``paddle`` name as a module minidp has already imported, leaving it as it is."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the minidp module was executed when minidp imported it."""


class PaddleAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``paddle`` and ``paddle.*`` as the same-named modules of minidp."""

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]] = None,
        target: Optional[types.ModuleType] = None,
    ) -> Optional[importlib.machinery.ModuleSpec]:
        name = minidp_name(fullname)
        if name is None:
            return None
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            missing = error.name or ""
            if not (name == missing or name.startswith(missing + ".")) or not missing.startswith("minidp"):
                raise  # a module minidp.X itself imports is missing: its own error says which
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: this run maps paddle to minidp {minidp.__version__}, "
                f"which does not provide {fullname} (docs/api_coverage.md lists what it covers); "
                "run the script with Paddle itself to use it",
                name=fullname,
            ) from None
        return importlib.util.spec_from_loader(fullname, _ExistingModule(module))


def installed() -> bool:
    """Whether this process imports ``paddle`` as minidp."""
    return any(isinstance(finder, PaddleAliasFinder) for finder in sys.meta_path)


def install() -> None:
    """Make this process import ``paddle`` and its submodules as minidp's (once; idempotent).

    Raises:
        RuntimeError: a real ``paddle`` is already imported in this process; the two cannot share
            one name, so install the alias before anything imports Paddle.
    """
    if installed():
        return
    loaded = sys.modules.get("paddle")
    if loaded is not None and loaded is not minidp and not _is_shim(loaded):
        raise RuntimeError(
            "paddle is already imported in this process (from "
            f"{getattr(loaded, '__file__', '?')}); install the minidp alias before anything imports paddle"
        )
    sys.meta_path.insert(0, PaddleAliasFinder())


def _is_shim(module: types.ModuleType) -> bool:
    """Whether ``module`` is the ``paddle`` of :data:`SHIM_DIR`, which is being imported."""
    return os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or "")) == SHIM_DIR
