"""The result of ``gradscope check``: one report per spec, their problems, and the verdict.

The JSON shape (``CheckResult.to_dict``):

- One spec: exactly the report of ``inspect --format json`` (contract section 5), with
  ``problems`` holding only what fails (problems a baseline holds move to
  ``known_problems``) and one more key, ``check``: ``{"passed", "exit_code", "baseline",
  "specs", "pairs", "problems", "known", "fixed"}``.
- Several specs: ``{"gradscope": 1, "specs": [paths], "tensorflow", "device", "reports":
  [one report per spec, as above without "check"], "problems": [every failing problem],
  "known_problems": [...], "check": {...}}``. Each problem names its ``spec``.

Both shapes are accepted by ``--baseline``; ``schema/report-v1.json`` and
``schema/check-v1.json`` describe them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradscope._src.errors import ExitCode
from gradscope._src.results import exits
from gradscope._src.results import report as m
from gradscope._src.results.display import Displayed, rich_renderable
from gradscope._src.results.finding import Finding

#: A problem as a baseline holds it: ``(spec, loss, variable, kind)``.
Key = tuple[str, str | None, str | None, str]


@dataclass(frozen=True)
class CheckResult(Displayed):
    """Several reports checked together (one per spec), with the baseline they were held to.

    Attributes:
        reports: one report per spec or target, in the order given; each problem is marked
            ``known`` when the baseline holds it.
        baseline: the baseline file, or None.
        fixed: baseline problems of these specs that no longer occur.
    """

    reports: tuple[m.Report, ...]
    baseline: str | None = None
    fixed: tuple[Key, ...] = ()

    @property
    def problems(self) -> tuple[m.Problem, ...]:
        """Every problem of every report, known ones included."""
        return tuple(p for r in self.reports for p in r.problems)

    def findings(self) -> tuple[Finding, ...]:
        """Every report's findings, known ones included, report by report."""
        return tuple(f for r in self.reports for f in r.findings())

    @property
    def failures(self) -> tuple[m.Problem, ...]:
        """The problems ``check`` fails on: those the baseline does not hold."""
        return tuple(p for p in self.problems if not p.known)

    @property
    def known(self) -> tuple[m.Problem, ...]:
        return tuple(p for p in self.problems if p.known)

    @property
    def passed(self) -> bool:
        """Whether ``check`` passes: the one rule's (``results/exits.py``) on its failures."""
        return exits.passed(len(self.failures))

    @property
    def exit_code(self) -> ExitCode:
        """``ExitCode.OK`` when passed, else ``ExitCode.PROBLEMS`` (``results/exits.py``)."""
        return ExitCode(exits.exit_code(len(self.failures)))

    @property
    def pairs(self) -> int:
        return sum(1 for r in self.reports for _ in r.pairs())

    def report(self, spec: str) -> m.Report:
        """The report of one spec (by the path given)."""
        for r in self.reports:
            if r.spec == spec:
                return r
        raise KeyError(spec)

    def checked(self) -> str:
        """What was checked: ``6 specs``, ``1 timeline``, ``2 specs and 1 timeline``."""
        said = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in self._kinds() if n]
        return " and ".join(said) or "0 specs"

    def _kinds(self) -> list[tuple[str, int]]:
        timelines = sum(r.route == "timeline" for r in self.reports)
        return [("spec", len(self.reports) - timelines), ("timeline", timelines)]

    def verdict(self) -> str:
        """``passed: 6 specs, 84 pairs, no unexpected gradients`` or ``failed: ...``."""
        specs = self.checked()
        known = f", {len(self.known)} known" if self.known else ""
        fixed = f", {len(self.fixed)} fixed since the baseline" if self.fixed else ""
        if self.passed:
            return f"passed: {specs}, {self.pairs} pairs, no unexpected gradients{known}{fixed}"
        n = len(self.failures)
        failing = len({p.spec for p in self.failures})
        where = f" in {specs}"
        if all(count for _, count in self._kinds()):  # "in 1 of 2 files: 1 spec and 1 timeline"
            where = f" in {failing} of {len(self.reports)} files: {specs}"
        elif len(self.reports) > 1:  # "in 1 of 3 specs"
            where = f" in {failing} of {specs}"
        new = "new " if self.baseline else ""
        return f"failed: {n} {new}problem{'s' if n != 1 else ''}{where}{known}{fixed}"

    def summary(self) -> dict[str, Any]:
        """The ``check`` object of the JSON report."""
        return {
            "passed": self.passed,
            "exit_code": int(self.exit_code),
            "baseline": self.baseline,
            "specs": len(self.reports),
            "pairs": self.pairs,
            "problems": len(self.failures),
            "known": len(self.known),
            "fixed": [
                {"spec": s, "loss": loss, "variable": v, "kind": k} for s, loss, v, k in self.fixed
            ],
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (both shapes in the module docstring): one spec, its report plus
        ``check``; several, every report under ``reports``."""
        if len(self.reports) == 1:
            out = self.reports[0].to_dict()
            out.setdefault("known_problems", [])
            out["check"] = self.summary()
            return out
        first = self.reports[0] if self.reports else None
        return {
            "gradscope": m.REPORT_VERSION,
            "specs": [r.spec for r in self.reports],
            "tensorflow": first.tensorflow if first else None,
            "device": first.device if first else None,
            "reports": [r.to_dict() for r in self.reports],
            "problems": [p.problem_dict() for p in self.failures],
            "known_problems": [p.problem_dict() for p in self.known],
            "check": self.summary(),
        }

    def __rich__(self) -> Any:
        """How rich consoles and notebooks print it: the check table."""
        return rich_renderable(self)
