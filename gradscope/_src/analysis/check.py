"""``gradscope check``'s analysis: reports held to a baseline and combined into a
``CheckResult`` (``results/check.py``), and ``expect`` given in Python read as a spec's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gradscope._src.analysis.baseline import Baseline
from gradscope._src.errors import UsageError
from gradscope._src.location import line_of
from gradscope._src.results import report as m
from gradscope._src.results.check import CheckResult
from gradscope._src.results.expect import Expectation, Pattern, Pos

#: ``{loss: {"none": [glob, ...], "connected": [...], "numeric": [...]}}``, as in a spec's
#: ``expect``.
ExpectMap = Mapping[str, Mapping[str, Sequence[str] | str]]


def check_reports(reports: Sequence[m.Report], baseline: Baseline | None = None) -> CheckResult:
    """Hold reports to a baseline (when given) and combine them."""
    if baseline is None:
        return CheckResult(tuple(reports))
    marked = tuple(baseline.mark(r) for r in reports)
    return CheckResult(marked, baseline.path, baseline.fixed(marked))


def expectations_of(
    expect: ExpectMap, label: str, sources: Mapping[str, str]
) -> tuple[Expectation, ...]:
    """``expect`` given in Python, as the spec's own ``expect`` block would read.

    Each pattern is located at its loss's line (``sources``: ``FILE:LINE`` per loss), since
    it was not written in the spec.

    Raises:
        UsageError: an unknown loss, an unknown field, or a pattern that is not a string.
    """
    names = list(sources)
    out = []
    for loss_name, fields in expect.items():
        if loss_name not in names:
            raise UsageError(
                f"expect: {label} has no loss {loss_name!r}; it has {', '.join(names)}"
            )
        unknown = sorted(set(fields) - {"none", "connected", "numeric"})
        if unknown:
            raise UsageError(f"expect.{loss_name}: unknown field {unknown[0]!r} "
                             "(expected `none`, `connected` and/or `numeric`)")  # fmt: skip
        pos = Pos(line_of(sources[loss_name]), 1)
        lists = {key: _globs(fields.get(key, ()), f"expect.{loss_name}.{key}", pos)
                 for key in ("none", "connected", "numeric")}  # fmt: skip
        out.append(Expectation(loss_name, lists["none"], lists["connected"], pos, lists["numeric"]))
    return tuple(out)


def _globs(value: Sequence[str] | str, where: str, pos: Pos) -> tuple[Pattern, ...]:
    items = [value] if isinstance(value, str) else list(value)
    bad = [g for g in items if not isinstance(g, str)]
    if bad:
        raise UsageError(f"{where}: expected glob strings, saw {bad[0]!r}")
    return tuple(Pattern(g, pos) for g in items)
