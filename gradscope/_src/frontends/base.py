"""What the pipeline asks of a front-end: a spec, a Python target, and later a program or graph.

A front-end turns its input into models the engine traces (``engine.protocol.Traceable``) and
answers the questions a report needs: its name, its losses and where they were written, what
its author expects, how to build it again for a diagnostic pass, and what it alone can note.
Everything else (tracing, statuses, cut points, NaN origins, ``--numeric``, the CI policy)
is the pipeline's, the same for every front-end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gradscope._src.progress import Progress, quiet

if TYPE_CHECKING:  # types only: `gradscope --help` imports this module and nothing heavy
    from gradscope._src.engine.retrace import Rebuild
    from gradscope._src.results.expect import Expectation, PatternUse
    from gradscope._src.results.facts import RunFacts


@dataclass(frozen=True)
class Trace:
    """What to trace: the losses (None: all), the pairs of losses to compare, and how."""

    losses: tuple[str, ...] | None = None
    compare: tuple[tuple[str, str], ...] = ()
    device: str | None = None
    progress: Progress = quiet
    pictures: bool = False
    expand: bool = False
    #: the numbers may come from one eager tape (``engine/onetape.py``) when the model allows;
    #: False where a second pass needs the traced route (``--numeric``, ``--strategy``)
    one_tape: bool = True


class Frontend(Protocol):
    """One way into gradscope (``yaml.frontend.SpecFrontend``, ``python.frontend.PythonFrontend``
    and the ones to come)."""

    @property
    def label(self) -> str:
        """How reports name it: the spec path, or the target as given."""

    @property
    def file(self) -> str:
        """Where its problems are located: the spec, or the target function's file."""

    @property
    def name(self) -> str | None:
        """A display name (the spec's ``name``, the Keras model's name)."""

    @property
    def notes(self) -> list[str]:
        """What only this front-end can say about the run (filled in as it runs)."""

    def prepare(self, progress: Progress) -> None:
        """Whatever must happen before the loss names are known (importing and calling a
        Python target, which imports TensorFlow); a spec knows them already."""

    def loss_names(self) -> list[str]:
        """Every loss, in order."""

    def loss_sources(self) -> dict[str, str]:
        """``FILE:LINE`` where each loss was written ("" when unknown)."""

    def expectations(self) -> tuple[Expectation, ...]:
        """What the author expects (a spec's ``expect``, a target's ``expect``)."""

    def patterns(self) -> list[PatternUse]:
        """Globs of the front-end's own fields besides ``expect``."""

    def trace(self, request: Trace) -> RunFacts:
        """Trace the model once (and whatever second look the front-end needs)."""

    def rebuild(self, wide: bool) -> Rebuild:
        """How to build the model again: as traced (NaN origins) or, with ``wide``, for
        finite differences (float64 where it can)."""

    def grad_losses(self) -> dict[str, list[float]]:
        """Per loss given an upstream gradient (``grad_loss``), its elements, flattened."""

    def untraced(self) -> list[str]:
        """Losses answered without a trace, which diagnostic passes cannot retrace."""


def flat_floats(value: Any) -> list[float]:
    """A ``grad_loss`` (a number, a nested list, an array, a tensor) as its elements."""
    import numpy as np

    return [float(x) for x in np.asarray(value, dtype=np.float64).reshape(-1)]
