"""The Python API: ``inspect`` a spec or target and get a ``Report``; the CLI calls the same."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from gradscope.analysis import model as m
from gradscope.analysis.check import CheckResult, ExpectMap
from gradscope.errors import UsageError
from gradscope.gradients.facts import EVERY_PAIR
from gradscope.runner import Progress, load, run, run_spec
from gradscope.runner import quiet as _quiet
from gradscope.spec.model import DEFAULT_MAX_ELEMENTS

if TYPE_CHECKING:
    from gradscope.analysis.diff import DiffReport
    from gradscope.analysis.diff_matrix import DiffMatrix

__all__ = ["check", "diff", "inspect", "load", "run", "run_spec"]


def inspect(
    target: Any,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
    pictures: bool = False,
    numeric: bool = False,
) -> m.Report:
    """Every loss x every variable of a spec or a Python target: status, norm, cut points.

    Args:
        target: a spec path (``configs/multitask.yaml``) or a loaded ``Spec``; or a Python
            target: ``"my_pkg.models:build"``, ``"path/to/train.py:build"``, a
            ``gradscope.Target``, a mapping with its fields, or a zero-argument function
            returning one of those.
        losses: only these losses (default: all).
        device: ``"CPU:0"``, ``"GPU:0"`` or None for TensorFlow's own placement.
        max_elements: the largest tensor a spec may ask for (specs only).
        progress: called with a short phase description as work proceeds.
        pictures: also draw each loss's gradient-flow picture (``report.picture(loss)``),
            for the markdown and html formats.
        numeric: also compare every ``ok`` gradient with central finite differences (in
            float64 where a spec allows; up to 16 coordinates per variable): each such pair
            gets a ``numeric`` verdict (``agrees``, ``differs``, ``expected-difference``,
            ``skipped``), and an unexplained difference is a ``numeric-differs`` problem.

    Returns:
        The ``Report``; ``report.to_dict()`` is the JSON report, and rich consoles and
        notebooks print it as the table (``Report.__rich__``).

    Raises:
        SpecErrors: the spec is invalid. BuildError: TensorFlow refused a node.
        TargetError: the Python target cannot be imported, called or understood.
        UsageError: an unknown loss name.

    Example:
        >>> report = gradscope.inspect("configs/multitask.yaml")
        >>> report.loss("loss_1").pair("task2/w").status
        'none:disconnected'
        >>> def build():
        ...     w = tf.Variable(2.0, name="w")
        ...     return gradscope.Target(losses={"frozen": lambda: tf.stop_gradient(w) * 3.0})
        >>> gradscope.inspect(build).loss("frozen").pair("w").cut_points[0].op
        'StopGradient'
    """
    return run(
        target, losses=losses, device=device, max_elements=max_elements, progress=progress,
        pictures=pictures, numeric=numeric,
    )[0]  # fmt: skip


@overload
def diff(
    target: Any,
    loss_a: str,
    loss_b: str,
    *,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
) -> DiffReport: ...


@overload
def diff(
    target: Any,
    loss_a: None = None,
    loss_b: None = None,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
) -> DiffMatrix: ...


def diff(
    target: Any,
    loss_a: str | None = None,
    loss_b: str | None = None,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
) -> DiffReport | DiffMatrix:
    """Two losses side by side, or the whole-model cosine of every pair of losses.

    Everything comes from one traced forward pass, the same as ``inspect``'s: one backward
    pass per loss, and the dot products of the gradients inside the same trace.

    Args:
        target: anything ``run`` accepts (a spec path, a ``Spec``, a Python target, ...).
        loss_a: the first loss; with ``loss_b``, a ``DiffReport`` of the two.
        loss_b: the second loss.
        losses: without ``loss_a``/``loss_b``: the losses of the matrix (default: all).
        device: ``"CPU:0"``, ``"GPU:0"`` or None for TensorFlow's own placement.
        max_elements: the largest tensor a spec may ask for.
        progress: called with a short phase description as work proceeds.

    Returns:
        A ``DiffReport`` for two losses, a ``DiffMatrix`` otherwise; ``.to_dict()`` of either
        is its JSON report.

    Raises:
        SpecErrors: the spec is invalid. BuildError: TensorFlow refused a node.
        UsageError: an unknown loss name, or one loss where two (or none) were expected.

    Example:
        >>> d = gradscope.diff("configs/gan-grad-loss.yaml", "d_loss", "g_loss_all")
        >>> d.diff.variable("disc/w").cosine
        -1.0
        >>> gradscope.diff("configs/multitask.yaml").cosine("loss_1", "loss_2")
        -0.144...
    """
    from gradscope.analysis.diff import DiffReport, compare
    from gradscope.analysis.diff_matrix import matrix

    options: dict[str, Any] = {"device": device, "max_elements": max_elements}
    options["progress"] = progress
    if losses and (loss_a is not None or loss_b is not None):
        raise UsageError("diff: give two losses (loss_a, loss_b) or losses=, not both")
    if loss_a is not None and loss_b is not None:
        report, facts = run(target, losses=[loss_a, loss_b], compare=[(loss_a, loss_b)], **options)
        return DiffReport(report, compare(report, facts.comparisons[0]))
    names = list(dict.fromkeys(losses or [n for n in (loss_a, loss_b) if n is not None]))
    if len(names) == 1:
        raise UsageError(
            f"diff: only one loss given ({names[0]!r}); name two to compare them side by side, "
            "or none for the matrix of every pair"
        )
    pairs = list(itertools.combinations(names, 2)) if names else [EVERY_PAIR]
    report, facts = run(target, losses=names or None, compare=pairs, **options)
    return matrix(report, facts.comparisons)


def check(
    targets: Any,
    *,
    expect: ExpectMap | None = None,
    baseline: str | None = None,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
    numeric: bool = False,
) -> CheckResult:
    """The CI gate: run every target once and hold it to its ``expect`` and the policy.

    A check fails on any ``nan`` gradient, any pair that contradicts ``expect``, and any
    trainable variable no loss trains unless an ``expect.<loss>.none`` pattern names it
    (rules in ``gradscope.analysis.policy``).

    Args:
        targets: one target (what ``run`` accepts: a spec path, a ``Spec``, a Python target
            string, a ``Target``, ...) or a list of them; several give one result.
        expect: ``{loss: {"none": [globs], "connected": [globs], "numeric": [globs]}}`` to
            use instead of each target's own ``expect`` block (for Python targets and tests).
        baseline: a JSON report from ``inspect`` or ``check``; the problems it holds are
            marked known and do not fail the check.
        device: ``"CPU:0"``, ``"GPU:0"`` or None for TensorFlow's own placement.
        max_elements: the largest tensor a spec may ask for.
        progress: called with a short phase description as work proceeds.
        numeric: also compare every ``ok`` gradient with finite differences and fail on
            ``numeric-differs`` (see ``inspect``).

    Returns:
        The ``CheckResult``: ``passed``, ``exit_code``, ``failures``, ``to_dict()``.

    Raises:
        SpecErrors: one or more targets are invalid (every error of every target; no
            partial result). UsageError: an unreadable baseline, a bad ``expect``.

    Example:
        >>> result = gradscope.check(["configs/multitask.yaml", "configs/stop-gradient.yaml"])
        >>> result.passed, int(result.exit_code)
        (True, 0)
    """
    from gradscope.analysis.baseline import load_baseline
    from gradscope.analysis.check import check_reports, with_expect
    from gradscope.errors import GradscopeError, SpecError, SpecErrors, TargetError

    held = load_baseline(baseline) if baseline is not None else None  # before any TensorFlow
    items = _unique(targets) if isinstance(targets, (list, tuple)) else [targets]
    if not items:
        raise UsageError("check needs at least one spec or target")
    reports: list[m.Report] = []
    errors: list[GradscopeError] = []
    for index, target in enumerate(items):
        name = getattr(target, "path", target)
        label = f"[{index + 1}/{len(items)}] {name}: " if len(items) > 1 else ""
        try:
            report = run(
                target,
                device=device,
                max_elements=max_elements,
                progress=_prefixed(progress, label),
                numeric=numeric,
            )[0]
        except (SpecErrors, SpecError, TargetError) as exc:  # keep going: report every error
            errors.append(exc)
            continue
        reports.append(report if expect is None else with_expect(report, expect))
        if report.unmatched and expect is None:  # a typo in a pattern would turn the gate off
            errors.append(SpecErrors(report.unmatched))
    if errors:
        raise _combined(errors)
    return check_reports(reports, held)


def _unique(targets: Sequence[Any]) -> list[Any]:
    """The targets in order, each once (a glob and an explicit path may name the same file)."""
    seen: set[object] = set()
    out = []
    for t in targets:
        key = t if isinstance(t, str) else id(t)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _prefixed(progress: Progress, label: str) -> Progress:
    return lambda phase: progress(label + phase)


def _combined(errors: Sequence[Exception]) -> Exception:
    """One exception for every target that failed: ``SpecErrors`` when they all are spec errors."""
    from gradscope.errors import ErrorGroup, GradscopeError, SpecError, SpecErrors

    if len(errors) == 1:
        return errors[0]
    if all(isinstance(e, (SpecErrors, SpecError)) for e in errors):
        flat: list[SpecError] = []
        for e in errors:
            if isinstance(e, SpecErrors):
                flat.extend(e.errors)
            elif isinstance(e, SpecError):
                flat.append(e)
        return SpecErrors(flat)
    return ErrorGroup([e for e in errors if isinstance(e, GradscopeError)])
