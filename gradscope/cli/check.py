"""``gradscope check``: the CI gate for unexpected gradients."""

from __future__ import annotations

from typing import Any

import click

from gradscope.cli.common import (
    color_wanted,
    device_name,
    emit,
    format_option,
    numeric_option,
    output_option,
    progress,
    run_options,
    width,
    write_atomic,
)
from gradscope.cli.plot import read_timeline
from gradscope.errors import SpecError, SpecErrors
from gradscope.report import CheckFormat

EPILOG = """\b
Exit codes:
  0    passed: no unexpected gradients (problems the baseline holds do not count)
  1    unexpected gradients: a nan, a contradicted expect, a never-trained variable, numeric-differs
       (and with --timeline: any finding, dead, vanishing, exploding, nan, none)
  2    a bad spec, target, baseline or command line (every error listed, no report)
  3    gradscope's own failure (re-run with --traceback)
  130  interrupted (Ctrl-C); no output file was touched

\b
Examples:
  gradscope check configs/*.yaml
  gradscope check configs/*.yaml --format github
  gradscope check configs/*.yaml --format sarif --output gradscope.sarif
  gradscope check configs/*.yaml --write-baseline gradscope-baseline.json
  gradscope check configs/*.yaml --baseline gradscope-baseline.json
  gradscope check configs/*.yaml --numeric
  gradscope check --timeline timeline.json --format github"""


@click.command(epilog=EPILOG)
@click.argument("specs", nargs=-1, metavar="SPEC...")
@format_option([f.value for f in CheckFormat])
@output_option
@click.option("--baseline", metavar="REPORT.json", type=click.Path(dir_okay=False),
              help="A JSON report from inspect or check: the problems it holds are shown as "
                   "known and do not fail.")  # fmt: skip
@click.option("--write-baseline", metavar="FILE", type=click.Path(dir_okay=False),
              help="Also write the JSON report (every current problem) to FILE, atomically, "
                   "for a later --baseline; the exit code follows the rules as usual.")  # fmt: skip
@click.option("--timeline", "timelines", multiple=True, metavar="FILE",
              help="Also fail on the findings of a timeline (gradscope.keras.Monitor, "
                   "`gradscope run --timeline`): dead, vanishing, exploding, nan, none "
                   "gradients over training. Repeatable; no SPEC is needed then.")  # fmt: skip
@numeric_option
@run_options
@click.pass_context
def check(
    ctx: click.Context,
    specs: tuple[str, ...],
    fmt: str,
    output: str | None,
    baseline: str | None,
    write_baseline: str | None,
    device: str,
    quiet: bool,
    max_elements: int,
    numeric: bool,
    timelines: tuple[str, ...],
) -> None:
    """Fail when gradients are not what the specs say: the CI gate.

    Each SPEC runs once; several give one combined report. A check fails on any nan
    gradient, any pair that contradicts the spec's `expect` block (a `connected` variable
    with no usable gradient, a `none` variable that gets one), and any trainable variable no
    loss trains unless an expect.<loss>.none pattern declares it unused. With --numeric, it
    also fails on an ok gradient that disagrees with central finite differences, unless the
    difference is deliberate (a straight-through estimator, a custom gradient) and no
    expect.<loss>.numeric pattern asks for agreement. Formats: table (for
    people), json (the report; --baseline reads it), junit (CI test tabs), sarif (code
    scanning), github (annotations in Actions logs), markdown (pull-request comments).

    SPEC is a YAML spec file (see configs/), or anything else `inspect` accepts.
    """
    from gradscope.report import render

    if not specs and not timelines:
        raise click.UsageError("Missing argument 'SPEC...' (or --timeline FILE).")
    loaded = {path: read_timeline(path, "check") for path in timelines}  # bad files: exit 2 first
    result = _check_specs(specs, fmt, output, baseline, device, quiet, max_elements, numeric)
    if timelines:
        from gradscope.timeline.check import with_timelines

        result = with_timelines(result, loaded)
    assert result is not None
    if write_baseline:
        write_atomic(write_baseline, render(result, "json"))
    emit(render(result, fmt, color=color_wanted(output), width=width()), output)
    ctx.exit(int(result.exit_code))


def _check_specs(specs: tuple[str, ...], fmt: str, output: str | None, baseline: str | None,
                 device: str, quiet: bool, max_elements: int, numeric: bool) -> Any:  # fmt: skip
    """``api.check`` of the specs (None without specs); spec errors annotated for GitHub."""
    from gradscope import api

    if not specs:
        return None
    try:
        with progress(quiet) as report_progress:
            return api.check(
                list(specs),
                baseline=baseline,
                device=device_name(device),
                max_elements=max_elements,
                progress=report_progress,
                numeric=numeric,
            )
    except (SpecErrors, SpecError) as errors:
        if fmt == "github" and output is None:  # annotate the bad lines too (still exit 2)
            from gradscope.report.github import spec_errors

            click.echo(spec_errors(errors), nl=False)
        raise


COMMANDS = [check]
