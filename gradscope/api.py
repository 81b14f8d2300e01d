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
) -> tuple[m.Report, Any]:
    """Build and differentiate a spec once; the report and the raw facts (for ``diff``)."""
    _check_losses(spec, list(losses or []) + [n for pair in compare for n in pair])
    progress("importing TensorFlow")
    from gradscope.build.model import SpecModel
    from gradscope.gradients.engine import Engine

    progress("building the model")
    model = SpecModel(spec)
    facts = Engine(model, losses=losses, compare=compare, device=device, progress=progress).run()
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
    )
    return report, facts


def run(
    target: Any,
    *,
    losses: Sequence[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
) -> tuple[m.Report, Any]:
    """Resolve a target and run it once: ``(Report, RunFacts)``.

    ``target`` is a spec path, a ``Spec``, a Python target string (``pkg.module:function``,
    ``path/file.py:function``), a ``gradscope.Target``, a mapping with its fields, or a
    zero-argument callable returning one of those. Every command goes through here, so every
    command accepts whatever ``run`` accepts.
    """
    from gradscope.targets import is_python_target

    if is_python_target(target):
        from gradscope.targets.run import run_target

        return run_target(target, losses=losses, compare=compare, device=device, progress=progress)
    spec = load(target, max_elements=max_elements)
    return run_spec(spec, losses=losses, compare=compare, device=device, progress=progress)


def inspect(
    target: Any,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = _quiet,
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
    return run(target, losses=losses, device=device, max_elements=max_elements, progress=progress)[
        0
    ]
