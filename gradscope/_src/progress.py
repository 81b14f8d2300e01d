"""Progress reports: a callable that takes a short phase description (``"tracing ..."``)."""

from __future__ import annotations

from collections.abc import Callable

#: Called with a short description of each phase as work proceeds.
Progress = Callable[[str], None]


def quiet(_phase: str) -> None:
    """The progress callback that reports nothing."""
    return None


def prefixed(progress: Progress, label: str) -> Progress:
    """``progress`` with ``label`` before every phase (``[2/5] configs/x.yaml: ``)."""
    return lambda phase: progress(label + phase)
