"""Run a Python target: resolve it, trace it once, check it eagerly, and report.

The same stages as a spec (``runner.run_spec``): the engine traces the losses once and finds cut
points; classification and the CI policy are shared. What is added here is Python's: losses
that only run eagerly, the eager cross-check, and notes on what only Python code gets wrong.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from gradscope.analysis import model as m
from gradscope.analysis.numeric import judge, unheld_numeric
from gradscope.analysis.policy import find_problems, unmatched_patterns
from gradscope.analysis.status import classify
from gradscope.build.tf_import import import_tensorflow
from gradscope.errors import TargetError, UsageError
from gradscope.gradients import anomaly
from gradscope.gradients import numeric as numeric_check
from gradscope.gradients.engine import Engine
from gradscope.gradients.facts import EVERY_PAIR, LossFacts, RunFacts, VariableFacts
from gradscope.gradients.retrace import Rebuild
from gradscope.targets import eager as eager_pass
from gradscope.targets import findings, frames, isolation
from gradscope.targets.model import PythonModel
from gradscope.targets.resolve import Resolved, resolve
from gradscope.targets.variables import Registry

Progress = Callable[[str], None]


def _check_losses(resolved: Resolved, names: Sequence[str]) -> None:
    known = list(resolved.target.losses)
    unknown = list(dict.fromkeys(n for n in names if n not in known))
    if unknown:
        raise UsageError(
            f"{resolved.label}: unknown loss {', '.join(repr(n) for n in unknown)}; "
            f"the target has {', '.join(known)}"
        )


def run_target(
    obj: Any,
    *,
    losses: Sequence[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    device: str | None = None,
    progress: Progress = lambda _phase: None,
    pictures: bool = False,
    expand: bool = False,
    numeric: bool = False,
) -> tuple[m.Report, RunFacts]:
    """Resolve, trace and check a Python target once: ``(Report, RunFacts)``.

    With ``numeric``, every ``ok`` gradient is also compared with finite differences in the
    target's own dtypes (``gradients/numeric.py``).

    Raises:
        TargetError: the target cannot be imported, called or understood, or a loss fails
            both traced and eagerly. UsageError: an unknown loss name.
    """
    progress("importing TensorFlow")
    tf = import_tensorflow()
    registry = Registry(tf)
    progress("building the target")
    resolved = resolve(obj, registry.recording)
    compare = _expand_pairs(resolved, losses, compare)
    _check_losses(resolved, list(losses or []) + [n for pair in compare for n in pair])
    wanted = set(losses) | {n for pair in compare for n in pair} if losses else None

    def traced(also_read: Sequence[Any] = ()) -> tuple[PythonModel, RunFacts]:
        model = PythonModel(resolved, registry, wanted, also_read)
        facts = Engine(
            model, losses=losses, compare=compare, device=device, progress=progress,
            pictures=pictures, expand=expand,
        ).run()  # fmt: skip
        return model, facts

    model, facts = traced()
    ran = _failed_eagerly(tf, model, device, progress)
    unseen = _unseen_reads(model, ran)
    if unseen:  # traced again with them, so every pass and report knows them
        model, facts = traced(unseen)
        ran = {}  # their gradients were not asked for: the eager pass runs again
    facts = _with_eager(tf, model, facts, compare, device, progress, ran)
    rebuild = Rebuild(lambda: PythonModel(resolved, registry, wanted, model.also_read))
    facts = _diagnosed(facts, rebuild, list(model.failed), device, progress, numeric)
    return _report(resolved, model, facts, losses), facts


def _failed_eagerly(
    tf: Any, model: PythonModel, device: str | None, progress: Progress
) -> dict[str, eager_pass.EagerLoss]:
    """The eager pass of each loss whose trace failed, run early when the target leaves
    ``variables`` out: the variables are then the ones the losses read, and a trace that
    stopped at a ``.numpy()`` call (or at a variable created inside the loss) read only
    those before it. The same runs answer those losses later (``_with_eager``)."""
    if model.resolved.target.variables:
        return {}
    losses = model.resolved.target.losses
    out = {}
    for index, name in enumerate(model.failed):
        progress(f"running loss {index + 1} of {len(model.failed)} eagerly: {name}")
        with _kept(tf, model):
            out[name] = eager_pass.run_loss(tf, model.registry, losses[name], model.chosen, device)
    return out


def _kept(tf: Any, model: PythonModel) -> Any:
    """Undo what one eagerly run loss writes into the variables the losses use."""
    return isolation.kept(tf, [*model.touched, *(c.variable for c in model.chosen)])


def _unseen_reads(model: PythonModel, ran: dict[str, eager_pass.EagerLoss]) -> list[Any]:
    """Trainable variables the eagerly run losses read that the trace never saw; those
    they create themselves are left out (reported as created on every call)."""
    known = {c.variable.ref() for c in model.chosen}
    unseen: dict[Any, Any] = {}
    for found in ran.values():
        fresh = {v.ref() for v, _ in found.created}
        for ref in found.reads - known - fresh:
            if ref.deref().trainable:
                unseen.setdefault(ref, ref.deref())
    return list(unseen.values())


def _diagnosed(
    facts: RunFacts,
    rebuild: Rebuild,
    eager_only: list[str],
    device: str | None,
    progress: Progress,
    numeric: bool,
) -> RunFacts:
    """Second passes over the traced losses: where a NaN came from (only when a pair is
    ``nan``) and, with ``numeric``, every ``ok`` gradient against finite differences."""
    if anomaly.nan_pairs(facts):
        facts = anomaly.explain(facts, rebuild, device=device, progress=progress, skip=eager_only)
    if numeric:
        facts = numeric_check.check(
            facts, rebuild, device=device, progress=progress, skip=eager_only
        )
    return facts


def _expand_pairs(
    resolved: Resolved, losses: Sequence[str] | None, compare: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``EVERY_PAIR`` (diff's matrix) as the pairs of the target's losses, named up front so
    the eager pass can match comparisons to pairs."""
    if EVERY_PAIR not in [tuple(pair) for pair in compare]:
        return list(compare)
    names = list(losses or resolved.target.losses)
    return list(itertools.combinations(names, 2))


def _with_eager(
    tf: Any,
    model: PythonModel,
    facts: RunFacts,
    compare: Sequence[tuple[str, str]],
    device: str | None,
    progress: Progress,
    ran: dict[str, eager_pass.EagerLoss],
) -> RunFacts:
    """The traced facts, with untraceable losses answered eagerly and every note attached
    (``ran``: losses already run eagerly with the same variables)."""
    target = model.resolved.target
    names = [loss.name for loss in facts.losses]
    checked = names if target.eager_check else [n for n in names if n in model.failed]
    checked = [n for n in checked if n not in ran]
    eager = dict(ran)
    for index, name in enumerate(checked):
        progress(f"running loss {index + 1} of {len(checked)} eagerly: {name}")
        with _kept(tf, model):  # every loss from the same state (isolation.py)
            eager[name] = eager_pass.run_loss(
                tf, model.registry, target.losses[name], model.chosen, device
            )
    losses = tuple(_answer(model, loss, eager.get(loss.name)) for loss in facts.losses)

    def eagerly(a: str, b: str) -> Any:
        with _kept(tf, model):
            losses = dict(target.losses)
            return eager_pass.comparison(tf, model.registry, losses, (a, b), model.chosen, device)

    comparisons = [
        eagerly(a, b) if a in model.failed or b in model.failed else c
        for (a, b), c in zip(compare, facts.comparisons, strict=True)
    ]
    return dataclasses.replace(facts, losses=losses, comparisons=tuple(comparisons))


def _answer(model: PythonModel, loss: LossFacts, found: eager_pass.EagerLoss | None) -> LossFacts:
    """One loss with its notes; an untraceable one answered from the eager pass."""
    failure = model.failed.get(loss.name)
    if failure is None:
        notes = findings.notes_for(model, loss, found, model.chosen)
        return dataclasses.replace(loss, notes=loss.notes + tuple(notes))
    if found is None or found.error is not None:  # broken both ways: the user's bug
        site = frames.of_exception(failure) or model.loss_site(loss.name)
        raise TargetError(
            f"{f'{site}: ' if site else ''}{model.target}: loss {loss.name!r} raised "
            f"{frames.first_message_line(failure)} (--traceback shows the traceback)",
            cause=failure,
        ) from failure
    notes = [findings.untraceable(failure, found, model.registry.name)]
    loss = findings.eager_pairs(loss, found, model.chosen)
    if found.returned:
        model.returned[loss.name] = found.returned
    notes += findings.notes_for(model, loss, None, model.chosen)
    return dataclasses.replace(loss, notes=loss.notes + tuple(notes))


def _relocate(
    problem: m.Problem, variables: dict[str, VariableFacts], asked: set[tuple[str, str]]
) -> m.Problem:
    """Point a variable's problem (never trained, NaN, a numeric difference no ``expect``
    pattern asked about) at the line that created it."""
    kinds = (m.NEVER_TRAINED, m.NAN_PROBLEM, m.NUMERIC_DIFFERS)
    if problem.kind not in kinds or problem.variable is None:
        return problem
    if (problem.loss or "", problem.variable) in asked:  # located at the expect pattern
        return problem
    source = variables[problem.variable].source
    path, _, line = source.rpartition(":")
    if not path or not line.isdigit():
        return problem
    return dataclasses.replace(problem, spec=path, line=int(line))


def _report(
    resolved: Resolved, model: PythonModel, facts: RunFacts, losses: Sequence[str] | None
) -> m.Report:
    sources = {}
    for name in resolved.target.losses:
        site = model.loss_site(name)
        sources[name] = str(site) if site else ""
    expect = resolved.expectations()
    results = classify(facts, sources)
    if facts.numeric is not None:
        results = judge(results, expect, facts)
    by_name = {v.name: v for v in facts.variables}
    asked = {(loss.name, p.variable) for loss in results for p in loss.pairs
             if p.numeric is not None and p.numeric.pattern is not None}  # fmt: skip
    problems = [
        _relocate(p, by_name, asked)
        for p in find_problems(resolved.file, results, facts.variables, expect)
    ]
    notes: list[str] = list(model.notes) + list(facts.notes)
    notes += [] if facts.numeric is not None else unheld_numeric(expect)
    notes += unmatched_patterns(None, expect, facts.variables)
    if losses:
        problems = [p for p in problems if p.kind != m.NEVER_TRAINED]
        notes.append("only some losses were inspected, so never-trained variables are not reported")
    if not resolved.target.eager_check:
        notes.append("eager_check is off: traced and eager gradients were not compared")
    target = resolved.target
    return m.Report(
        spec=resolved.label,
        name=target.name or getattr(target.model, "name", None),
        tensorflow=facts.tensorflow,
        device=facts.device,
        variables=facts.variables,
        losses=tuple(results),
        problems=tuple(problems),
        notes=tuple(notes),
        numeric=facts.numeric,
        pictures=tuple(loss.picture for loss in facts.losses if loss.picture is not None),
    )
