"""``gradscope run`` as a library call: start the program watched, and report what it did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gradscope.analysis import run as run_policy
from gradscope.frontends.program import launch
from gradscope.frontends.program.launch import Program
from gradscope.results import run as rr


@dataclass(frozen=True)
class Outcome:
    """The report, and the program's own exception when it raised (exit code 4)."""

    report: rr.RunReport
    error: BaseException | None = None


def run(
    program: Program,
    *,
    steps: int = 1,
    keep_going: bool = False,
    allow_none: Sequence[str] = (),
) -> Outcome:
    """Run ``program`` with every gradient call watched for its first ``steps`` executions.

    Args:
        program: the script or module and its arguments.
        steps: executions watched per call site; the program is stopped at the next one
            unless ``keep_going``.
        keep_going: let the program run to its end, unwatched after ``steps``.
        allow_none: globs of sources whose missing gradient is not a problem.

    Returns:
        The report; the program's exception, if it raised.

    Raises:
        ProgramError: the program cannot be started (exit code 2).
    """
    launch.check(program)
    from gradscope.engine.tf_import import import_tensorflow

    tf = import_tensorflow()  # once, without its banners: the program's own import is then free

    from gradscope.frontends.program.hooks import installed
    from gradscope.frontends.program.watch import Watcher

    watcher = Watcher(steps, keep_going)
    with installed(watcher):
        outcome, error = launch.execute(program)
    calls = watcher.finish()
    report = rr.RunReport(
        program=program.target if not program.module else f"-m {program.target}",
        argv=tuple(program.argv),
        tensorflow=tf.__version__,
        device="GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0",
        calls=tuple(calls),
        problems=tuple(run_policy.problems_of(calls, allow_none)),
        outcome=outcome,
        steps=steps,
        notes=tuple(watcher.notes),
    )
    return Outcome(report, error)
