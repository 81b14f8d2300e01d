"""``gradscope check``: the CI gate for unexpected gradients."""

from __future__ import annotations

from dataclasses import dataclass
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
from gradscope._src.cli.output import OutputPath, OutputsFirst, emit, write_atomic
from gradscope._src.cli.plot import read_timeline
from gradscope._src.cli.saved import loss_option, saved_arguments, saved_options
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode, GradscopeError, SpecError, SpecErrors
from gradscope._src.report import CHECK_FORMATS

EPILOG = (
    exit_codes(
        (ExitCode.OK, "passed: no unexpected gradients (problems the baseline holds do not count)"),
        (
            ExitCode.PROBLEMS,
            "unexpected gradients: nan, contradicted expect, never-trained, numeric, replica, "
            "timeline",
        ),
        (
            ExitCode.USAGE,
            "a bad spec, target, baseline or command line (all errors listed; sarif, junit: a "
            "report);\n"
            "a target that computes its gradients with PyTorch (gradscope watches "
            "TensorFlow and JAX only)",
        ),
        ExitCode.INTERNAL,
        ExitCode.TARGET_ENDED,
        ExitCode.INTERRUPTED,
    )
    + """

\b
Examples:
  gradscope check configs/*.yaml
  gradscope check configs/*.yaml --format github
  gradscope check configs/*.yaml --format sarif --output gradscope.sarif
  gradscope check configs/*.yaml --write-baseline gradscope-baseline.json
  gradscope check configs/*.yaml --baseline gradscope-baseline.json
  gradscope check configs/*.yaml --numeric
  gradscope check configs/global-batch.yaml --strategy mirrored --replicas 2
  gradscope check --timeline timeline.json --format github"""
)


@click.command(cls=OutputsFirst, short_help=summary("check"), epilog=EPILOG)
@click.argument("specs", nargs=-1, metavar="SPEC...")
@format_option([f.value for f in CHECK_FORMATS])
@output_option
@click.option("--baseline", metavar="REPORT.json", type=click.Path(dir_okay=False),
              help="A JSON report from inspect or check: the problems it holds are shown as "
                   "known and do not fail.")  # fmt: skip
@click.option("--write-baseline", metavar="FILE", type=OutputPath(),
              help="Also write the JSON report (every current problem) to FILE, atomically, "
                   "for a later --baseline; the exit code follows the rules as usual.")  # fmt: skip
@click.option("--source-root", metavar="DIR", type=click.Path(file_okay=False),
              help="SARIF: file URIs are relative to DIR (default: the git repository around "
                   "the current directory, else the current directory).")  # fmt: skip
@click.option("--timeline", "timelines", multiple=True, metavar="FILE",
              help="Also fail on the findings of a timeline (gradscope.keras.Monitor, "
                   "`gradscope run --timeline`): dead, vanishing, exploding, nan, none "
                   "gradients over training. Repeatable; no SPEC is needed then.")  # fmt: skip
@numeric_option
@strategy_options
@table_options
@loss_option
@saved_options
@run_options
@click.pass_context
def check(
    ctx: click.Context,
    /,
    specs: tuple[str, ...],
    fmt: str,
    output: str | None,
    baseline: str | None,
    write_baseline: str | None,
    source_root: str | None,
    device: str,
    quiet: bool,
    max_elements: int,
    numeric: bool,
    strategy: str,
    replicas: int | None,
    group: str,
    problems_only: bool,
    timelines: tuple[str, ...],
    **saved: Any,
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

    SPEC is a YAML spec file (`gradscope schema` prints its JSON Schema; the specs
    guide is docs/guides/specs.md), or anything else `inspect` accepts (a Python target,
    a .keras or .h5 file, a SavedModel directory: its --loss and other options apply to
    every saved model given).

    Whenever the report is not the table on standard output (--output, or a machine
    format), the verdict and every problem are also printed to standard error, so a CI log
    says why the step failed. A bad spec (exit 2) with --format sarif or junit still writes
    a report, holding the errors at their lines.
    """
    from gradscope._src.report import render

    if not specs and not timelines:
        raise click.UsageError("Missing argument 'SPEC...' (or --timeline FILE).")
    loaded = {path: read_timeline(path, "check") for path in timelines}  # bad files: exit 2 first
    run = Run(baseline, device, quiet, max_elements, numeric, strategy, replicas,
              saved_arguments(saved))  # fmt: skip
    result = _check_specs(specs, run, fmt, output, source_root)
    if timelines:
        from gradscope._src.timeline.check import with_timelines

        result = with_timelines(result, loaded, baseline)
    assert result is not None
    if write_baseline:
        write_atomic(write_baseline, render(result, "json"), "--write-baseline")
    options = table_render_options(fmt, group, problems_only)
    options.update({"source_root": source_root} if fmt == "sarif" else {})
    emit(render(result, fmt, color=color_wanted(output), width=width(), **options), output)
    if output is not None or fmt not in ("table", "github"):
        summary = render(result, "table", color=color_wanted(None, stderr=True),
                         width=width(), summary_only=True)  # fmt: skip
        click.echo(summary, err=True, nl=False)
    ctx.exit(int(result.exit_code))


@dataclass(frozen=True)
class Run:
    """How to run the specs: the options of ``check`` that reach ``api.check``."""

    baseline: str | None
    device: str
    quiet: bool
    max_elements: int
    numeric: bool
    strategy: str
    replicas: int | None
    saved: dict[str, Any]  # the options of a saved model (``cli/saved.py``)


def _check_specs(
    specs: tuple[str, ...], run: Run, fmt: str, output: str | None, source_root: str | None
) -> Any:
    """``api.check`` of the specs (None without specs); on exit 2 the CI formats still get
    a report of the errors (``_report_errors``)."""
    from gradscope._src import api

    if not specs:
        return None
    try:
        with progress(run.quiet) as report_progress:
            return api.check(
                list(specs), baseline=run.baseline, device=run.device,
                max_elements=run.max_elements, progress=report_progress, numeric=run.numeric,
                strategy=run.strategy, replicas=run.replicas, **run.saved,
            )  # fmt: skip
    except GradscopeError as error:
        if error.exit_code == ExitCode.USAGE:
            _report_errors(error, fmt, output, source_root)
        raise


def _report_errors(error: GradscopeError, fmt: str, output: str | None, root: str | None) -> None:
    """On exit 2, the formats CI reads still get a report: GitHub annotations at the bad
    lines, a SARIF or JUnit file holding the errors (the errors go to stderr as always)."""
    if fmt == "github" and output is None:
        from gradscope._src.report.github import spec_errors

        if isinstance(error, SpecErrors | SpecError):
            click.echo(spec_errors(error), nl=False)
        return
    from gradscope._src.report import failed

    if fmt in ("json", "sarif"):  # the failure as data: the command line's (cli/machine.py)
        return
    text = failed.render(error, fmt, source_root=root)
    if text is not None:
        emit(text, output)
