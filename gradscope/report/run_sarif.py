"""``gradscope run --format sarif``: ``check``'s sarif renderer, on the run as a check, with
the rules of the kinds a run reports (one meaning per kind: ``results/kinds.py``)."""

from __future__ import annotations

from gradscope.report import sarif
from gradscope.report.json import dumps
from gradscope.report.run_check import as_check, title
from gradscope.report.run_table import ending
from gradscope.results import kinds
from gradscope.results.run import RunReport


def render(report: RunReport, *, color: bool = False, width: int = 120,
           source_root: str | None = None) -> str:  # fmt: skip
    """The run report as a SARIF 2.1.0 log: one result per problem at its call site's line,
    the rules of the kinds ``run`` reports, the command line as the invocation's; a run
    ``--stop`` stopped says so in a warning, the invocation's first notification."""
    log = sarif.to_sarif(as_check(report), source_root, listed=kinds.RUN,
                         automation="gradscope/run/")  # fmt: skip
    (run,) = log["runs"]
    invocation = run["invocations"][0]
    invocation["commandLine"] = title(report)
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        invocation["toolExecutionNotifications"].insert(0, {
            "level": "warning",
            "descriptor": {"id": "stopped"},
            "message": {"text": f"gradscope run: {ending(report)}"},
        })  # fmt: skip
    run["automationDetails"]["description"] = {"text": title(report)}
    return dumps(log)
