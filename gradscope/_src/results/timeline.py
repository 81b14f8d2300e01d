"""What ``check --timeline`` finds in a recorded timeline: plain data, its findings as
:class:`~gradscope._src.results.finding.Finding` objects (contract section 7).

A timeline file keeps its findings as JSON rows (``kind``, ``site``, ``variable``,
``from_step``, ``message``, and ``cut_points``, ``fix`` when known); checked, they become
findings like every other result's, and the timeline a report with one loss per site, which
every check format draws (``timeline/check.py`` reads the file into this type).
"""

from __future__ import annotations

from dataclasses import dataclass

from gradscope._src.results import report as m
from gradscope._src.results.facts import VariableFacts
from gradscope._src.results.finding import Finding


@dataclass(frozen=True)
class TimelineResult:
    """One timeline, checked.

    Attributes:
        path: the timeline file.
        program: the program that recorded it (None when the file does not say).
        tensorflow: the TensorFlow version that recorded it (``?`` when unknown).
        device: the device it ran on (``?`` when unknown).
        sites: one loss per call site: the statuses and norms of its last recorded step (a
            variable the site does not watch is ``excluded``).
        variables: every variable the sites record.
        found: the file's findings, then those its records show that the file lacks, in that
            order (:meth:`findings`).
        derived: how many of ``found`` were read from the records, missing from the file.
    """

    path: str
    program: str | None
    tensorflow: str
    device: str
    sites: tuple[m.LossResult, ...]
    variables: tuple[VariableFacts, ...]
    found: tuple[Finding, ...]
    derived: int = 0

    def findings(self) -> tuple[Finding, ...]:
        """Every finding of the timeline, each at its site's ``FILE:LINE``."""
        return self.found

    def notes(self) -> tuple[str, ...]:
        """What a reader should know: findings read from the records the file lacked."""
        if not self.derived:
            return ()
        plural = "s" if self.derived != 1 else ""
        return (f"{self.derived} finding{plural} read from the recorded steps, missing from the "
                "file's `findings`",)  # fmt: skip

    def report(self) -> m.Report:
        """The timeline as a report, which every ``check`` format draws: the file as its
        "spec", a loss per site, a problem per finding."""
        return m.Report(
            spec=self.path,
            name=self.program,
            tensorflow=self.tensorflow,
            device=self.device,
            variables=self.variables,
            losses=self.sites,
            problems=self.found,
            notes=self.notes(),
            route="timeline",  # recorded in training: no NaN origin was searched
        )
