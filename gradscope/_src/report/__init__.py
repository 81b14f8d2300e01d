"""Report stage: one module per output format, each ``render(result, ...) -> str`` for any
result; no I/O here.

``render`` picks the format's module (``formats.py`` holds the one ``Format`` enum and which
formats each command offers). This face also tells the results (plain data, which import no
renderer) how notebooks, IPython and rich draw them. It stays light: each format's module is
imported when it draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradscope._src.printable import shown
from gradscope._src.report.formats import CHECK_FORMATS as CHECK_FORMATS
from gradscope._src.report.formats import DIFF_FORMATS as DIFF_FORMATS
from gradscope._src.report.formats import INSPECT_FORMATS as INSPECT_FORMATS
from gradscope._src.report.formats import RUN_FORMATS as RUN_FORMATS
from gradscope._src.report.formats import Format as Format
from gradscope._src.report.formats import assert_never
from gradscope._src.results.display import DRAW

#: The formats that hold every name as it is (JSON: its encoder escapes what it must); every
#: other one draws the result with control characters written as escapes (``printable.py``).
FAITHFUL = frozenset({Format.JSON, Format.SARIF})

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result


def render(
    result: Result, fmt: Format | str, *, color: bool = False, width: int = 120, **options: Any
) -> str:
    """Render a result in a format.

    Every renderer takes ``color`` (ANSI colours, terminal formats only) and ``width`` (the
    terminal's width) and ignores what it has no use for; ``options`` go to the renderers
    that declare them (``source_root`` for SARIF, ``group``, ``problems_only`` and
    ``summary_only`` for tables).

    Raises:
        ValueError: ``fmt`` is no format, or one the result's command does not offer.
    """
    chosen = Format(fmt)
    if chosen not in FAITHFUL:  # read as lines or markup: names with control characters escaped
        result = shown(result)
    match chosen:
        case Format.TABLE:
            from gradscope._src.report import table

            return table.render(result, color=color, width=width, **options)
        case Format.JSON:
            from gradscope._src.report import json

            return json.render(result, color=color, width=width, **options)
        case Format.MARKDOWN:
            from gradscope._src.report import markdown

            return markdown.render(result, color=color, width=width, **options)
        case Format.HTML:
            from gradscope._src.report import html

            return html.render(result, color=color, width=width, **options)
        case Format.JUNIT:
            from gradscope._src.report import junit

            return junit.render(result, color=color, width=width, **options)
        case Format.SARIF:
            from gradscope._src.report import sarif

            return sarif.render(result, color=color, width=width, **options)
        case Format.GITHUB:
            from gradscope._src.report import github

            return github.render(result, color=color, width=width, **options)
        case _:
            assert_never(chosen)


def _rich(result: Result) -> Any:
    """What a rich console prints for a result (its ``__rich__``): its table."""
    from gradscope._src.report import table

    return table.renderable(shown(result))


def _html(result: Result) -> str:
    """What a notebook shows for a result: its HTML table (``_repr_html_``)."""
    from gradscope._src.report import notebook

    return notebook.render(shown(result))


def _text(result: Result, width: int) -> str:
    """What IPython prints for a result: its terminal table (``_repr_pretty_``)."""
    from gradscope._src.report import notebook

    return notebook.text(shown(result), width=width)


# Results import no renderer: this layer tells them how they are drawn (``results/display.py``).
DRAW.html, DRAW.text, DRAW.rich = _html, _text, _rich
