"""Report stage: one module per output format, each ``render(result) -> str``; no I/O here.

Adding a format is one module here, one member of ``Format``, and one test file;
``tests/report/test_formats.py`` renders every member so none is forgotten.
"""

from __future__ import annotations

import enum
import importlib
from typing import Any


class Format(str, enum.Enum):
    """Formats of ``gradscope inspect``."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


def render(result: Any, fmt: str, *, color: bool = False, width: int = 120) -> str:
    """Render a result object in a format; ``color`` and ``width`` only affect ``table``."""
    module = importlib.import_module(f"gradscope.report.{Format(fmt).value}")
    if fmt == Format.TABLE:
        return str(module.render(result, color=color, width=width))
    return str(module.render(result))
