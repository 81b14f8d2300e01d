"""A Python target as a front-end: resolve it, trace it once, check it eagerly.

The pipeline (``gradscope/_src/pipeline.py``) runs it like any front-end: the engine traces the
losses once and finds cut points; statuses and the CI policy are shared. What is added here is
Python's: losses that only run eagerly, the eager cross-check, and notes on what only Python
code gets wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from gradscope._src.engine import modes
from gradscope._src.engine.retrace import Rebuild
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.engine.trace import Engine
from gradscope._src.errors import TargetError
from gradscope._src.frontends import backend, keras_names
from gradscope._src.frontends.base import Trace, flat_floats
from gradscope._src.frontends.python import eager as eager_pass
from gradscope._src.frontends.python import findings, frames, isolation, keras_ops
from gradscope._src.frontends.python.model import PythonModel
from gradscope._src.frontends.python.precheck import precheck
from gradscope._src.frontends.python.resolve import Resolved, resolve
from gradscope._src.frontends.python.variables import Registry
from gradscope._src.progress import Progress
from gradscope._src.results.causes import Cause
from gradscope._src.results.expect import Expectation, PatternUse
from gradscope._src.results.facts import LossFacts, RunFacts


class PythonFrontend:
    """A Python target (``module:function``, ``file.py:function``, a ``Target``, a mapping or a
    callable) for the pipeline: traced once like a spec, then checked eagerly loss by loss."""

    #: whether a target that turned ``eager_check`` off is told so (a loaded model, whose
    #: losses gradscope writes itself, has nothing the eager pass would find)
    notes_eager_check = True

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.notes: list[str] = []
        self.tf: Any = None
        self._registry: Registry | None = None
        self._resolved: Resolved | None = None
        self._model: PythonModel | None = None
        self._wanted: set[str] | None = None

    @property
    def resolved(self) -> Resolved:
        if self._resolved is None:
            raise RuntimeError("PythonFrontend.prepare() was not called")
        return self._resolved

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            raise RuntimeError("PythonFrontend.prepare() was not called")
        return self._registry

    @property
    def label(self) -> str:
        return self.resolved.label if self._resolved else str(self.obj)

    @property
    def file(self) -> str:
        return self.resolved.file

    @property
    def name(self) -> str | None:
        target = self.resolved.target
        return target.name or getattr(target.model, "name", None)

    @property
    def model(self) -> PythonModel | None:
        """The traced model (the variables it chose, in report order) once ``trace`` ran."""
        return self._model

    def prepare(self, progress: Progress) -> None:
        """Import the target and call its function (under a registry that records where
        each variable is created). A target string that cannot work is refused first, before
        TensorFlow is imported and before any of the user's code runs."""
        if isinstance(self.obj, str):
            precheck(self.obj)
        progress("importing TensorFlow")
        self.tf = import_tensorflow()
        self._registry = Registry(self.tf)
        progress("building the target")
        # the names the target gets when built alone; the lines of its Keras operations
        with keras_names.fresh(), keras_ops.recording():
            with backend.refused(f"the target {self.label}"):
                self._resolved = resolve(self.obj, self.registry.recording)
            what = f"the target {self.label}"
            target = self._resolved.target  # Keras 3 on JAX or PyTorch: never "no variables"
            model = getattr(target, "model", None)
            variables = [*(target.variables or ()), *getattr(model, "variables", ())]
            backend.check_values(variables, what, "its variables include")

    def loss_names(self) -> list[str]:
        return list(self.resolved.target.losses)

    def loss_sources(self) -> dict[str, str]:
        model = self._model
        sites = {n: model.loss_site(n) if model else None for n in self.loss_names()}
        return {name: str(site) if site else "" for name, site in sites.items()}

    def grad_losses(self) -> dict[str, list[float]]:
        given = self.resolved.target.grad_loss or {}
        return {name: flat_floats(value) for name, value in given.items() if value is not None}

    def expectations(self) -> tuple[Expectation, ...]:
        return self.resolved.expectations()

    def patterns(self) -> list[PatternUse]:
        return []

    def untraced(self) -> list[str]:
        return list(self._model.failed) if self._model else []

    def trace(self, request: Trace) -> RunFacts:
        """Trace the losses once; run eagerly those that cannot be traced (and, with
        ``eager_check``, every loss, to compare); trace again when the eager runs read
        variables the trace never saw."""
        with backend.refused(f"the target {self.label}"):  # jax.grad inside a loss
            return self._trace(request)

    def _trace(self, request: Trace) -> RunFacts:
        names = {n for pair in request.compare for n in pair}
        self._wanted = set(request.losses) | names if request.losses else None

        def traced(also_read: Sequence[Any] = ()) -> tuple[PythonModel, RunFacts]:
            model = PythonModel(self.resolved, self.registry, self._wanted, also_read)
            facts = Engine(
                model, losses=request.losses, compare=request.compare, device=request.device,
                progress=request.progress, pictures=request.pictures, expand=request.expand,
            ).run()  # fmt: skip
            return model, facts

        model, facts = traced()
        ran = _failed_eagerly(self.tf, model, request.device, request.progress)
        unseen = _unseen_reads(model, ran)
        if unseen:  # traced again with them, so every pass and report knows them
            model, facts = traced(unseen)
            ran = {}  # their gradients were not asked for: the eager pass runs again
        self._model = model
        facts = _with_eager(
            self.tf, model, facts, request.compare, request.device, request.progress, ran
        )
        facts = _with_causes(facts, model.causes())
        self.notes += list(model.notes)
        if not self.resolved.target.eager_check and self.notes_eager_check:
            self.notes.append("eager_check is off: traced and eager gradients were not compared")
        return facts

    def rebuild(self, wide: bool) -> Rebuild:
        """The target's losses traced again with the same variables (in their own dtypes)."""
        model = self._model
        also_read = model.also_read if model else ()
        return Rebuild(lambda: PythonModel(self.resolved, self.registry, self._wanted, also_read))


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
        with _kept(tf, model):  # every loss from the same state (isolation.py)
            out[name] = eager_pass.run_loss(
                tf, model.registry, losses[name], model.chosen, device,
                eager_pass.options_of(model.resolved.target, name),
            )  # fmt: skip
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
    eager_mode = modes.current() == modes.EAGER
    checked = names if target.eager_check or eager_mode else [n for n in names if n in model.failed]
    checked = [n for n in checked if n not in ran]
    eager = dict(ran)
    for index, name in enumerate(checked):
        progress(f"running loss {index + 1} of {len(checked)} eagerly: {name}")
        with _kept(tf, model):  # every loss from the same state (isolation.py)
            eager[name] = eager_pass.run_loss(
                tf, model.registry, target.losses[name], model.chosen, device,
                eager_pass.options_of(target, name),
            )  # fmt: skip
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
    notes: list[str | Cause]
    if failure is None:
        if modes.current() == modes.EAGER and found is not None and found.error is None:
            # the statuses shown are the eager ones: no "traced ones are shown" note
            notes = findings.notes_for(model, loss, None, model.chosen)
            loss = findings.eager_mode(loss, found, model.chosen)
        else:
            notes = findings.notes_for(model, loss, found, model.chosen)
        return _noted(loss, notes)
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
    return _noted(loss, notes)


def _noted(loss: LossFacts, notes: Sequence[str | Cause]) -> LossFacts:
    """``loss`` with its notes in words, and those that are causes kept as causes (a variable
    it makes on every call: the loss's fix comes from it)."""
    said = tuple(n for n in notes if isinstance(n, Cause))
    return dataclasses.replace(loss, notes=loss.notes + tuple(map(str, notes)),
                               causes=loss.causes + said)  # fmt: skip


def _with_causes(facts: RunFacts, causes: dict[str, dict[str, Cause]]) -> RunFacts:
    """``facts`` with the cause of each pair no path joins (``heads.py``), where known."""
    if not any(causes.values()):
        return facts
    losses = []
    for loss in facts.losses:
        said = causes.get(loss.name, {})
        pairs = tuple(
            dataclasses.replace(p, cause=said[p.variable])
            if p.variable in said and p.requested and not p.reachable and not p.has_gradient
            else p
            for p in loss.pairs
        )
        losses.append(dataclasses.replace(loss, pairs=pairs))
    return dataclasses.replace(facts, losses=tuple(losses))
