"""The one exit-code rule: what a door ends with, from its result (contract: exit codes).

Every door asks :func:`exit_code`: ``gradscope check`` (and ``check --timeline``,
``gradscope.check()``, ``assert_gradients``) through ``CheckResult.exit_code``, ``gradscope
run``, ``gradscope.run()`` and ``gradscope.watch()`` through ``RunReport.exit_code`` (``run``
with an output it could not write too), ``pytest --gradscope`` through :func:`passed`. An
error gradscope raises on purpose carries its own code (``errors.GradscopeError.exit_code``);
this rule is for the results. The codes themselves are ``errors.ExitCode``.
"""

from __future__ import annotations

import signal as signals

from gradscope._src.errors import ExitCode

#: How a watched program ended (``RunReport.outcome``).
FINISHED = "finished"  # ran to its end (or sys.exit(0))
STOPPED = "stopped"  # --stop: gradscope stopped it after --steps executions of a site
RAISED = "raised"  # the program raised; exit code 4
INTERRUPTED = "interrupted"  # Ctrl-C; exit code 130
EXITED = "exited"  # sys.exit() with a nonzero status; exit code that status, as Python's
REPLACED = "replaced"  # os.exec*: the process became another program (report written first)


def exit_code(failures: int, outcome: str = FINISHED, signal: str | None = None,
              unwritten: bool = False) -> int:  # fmt: skip
    """The exit code of a result.

    Args:
        failures: how many of its problems fail it (those no baseline holds).
        outcome: how the watched program ended (a spec or a target: ``finished``).
        signal: ``interrupted`` by a signal other than Ctrl-C: its name (``SIGTERM``).
        unwritten: an output could not be written (said after the report).

    Returns:
        2 an output could not be written; 4 the program raised or ended itself with a nonzero
        status (contract section 6's codes keep their meaning, so a program's own 1 or 2 is
        never read as gradscope's); 130 interrupted (Ctrl-C), 128 + N ended by signal N
        (SIGTERM 143, SIGHUP 129), as a shell reports a process the signal ended; 1 failing
        problems; 0 none.

    Example:
        >>> exit_code(0), exit_code(3), exit_code(0, RAISED), exit_code(0, INTERRUPTED, "SIGTERM")
        (0, 1, 4, 143)
    """
    if unwritten:
        return int(ExitCode.USAGE)
    if outcome in (RAISED, EXITED):
        return int(ExitCode.PROGRAM_RAISED)
    if outcome == INTERRUPTED and signal is not None:
        return 128 + int(signals.Signals[signal])
    if outcome == INTERRUPTED:
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.PROBLEMS if failures else ExitCode.OK)


def passed(failures: int) -> bool:
    """Whether a result with ``failures`` failing problems passes (exits 0)."""
    return exit_code(failures) == ExitCode.OK
