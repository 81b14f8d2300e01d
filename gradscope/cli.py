"""The ``gradscope`` command line: thin click commands over the library.

Each command parses options, makes one call, prints, and exits with an
:class:`~gradscope.errors.ExitCode`. Importing this module must stay light: ``--help``
and ``validate`` never import TensorFlow (commands that need it import it inside).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

import click

from gradscope import __version__
from gradscope.errors import ExitCode, GradscopeError, SpecErrors
from gradscope.spec import DEFAULT_MAX_ELEMENTS, load_spec, spec_schema
from gradscope.spec.summary import summary_line

#: Set to 1 to print the Python traceback of gradscope's own failures.
TRACEBACK_ENV = "GRADSCOPE_TRACEBACK"


class _Group(click.Group):
    """Turns gradscope's errors into their exit codes and one-line messages."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except GradscopeError as exc:
            for line in exc.lines():
                click.echo(line, err=True)
            ctx.exit(int(exc.exit_code))
        except KeyboardInterrupt:
            click.echo("gradscope: interrupted", err=True)
            ctx.exit(int(ExitCode.INTERRUPTED))
        except Exception as exc:  # gradscope's own bug: say so, in one line unless asked
            if os.environ.get(TRACEBACK_ENV) == "1":
                traceback.print_exc()
            message = f"gradscope: internal error: {type(exc).__name__}: {exc}"
            click.echo(f"{message} (set {TRACEBACK_ENV}=1 for the traceback)", err=True)
            ctx.exit(int(ExitCode.INTERNAL))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="gradscope")
def main() -> None:
    """For every loss and every variable: does a gradient flow, and if not, where was it cut."""


@main.command()
@click.argument("specs", nargs=-1, required=True, metavar="SPEC...")
@click.option(
    "--max-elements",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ELEMENTS,
    show_default=True,
    help="Refuse any input or variable with more elements than this.",
)
def validate(specs: tuple[str, ...], max_elements: int) -> None:
    """Parse and check spec files without importing TensorFlow."""
    failures: list[SpecErrors] = []
    for path in specs:
        try:
            click.echo(summary_line(load_spec(path, max_elements=max_elements)))
        except SpecErrors as errors:
            failures.append(errors)
    if failures:
        raise SpecErrors.merge(failures)


@main.command()
def schema() -> None:
    """Print the JSON Schema of the spec (for editors; see the README)."""
    click.echo(json.dumps(spec_schema(), indent=2))


# The inspect, diff and check commands register here; each imports TensorFlow inside the
# command function, never at module level.


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
