"""Report stage: one module per output format, each ``render(result, ...) -> str``; no I/O here.

``RENDERERS`` maps a result type and a format to the module that renders it. Adding a format
is one module, one entry here, one member of the command's format enum, and one test file;
the tests render every member of every enum so none is forgotten.
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
    HTML = "html"


#: (result class name, format) -> the module whose ``render`` draws it.
RENDERERS: dict[tuple[str, str], str] = {
    ("Report", "table"): "gradscope.report.table",
    ("Report", "json"): "gradscope.report.json",
    ("Report", "markdown"): "gradscope.report.markdown",
    ("Report", "html"): "gradscope.report.html",
}


def render(result: Any, fmt: str, *, color: bool = False, width: int = 120) -> str:
    """Render a result object in a format.

    Every renderer takes ``color`` (ANSI colours, terminal formats only) and ``width`` (the
    terminal's width) and ignores what it has no use for.
    """
    fmt = fmt.value if isinstance(fmt, enum.Enum) else fmt
    key = (type(result).__name__, fmt)
    if key not in RENDERERS:
        raise ValueError(f"no {fmt} renderer for {type(result).__name__}")
    module = importlib.import_module(RENDERERS[key])
    return str(module.render(result, color=color, width=width))
