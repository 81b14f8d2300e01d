"""``gradscope plot``: a timeline's gradient norms over training as PNG, SVG or HTML."""

from __future__ import annotations

import os
from typing import Any

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.output import OutputPath, OutputsFirst
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode, UsageError

FORMATS = {".png": "png", ".svg": "svg", ".html": "html", ".htm": "html"}

EPILOG = (
    exit_codes(
        (ExitCode.OK, "the picture was written"),
        (
            ExitCode.USAGE,
            "a missing or unreadable timeline, or an output not named .png, .svg or .html",
        ),
    )
    + """

\b
Examples:
  gradscope plot timeline.json -o norms.png
  gradscope plot timeline.json -o norms.html"""
)


def read_timeline(path: str, command: str) -> dict[str, Any]:
    """The timeline JSON at ``path``.

    Raises:
        UsageError: a missing, unreadable or malformed file (``gradscope COMMAND: ...``).
    """
    import json

    from gradscope._src.timeline.reader import load

    try:
        return load(path)
    except OSError as exc:
        raise UsageError(f"gradscope {command}: cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"gradscope {command}: {path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}"
        ) from exc
    except ValueError as exc:
        raise UsageError(f"gradscope {command}: {exc}") from exc


@click.command(cls=OutputsFirst, short_help=summary("plot"), epilog=EPILOG)
@click.argument("timeline", metavar="TIMELINE")
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE",
    type=OutputPath(),
    help="The picture to write: .png, .svg or .html (one self-contained page).",
)
def plot(timeline: str, output: str) -> None:
    """Draw a timeline (from `gradscope run --timeline` or gradscope.keras.Monitor): gradient
    norms per variable over the steps, on a log scale, coloured by layer, with findings marked.

    TIMELINE is the timeline JSON file.
    """
    from gradscope._src.cli.output import write_atomic_bytes

    fmt = FORMATS.get(os.path.splitext(output)[1].lower())
    if fmt is None:
        raise UsageError(f"gradscope plot: {output}: expected a .png, .svg or .html file name")
    data = read_timeline(timeline, "plot")
    from gradscope._src.timeline.plot import render

    write_atomic_bytes(output, render(data, fmt))
