"""A finding: one thing a result fails on, in the one type every result holds and every format
renders.

Every result holds its findings as this type, whatever the door: ``inspect``/``check``
(``Report.problems``), ``gradscope run`` and ``watch()`` (``RunReport.problems``), a timeline
checked with ``check --timeline`` (its JSON rows read by :meth:`Finding.from_dict`).
``Problem`` and ``RunProblem`` are this type under the names those results have always used;
:meth:`Finding.problem` and :meth:`Finding.run_problem` make one as each door knows it.
SARIF results, GitHub annotations, JUnit failures, tables, Markdown and notebooks are drawn
from findings only (ruff's emitters over one ``Message`` type), so a problem reads the same in
each format and a new format renders any result.

The contract's JSON rows (a check ``problem``, contract section 5; a run ``problem``, section
6; a timeline ``finding``, section 7) are views of a finding: :meth:`problem_dict`,
:meth:`run_dict`, :meth:`from_dict`. The words of a kind (SARIF rule, description, help) are
the registry's (``results/kinds.py``), the words of a cause its own (``results/causes.py``);
the place is one :class:`~gradscope._src.location.Location`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.location import Location
from gradscope._src.results.causes import Cause
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.fix import Fix
from gradscope._src.results.status import FindingKind


def file_of(site: str) -> str:
    """The file of a ``FILE:LINE`` call site (the site itself when it names no line)."""
    found = Location.parse(site)
    return found.file if found is not None else site


@dataclass(frozen=True)
class Finding:
    """One finding of a result.

    Attributes:
        kind: the kind (an id of ``results/kinds.py``).
        location: the line a reviewer looks at: the ``expect`` pattern or variable line of a
            spec, the call site of a watched call, a timeline's site.
        message: the one-line message.
        cause: why, where the result knows more than the message says (a Keras output no
            loss reads): a cause of ``results/causes.py``; its words are :attr:`note`.
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

    kind: FindingKind
    location: Location
    message: str
    cause: Cause | None = None
    cut_points: tuple[CutPoint, ...] = ()
    fix: Fix | None = None
    loss: str | None = None
    variable: str | None = None
    known: bool = False
    report: str = ""
    via: tuple[str, ...] = ()
    step: int | None = None
    #: which contract row it is (what :meth:`to_dict` writes): ``problem`` (a check problem,
    #: section 5), ``run`` (a run's problem, section 6), ``timeline`` (a finding, section 7)
    row: str = field(default="problem", compare=False)

    @classmethod
    def problem(
        cls,
        loss: str | None,
        variable: str | None,
        kind: FindingKind | str,
        message: str,
        cut_points: tuple[CutPoint, ...] = (),
        spec: str = "",
        line: int = 1,
        known: bool = False,
        fix: Fix | None = None,
        cause: Cause | None = None,
    ) -> Finding:
        """A problem of ``inspect``/``check`` (contract section 5): about ``loss`` and
        ``variable``, at ``spec``'s ``line`` (the variable's, or the expectation's)."""
        return cls(FindingKind(kind), Location(spec, line), message, cause, cut_points, fix,
                   loss, variable, known, spec)  # fmt: skip

    @classmethod
    def run_problem(
        cls,
        site: str,
        step: int,
        variable: str,
        kind: FindingKind | str,
        message: str,
        cut_points: tuple[CutPoint, ...] = (),
        via: tuple[str, ...] = (),
        fix: Fix | None = None,
        *,
        call: str | None = None,
        cause: Cause | None = None,
    ) -> Finding:
        """A problem of ``gradscope run`` (contract section 6): ``variable`` at its call's
        ``site`` (a ``FILE:LINE``; one that names no line is its file, at line 0), in its
        ``step``th execution; ``call``: the watched call, as a report names it
        (``CallResult.label``)."""
        return cls(FindingKind(kind), Location.parse(site) or Location(site), message, cause,
                   cut_points, fix, call, variable, False, file_of(site), via, step,
                   "run")  # fmt: skip

    @property
    def spec(self) -> str:
        """The file a problem of ``inspect``/``check`` is located in (its ``spec``)."""
        return self.location.file

    @property
    def site(self) -> str:
        """The ``FILE:LINE`` of a run's problem (its call site)."""
        return str(self.location)

    @property
    def note(self) -> str:
        """The cause in words ("" when none is known)."""
        return str(self.cause) if self.cause is not None else ""

    def to_dict(self) -> dict[str, Any]:
        """The finding as the JSON row of the result it belongs to: :meth:`problem_dict` (a
        ``Problem``'s, as ever), :meth:`run_dict` (a ``RunProblem``'s) or a timeline's
        finding (contract section 7)."""
        if self.row == "run":
            return self.run_dict()
        if self.row == "timeline":
            return self.timeline_dict()
        return self.problem_dict()

    def timeline_dict(self) -> dict[str, Any]:
        """The finding as a timeline's (contract section 7): ``kind``, ``site``,
        ``variable``, ``from_step``, ``message``; ``cut_points`` and ``fix`` when known."""
        out: dict[str, Any] = {"kind": str(self.kind), "site": self.loss or self.site,
                               "variable": self.variable, "from_step": self.step,
                               "message": self.message}  # fmt: skip
        if self.cut_points:
            out["cut_points"] = [c.to_dict() for c in self.cut_points]
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        return out

    def problem_dict(self) -> dict[str, Any]:
        """The finding as a problem of the JSON report (contract section 5)."""
        return {
            "loss": self.loss,
            "variable": self.variable,
            "kind": str(self.kind),
            "message": self.message,
            "cut_points": [c.to_dict() for c in self.cut_points],
            "spec": self.location.file,
            "source": f"{self.location.file}:{self.location.line}",
            "known": self.known,
            **({"fix": self.fix.to_dict()} if self.fix is not None else {}),
        }

    def run_dict(self) -> dict[str, Any]:
        """The finding as a problem of a run's JSON report (contract section 6)."""
        return {
            "site": self.site,
            "step": self.step,
            "variable": self.variable,
            "kind": str(self.kind),
            "message": self.message,
            "cut_points": [c.to_dict() for c in self.cut_points],
            **({"via": list(self.via)} if self.via else {}),
            **({"fix": self.fix.to_dict()} if self.fix is not None else {}),
        }

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
        return cls(
            kind=FindingKind(str(data["kind"])),
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
            row="timeline",
        )
