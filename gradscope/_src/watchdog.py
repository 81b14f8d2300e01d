"""``--timeout``: a run that takes too long ends with exit 2 and one line saying where it was."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

from gradscope._src import failure

#: The default wall-clock limit of a command that runs TensorFlow, in seconds.
DEFAULT_TIMEOUT = 900.0

_STATE: dict[str, str] = {"phase": "starting", "node": ""}


def note_phase(text: str) -> None:
    """What the run is doing now (the phases the progress line shows)."""
    _STATE["phase"] = text


def note_node(text: str) -> None:
    """The node a long run most likely spends its time in (the costliest one)."""
    _STATE["node"] = text


def message(command: str, seconds: float) -> str:
    """``gradscope inspect: stopped after 900 s (--timeout) while computing gradients; ...``."""
    where = f"; its costliest node is {_STATE['node']}" if _STATE["node"] else ""
    advice = (
        "raise --timeout or make the spec smaller" if where else "raise --timeout (0: no limit)"
    )
    return (
        f"gradscope {command}: stopped after {seconds:g} s (--timeout) while "
        f"{_STATE['phase']}{where}; {advice}"
    )


@contextlib.contextmanager
def limit(seconds: float | None, command: str) -> Iterator[None]:
    """End the process with exit code 2 when the body runs longer than ``seconds``.

    TensorFlow runs a traced function in C++ without returning to Python, so no exception
    can stop it: a timer thread prints the message and ends the process (``os._exit``). No
    output file is open at that point (reports are written after the run).

    The message goes to standard error as it was when the limit began (a duplicate of file
    descriptor 2 taken then): while TensorFlow is imported, descriptor 2 points at a file
    that catches its banners, and a target's code may point it at ``/dev/null``; ending the
    process then would take the message with it (a silent exit 2).
    """
    if not seconds:
        yield
        return
    try:
        stream = os.dup(2)
    except OSError:  # no standard error at all: nothing can be said
        stream = -1

    def expire() -> None:
        said = message(command, seconds).encode("utf-8", "backslashreplace")
        if stream >= 0:
            with contextlib.suppress(OSError):
                sys.stderr.flush()
                start = b"\r\x1b[2K" if os.isatty(stream) else b""  # over a progress line
                os.write(stream, start + said + b"\n")
        failure.said("timeout", message(command, seconds), 2, command)  # --format json: data
        os._exit(2)

    _STATE.update(phase="starting", node="")
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if stream >= 0:
            os.close(stream)
