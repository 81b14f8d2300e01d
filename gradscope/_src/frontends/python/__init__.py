"""Python targets: ``module.path:function`` or ``path/to/file.py:function`` as a model to inspect.

The function returns a :class:`~gradscope.Target` (or a mapping with its
fields); ``frontend.PythonFrontend`` hands it to the pipeline, which traces its losses with the
same engine a spec uses. Importing this
package stays light: TensorFlow is imported only when a target runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradscope._src.frontends.python.target import Target

__all__ = ["Target", "is_python_target"]


def is_python_target(obj: Any) -> bool:
    """Whether ``obj`` is a Python target rather than a spec (a path or a loaded ``Spec``).

    Example:
        >>> is_python_target("my_pkg.models:build"), is_python_target("configs/multitask.yaml")
        (True, False)
    """
    from gradscope._src.frontends.python.resolve import is_target_string
    from gradscope._src.frontends.yaml.model import Spec

    if isinstance(obj, str):
        return is_target_string(obj)
    if isinstance(obj, Spec):
        return False
    return isinstance(obj, (Target, Mapping)) or callable(obj)
