"""Baselines: a JSON report from an earlier run whose problems ``check`` no longer fails on.

A baseline is any JSON report gradscope wrote: ``inspect --format json``, ``check --format
json`` or ``check --write-baseline``, for one spec or several (the combined shape with a
``reports`` list). Every problem in it, new or already known then, is held by the baseline.

A problem is identified by its spec, loss, variable and kind (``Problem.key``), never by its
message or line, so editing the spec around it or a change of norm keeps it known. Spec
paths are compared after normalisation (``./configs/x.yaml`` is ``configs/x.yaml``), as
written in the report (relative to where it was written) and, for a run from another
directory, relative to the baseline file's own folder.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

from gradscope._src.errors import UsageError
from gradscope._src.printable import printable, printable_or_none
from gradscope._src.results import report as m
from gradscope._src.results.check import Key


def spec_key(path: str) -> str:
    """A spec path as baselines compare it: normalised, relative to the current directory
    when it lies below it, with forward slashes.

    Example:
        >>> spec_key("./configs//x.yaml")
        'configs/x.yaml'
    """
    if not path:
        return path
    if os.path.isabs(path):
        try:
            path = os.path.relpath(path)
        except ValueError:  # another drive on Windows
            return PurePath(path).as_posix()
    path = os.path.normpath(path)
    if path == ".." or path.startswith(".." + os.sep):  # outside the current directory
        path = os.path.abspath(path)
    return PurePath(path).as_posix()


def key_of(problem: m.Problem, spec: str | None = None) -> Key:
    """What identifies ``problem`` of the report for ``spec`` across runs.

    ``spec`` is the report's spec or Python target (``train.py:build``): a target's problems
    are located in the file that created the variable, which several targets may share.
    """
    return (  # names escaped as the baseline's are (_key): a name's newline, either side
        spec_key(printable(spec or problem.spec)),
        printable_or_none(problem.loss),
        printable_or_none(problem.variable),
        problem.kind,
    )


@dataclass(frozen=True)
class Baseline:
    """The problems an earlier report held, and where that report came from."""

    path: str
    keys: frozenset[Key]
    #: A key whose spec reads differently relative to the baseline file's folder, with that
    #: reading (``s.yaml`` in ``bl/base.json`` is ``bl/s.yaml`` when checked from above).
    moved: Mapping[Key, Key] = field(default_factory=dict)

    @functools.cached_property
    def _moved_keys(self) -> frozenset[Key]:
        return frozenset(self.moved.values())

    def holds(self, problem: m.Problem, spec: str | None = None) -> bool:
        key = key_of(problem, spec)
        return key in self.keys or key in self._moved_keys

    def mark(self, report: m.Report) -> m.Report:
        """``report`` with every problem the baseline holds marked ``known``."""
        problems = tuple(replace(p, known=self.holds(p, report.spec)) for p in report.problems)
        return replace(report, problems=problems)

    def fixed(self, reports: Iterable[m.Report]) -> tuple[Key, ...]:
        """Baseline problems of the given reports' specs that no longer occur, sorted."""
        reports = list(reports)
        specs = {spec_key(r.spec) for r in reports}
        now = {key_of(p, r.spec) for r in reports for p in r.problems}
        gone = []
        for k in self.keys:
            other = self.moved.get(k, k)
            if (k[0] in specs or other[0] in specs) and k not in now and other not in now:
                gone.append(k)
        return tuple(sorted(gone, key=lambda k: (k[0], k[1] or "", k[2] or "", k[3])))


def load_baseline(path: str) -> Baseline:
    """Read a baseline report.

    Args:
        path: a JSON report written by ``inspect`` or ``check`` (single or combined).

    Returns:
        The baseline.

    Raises:
        UsageError: the file is missing, is not JSON, or is not a gradscope report; the
            message names the file (and the line, for JSON syntax errors).
    """
    try:
        text = _read_report(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--baseline {path}: cannot read it: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:  # a report is a few levels deep; this is not one
        raise UsageError(f"{path}:1:1: not a gradscope report: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4300 digits, ...
        raise UsageError(f"{path}:1:1: not a gradscope report: {str(exc)[:80]}") from None
    keys = frozenset(baseline_keys(data, path))
    folder = os.path.dirname(os.path.abspath(path))
    moved = {k: (spec, *k[1:]) for k in keys if (spec := _from(folder, k[0])) not in (None, k[0])}
    return Baseline(path, keys, moved)


#: Largest baseline read: a report of the largest spec is a few MiB.
MAX_BASELINE_BYTES = 64 * 2**20


def _read_report(path: str) -> str:
    """The baseline's text; only a regular file (never a FIFO or a device) up to a size."""
    import stat

    # O_NONBLOCK: opening a FIFO to read would otherwise wait for a writer forever.
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(0, "not a regular file")
        data = handle.read(MAX_BASELINE_BYTES + 1)
    if len(data) > MAX_BASELINE_BYTES:
        raise OSError(0, f"larger than {MAX_BASELINE_BYTES // 2**20} MiB")
    return data.decode("utf-8")


def _from(folder: str, spec: str) -> str | None:
    """``spec`` (a file, or a ``file.py:function`` target) read relative to ``folder``;
    None for a module target or an absolute path."""
    path, suffix = spec, ""
    if ":" in spec:
        path, _, function = spec.rpartition(":")
        if not path.endswith(".py"):
            return None
        suffix = f":{function}"
    if not path or os.path.isabs(path):
        return None
    return spec_key(os.path.join(folder, path)) + suffix


def baseline_keys(data: Any, path: str = "baseline") -> list[Key]:
    """Every problem key of a parsed JSON report (single or combined)."""
    if not isinstance(data, Mapping):
        raise UsageError(f"{path}: not a gradscope JSON report (expected an object)")
    if isinstance(data.get("reports"), list):
        return [k for report in data["reports"] for k in baseline_keys(report, path)]
    if data.get("gradscope") != m.REPORT_VERSION or not isinstance(data.get("problems"), list):
        raise UsageError(
            f"{path}: not a gradscope JSON report (write one with `gradscope check "
            f"--write-baseline FILE` or `--format json`)"
        )
    spec = str(data.get("spec", ""))
    items = list(data["problems"]) + list(data.get("known_problems") or [])
    return [_key(item, spec, path) for item in items]


def _key(item: Any, spec: str, path: str) -> Key:
    if not isinstance(item, Mapping) or not isinstance(item.get("kind"), str):
        raise UsageError(f"{path}: a problem without a `kind`: {json.dumps(item)[:80]}")
    loss, variable = item.get("loss"), item.get("variable")
    return (  # names escaped as every report escapes them (gradscope._src.printable)
        spec_key(printable(spec or str(item.get("spec") or ""))),  # the report's spec or target
        None if loss is None else printable(str(loss)),
        None if variable is None else printable(str(variable)),
        printable(item["kind"]),
    )
