"""The output formats and the one ``render`` that draws any result in any of them.

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


class DiffFormat(str, enum.Enum):
    """Formats of ``gradscope diff``."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


class CheckFormat(str, enum.Enum):
    """Formats of ``gradscope check``: for people, for CI test tabs, for code scanning."""

    TABLE = "table"
    JSON = "json"
    JUNIT = "junit"
    SARIF = "sarif"
    GITHUB = "github"
    MARKDOWN = "markdown"


class RunFormat(str, enum.Enum):
    """Formats of ``gradscope run``: those of ``check``."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    JUNIT = "junit"
    SARIF = "sarif"
    GITHUB = "github"


#: (result class name, format) -> the module whose ``render`` draws it.
RENDERERS: dict[tuple[str, str], str] = {
    ("Report", "table"): "gradscope.report.table",
    ("Report", "json"): "gradscope.report.json",
    ("Report", "markdown"): "gradscope.report.markdown",
    ("Report", "html"): "gradscope.report.html",
    ("CheckResult", "table"): "gradscope.report.check_table",
    ("CheckResult", "json"): "gradscope.report.json",
    ("CheckResult", "junit"): "gradscope.report.junit",
    ("CheckResult", "sarif"): "gradscope.report.sarif",
    ("CheckResult", "github"): "gradscope.report.github",
    ("CheckResult", "markdown"): "gradscope.report.check_markdown",
    ("DiffReport", "table"): "gradscope.report.diff_table",
    ("DiffReport", "json"): "gradscope.report.json",
    ("DiffReport", "markdown"): "gradscope.report.diff_markdown",
    ("DiffMatrix", "table"): "gradscope.report.diff_table",
    ("DiffMatrix", "json"): "gradscope.report.json",
    ("DiffMatrix", "markdown"): "gradscope.report.diff_markdown",
    ("RunReport", "table"): "gradscope.report.run_table",
    ("RunReport", "json"): "gradscope.report.json",
    ("RunReport", "markdown"): "gradscope.report.run_markdown",
    ("RunReport", "junit"): "gradscope.report.run_junit",
    ("RunReport", "sarif"): "gradscope.report.run_sarif",
    ("RunReport", "github"): "gradscope.report.run_github",
}


def render(result: Any, fmt: str, *, color: bool = False, width: int = 120, **options: Any) -> str:
    """Render a result object in a format.

    Every renderer takes ``color`` (ANSI colours, terminal formats only) and ``width`` (the
    terminal's width) and ignores what it has no use for; ``options`` go to the renderers
    that declare them (``source_root`` for SARIF, ``problems_only`` and ``group`` for tables).
    """
    fmt = fmt.value if isinstance(fmt, enum.Enum) else fmt
    key = (type(result).__name__, fmt)
    if key not in RENDERERS:
        raise ValueError(f"no {fmt} renderer for {type(result).__name__}")
    module = importlib.import_module(RENDERERS[key])
    return str(module.render(result, color=color, width=width, **options))
