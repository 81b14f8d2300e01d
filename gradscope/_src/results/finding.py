"""A finding: one thing a result fails on, in the one shape every format renders.

Every result gives its findings as this type, whatever the door: ``inspect``/``check``
(``Report.findings``, ``CheckResult.findings``; a timeline checked with ``check --timeline``
is a report too, its findings read by :meth:`Finding.from_dict`) and ``gradscope run``
(``RunReport.findings``). SARIF results, GitHub annotations and JUnit failures are drawn from
findings only (ruff's emitters over one ``Message`` type), so a problem reads the same in each
format and a new format renders any result.

A result's own JSON rows keep their contract shapes (a check ``problem``, a run ``problem``,
a timeline ``finding``); a finding is what they have in common. The words of a kind (SARIF
rule, description, help) are the registry's (``results/kinds.py``), never a finding's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gradscope._src.location import Location
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.fix import Fix
from gradscope._src.results.status import FindingKind, ProblemKind


@dataclass(frozen=True)
class Finding:
    """One finding of a result.

    Attributes:
        kind: the kind (an id of ``results/kinds.py``).
        location: the line a reviewer looks at: the ``expect`` pattern or variable line of a
            spec, the call site of a watched call, a timeline's site.
        message: the one-line message.
        cause: why, where the result knows more than the message says (a Keras output no
            loss reads); "" when the message says it all.
        cut_points: where the gradient's paths are cut.
        fix: what to change, and where.
        loss: what the finding is about besides the variable: a loss, a watched call
            (``GradientTape.gradient at line 12 (step 1)``), a timeline's site; None for a
            whole-model finding (``never-trained``).
        variable: the variable; None for a whole-loss finding.
        known: a baseline already holds it (shown, never failing).
        report: the spec, target, timeline or file of the result it belongs to: what
            baselines and SARIF fingerprints key it by, and the JUnit suite it lands in.
        via: the user's lines that called ``location``'s line, innermost first, where one
            line is reached from several places (a helper's gradient call: ``CallResult.via``).
        step: the step it is about, when the result counts steps (a run's execution of its
            call site, from 1); None otherwise.
    """

    kind: ProblemKind | FindingKind
    location: Location
    message: str
    cause: str = ""
    cut_points: tuple[CutPoint, ...] = ()
    fix: Fix | None = None
    loss: str | None = None
    variable: str | None = None
    known: bool = False
    report: str = ""
    via: tuple[str, ...] = ()
    step: int | None = None

    @property
    def where(self) -> str:
        """The location, and ``via`` when there is one: ``helpers.py:3 (via train.py:40)``."""
        return f"{self.location} (via {', '.join(self.via)})" if self.via else str(self.location)

    @property
    def file(self) -> str:
        """The file the finding points into."""
        return self.location.file

    @property
    def line(self) -> int:
        """The line it points at (1 when unknown: annotations need a line)."""
        return max(self.location.line, 1)

    def key(self) -> tuple[str, str | None, str | None, str]:
        """What identifies it across runs: ``(report, loss, variable, kind)``."""
        return (self.report or self.file, self.loss, self.variable, str(self.kind))

    def with_fix(self) -> str:
        """The message, then ``Fix: ...`` when a fix is known (one sentence to read)."""
        return self.message if self.fix is None else f"{self.message} Fix: {self.fix.sentence()}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], default: str, *, loss: str | None = None,
                  report: str = "") -> Finding:  # fmt: skip
        """A finding of a timeline (contract section 7: ``kind``, ``site``, ``variable``,
        ``from_step``, ``message``, ``cut_points`` and ``fix`` when known), or a run's problem
        as a timeline keeps it: located at its ``site`` (``default`` and line 1 when the site
        names none), about the step it holds from.

        Args:
            data: the finding's JSON object.
            default: the file it points into when its site names none (the timeline).
            loss: what it is about (default: its site).
            report: the result it belongs to (default: ``default``).
        """
        site = str(data["site"])
        kind = str(data["kind"])
        return cls(
            kind=ProblemKind(kind) if kind in tuple(ProblemKind) else FindingKind(kind),
            location=Location.at(site, default),
            message=str(data["message"]),
            cut_points=tuple(
                CutPoint(str(c["node"]), str(c["op"]), str(c["kind"]), str(c["source"]))
                for c in data.get("cut_points", ())
            ),
            fix=Fix.from_dict(data.get("fix")),
            loss=site if loss is None else loss,
            variable=None if data.get("variable") is None else str(data["variable"]),
            report=report or default,
            step=data.get("from_step"),
        )
