"""``gradscope graph``: the picture of how gradient flows from the variables to one loss."""

from __future__ import annotations

import sys
from typing import Any

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.common import progress, run_options
from gradscope._src.cli.output import OutputPath, OutputsFirst, emit, write_atomic_bytes
from gradscope._src.cli.saved import is_saved, saved_arguments, saved_options
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode, UsageError

_EPILOG = """\b
Reading the picture:
  variables on the left, coloured by status, with their gradient norm;
  the loss on the right; in between, every node on a forward path.
  solid   gradient flows back along the link
  grey    value flows forward, but no gradient comes back
  red ✂   the gradient is cut here: stop_gradient, assign or an op with
          no gradient, with its line
  dashed  a sparse gradient (IndexedSlices)
  orange  a gradient with NaN or Inf
  Variables with no path to the loss are left out and listed below it.

\b
Examples:
  gradscope graph configs/multitask.yaml --loss loss_1 -o loss_1.svg
  gradscope graph configs/straight-through.yaml --loss loss_ste --format mermaid

""" + exit_codes(
    (ExitCode.OK, "the picture was written"),
    (
        ExitCode.USAGE,
        "bad spec, unknown loss or extension, or Graphviz missing for .svg/.png/.html;\n"
        "a target that computes its gradients with JAX or PyTorch (gradscope watches "
        "TensorFlow only)",
    ),
    ExitCode.INTERNAL,
    ExitCode.TARGET_ENDED,
    ExitCode.INTERRUPTED,
)


@click.command(cls=OutputsFirst, short_help=summary("graph"), epilog=_EPILOG)
@click.argument("target", metavar="SPEC_OR_TARGET")
@click.option("--loss", "-l", metavar="L",
              help="The loss to draw (needed when there are several); for a saved model, the "
              "loss to compute, as inspect's --loss (mse; out_a=compiled).")  # fmt: skip
@click.option(
    "--output",
    "-o",
    type=OutputPath(),
    metavar="FILE",
    default=None,
    help="Write the picture to FILE (atomically); its extension picks the format: "
    ".dot, .mmd (Mermaid), .svg, .png or .html (the last three need Graphviz).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["dot", "mermaid", "svg", "png", "html"]),
    default=None,
    help="The format (default: dot, or the one --output's extension names); a --format "
    "that contradicts the extension is an error.",
)
@click.option("--expand", is_flag=True, help="One box per TensorFlow op, not per node or layer.")
@saved_options
@run_options
def graph(
    target: str,
    loss: str | None,
    output: str | None,
    fmt: str | None,
    expand: bool,
    device: str,
    quiet: bool,
    max_elements: int,
    **saved: Any,
) -> None:
    """Draw the gradient flow from every variable to loss L: where it flows, and where and
    why it was cut.

    SPEC_OR_TARGET is a YAML spec file (`gradscope schema` prints its JSON Schema), a
    Python target, module.path:function or path/to/file.py:function, or a saved model
    (model.keras, model.h5, a SavedModel directory; see gradscope inspect --help).
    """
    from gradscope._src import api, pipeline
    from gradscope._src.report import draw, graphviz

    chosen = draw.choose(output, fmt)
    if chosen.needs_graphviz:
        graphviz.require(f".{chosen.value} pictures")
    computed = is_saved(target)  # a saved model's --loss is the loss to compute
    runnable = api.saved_target(target, **saved_arguments(saved),
                                loss=[loss] if loss and computed else None)  # fmt: skip
    losses = [loss] if loss and not computed else None  # without --loss the target must
    # have one (checked by the pipeline once the loss names are known, before tracing)
    with progress(quiet) as report_progress:
        request = pipeline.Request(
            losses=tuple(losses) if losses else None, device=pipeline.device_name(device),
            max_elements=max_elements, progress=report_progress, pictures=True, expand=expand,
            one_loss=True,
        )  # fmt: skip
        report = pipeline.run(runnable, request).report
        name = _one([loss.name for loss in report.losses], target)
        report_progress("drawing the picture")
        picture = draw.draw(report, name, chosen)
    if isinstance(picture, bytes) and output is None:  # a PNG on standard output
        if sys.stdout.isatty():
            raise UsageError("gradscope graph: a PNG is binary; write it with -o FILE.png")
        sys.stdout.buffer.write(picture)
        sys.stdout.flush()
    elif isinstance(picture, bytes):
        write_atomic_bytes(str(output), picture)
    else:
        emit(picture, output)


def _one(names: list[str], target: str) -> str:
    if len(names) != 1:
        raise UsageError(
            f"{target} has {len(names)} losses; pick one with --loss: {', '.join(names)}"
        )
    return names[0]
