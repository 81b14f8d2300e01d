"""The output formats: one enum, and which of them each command offers.

Each format is one module of ``gradscope._src.report`` whose ``render(result, ...)`` draws any
result (``Result``); ``gradscope._src.report.render`` picks the module with a ``match`` on
``Format`` that ends in ``assert_never``, so mypy proves every member is handled. Adding a
format is one module, one member here (and in the tuples of the commands that offer it), and
one test file, ``tests/report/test_format_<name>.py`` (the hand-made results it draws are in
``tests/report/samples.py``).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from typing import TypeAlias

    from gradscope._src.results.check import CheckResult
    from gradscope._src.results.diff import DiffMatrix, DiffReport
    from gradscope._src.results.report import Report
    from gradscope._src.results.run import RunReport

    #: Every result a format draws: inspect's, check's, diff's (two losses or the matrix),
    #: run's (``gradscope run`` and ``gradscope.watch()``); a timeline is checked into a
    #: ``CheckResult`` (``timeline/check.py``).
    Result: TypeAlias = Report | CheckResult | DiffReport | DiffMatrix | RunReport


class Format(str, enum.Enum):
    """Every output format: for people (table, markdown, html), for programs (json), for CI
    test tabs (junit), for code scanning (sarif), for GitHub Actions logs (github)."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"
    JUNIT = "junit"
    SARIF = "sarif"
    GITHUB = "github"


#: The formats each command offers, in the order its ``--help`` lists them.
INSPECT_FORMATS = (Format.TABLE, Format.JSON, Format.MARKDOWN, Format.HTML)
DIFF_FORMATS = (Format.TABLE, Format.JSON, Format.MARKDOWN)
CHECK_FORMATS = (Format.TABLE, Format.JSON, Format.JUNIT, Format.SARIF, Format.GITHUB,
                 Format.MARKDOWN)  # fmt: skip
RUN_FORMATS = (Format.TABLE, Format.JSON, Format.MARKDOWN, Format.JUNIT, Format.SARIF,
               Format.GITHUB)  # fmt: skip


def assert_never(value: NoReturn) -> NoReturn:
    """The end of an exhaustive ``match``: mypy refuses a call it can reach (a new format or
    result type someone forgot); at run time, a value no case took (``typing.assert_never``
    is Python 3.11+)."""
    raise AssertionError(f"unhandled: {value!r}")


def unsupported(fmt: Format, result: object) -> NoReturn:
    """A format a command does not offer for this result (its CLI never asks for it)."""
    raise ValueError(f"no {fmt.value} renderer for {type(result).__name__}")
