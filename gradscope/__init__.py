"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow. The public API below is imported lazily,
on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

# The one place the version lives; pyproject.toml reads it from here (importlib.metadata
# would cost ~60 ms on every `gradscope --help`).
__version__ = "0.1.0"

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "inspect": "gradscope.api",
    "check": "gradscope.api",
    "Report": "gradscope.analysis.model",
    "CheckResult": "gradscope.analysis.check",
    "testing": "gradscope.testing",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'gradscope' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    return module if name == "testing" else getattr(module, name)


__all__ = ["CheckResult", "Report", "__version__", "check", "inspect", "testing"]
