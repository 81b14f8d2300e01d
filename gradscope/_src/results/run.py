"""What ``gradscope run`` found in a program: watched calls, their sources, and the problems.

Plain data (contract section 6); no TensorFlow, no rendering: each type owns its JSON shape
(``to_dict``; ``RunReport.to_dict()`` is the JSON report), ``analysis/run.py`` decides the
problems.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gradscope._src.location import line_of
from gradscope._src.results import exits
from gradscope._src.results.causes import Cause
from gradscope._src.results.display import Displayed
from gradscope._src.results.exits import EXITED as EXITED
from gradscope._src.results.exits import FINISHED as FINISHED
from gradscope._src.results.exits import INTERRUPTED as INTERRUPTED
from gradscope._src.results.exits import RAISED as RAISED
from gradscope._src.results.exits import REPLACED as REPLACED
from gradscope._src.results.exits import STOPPED as STOPPED
from gradscope._src.results.facts import REPORT_VERSION, CutPoint, NanOrigin, json_number
from gradscope._src.results.finding import Finding, file_of
from gradscope._src.results.fix import Fix
from gradscope._src.results.replicas import Distribution, ReplicaResult
from gradscope._src.results.status import Status

#: ``mode`` of a watched call.
EAGER = "eager"
FUNCTION = "function"
GRAPH = "graph"


#: What watched the calls: ``gradscope run`` (a whole program) or ``gradscope.watch()`` (a
#: block of code, a notebook cell, a test).
RUN = "run"
WATCH = "watch"


@dataclass(frozen=True)
class SourceResult:
    """One source of one watched call: a variable or a watched tensor."""

    name: str
    status: Status
    norm: float | None
    shape: tuple[int | None, ...]
    sparse: bool
    cut_points: tuple[CutPoint, ...] = ()
    #: why, where the cut points cannot say (read before the tape started): a cause of
    #: ``results/causes.py``, its words the ``note``
    cause: Cause | None = None
    # a changed ``trainable`` flag the traced Keras train step disagrees with (trainable.py)
    trainable_changed: bool = False
    #: inside ``strategy.run``: every replica's status and norm (the source's own are
    #: those of the all-reduced gradient, the replicas' sum)
    replicas: tuple[ReplicaResult, ...] = ()
    fix: Fix | None = None  # what to change so the gradient flows (``analysis/fixes.py``)
    #: a ``nan`` source: where the NaN or infinity first appeared (None: not found)
    nan_origin: NanOrigin | None = None
    #: the attribute the user's code reaches it by (``box_head.kernel``), when it says more
    #: than the name (``frontends/keras_names.py``)
    attribute: str = ""
    #: ``(variable, FILE:LINE)``: the program assigns this variable another variable's value
    #: (a target network's copy: ``set_weights(get_weights())``, ``t.assign(s)``)
    copy_of: tuple[str, str] = ("", "")
    #: on JAX: the optimizer (``AdamW (weight_decay=0.1, ...)``) whose step right after this
    #: call changed this variable though no gradient reaches it (JAX hands it zeros)
    moved_by: str = ""

    @property
    def note(self) -> str:
        """The cause in words ("" when none is known)."""
        return str(self.cause) if self.cause is not None else ""

    def to_dict(self) -> dict[str, Any]:
        """One source of a watched call (``gradscope run``)."""
        out: dict[str, Any] = {
            "status": str(self.status),
            "norm": json_number(self.norm),
            "shape": list(self.shape),
            "sparse": self.sparse,
            "cut_points": [c.to_dict() for c in self.cut_points],
        }
        if self.cause is not None:
            out["note"] = str(self.cause)
            out["cause"] = self.cause.to_dict()
        if self.attribute:
            out["attribute"] = self.attribute
        if self.copy_of[0]:
            out["copy_of"] = {"variable": self.copy_of[0], "source": self.copy_of[1]}
        if self.nan_origin is not None:
            out["nan_origin"] = self.nan_origin.to_dict()
        if self.trainable_changed:
            out["trainable_changed"] = True
        if self.moved_by:
            out["moved_by"] = self.moved_by
        if self.replicas:
            out["replicas"] = [r.to_dict() for r in self.replicas]
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        return out


@dataclass(frozen=True)
class CallResult:
    """One execution of one watched call site."""

    site: str  # FILE:LINE of the user's call
    api: str  # GradientTape.gradient, tf.gradients, compute_gradients, fit, ...
    mode: str  # eager | function | graph
    step: int  # executions of this site, from 1
    target_source: str  # FILE:LINE of the line that made the target (the loss)
    value: float | None  # the target's value (summed), None when it never ran
    sources: tuple[SourceResult, ...]
    notes: tuple[str, ...] = ()
    loss_scale: float | None = None  # mixed precision: norms are unscaled by it
    replica_values: tuple[float | None, ...] = ()  # per replica (strategy.run); value: their sum
    #: the user's lines that called ``site`` (innermost first), where calls of one helper
    #: from different places are different sites: as few as tell them apart
    via: tuple[str, ...] = ()
    #: the distinct values of the ``output_gradients`` the call gave (``()``: none, or not
    #: known): every gradient of the call is multiplied by them
    multiplier: tuple[float, ...] = ()
    #: ``(name, attribute)`` of each trainable variable the call's tape read and did not ask a
    #: gradient for, that a Keras model holds where Keras does not track it (a raw
    #: ``tf.Variable`` attribute, one in a plain dict): ``model.trainable_variables`` leaves
    #: it out, so it never trains unless some call asks for it
    unasked: tuple[tuple[str, str], ...] = ()
    #: ``(name, FILE:LINE)`` of each trainable variable a TensorFlow 1 call's loss reads that
    #: its ``var_list`` (made at that line; "" when not known) leaves out and no op of the
    #: graph trains: it never trains unless some call asks for it
    left_out: tuple[tuple[str, str], ...] = ()

    @property
    def where(self) -> str:
        """``site``, and ``via`` when there is one: ``helpers.py:3 (via train.py:40)``."""
        return f"{self.site} (via {', '.join(self.via)})" if self.via else self.site

    @property
    def label(self) -> str:
        """What the call is called where a loss would be: ``GradientTape.gradient at line 12
        (step 1)`` (its file is the report's, in JUnit, SARIF and GitHub annotations)."""
        return f"{self.api} at line {line_of(self.site)} (step {self.step})"

    @property
    def file(self) -> str:
        """The file of the call site (the site itself when it names no line)."""
        return file_of(self.site)

    def to_dict(self) -> dict[str, Any]:
        target: dict[str, Any] = {"source": self.target_source, "value": json_number(self.value)}
        if self.loss_scale is not None:
            target["loss_scale"] = self.loss_scale
        if self.replica_values:
            target["replicas"] = [json_number(v) for v in self.replica_values]
        if self.multiplier:
            target["multiplier"] = [json_number(v) for v in self.multiplier]
        untracked = [{"variable": n, "attribute": a} for n, a in self.unasked]
        left_out = [{"variable": n, "var_list": made} for n, made in self.left_out]
        out: dict[str, Any] = {
            "site": self.site,
            "api": self.api,
            "mode": self.mode,
            "step": self.step,
            "target": target,
            "sources": {s.name: s.to_dict() for s in self.sources},
        }
        if self.via:
            out["via"] = list(self.via)
        if self.notes:
            out["notes"] = list(self.notes)
        if untracked:
            out["untracked"] = untracked
        if left_out:
            out["left_out"] = left_out
        return out


#: A source whose gradient the run fails on: a :class:`Finding` (one type for every result's
#: problems), made by ``Finding.run_problem(site, step, variable, kind, message, ...)``.
RunProblem = Finding


@dataclass(frozen=True)
class Stop:
    """With ``--stop``, once gradscope stopped the program: where, and what it had seen."""

    site: str  # the call site whose execution past ``--steps`` was refused first
    sites: tuple[str, ...]  # every call site seen until then, in the order first seen
    refused: int = 1  # gradient calls refused with gradscope's stop (raised into the program)
    caught: bool = False  # the program caught the stop (a bare ``except:``) and went on
    finished: bool = False  # ...and went on to its end (outcome ``stopped`` all the same)


@dataclass(frozen=True, repr=False)  # repr: the table (Displayed)
class RunReport(Displayed):
    """The whole result of ``gradscope run``."""

    program: str
    argv: tuple[str, ...]
    tensorflow: str
    device: str
    calls: tuple[CallResult, ...]
    problems: tuple[RunProblem, ...]
    outcome: str = FINISHED
    steps: int = 1
    notes: tuple[str, ...] = ()
    #: ``--replicas N``: the devices made for the program's own strategy
    distribution: Distribution | None = None
    devices: tuple[str, ...] = ()
    #: ``exited``: the status the program gave ``sys.exit()`` or ``os._exit()``
    exit_status: int | None = None
    #: ``--stop``, once the program was stopped (outcome ``stopped``, or another when it
    #: caught the stop and went on to raise or exit)
    stop: Stop | None = None
    #: ``run``, or ``watch``: ``program`` is then the ``FILE:LINE`` of the ``watch()`` call
    entry: str = RUN
    #: ``interrupted`` by a signal other than Ctrl-C: its name (``SIGTERM``, ``SIGHUP``)
    signal: str | None = None
    #: a program on JAX (Keras' JAX backend, or JAX itself): JAX's version; ``tensorflow``
    #: is then ``""``
    jax: str = ""

    @property
    def framework(self) -> str:
        """What computed the gradients, as report headers name it: ``TensorFlow 2.21.0``,
        ``JAX 0.10.2``."""
        return f"JAX {self.jax}" if self.jax else f"TensorFlow {self.tensorflow}"

    @property
    def exit_code(self) -> int:
        """0 no problems, 1 problems, 4 the program raised or ended itself with a nonzero
        status (the status is in ``exit_status``), 130 interrupted (Ctrl-C), 128 + N ended
        by signal N: the one rule's (``results/exits.exit_code``)."""
        return exits.exit_code(len(self.problems), self.outcome, self.signal)

    def title(self) -> str:
        """``gradscope run train.py --epochs 1``: the command that made the report (a
        ``gradscope.watch()`` block: ``gradscope.watch() at FILE:LINE``)."""
        if self.entry == WATCH:
            return f"gradscope.watch() at {self.program}"
        return " ".join(["gradscope run", self.program, *self.argv[1:]])

    def files(self) -> dict[str, tuple[CallResult, ...]]:
        """The calls by the file of their site, files in the order first seen."""
        out: dict[str, list[CallResult]] = {}
        for call in self.calls:
            out.setdefault(call.file, []).append(call)
        return {path: tuple(calls) for path, calls in out.items()}

    def findings(self) -> tuple[Finding, ...]:
        """Every problem, at its call site's line (``via`` the lines that called it), about
        the watched call (``CallResult.label``), in the run's order; its cause is its
        source's (why, where the cut points cannot say). A site that names no line (no frame
        of the user's was found) is the finding's file, at line 0: unknown."""
        return self.problems

    def sites(self) -> Iterator[str]:
        """Every call site, in the order first seen (a helper's line reached from two
        places is two sites: ``CallResult.where``)."""
        yield from dict.fromkeys(c.where for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (contract section 6)."""
        out: dict[str, Any] = {
            "gradscope": REPORT_VERSION,
            "program": self.program,
            **({"entry": self.entry} if self.entry != RUN else {}),
            "argv": list(self.argv),
            "tensorflow": self.tensorflow,
            **({"backend": "jax", "jax": self.jax} if self.jax else {}),
            "device": self.device,
            "outcome": self.outcome,
            **({"exit_status": self.exit_status} if self.exit_status is not None else {}),
            **({"signal": self.signal} if self.signal is not None else {}),
            "calls": [c.to_dict() for c in self.calls],
            "problems": [p.run_dict() for p in self.problems],
        }
        if self.notes:
            out["notes"] = list(self.notes)
        if self.stop is not None:
            s = self.stop
            out["stop"] = {"site": s.site, "steps": self.steps, "sites": list(s.sites),
                           "refused": s.refused, "caught": s.caught,
                           "finished": s.finished}  # fmt: skip
        if self.distribution is not None:
            d = self.distribution
            out["distribution"] = {"strategy": d.strategy, "replicas": d.replicas,
                                   "devices": list(self.devices)}  # fmt: skip
        return out
