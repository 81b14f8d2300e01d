"""``gradscope inspect``: every loss x every variable."""

from __future__ import annotations

from typing import Any

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.common import (
    color_wanted,
    format_option,
    numeric_option,
    output_option,
    progress,
    run_options,
    strategy_options,
    table_options,
    table_render_options,
    width,
)
from gradscope._src.cli.output import OutputsFirst, emit
from gradscope._src.cli.saved import LOSS_HELP, pick_or_compute, saved_arguments, saved_options
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode
from gradscope._src.report import INSPECT_FORMATS

_EPILOG = exit_codes(
    (ExitCode.OK, "the report was written (its problems do not fail inspect: use gradscope check)"),
    (
        ExitCode.USAGE,
        "bad spec, target or usage (every spec error listed as FILE:LINE:COLUMN);\na target "
        "that computes its gradients with JAX or PyTorch (gradscope watches TensorFlow only)",
    ),
    ExitCode.INTERNAL,
    ExitCode.TARGET_ENDED,
    ExitCode.INTERRUPTED,
)


@click.command(cls=OutputsFirst, short_help=summary("inspect"), epilog=_EPILOG)
@click.argument("spec", metavar="SPEC")
@click.option("--loss", "losses", multiple=True, metavar="L", help=LOSS_HELP)
@format_option([f.value for f in INSPECT_FORMATS])
@output_option
@numeric_option
@strategy_options
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["function", "eager", "xla"]),
    help="How gradients are computed: function (traced, the default), xla (jit_compile) or "
    "eager (a GradientTape). Repeat it to check parity: the report is the first mode's, and "
    "notes name every pair whose status or norm differs between the modes.",
)
@table_options
@saved_options
@run_options
def inspect(
    spec: str,
    losses: tuple[str, ...],
    fmt: str,
    output: str | None,
    modes: tuple[str, ...],
    device: str,
    quiet: bool,
    max_elements: int,
    numeric: bool,
    strategy: str,
    replicas: int | None,
    group: str,
    problems_only: bool,
    **saved: Any,
) -> None:
    """Every loss x every variable of SPEC: whether a gradient flows, its norm, and where and
    why the path was cut when none does.

    \b
    SPEC is a YAML spec file (`gradscope schema` prints its JSON Schema), a
    Python target or a saved model:
      module.path:function      imported from the current directory and sys.path
      path/to/file.py:function  a loose file
      model.keras, model.h5     a Keras model file (loaded with safe_mode on)
      saved_model_dir/          a SavedModel directory (one signature is called)
    The function takes no arguments and returns a gradscope.Target (or a mapping
    with "losses", and optionally "variables", "expect", "model"): the guide is
    docs/guides/python-targets.md in gradscope's repository. A saved model's loss
    is --loss compiled (the default when compile() saved one), --loss mse or
    --loss OUTPUT=NAME, on --inputs/--labels or random data.

    A nan pair names the node where the NaN or Inf first appeared (a second pass, only
    when a pair is nan). --numeric also compares every ok gradient with central finite
    differences and gives it a verdict: agrees, differs, expected-difference (a
    straight-through estimator, a custom gradient) or skipped.

    --format markdown embeds a Mermaid picture of the gradient flow for each loss with a
    problem; --format html writes a self-contained page with the table and every loss's
    picture (laid out by Graphviz's dot when installed).
    """
    from gradscope._src import api
    from gradscope._src.report import render

    with progress(quiet) as report_progress:
        report = api.inspect(
            spec,
            **pick_or_compute(spec, losses),
            **saved_arguments(saved),
            device=device,
            max_elements=max_elements,
            progress=report_progress,
            numeric=numeric,
            strategy=strategy,
            replicas=replicas,
            pictures=fmt in ("markdown", "html"),  # markdown: Mermaid for each problem
            mode=list(modes) or "function",
        )
    if fmt == "html":
        from gradscope._src.report import graphviz

        if graphviz.find() is None:
            click.echo(f"gradscope: the page has no pictures: {graphviz.INSTALL_HINT}", err=True)
    options = table_render_options(fmt, group, problems_only)
    emit(render(report, fmt, color=color_wanted(output), width=width(), **options), output)
