"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow.
"""

from __future__ import annotations

# The one place the version lives; pyproject.toml reads it from here (importlib.metadata
# would cost ~60 ms on every `gradscope --help`).
__version__ = "0.1.0"

__all__ = ["__version__"]
