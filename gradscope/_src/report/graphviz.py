"""Graphviz's ``dot``, which lays pictures out as SVG or PNG: found on PATH, run with a time
limit, and a message that says how to install it when it is missing.

``GRADSCOPE_DOT`` names another ``dot`` binary (or an empty one to act as if none were
installed). DOT and Mermaid pictures never need Graphviz.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from gradscope._src.errors import InternalError, UsageError

#: Environment variable naming the ``dot`` binary to use.
DOT_ENV = "GRADSCOPE_DOT"

#: Seconds ``dot`` may take to lay out one picture.
TIMEOUT = 120.0

INSTALL = (
    "apt-get install graphviz (Debian, Ubuntu) or brew install graphviz (macOS); "
    ".dot and .mmd pictures need nothing"
)
INSTALL_HINT = f"Graphviz's dot is not installed: {INSTALL}"


class GraphvizMissing(UsageError):
    """A picture format needs Graphviz's ``dot`` and it is not installed."""

    def __init__(self, what: str = "") -> None:
        need = f", and {what} need it" if what else ""
        super().__init__(f"gradscope: Graphviz's dot is not installed{need}: {INSTALL}")


def find() -> str | None:
    """The path of ``dot``, or None when Graphviz is not installed."""
    named = os.environ.get(DOT_ENV)
    if named is not None:
        return shutil.which(named) if named else None
    return shutil.which("dot")


def require(what: str = "") -> str:
    """The path of ``dot``; raises ``GraphvizMissing`` (exit 2) saying how to install it."""
    path = find()
    if path is None:
        raise GraphvizMissing(what)
    return path


def layout(source: str, fmt: str, *, timeout: float = TIMEOUT) -> bytes:
    """Lay a DOT picture out with ``dot -T<fmt>``: ``svg`` or ``png`` bytes.

    Raises:
        GraphvizMissing: ``dot`` is not installed.
        UsageError: ``dot`` took longer than ``timeout`` seconds.
        InternalError: ``dot`` refused the picture (gradscope wrote bad DOT).
    """
    dot = require(f".{fmt} pictures")
    try:
        done = subprocess.run(
            [dot, f"-T{fmt}"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise UsageError(
            f"gradscope: Graphviz's dot took over {timeout:.0f} s to lay the picture out; "
            "write a .dot or .mmd file instead, or draw without --expand"
        ) from exc
    except OSError as exc:
        raise UsageError(f"gradscope: cannot run Graphviz's dot ({dot}): {exc.strerror}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InternalError(f"Graphviz's dot failed: {message[0] if message else done.returncode}")
    return done.stdout


def svg(source: str) -> str:
    """The SVG text of a DOT picture (see ``layout``)."""
    return layout(source, "svg").decode("utf-8")


def inline_svg(source: str) -> str | None:
    """The ``<svg>`` element alone (no XML prolog) for an HTML page; None without Graphviz."""
    if find() is None:
        return None
    text = svg(source)
    start = text.find("<svg")
    return text[start:] if start >= 0 else text
