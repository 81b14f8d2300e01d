"""The one pipeline: any front-end through the engine and the analysis to a ``Report``.

``run`` accepts a spec path, a ``Spec``, a Python target string, a ``gradscope.Target``, a
mapping or a callable; it picks the front-end (``frontends.open_frontend``), imports
TensorFlow, traces once, runs the second passes a result needs (NaN origins, ``--numeric``),
decides every status and problem, and returns the report with the raw facts (``diff`` reads
their comparisons). Every command and every API function comes through here.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from gradscope._src.analysis.check import ExpectMap, expectations_of
from gradscope._src.analysis.fixes import fixed_losses, fixed_problems
from gradscope._src.analysis.numeric import judge, unheld_numeric
from gradscope._src.analysis.policy import find_problems, unmatched_patterns
from gradscope._src.analysis.replicas import replica_problems
from gradscope._src.engine.status import classify, with_replicas
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import GradscopeError, UsageError
from gradscope._src.frontends import open_frontend
from gradscope._src.frontends.base import Frontend, Trace
from gradscope._src.frontends.yaml.model import DEFAULT_MAX_ELEMENTS
from gradscope._src.frontends.yaml.patterns import unknown_losses, unmatched_errors
from gradscope._src.progress import Progress, quiet
from gradscope._src.results import report as m
from gradscope._src.results.facts import EVERY_PAIR, RunFacts
from gradscope._src.results.replicas import Distribution

#: ``device=`` words, as on the command line (``--device``); "CPU:0"/"GPU:1" are taken as given.
DEVICES = {"auto": None, "cpu": "CPU:0", "gpu": "GPU:0"}


def device_name(device: str | None) -> str | None:
    """A TensorFlow device name for ``device``: ``"auto"`` (or None) is TensorFlow's own
    placement, ``"cpu"``/``"gpu"`` the first of each, ``"CPU:0"``/``"GPU:1"`` as given.

    Raises:
        UsageError: any other word.
    """
    if device is None or device.lower() in DEVICES:
        return None if device is None else DEVICES[device.lower()]
    kind, _, index = device.upper().partition(":")
    if kind in ("CPU", "GPU") and index.isdigit():
        return f"{kind}:{index}"
    raise UsageError(f"device: expected auto, cpu, gpu or a name like GPU:1, saw {device!r}")


def distribution(strategy: str = "default", replicas: int | None = None) -> Distribution:
    """The ``tf.distribute`` setting for ``strategy=`` and ``replicas=`` (as ``--strategy``
    and ``--replicas``): a strategy other than ``"default"`` runs 2 replicas unless told."""
    if replicas is None:
        replicas = 1 if strategy == "default" else 2
    return Distribution(strategy, replicas)


@dataclass(frozen=True)
class Request:
    """What a command asks of one run.

    Attributes:
        losses: only these losses (None: every loss).
        compare: pairs of losses whose gradients to compare (``EVERY_PAIR``: all pairs).
        device: ``"CPU:0"``, ``"GPU:0"`` or None for TensorFlow's own placement.
        progress: called with a short phase description as work proceeds.
        pictures: draw each loss's gradient-flow picture (``expand``: one box per op).
        numeric: compare every ``ok`` gradient with finite differences.
        expect: expectations to hold the model to instead of its own.
        max_elements: the largest tensor a spec may ask for.
        distribution: the ``tf.distribute`` strategy and replicas (``--strategy``).
        one_loss: the command draws one loss: a target with several and no ``losses`` is
            refused once its loss names are known, before anything is traced.
    """

    losses: tuple[str, ...] | None = None
    compare: tuple[tuple[str, str], ...] = ()
    device: str | None = None
    progress: Progress = quiet
    pictures: bool = False
    expand: bool = False
    numeric: bool = False
    expect: ExpectMap | None = None
    max_elements: int = DEFAULT_MAX_ELEMENTS
    distribution: Distribution = Distribution()  # noqa: RUF009  (frozen: one shared default)
    one_loss: bool = False


@dataclass(frozen=True)
class Outcome:
    """A run's report and the facts behind it."""

    report: m.Report
    facts: RunFacts


def run(target: object, request: Request = Request()) -> Outcome:
    """Run any target once through its front-end, the engine and the analysis.

    Raises:
        SpecErrors: an invalid spec. BuildError: TensorFlow refused a node. TargetError: a
            Python target cannot be imported, called or understood. UsageError: an unknown
            loss, a bad ``expect``.
    """
    from gradscope._src.distribute import run as distribute

    distribute.check(request.distribution)
    frontend = open_frontend(target, max_elements=request.max_elements)
    distribute.prepare(request.distribution)  # mirrored: devices before TF initialises them
    frontend.prepare(request.progress)
    compare = _pairs(frontend, request)
    asked = list(request.losses or []) + [n for pair in compare for n in pair]
    _check_losses(frontend, asked)  # a spec's loss names are known before TensorFlow starts
    if request.one_loss and request.losses is None:
        _check_one_loss(frontend)
    on_jax = getattr(frontend, "backend", "") == "jax"  # Keras on JAX: no TensorFlow
    if on_jax and (request.numeric or request.distribution.active):
        raise UsageError(f"{frontend.label}: --numeric and --strategy run on TensorFlow; this "
                         "target's Keras runs on JAX (KERAS_BACKEND=jax)")  # fmt: skip
    if not on_jax:
        if "tensorflow" not in sys.modules:
            request.progress("importing TensorFlow")
        import_tensorflow(plots=not hasattr(frontend, "spec"))  # a spec runs no user code
    one_tape = not (request.numeric or request.distribution.active)
    trace = Trace(request.losses, compare, request.device, request.progress,
                  request.pictures, request.expand, one_tape)  # fmt: skip
    facts = frontend.trace(trace)
    facts = facts if on_jax else _diagnosed(frontend, facts, request)
    if request.distribution.active:
        request.progress(f"running on {request.distribution.replicas} replicas")
        facts = distribute.distributed(
            frontend, facts, request.distribution, max_elements=request.max_elements,
            losses=None if request.losses is None else list(asked),
        )  # fmt: skip
    return Outcome(assemble(frontend, facts, request), facts)


def _pairs(frontend: Frontend, request: Request) -> tuple[tuple[str, str], ...]:
    """The pairs to compare, with ``EVERY_PAIR`` expanded over the losses of the run."""
    names = list(request.losses or frontend.loss_names())
    out: list[tuple[str, str]] = []
    for pair in request.compare:
        out += (
            itertools.combinations(names, 2) if tuple(pair) == EVERY_PAIR else [(pair[0], pair[1])]
        )
    return tuple(out)


def _check_losses(frontend: Frontend, names: Sequence[str]) -> None:
    known = frontend.loss_names()
    unknown = list(dict.fromkeys(n for n in names if n not in known))
    if unknown:
        what = "spec" if frontend.label == frontend.file else "target"
        raise UsageError(
            f"{frontend.label}: unknown loss {unknown_losses(unknown, known)}; "
            f"the {what} has {', '.join(known) or 'no losses'}"
        )


def _check_one_loss(frontend: Frontend) -> None:
    names = frontend.loss_names()
    if len(names) != 1:
        # a saved model's --loss computes its losses: it says how to compute one
        hint = getattr(frontend, "one_loss_hint", None)
        said = hint(names) if hint else f"pick one with --loss: {', '.join(names)}"
        raise UsageError(f"{frontend.label} has {len(names)} losses; {said}")


def _diagnosed(frontend: Frontend, facts: RunFacts, request: Request) -> RunFacts:
    """The facts with every ``nan`` pair's origin (a second pass, only when a pair is
    ``nan``) and, with ``numeric``, every ``ok`` pair against finite differences."""
    from gradscope._src.engine.nan import origin

    skip = frontend.untraced()
    if origin.nan_pairs(facts):
        facts = origin.explain(facts, frontend.rebuild(wide=False), device=request.device,
                               progress=request.progress, skip=skip)  # fmt: skip
    if request.numeric:
        from gradscope._src.engine.numeric import check

        facts = check.check(facts, frontend.rebuild(wide=True), device=request.device,
                            progress=request.progress, skip=skip)  # fmt: skip
    return facts


def assemble(frontend: Frontend, facts: RunFacts, request: Request) -> m.Report:
    """Statuses, ``--numeric`` verdicts, problems and notes: the report of one run."""
    sources = frontend.loss_sources()
    expect = (
        frontend.expectations()
        if request.expect is None
        else expectations_of(request.expect, frontend.label, sources)
    )
    results = with_replicas(classify(facts, sources), facts)
    if facts.numeric is not None:
        results = judge(results, expect, facts)
    spec = hasattr(frontend, "spec")  # cut points at YAML lines: fixes in spec fields
    results = fixed_losses(results, spec, frontend.grad_losses())
    problems = find_problems(frontend.file, results, facts.variables, expect)
    problems += replica_problems(frontend.file, results, facts)
    problems = fixed_problems(problems, results, spec)
    notes = list(frontend.notes) + list(facts.notes)
    notes += [] if facts.numeric is not None else unheld_numeric(expect)
    notes += unmatched_patterns(frontend.patterns(), facts.variables)
    # an expect pattern that names no variable holds nothing: check refuses it (validate
    # already has, for a spec's own); inspect notes it where it stands
    unmatched = unmatched_errors(frontend.file, expect, [v.name for v in facts.variables])
    notes += [str(e) for e in unmatched]
    partial = getattr(frontend, "partial", "")  # a saved model scored on some outputs only
    if request.losses or partial:
        problems = [p for p in problems if p.kind != m.NEVER_TRAINED]
        notes.append(
            partial
            or "only some losses were inspected, so never-trained variables are not reported"
        )
    return m.Report(
        spec=frontend.label,
        name=frontend.name,
        tensorflow=facts.tensorflow,
        device=facts.device,
        variables=facts.variables,
        losses=tuple(results),
        problems=tuple(problems),
        notes=tuple(notes),
        numeric=facts.numeric,
        pictures=tuple(loss.picture for loss in facts.losses if loss.picture is not None),
        distributed=facts.distributed,
        unmatched=tuple(unmatched),
        route=facts.route,
        jax=facts.jax,
        loaded=getattr(frontend, "loaded", None),  # a saved model: how it was loaded
    )


def in_modes(run_once: Callable[[], m.Report], wanted: Sequence[str]) -> m.Report:
    """``run_once`` under each mode (``function``, ``eager``, ``xla``: ``engine/modes.py``):
    the first mode's report, with notes naming every pair whose status or norm differs
    between the modes (a parity check; ``analysis/parity.py``).

    Raises:
        UsageError: an unknown mode. Any error of the first mode's run.
    """
    from gradscope._src.analysis import parity
    from gradscope._src.engine import modes

    wanted = list(dict.fromkeys(wanted)) or [modes.FUNCTION]
    for name in wanted:
        if name not in modes.MODES:
            raise UsageError(f"unknown mode {name!r}; expected one of {', '.join(modes.MODES)}")
    reports: dict[str, m.Report] = {}
    failed: list[str] = []
    for name in wanted:
        with modes.using(name), modes.comparing() if len(wanted) > 1 else nullcontext():
            try:
                reports[name] = run_once()
            except GradscopeError as exc:
                if name == wanted[0]:
                    raise
                # XLA refuses some models (a while_loop's gradient needs fixed list sizes):
                # that is a parity finding, not a failure of the mode the report shows
                failed.append(f"modes: {name} could not run: {exc}")
    first = reports[wanted[0]]
    notes = failed + parity.differences(reports)
    return dataclasses.replace(first, notes=first.notes + tuple(notes)) if notes else first
