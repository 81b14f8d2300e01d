"""What every command shares: options, atomic output, colour and progress on a terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from gradscope._src import watchdog
from gradscope._src.cli.output import OutputPath
from gradscope._src.frontends.yaml.model import DEFAULT_MAX_ELEMENTS
from gradscope._src.progress import Progress
from gradscope._src.watchdog import DEFAULT_TIMEOUT

# Imports of heavy standard modules (pathlib, tempfile, shutil) happen inside functions:
# `gradscope --help` must cost little more than importing click.

F = TypeVar("F", bound=Callable[..., Any])


def max_elements_option(fn: F, help: str | None = None) -> F:
    """``--max-elements`` as ``validate`` uses it (inputs and variables only)."""
    return click.option(
        "--max-elements",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_ELEMENTS,
        show_default=True,
        help=help
        or "Refuse inputs and variables with more elements than this (commands that run "
        "TensorFlow also hold every op output and layer weight to it).",
    )(fn)


_RUN_MAX_ELEMENTS = (
    "Refuse a spec that would make a tensor (an input, a variable, an op's output, a layer's "
    "weight) with more elements than this, before anything is allocated. Python targets "
    "are your own code and run as written."
)


def output_option(fn: F) -> F:
    return click.option(
        "--output",
        "-o",
        type=OutputPath(),
        default=None,
        metavar="FILE",
        help="Write the report to FILE (atomically) instead of standard output.",
    )(fn)


def run_options(fn: F) -> F:
    """Options of every command that runs TensorFlow."""
    fn = click.option(
        "--quiet", "-q", is_flag=True, help="No progress messages on standard error."
    )(fn)
    fn = click.option(
        "--device",
        type=click.Choice(["auto", "cpu", "gpu"]),
        default="auto",
        show_default=True,
        help="Where the gradients run; auto is TensorFlow's own placement.",
    )(fn)
    fn = click.option(
        "--timeout",
        type=click.FloatRange(min=0),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        expose_value=False,
        callback=_timeout_given,
        metavar="SECONDS",
        help="Stop with exit code 2 after this many seconds, naming what was running (0: no "
        "limit).",
    )(fn)
    fn = click.option(
        "--traceback",
        is_flag=True,
        expose_value=False,
        callback=_traceback_wanted,
        help="Show Python tracebacks of failures (also accepted before the command).",
    )(fn)
    return max_elements_option(fn, _RUN_MAX_ELEMENTS)


def _timeout_given(ctx: click.Context, _param: click.Parameter, value: float) -> None:
    root = ctx.find_root()
    root.obj = {**(root.obj or {}), "timeout": value}


def _timeout() -> tuple[float | None, str]:
    """The ``--timeout`` of the running command, and the command's name."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None, ""
    return (ctx.find_root().obj or {}).get("timeout"), ctx.info_name or ""


def _traceback_wanted(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``gradscope inspect X --traceback`` as ``gradscope --traceback inspect X``."""
    if value:
        root = ctx.find_root()
        root.obj = {**(root.obj or {}), "traceback": True}


def strategy_options(fn: F) -> F:
    """``--strategy`` and ``--replicas`` (contract section 8), for every command that runs
    gradients: the command passes them on as ``strategy=`` and ``replicas=``
    (``pipeline.distribution``); ``gradscope run`` has its own (``cli/run.py``): a program
    picks its strategy, gradscope only makes the devices it finds."""
    fn = click.option(
        "--replicas",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="How many replicas (default 2 with a strategy): logical CPU devices on this "
        "machine (GPUs when there are enough); multiworker: one local worker process each.",
    )(fn)
    return click.option(
        "--strategy",
        type=click.Choice(["default", "mirrored", "multiworker"]),
        default="default",
        show_default=True,
        help="Run each loss per replica under this tf.distribute strategy, a spec's inputs "
        "split along their first axis (a Python target's losses run whole on each replica): "
        "pairs show the all-reduced gradient and every replica's; replicas that disagree "
        "are a replica-mismatch problem.",
    )(fn)


def numeric_option(fn: F) -> F:
    """``--numeric``: compare every ``ok`` gradient with finite differences."""
    return click.option(
        "--numeric",
        is_flag=True,
        help="Also compare every ok gradient with central finite differences (float64 "
        "where the spec allows; up to 16 coordinates per variable): a verdict per pair, and "
        "a numeric-differs problem where they disagree with nothing to explain it.",
    )(fn)


def table_options(fn: F) -> F:
    """``--problems`` and ``--group``: what the table shows of a big model."""
    fn = click.option(
        "--group",
        type=click.Choice(["auto", "layer", "none"]),
        default="auto",
        show_default=True,
        help="Table: gather variables into rows. layer: a run of variables (layers) with the "
        "same status under every loss and no problem is one row with a count, and identical "
        "cut points are one row; none: a row per variable; auto: layer from 40 variables on.",
    )(fn)
    return click.option(
        "--problems",
        "problems_only",
        is_flag=True,
        help="Table: show only the variables and cut points a problem names (and the summary).",
    )(fn)


def table_render_options(fmt: str, group: str, problems_only: bool) -> dict[str, Any]:
    """The render options of ``table_options`` for the formats that take them."""
    return {"group": group, "problems_only": problems_only} if fmt == "table" else {}


def format_option(choices: list[str], default: str = "table") -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(choices),
            default=default,
            show_default=True,
            help="Output format.",
        )(fn)

    return decorate


def color_wanted(output: str | None, *, stderr: bool = False) -> bool:
    """Colour only on a terminal, never into a file, and never with NO_COLOR set."""
    stream = sys.stderr if stderr else sys.stdout
    return output is None and stream.isatty() and "NO_COLOR" not in os.environ


def width() -> int:
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size((120, 24)).columns
    return int(os.environ.get("COLUMNS", "120"))


class _Phase:
    """What the progress line shows: a spinner, the phase, and the time since the start,
    recomputed on every refresh so the clock runs while TensorFlow is busy."""

    def __init__(self, plain: bool = False) -> None:
        from rich.spinner import Spinner

        self.start = time.monotonic()
        self.text = "starting"
        self.plain = plain  # NO_COLOR: no colour and no dimmed text
        self.spinner = Spinner("dots", style=None if plain else "green")

    def __rich__(self) -> Any:
        from rich.table import Table

        line = Table.grid(padding=(0, 1))
        elapsed = time.monotonic() - self.start
        took = f"({elapsed:.1f}s)" if self.plain else f"[dim]({elapsed:.1f}s)[/]"
        line.add_row(self.spinner, f"{self.text} {took}")
        return line


@contextlib.contextmanager
def progress(quiet: bool) -> Iterator[Progress]:
    """A callback that shows the current phase and the elapsed time on standard error.

    On a terminal (and without ``--quiet``) it is a live line; elsewhere (a CI log) it is
    ``plain_progress``. The live line writes to a
    duplicate of file descriptor 2, so it keeps working while TensorFlow's import banners
    are being caught on the real one. Every phase is drawn at least once, however short.
    """
    seconds, command = _timeout()
    with watchdog.limit(seconds, command), _shown(quiet) as show:

        def update(text: str) -> None:
            watchdog.note_phase(text)
            show(text)

        yield update


@contextlib.contextmanager
def _shown(quiet: bool) -> Iterator[Callable[[str], None]]:
    if quiet:
        yield lambda _phase: None
        return
    if not sys.stderr.isatty():  # a CI log: a plain line for each phase that runs long
        with plain_progress() as show:
            yield show
        return
    from rich.console import Console
    from rich.live import Live

    stream = os.fdopen(os.dup(2), "w", encoding="utf-8")
    plain = bool(os.environ.get("NO_COLOR"))
    phase = _Phase(plain)
    console = Console(file=stream, no_color=plain, highlight=False)
    live = Live(phase, console=console, refresh_per_second=10, transient=True)

    def update(text: str) -> None:
        phase.text = text
        live.refresh()

    live.start()
    try:
        yield update
    finally:
        live.stop()
        stream.close()


#: A phase that runs this long gets a plain progress line in a CI log, then one every
#: ``PLAIN_EVERY`` seconds while it lasts.
PLAIN_AFTER = 10.0
PLAIN_EVERY = 60.0


@contextlib.contextmanager
def plain_progress(
    after: float | None = None, every: float | None = None
) -> Iterator[Callable[[str], None]]:
    """Plain lines on standard error for phases that run long, for logs that are not a
    terminal: ``gradscope: tracing the model (still running after 10s, 14s in all)``. A
    short run prints nothing, so a quick CI step's log stays clean."""
    first, then = after or PLAIN_AFTER, every or PLAIN_EVERY
    start = time.monotonic()
    state: dict[str, Any] = {"phase": "", "since": start, "timer": None}
    lock = threading.Lock()

    def announce() -> None:
        with lock:
            now = time.monotonic()
            click.echo(
                f"gradscope: {state['phase']} (still running after {now - state['since']:.0f}s, "
                f"{now - start:.0f}s in all)",
                err=True,
            )
            arm(then)

    def arm(delay: float) -> None:
        timer = threading.Timer(delay, announce)
        timer.daemon = True  # never keeps the process alive
        state["timer"] = timer
        timer.start()

    def show(phase: str) -> None:
        with lock:
            if state["timer"] is not None:
                state["timer"].cancel()
            state.update(phase=phase, since=time.monotonic())
            arm(first)

    try:
        yield show
    finally:
        with lock:
            if state["timer"] is not None:
                state["timer"].cancel()
            state["timer"] = None
