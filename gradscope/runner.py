"""Running one target once: resolve it, trace it, classify it; every command comes through here.

``run`` accepts a spec path, a ``Spec``, a Python target string, a ``gradscope.Target``, a
mapping or a callable, and returns ``(Report, RunFacts)``; ``api.inspect``, ``diff`` and
``check`` are thin layers over it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradscope.analysis import model as m
from gradscope.analysis.numeric import judge, unheld_numeric
from gradscope.analysis.policy import find_problems, unmatched_patterns
from gradscope.analysis.status import classify
from gradscope.errors import UsageError
from gradscope.gradients.facts import EVERY_PAIR
from gradscope.spec.model import DEFAULT_MAX_ELEMENTS, Spec
from gradscope.spec.patterns import unknown_losses, unmatched_errors

Progress = Callable[[str], None]


def quiet(_phase: str) -> None:
    return None


def load(target: str | Spec, *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Spec:
    """A spec from a path (or the spec itself); raises ``SpecErrors`` with every problem."""
    if isinstance(target, Spec):
        return target
    from gradscope.spec import load_spec

    return load_spec(str(target), max_elements=max_elements)


def _check_losses(spec: Spec, names: Sequence[str]) -> None:
    known = [loss.name for loss in spec.losses]
    unknown = list(dict.fromkeys(n for n in names if n not in known))
    if unknown:
        raise UsageError(
            f"{spec.path}: unknown loss {unknown_losses(unknown, known)}; "
            f"the spec has {', '.join(known) or 'no losses'}"
        )


def run_spec(
    spec: Spec,
    *,
    losses: Sequence[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    device: str | None = None,
    progress: Progress = quiet,
    pictures: bool = False,
    expand: bool = False,
    numeric: bool = False,
) -> tuple[m.Report, Any]:
    """Build and differentiate a spec once; the report and the raw facts (for ``diff``).

    With ``pictures`` the report also holds each loss's gradient-flow picture
    (``report.picture(loss)``; one box per op with ``expand``); with ``numeric`` every
    ``ok`` gradient is compared with finite differences (``gradients/numeric.py``).
    """
    compared = [n for pair in compare if tuple(pair) != EVERY_PAIR for n in pair]
    _check_losses(spec, list(losses or []) + compared)
    progress("importing TensorFlow")
    from gradscope.build.model import SpecModel
    from gradscope.build.tf_import import import_tensorflow
    from gradscope.gradients.engine import Engine

    import_tensorflow()

    progress("building the model")
    model = SpecModel(spec)
    facts = Engine(
        model, losses=losses, compare=compare, device=device, progress=progress,
        pictures=pictures, expand=expand,
    ).run()  # fmt: skip
    facts = _diagnosed(spec, facts, device, progress, numeric)
    sources = {loss.name: f"{spec.path}:{loss.pos.line}" for loss in spec.losses}
    results = (
        judge(classify(facts, sources), spec.expect, facts) if numeric else classify(facts, sources)
    )
    problems = find_problems(spec.path, results, facts.variables, spec.expect)
    notes: list[str] = [] if numeric else unheld_numeric(spec.expect)
    notes += unmatched_patterns(spec, spec.expect, facts.variables)
    unmatched = unmatched_errors(spec.path, spec.expect, [v.name for v in facts.variables])
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
        notes=tuple(notes) + facts.notes,
        numeric=facts.numeric,
        pictures=tuple(loss.picture for loss in facts.losses if loss.picture is not None),
        unmatched=tuple(unmatched),
    )
    return report, facts


def _diagnosed(
    spec: Spec, facts: Any, device: str | None, progress: Progress, numeric: bool
) -> Any:
    """The facts with every ``nan`` pair's origin (a second pass, only when one is ``nan``)
    and, with ``numeric``, every ``ok`` pair checked against finite differences."""
    from gradscope.gradients import anomaly

    if anomaly.nan_pairs(facts):
        from gradscope.gradients import rebuilds

        facts = anomaly.explain(facts, rebuilds.same(spec), device=device, progress=progress)
    if numeric:
        from gradscope.gradients import numeric as numeric_check
        from gradscope.gradients import rebuilds

        facts = numeric_check.check(facts, rebuilds.wide(spec), device=device, progress=progress)
    return facts


def run(
    target: Any,
    *,
    losses: Sequence[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    device: str | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    pictures: bool = False,
    expand: bool = False,
    numeric: bool = False,
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

        return run_target(
            target, losses=losses, compare=compare, device=device, progress=progress,
            pictures=pictures, expand=expand, numeric=numeric,
        )  # fmt: skip
    spec = load(target, max_elements=max_elements)
    return run_spec(
        spec, losses=losses, compare=compare, device=device, progress=progress,
        pictures=pictures, expand=expand, numeric=numeric,
    )  # fmt: skip
