"""``gradscope diff``: two losses side by side, or the cosine of every pair of losses."""

from __future__ import annotations

from typing import Any

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.common import (
    color_wanted,
    format_option,
    output_option,
    progress,
    run_options,
    strategy_options,
    width,
)
from gradscope._src.cli.output import OutputsFirst, emit
from gradscope._src.cli.saved import loss_option, saved_arguments, saved_options
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode
from gradscope._src.report import DIFF_FORMATS

_HELP_EPILOG = """\b
Numbers, per variable both losses reach (gA, gB: the densified gradients):
  cosine       <gA, gB> / (|gA| |gB|); - when either gradient is all zero
  signs agree  the fraction of elements where sign(gA) == sign(gB) (two zeros agree)
  norm A/B     |gA| / |gB|
  whole model  the cosine of the gradients concatenated over every shared variable

""" + exit_codes(
    (ExitCode.OK, "done"),
    (
        ExitCode.USAGE,
        "bad spec, target or usage (an unknown loss name lists the spec's losses);\n"
        "a target that computes its gradients with JAX or PyTorch (gradscope watches "
        "TensorFlow only)",
    ),
    ExitCode.INTERNAL,
    ExitCode.TARGET_ENDED,
    ExitCode.INTERRUPTED,
)


@click.command(cls=OutputsFirst, short_help=summary("diff"), epilog=_HELP_EPILOG)
@click.argument("spec", metavar="SPEC")
@click.argument("losses", nargs=-1, metavar="[LOSS_A LOSS_B]")
@format_option([f.value for f in DIFF_FORMATS])
@output_option
@strategy_options
@loss_option
@saved_options
@run_options
def diff(
    spec: str,
    losses: tuple[str, ...],
    fmt: str,
    output: str | None,
    device: str,
    quiet: bool,
    max_elements: int,
    strategy: str,
    replicas: int | None,
    **saved: Any,
) -> None:
    """Two losses of SPEC side by side: which variables each reaches, and where their
    gradients pull against each other.

    With LOSS_A and LOSS_B: per variable, both statuses and norms, and for the variables both
    losses reach the cosine similarity of the two gradients, the fraction of elements whose
    signs agree and the norm ratio; then the variables only one loss (or neither) reaches,
    with the cut points that explain it, and the shared variables with a negative cosine.

    With no loss names: the whole-model cosine of every pair of losses, so conflicting
    pairs stand out (three or more names: the matrix of those losses). Everything comes
    from one forward pass, as for inspect.
    """
    from gradscope._src import api
    from gradscope._src.report import render

    options: dict[str, Any] = {"device": device, "max_elements": max_elements,
                               "strategy": strategy, "replicas": replicas}  # fmt: skip
    options.update(saved_arguments(saved))
    with progress(quiet) as report_progress:
        options["progress"] = report_progress
        if len(losses) == 2:
            result: Any = api.diff(spec, losses[0], losses[1], **options)
        else:
            result = api.diff(spec, losses=list(losses) or None, **options)
    emit(render(result, fmt, color=color_wanted(output), width=width()), output)
