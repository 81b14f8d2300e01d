"""``gradscope validate`` and ``gradscope schema``: no TensorFlow."""

from __future__ import annotations

import json
import os

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.common import max_elements_option
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode, SpecErrors, UsageError


@click.command(
    short_help=summary("validate"),
    epilog=exit_codes(
        (ExitCode.OK, "every spec is valid"),
        (
            ExitCode.USAGE,
            "a spec has errors (each listed as FILE:LINE:COLUMN: field: message) or bad usage",
        ),
    ),
)
@click.argument("specs", nargs=-1, required=True, metavar="SPEC...")
@max_elements_option
def validate(specs: tuple[str, ...], max_elements: int) -> None:
    """Parse and check spec files without importing TensorFlow."""
    from gradscope._src.frontends.python.resolve import is_target_string
    from gradscope._src.frontends.saved import is_saved_target
    from gradscope._src.frontends.yaml import load_spec
    from gradscope._src.frontends.yaml.summary import summary_line

    failures: list[SpecErrors] = []
    targets = [path for path in specs if is_target_string(path) and not os.path.isfile(path)]
    if targets:  # before reading any spec: one usage error
        raise UsageError(
            f"{targets[0]} is a Python target: validate reads spec files only, without "
            f"TensorFlow; a target's gradients are checked by running it: gradscope check "
            f"{targets[0]}"
        )
    saved = [path for path in specs if is_saved_target(path)]
    if saved:
        raise UsageError(
            f"{saved[0]} is a saved model: validate reads spec files only, without TensorFlow; "
            f"a saved model's gradients are checked by loading it: gradscope check {saved[0]}"
        )
    for path in specs:
        try:
            click.echo(summary_line(load_spec(path, max_elements=max_elements)))
        except SpecErrors as errors:
            failures.append(errors)
    if failures:
        raise SpecErrors.merge(failures)


@click.command(short_help=summary("schema"))
def schema() -> None:
    """Print the JSON Schema of the spec (for editors; see the README)."""
    from gradscope._src.frontends.yaml import spec_schema

    click.echo(json.dumps(spec_schema(), indent=2))
