"""Package attributes that load their module on first use (PEP 562).

A package whose names pull in numpy or a native library keeps `import package` light: every CLI command
declares each planner's options, and `sayplan --help` should not pay for a vector store or a product search.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name in `module_of` is read from that submodule when first used."""

    def attribute(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return attribute
