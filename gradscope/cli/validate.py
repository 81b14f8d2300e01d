"""``gradscope validate`` and ``gradscope schema``: no TensorFlow."""

from __future__ import annotations

import json

import click

from gradscope.cli.common import max_elements_option
from gradscope.errors import SpecErrors


@click.command(
    epilog="\b\nExit codes:\n  0    every spec is valid\n"
    "  2    a spec has errors (each listed as FILE:LINE:COLUMN: field: message) or bad usage"
)
@click.argument("specs", nargs=-1, required=True, metavar="SPEC...")
@max_elements_option
def validate(specs: tuple[str, ...], max_elements: int) -> None:
    """Parse and check spec files without importing TensorFlow."""
    from gradscope.frontends.yaml import load_spec
    from gradscope.frontends.yaml.summary import summary_line

    failures: list[SpecErrors] = []
    for path in specs:
        try:
            click.echo(summary_line(load_spec(path, max_elements=max_elements)))
        except SpecErrors as errors:
            failures.append(errors)
    if failures:
        raise SpecErrors.merge(failures)


@click.command()
def schema() -> None:
    """Print the JSON Schema of the spec (for editors; see the README)."""
    from gradscope.frontends.yaml import spec_schema

    click.echo(json.dumps(spec_schema(), indent=2))


COMMANDS = [validate, schema]
