"""``gradscope run --format sarif``: ``check``'s sarif renderer, on the run as a check, with
the rules worded for a program's gradient calls, not for a spec's expectations."""

from __future__ import annotations

from gradscope.report import sarif
from gradscope.report.json import dumps
from gradscope.report.run_check import as_check, title
from gradscope.report.run_table import ending
from gradscope.results import report as m
from gradscope.results.run import RunReport

#: kind -> (short name, short description, help text): the kinds ``gradscope run`` reports.
RULES: dict[str, tuple[str, str, str]] = {
    m.UNEXPECTED_NONE: (
        "NoGradientAtCallSite",
        "A gradient call of the program returns None for a source it asks about.",
        "TensorFlow returns no gradient for this variable (or watched tensor) at this call "
        "site, so an optimizer step on it never updates the variable. The cut points and the "
        "note name the line: a stop_gradient, an assign, an op with no gradient, a value "
        "through .numpy(), a path computed outside the tape, a head with no loss. Reconnect "
        "it, or pass --allow-none with a glob naming it if that is intended.",
    ),
    m.NAN_PROBLEM: sarif.RULES[m.NAN_PROBLEM],
    m.NEVER_TRAINED: (
        "LeftOutOfTracedTrainStep",
        "A changed `trainable` flag leaves a variable out of the Keras train step.",
        "Keras reads `trainable` when it traces the train step (at the first fit() or "
        "train_on_batch() after compile()) and reuses that step until the next compile(): a "
        "layer unfrozen after the trace is never updated, and a model frozen between "
        "compile() and the trace trains nothing. Call compile() again after changing "
        "`trainable` (with a new optimizer if you pass one).",
    ),
    m.UNEXPECTED_CONNECTED: (
        "FrozenAfterTrace",
        "A variable frozen after Keras traced the train step is still trained.",
        "The traced train step still computes this variable's gradient and the optimizer "
        "still updates it, though its `trainable` flag is now False. Call compile() again "
        "after changing `trainable`.",
    ),
    m.REPLICA_MISMATCH: sarif.RULES[m.REPLICA_MISMATCH],
}


def render(report: RunReport, *, color: bool = False, width: int = 120,
           source_root: str | None = None) -> str:  # fmt: skip
    """The run report as a SARIF 2.1.0 log: one result per problem at its call site's line,
    the rules of ``RULES``, the command line as the invocation's; a run ``--stop`` stopped
    says so in a warning, the invocation's first notification."""
    log = sarif.to_sarif(as_check(report), source_root, rules=RULES, automation="gradscope/run/")
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
