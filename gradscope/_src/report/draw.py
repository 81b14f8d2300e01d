"""One loss's picture in a file format, chosen by the output file's extension.

``.dot`` and ``.mmd`` are text that needs nothing; ``.svg``, ``.png`` and ``.html`` are laid
out by Graphviz's ``dot`` (``gradscope._src.report.graphviz``).
"""

from __future__ import annotations

import enum
from pathlib import PurePath

from gradscope._src.errors import UsageError
from gradscope._src.results import report as m

#: Dots per inch of a PNG picture (Graphviz's default is 96).
PNG_DPI = 144


class PictureFormat(str, enum.Enum):
    """Formats of ``gradscope graph``."""

    DOT = "dot"
    MERMAID = "mermaid"
    SVG = "svg"
    PNG = "png"
    HTML = "html"

    @property
    def needs_graphviz(self) -> bool:
        return self in (PictureFormat.SVG, PictureFormat.PNG, PictureFormat.HTML)

    @property
    def binary(self) -> bool:
        return self is PictureFormat.PNG


#: Output file extension -> format.
EXTENSIONS = {
    ".dot": PictureFormat.DOT,
    ".gv": PictureFormat.DOT,
    ".mmd": PictureFormat.MERMAID,
    ".mermaid": PictureFormat.MERMAID,
    ".svg": PictureFormat.SVG,
    ".png": PictureFormat.PNG,
    ".html": PictureFormat.HTML,
    ".htm": PictureFormat.HTML,
}


def choose(output: str | None, fmt: str | None) -> PictureFormat:
    """The format from ``--output``'s extension, else ``--format``, else DOT.

    Raises:
        UsageError: an unknown extension, PNG to standard output, or an extension that
            contradicts ``--format``.
    """
    if output is None:
        chosen = PictureFormat(fmt or "dot")
        if chosen.binary:
            raise UsageError("gradscope graph: --format png needs --output FILE.png")
        return chosen
    suffix = PurePath(output).suffix.lower()
    by_name = EXTENSIONS.get(suffix)
    if by_name is None:
        known = ", ".join(sorted(EXTENSIONS))
        raise UsageError(
            f"gradscope graph: cannot tell the picture format of {output!r} "
            f"from {suffix or 'no extension'}; use one of {known}"
        )
    if fmt is not None and PictureFormat(fmt) is not by_name:
        raise UsageError(
            f"gradscope graph: --format {fmt} contradicts the extension of {output!r} "
            f"({by_name.value}); drop --format, the extension decides"
        )
    return by_name


def draw(report: m.Report, loss: str, fmt: PictureFormat) -> str | bytes:
    """The picture of ``loss`` (from a run with ``pictures=True``) in ``fmt``."""
    from gradscope._src.report import dot, graphviz, html, mermaid

    if fmt is PictureFormat.MERMAID:
        return mermaid.picture(report, loss)
    source = dot.picture(report, loss)
    if fmt is PictureFormat.DOT:
        return source
    if fmt is PictureFormat.PNG:  # 144 dpi: sharp on a high-density screen, 11 pt text legible
        return graphviz.layout(dot.picture(report, loss, dpi=PNG_DPI), "png")
    if fmt is PictureFormat.SVG:
        return graphviz.svg(source)
    svg = graphviz.inline_svg(dot.picture(report, loss, caption=False))
    if svg is None:
        graphviz.require(".html pictures")
    return html.page(report, {loss: svg}, focus=loss)
