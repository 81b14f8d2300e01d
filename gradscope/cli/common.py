"""What every command shares: options, atomic output, colour and progress on a terminal."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from gradscope import watchdog
from gradscope.errors import UsageError
from gradscope.spec.model import DEFAULT_MAX_ELEMENTS
from gradscope.watchdog import DEFAULT_TIMEOUT

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
        type=click.Path(dir_okay=False, writable=True),
        default=None,
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


def numeric_option(fn: F) -> F:
    """``--numeric``: compare every ``ok`` gradient with finite differences."""
    return click.option(
        "--numeric",
        is_flag=True,
        help="Also compare every ok gradient with central finite differences (float64 "
        "where the spec allows; up to 16 coordinates per variable): a verdict per pair, and "
        "a numeric-differs problem where they disagree with nothing to explain it.",
    )(fn)


def device_name(choice: str) -> str | None:
    return {"auto": None, "cpu": "CPU:0", "gpu": "GPU:0"}[choice]


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


def color_wanted(output: str | None) -> bool:
    """Colour only on a terminal, never into a file, and never with NO_COLOR set."""
    return output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def width() -> int:
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size((120, 24)).columns
    return int(os.environ.get("COLUMNS", "120"))


_INTERRUPTED = [False]


@contextlib.contextmanager
def interrupts_noted() -> Iterator[None]:
    """Remember a Ctrl-C for as long as a command runs, even one a library swallowed.

    Ctrl-C raises ``KeyboardInterrupt`` as usual; the note is for when it lands where some
    code catches and drops it (a finalizer, a callback inside TensorFlow): no output file is
    replaced after a Ctrl-C all the same (``write_atomic_bytes`` checks it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: Any) -> None:
        _INTERRUPTED[0] = True
        signal.default_int_handler(signum, frame)

    _INTERRUPTED[0] = False
    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _INTERRUPTED[0] = False


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    An error or Ctrl-C leaves any previous file untouched.
    """
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, as ``write_atomic`` does (a PNG picture)."""
    import tempfile

    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")
    _check_target(path)
    name = os.path.basename(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with _signals_end_write():
            _write_replace(fd, tmp, path, data)
    except OSError as exc:  # a full disk, a quota, a read-only file system
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _check_target(path: str) -> None:
    """Only a regular file (or a new one) may be written, and never an input of the command.

    ``os.replace`` onto ``/dev/null`` (as root) or a symlink would replace the node itself
    with a regular file; a report written over its own spec would destroy the spec.
    """
    import stat

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"--output {path}: is a symbolic link; name the file it points to")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"--output {path}: not a regular file; --output writes files only")
    for given in _inputs():
        with contextlib.suppress(OSError):
            if os.path.samefile(given, path):
                raise UsageError(f"--output {path}: is an input of this command ({given})")


def _inputs() -> list[str]:
    """The files the running command reads (its spec, specs, baseline, timeline)."""
    ctx = click.get_current_context(silent=True)
    found: list[str] = []
    while ctx is not None:
        for key in ("spec", "specs", "target", "baseline", "timeline", "file", "script"):
            value = ctx.params.get(key)
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if isinstance(v, (str, os.PathLike)):
                    text = str(v)
                    # a Python target path/file.py:function reads path/file.py
                    found += [text, text.rpartition(":")[0]] if ":" in text else [text]
        ctx = ctx.parent
    return found


@contextlib.contextmanager
def _signals_end_write() -> Iterator[None]:
    """While the temporary file exists, SIGTERM and SIGHUP end the process through Python
    (``SystemExit``), so the ``except`` around the write removes the temporary file."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    caught = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, end) for s in caught}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _write_replace(fd: int, tmp: str, path: str, data: bytes) -> None:
    os.chmod(tmp, _mode(path))  # mkstemp's 0600 would hide a report from other users
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if _INTERRUPTED[0]:
        raise KeyboardInterrupt  # Ctrl-C came earlier and was swallowed on its way up
    os.replace(tmp, path)


def _mode(path: str) -> int:
    """The permissions a new file gets (0666 less the umask), or those of the file replaced."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def emit(text: str, output: str | None) -> None:
    """Print the rendered report, or write it to ``output``."""
    if output:
        write_atomic(output, text)
    else:
        click.echo(text, nl=not text.endswith("\n"))


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
def progress(quiet: bool) -> Iterator[Callable[[str], None]]:
    """A callback that shows the current phase and the elapsed time on standard error.

    Shown only when standard error is a terminal and ``--quiet`` is not given. It writes to a
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
    if quiet or not sys.stderr.isatty():
        yield lambda _phase: None
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
