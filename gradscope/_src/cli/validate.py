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


#: What ``gradscope schema NAME`` prints: the JSON Schema (2020-12) of each output, as schema/
#: holds it (the package's copy, ``scripts/bundle_schemas.py``).
SCHEMAS = {
    "spec": "the YAML spec (for editors; the default)",
    "report": "inspect --format json",
    "run": "run --format json",
    "check": "check --format json",
    "diff": "diff --format json",
    "timeline": "run --timeline FILE, the Keras Monitor's timeline",
    "fix": "fix --check --format json",
    "mcp": "gradscope mcp's tools: each one's arguments and result",
    "error": "any command's failure with --format json (or in a SARIF log's properties)",
}


@click.command(
    short_help=summary("schema"),
    epilog="\b\nSchemas:\n" + "\n".join(f"  {name:<10}{what}" for name, what in SCHEMAS.items()),
)
@click.argument("name", type=click.Choice(list(SCHEMAS)), default="spec", required=False)
def schema(name: str) -> None:
    """Print the JSON Schema (2020-12) of the spec or of an output (see the README).

    The same files as the repository's schema/ folder, each standing alone: a validator needs
    no network and no registry.
    """
    if name == "spec":
        from gradscope._src.frontends.yaml import spec_schema

        click.echo(json.dumps(spec_schema(), indent=2))
        return
    from importlib import resources

    text = (
        resources.files("gradscope")
        .joinpath(f"_src/data/schema/{name}-v1.json")
        .read_text(encoding="utf-8")
    )
    click.echo(text, nl=False)
