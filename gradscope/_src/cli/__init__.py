"""The ``gradscope`` command line: thin click commands over the library.

Each command parses options, makes one call, renders, and exits with an
:class:`~gradscope._src.errors.ExitCode`. Importing this package stays light: a command's module
is imported when the command is used (:mod:`gradscope._src.cli.commands` lists them), and
``--help`` and ``validate`` never import TensorFlow (commands that need it import it inside
the call).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import os
import sys
import threading
import traceback
from typing import Any

import click

from gradscope._src.cli.commands import COMMANDS
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode, GradscopeError, visible
from gradscope._src.version import __version__

#: Set to 1 (or pass --traceback) to print the Python traceback of gradscope's own failures.
TRACEBACK_ENV = "GRADSCOPE_TRACEBACK"

EXIT_CODES_HELP = exit_codes(
    (ExitCode.OK, "done (check: no unexpected gradients)"),
    (ExitCode.PROBLEMS, "check found unexpected gradients; run found a None or NaN gradient"),
    (ExitCode.USAGE, "bad spec, target or usage; a program or target on JAX or PyTorch"),
    ExitCode.INTERNAL,
    (ExitCode.PROGRAM_RAISED, "run: the program raised (its traceback, then the report so far)"),
    (
        ExitCode.TARGET_ENDED,
        "a Python target ended the process (sys.exit, os._exit, a BaseException, a crash)",
    ),
    (
        ExitCode.INTERRUPTED,
        "interrupted (Ctrl-C); no output file was touched (run: the report so far is)",
    ),
)


#: How long gradscope waits after its report for threads a Python target left running.
LINGER_SECONDS = 5.0
#: The command this process ran (``run`` leaves the program's threads be: Python waits).
_INVOKED: list[str] = []


class _Group(click.Group):
    """Turns gradscope's errors into their exit codes and one-line messages; loads each
    command's module only when the command is used (``--help`` lists :data:`COMMANDS`)."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """As click's, and the process ends within :data:`LINGER_SECONDS` of the report
        when a Python target left a thread running (Python would wait for it forever).

        Only a process gradscope owns (``gradscope ...``, ``python -m gradscope``: no
        ``args``) is ended so; a caller passing ``args`` (a test's CliRunner) owns its
        threads and its process."""
        if args is not None:
            return super().main(args, *rest, **kwargs)
        _INVOKED[:] = []
        from gradscope._src.cli.supervise import supervise, wanted
        from gradscope._src.engine.tf_import import own_process

        own_process()
        from gradscope._src.cli import machine

        want = machine.wanted(sys.argv[1:])
        if want is not None:  # a crash the parent process says is data too
            machine.sink(want)
        command = wanted(sys.argv[1:])
        if command is not None:  # a Python target's crash is said by a parent process
            supervise(command)
        before = set(threading.enumerate())
        try:
            return super().main(args, *rest, **kwargs)
        except SystemExit as stop:
            _end_if_threads_left(stop, before)
            raise

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["gradscope.args"] = list(args)  # what machine.wanted reads
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command = getattr(importlib.import_module(entry.module), cmd_name)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:  # click suggests from the commands it holds: none here
            close = difflib.get_close_matches(str(args[0]), COMMANDS) if args else []
            if not close or "Did you mean" in exc.message:
                raise
            raise click.UsageError(f"{exc.message} Did you mean {close[0]!r}?", ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name].summary) for name in self.list_commands(ctx)])

    def invoke(self, ctx: click.Context) -> Any:
        from gradscope._src.cli import machine
        from gradscope._src.cli.output import interrupts_noted

        _INVOKED.append(ctx.invoked_subcommand or "")
        want = machine.wanted(ctx.meta.get("gradscope.args", ()))
        if want is not None:
            machine.sink(want)
        try:
            with interrupts_noted():
                return super().invoke(ctx)
        except click.ClickException as exc:
            if want is None:
                raise
            exc.show()  # as click shows it, on standard error
            machine.of_click(exc, want)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.Abort):
            raise
        except GradscopeError as exc:
            from gradscope._src.cli.wording import error_lines

            shown = _wants_traceback(ctx) and exc.__cause__ is not None
            if shown:
                traceback.print_exception(exc.__cause__)
            for line in error_lines(exc, ctx.invoked_subcommand):
                if shown:  # the hint is moot once the traceback is above
                    line = line.replace(" (--traceback shows the traceback)", "")
                click.echo(line, err=True)  # one line, each
            if want is not None:
                machine.of_error(exc, want)
            ctx.exit(int(exc.exit_code))
        except KeyboardInterrupt:
            click.echo("gradscope: interrupted", err=True)
            if want is not None:
                machine.of("interrupted", "gradscope: interrupted", ExitCode.INTERRUPTED, want)
            ctx.exit(int(ExitCode.INTERRUPTED))
        except Exception as exc:  # gradscope's own bug: say so, in one line unless asked
            from gradscope._src.engine.messages import one_line

            if _wants_traceback(ctx):
                traceback.print_exc()
            command = " ".join(filter(None, ("gradscope", ctx.invoked_subcommand)))
            message = visible(
                one_line(f"{command}: internal error: {type(exc).__name__}: {exc}", 300)
            )
            click.echo(message, err=True)
            again = " ".join(filter(None, ("gradscope --traceback", ctx.invoked_subcommand)))
            click.echo(
                "  This is a bug in gradscope: please report it to the gradscope issue tracker "
                f"with what you ran and the output of `{again} ...` (the same command).",
                err=True,
            )
            if want is not None:
                machine.of("internal", message, ExitCode.INTERNAL, want)
            ctx.exit(int(ExitCode.INTERNAL))
        finally:
            if want is not None:
                machine.sink(None)


def _end_if_threads_left(stop: SystemExit, before: set[threading.Thread]) -> None:
    """After the report: wait for threads started during the command that are not daemons,
    at most :data:`LINGER_SECONDS`; then say so and end the process with the report's code."""
    import time

    if _INVOKED[-1:] == ["run"]:  # a program's own threads: it ends as Python ends it
        return

    def left() -> list[threading.Thread]:
        return [t for t in threading.enumerate()
                if t not in before and t.is_alive() and not t.daemon]  # fmt: skip

    deadline = time.monotonic() + LINGER_SECONDS
    for thread in left():
        thread.join(max(0.0, deadline - time.monotonic()))
    running = left()
    if not running:
        return
    names = ", ".join(visible(t.name) for t in running[:3]) + (", ..." if len(running) > 3 else "")
    code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    click.echo(
        f"gradscope: {len(running)} thread{'s' if len(running) != 1 else ''} the target "
        f"started ({names}) still running {LINGER_SECONDS:g} s after the report; gradscope "
        f"ended {'it' if len(running) == 1 else 'them'} (Python would wait forever), exit "
        f"code {code} as reported",
        err=True,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _wants_traceback(ctx: click.Context) -> bool:
    return bool((ctx.obj or {}).get("traceback")) or os.environ.get(TRACEBACK_ENV) == "1"


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, "--version", prog_name="gradscope")
@click.option("--traceback", is_flag=True, help="Show Python tracebacks of failures.")
@click.pass_context
def main(ctx: click.Context, traceback: bool) -> None:
    """For every loss and every variable: does a gradient flow, how large is it, and if not,
    where and why was the path cut."""
    ctx.obj = {"traceback": traceback}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
