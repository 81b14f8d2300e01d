"""The Python API: ``inspect`` a spec or target and get a ``Report``; the CLI calls the same."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradscope.analysis import model as m
from gradscope.analysis.policy import find_problems
from gradscope.analysis.status import classify
from gradscope.errors import UsageError
from gradscope.spec.model import DEFAULT_MAX_ELEMENTS, Spec

Progress = Callable[[str], None]


def _quiet(_phase: str) -> None:
    return None


def load(target: str | Spec, *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Spec:
    """A spec from a path (or the spec itself); raises ``SpecErrors`` with every problem."""
    if isinstance(target, Spec):
        return target
    from gradscope.spec import load_spec

    return load_spec(str(target), max_elements=max_elements)


def _check_losses(spec: Spec, names: Sequence[str]) -> None:
    known = [loss.name for loss in spec.losses]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"{spec.path}: unknown loss {', '.join(repr(n) for n in unknown)}; "
            f"the spec has {', '.join(known) or 'no losses'}"
        )


def run_spec(
    spec: Spec,
    *,
    losses: Sequence[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    device: str | None = None,
    progress: Progress = _quiet,
    pictures: bool = False,
    expand: bool = False,
) -> tuple[m.Report, Any]:
    """Build and differentiate a spec once; the report and the raw facts (for ``diff``).

    With ``pictures`` the report also holds each loss's gradient-flow picture
    (``report.picture(loss)``; one box per op with ``expand``).
    """
    _check_losses(spec, list(losses or []) + [n for pair in compare for n in pair])
    progress("importing TensorFlow")
    from gradscope.build.model import SpecModel
    from gradscope.gradients.engine import Engine

    progress("building the model")
    model = SpecModel(spec)
    facts = Engine(
        model, losses=losses, compare=compare, device=device, progress=progress,
        pictures=pictures, expand=expand,
    ).run()  # fmt: skip
    sources = {loss.name: f"{spec.path}:{loss.pos.line}" for loss in spec.losses}
    results = classify(facts, sources)
    problems = find_problems(spec.path, results, facts.variables, spec.expect)
    notes: list[str] = []
    if losses:
        problems = [p for p in problems if p.kind != m.NEVER_TRAINED]
        notes.append("only some losses were inspected, so never-trained variables are not reported")
    report = m.Report(
        spec=spec.path,
        name=spec.name,
        tensorflow=facts.tensorflow,
        device=facts.device,
        variables=facts.variables,
        losses=tuple(results),
        problems=tuple(problems),
        notes=tuple(notes),
        pictures=tuple(loss.picture for loss in facts.losses if loss.picture is not None),
    )
    return report, facts


def run(
    target: str | Spec,
    *,
    losses: Sequence[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
    pictures: bool = False,
    expand: bool = False,
) -> tuple[m.Report, Any]:
    """Resolve a target (a spec path or a ``Spec``) and run it once: ``(Report, RunFacts)``.

    Every command goes through here, so every command accepts whatever ``run`` accepts.
    """
    spec = load(target, max_elements=max_elements)
    return run_spec(
        spec, losses=losses, compare=compare, device=device, progress=progress,
        pictures=pictures, expand=expand,
    )  # fmt: skip


def inspect(
    target: str | Spec,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
    pictures: bool = False,
) -> m.Report:
    """Every loss x every variable of a spec: status, norm, cut points and problems.

    Args:
        target: a spec path (``configs/multitask.yaml``) or a loaded ``Spec``.
        losses: only these losses (default: all).
        device: ``"CPU:0"``, ``"GPU:0"`` or None for TensorFlow's own placement.
        max_elements: the largest tensor a spec may ask for.
        progress: called with a short phase description as work proceeds.
        pictures: also draw each loss's gradient-flow picture (``report.picture(loss)``),
            for the markdown and html formats.

    Returns:
        The ``Report``; ``report.to_dict()`` is the JSON report.

    Raises:
        SpecErrors: the spec is invalid. BuildError: TensorFlow refused a node.
        UsageError: an unknown loss name.

    Example:
        >>> report = gradscope.inspect("configs/multitask.yaml")
        >>> report.loss("loss_1").pair("task2/w").status
        'none:disconnected'
    """
    return run(
        target, losses=losses, device=device, max_elements=max_elements, progress=progress,
        pictures=pictures,
    )[0]  # fmt: skip
