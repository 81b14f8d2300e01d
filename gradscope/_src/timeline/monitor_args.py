"""The Keras ``Monitor``'s arguments, checked when it is made; its timeline kept when unwritable."""

from __future__ import annotations

import numbers
import os
import tempfile
from typing import Any

from gradscope._src.errors import ArgumentTypeError, ArgumentValueError
from gradscope._src.timeline.findings import Thresholds
from gradscope._src.writable import Unwritable, refusal, unwritable

_WHO = "gradscope.keras.Monitor"


def check_arguments(
    every: Any, timeline: Any, tensorboard: Any, thresholds: Any, histograms: Any, per_loss: Any
) -> None:
    """Refuse a wrong argument before any training (a fit that ran to its end for nothing).

    Raises:
        TypeError: an argument of the wrong type (the message says what was seen); a
            ``gradscope.UsageError`` too.
        ValueError: ``every`` below 1, or an empty path; a ``gradscope.UsageError`` too.
        OSError: ``timeline`` or ``tensorboard`` cannot be written (see :func:`check_writable`).
    """
    if isinstance(every, bool) or not isinstance(every, numbers.Integral):
        raise ArgumentTypeError(f"{_WHO}: every must be a whole number of steps, saw {every!r}")
    if every < 1:
        raise ArgumentValueError(f"{_WHO}: every must be 1 or more steps, saw {every!r}")
    if int(every) > 2**63 - 1:  # steps are int64: `step % every` would overflow once fit runs
        raise ArgumentValueError(
            f"{_WHO}: every must be at most 2**63-1 steps (int64), saw {every!r}"
        )
    for name, path in (("timeline", timeline), ("tensorboard", tensorboard)):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise ArgumentTypeError(f"{_WHO}: {name} must be a path or None, saw {path!r}")
        if path is not None and not os.fspath(path):
            raise ArgumentValueError(f"{_WHO}: {name} must be a path or None, saw an empty path")
    if thresholds is not None and not isinstance(thresholds, Thresholds):
        raise ArgumentTypeError(
            f"{_WHO}: thresholds must be a gradscope.keras.Thresholds or None, saw {thresholds!r}"
        )
    for name, flag in (("histograms", histograms), ("per_loss", per_loss)):
        if not isinstance(flag, bool):
            raise ArgumentTypeError(f"{_WHO}: {name} must be True or False, saw {flag!r}")
    check_writable(timeline, tensorboard)


def check_writable(timeline: Any, tensorboard: Any) -> None:
    """Refuse outputs that cannot be written: a timeline file where a directory is, or below
    a file; a TensorBoard directory that is a file or below one; a directory not writable.

    Raises:
        OSError: naming the path and why (``IsADirectoryError``, ``NotADirectoryError``,
            ``PermissionError``).
    """
    if timeline is not None:
        path = os.fspath(timeline)
        if os.path.isdir(path) and not os.path.islink(path):
            raise IsADirectoryError(
                f"{_WHO}: cannot write the timeline to {path!r}: it is a directory"
            )
        why = refusal(path)  # a device node, a symbolic link, a FIFO: never replaced
        if why is not None:
            raise Unwritable(f"{_WHO}: cannot write the timeline to {path!r}", why, refused=True)
        _check_directory(os.path.dirname(os.path.abspath(path)), f"the timeline to {path!r}")
    if tensorboard is not None:
        path = os.fspath(tensorboard)
        _check_directory(os.path.abspath(path), f"TensorBoard files to {path!r}")


def _check_directory(directory: str, what: str) -> None:
    """``directory`` exists and is writable, or can be made (its nearest existing ancestor
    is a writable directory)."""
    found = unwritable(directory)
    if found is None:
        return
    existing, error = found
    if isinstance(error, NotADirectoryError):
        raise NotADirectoryError(
            f"{_WHO}: cannot write {what}: {existing!r} is a file, not a directory"
        )
    why = error.strerror or str(error)
    raise type(error)(f"{_WHO}: cannot write {what}: {existing!r} is not writable ({why})")


def rescue(timeline: dict[str, Any], path: str, error: OSError) -> OSError:
    """The error to raise when the timeline could not be written to ``path`` at the end of
    a fit: the timeline is written to a new file in the temporary directory instead, and the
    message says where it went (or that it is only in ``monitor.timeline`` now)."""
    from gradscope._src.timeline.record import write

    why = error.why if isinstance(error, Unwritable) else (error.strerror or str(error))
    if error.strerror and error.filename:
        why = f"{error.strerror}: {os.fspath(error.filename)!r}"
    steps = len(timeline.get("steps", []))
    kept = "it is in monitor.timeline"
    try:
        fd, spare = tempfile.mkstemp(prefix="gradscope-timeline-", suffix=".json")
        os.close(fd)
        write(spare, timeline)
        kept = f"written to {spare!r} instead (and in monitor.timeline)"
    except OSError:
        pass
    return OSError(
        f"{_WHO}: could not write the timeline to {path!r}: {why}; its {steps} recorded "
        f"steps are {kept}"
    )
