"""Every error the product raises on purpose derives from the one base class, ZbenchError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest_zbench
from pytest_zbench.errors import ZbenchError


def test_every_error_type_derives_from_zbench_error():
    found, stray = [], []
    for info in pkgutil.walk_packages(pytest_zbench.__path__, "pytest_zbench."):
        if info.name == "pytest_zbench.plugin.xdist":  # imports pytest-xdist; holds no error type
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, Exception) and not issubclass(value, Warning)
                    and value.__module__ == module.__name__):
                (found if issubclass(value, ZbenchError) else stray).append(f"{info.name}.{name}")
    assert stray == [] and len(found) > 10, stray
