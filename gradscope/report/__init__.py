"""Report stage: one module per output format, each ``render(result, ...) -> str``; no I/O here.

``formats.py`` holds the formats and the one ``render``; this face re-exports them, and tells
the results (plain data, which import no renderer) how notebooks, IPython and rich draw them.
"""

from __future__ import annotations

import importlib
from typing import Any

from gradscope.report.formats import RENDERERS as RENDERERS
from gradscope.report.formats import CheckFormat as CheckFormat
from gradscope.report.formats import DiffFormat as DiffFormat
from gradscope.report.formats import Format as Format
from gradscope.report.formats import RunFormat as RunFormat
from gradscope.report.formats import render as render
from gradscope.results.display import DRAW

#: Result class name -> (module, function) of the rich renderable its ``__rich__`` returns.
_RENDERABLES = {
    "Report": ("gradscope.report.table", "report_renderable"),
    "CheckResult": ("gradscope.report.check_table", "check_renderable"),
    "DiffReport": ("gradscope.report.diff_table", "diff_renderable"),
    "DiffMatrix": ("gradscope.report.diff_table", "matrix_renderable"),
}


def renderable(result: Any) -> Any:
    """What a rich console or a notebook prints for a result: its table."""
    module, function = _RENDERABLES[type(result).__name__]
    return getattr(importlib.import_module(module), function)(result)


def as_html(result: Any) -> str:
    """What a notebook shows for a result: its HTML table (``_repr_html_``)."""
    from gradscope.report.notebook import render as html

    return html(result)


def as_terminal_text(result: Any, width: int) -> str:
    """What IPython prints for a result: its terminal table (``_repr_pretty_``)."""
    from gradscope.report.notebook import text

    return text(result, width=width)


# Results import no renderer: this layer tells them how they are drawn (``results/display.py``).
DRAW.html, DRAW.text, DRAW.rich = as_html, as_terminal_text, renderable
