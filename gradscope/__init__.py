"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow.
"""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("gradscope")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.1.0"

__all__ = ["__version__"]
