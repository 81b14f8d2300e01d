"""A YAML spec as a front-end: built deterministically from its seed, traced once."""

from __future__ import annotations

from gradscope._src.engine import modes
from gradscope._src.engine.retrace import Rebuild
from gradscope._src.frontends.base import Trace, flat_floats
from gradscope._src.frontends.yaml.model import Spec
from gradscope._src.progress import Progress
from gradscope._src.results.expect import Expectation, PatternUse
from gradscope._src.results.facts import RunFacts


class SpecFrontend:
    """A validated spec (``frontends.yaml.load_spec``) for the pipeline."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.notes: list[str] = []

    @property
    def label(self) -> str:
        return self.spec.path

    @property
    def file(self) -> str:
        return self.spec.path

    @property
    def name(self) -> str | None:
        return self.spec.name

    def prepare(self, progress: Progress) -> None:
        return None

    def loss_names(self) -> list[str]:
        return [loss.name for loss in self.spec.losses]

    def loss_sources(self) -> dict[str, str]:
        return {loss.name: f"{self.spec.path}:{loss.pos.line}" for loss in self.spec.losses}

    def grad_losses(self) -> dict[str, list[float]]:
        return {loss.name: flat_floats(loss.grad_loss) for loss in self.spec.losses
                if loss.grad_loss is not None}  # fmt: skip

    def expectations(self) -> tuple[Expectation, ...]:
        return self.spec.expect

    def patterns(self) -> list[PatternUse]:
        return [
            PatternUse(f"losses.{loss.name}.vars", glob, f"{self.spec.path}:{loss.pos.line}")
            for loss in self.spec.losses
            for glob in loss.vars or ()
        ]

    def trace(self, request: Trace) -> RunFacts:
        from gradscope._src.engine.trace import Engine
        from gradscope._src.frontends.yaml.forward.model import SpecModel

        request.progress("building the model")
        facts = Engine(
            SpecModel(self.spec), losses=request.losses, compare=request.compare,
            device=request.device, progress=request.progress, pictures=request.pictures,
            expand=request.expand, one_tape=request.one_tape,
        ).run()  # fmt: skip
        if modes.current() != modes.EAGER:
            return facts
        from gradscope._src.engine import eager

        request.progress("running the losses eagerly")  # --mode eager
        return eager.answer(facts, self.rebuild(wide=False))

    def rebuild(self, wide: bool) -> Rebuild:
        from gradscope._src.frontends.yaml import rebuilds

        return rebuilds.wide(self.spec) if wide else rebuilds.same(self.spec)

    def untraced(self) -> list[str]:
        return []
