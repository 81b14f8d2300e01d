"""``gradscope run`` as a library call: start the program watched, and report what it did."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from gradscope.analysis import run as run_policy
from gradscope.frontends.program import launch
from gradscope.frontends.program.launch import Program
from gradscope.results import run as rr
from gradscope.results.replicas import Distribution


@dataclass(frozen=True)
class Outcome:
    """The report, and the program's own exception when it raised (exit code 4), or its
    ``SystemExit`` when it exited with a nonzero status (outcome ``exited``)."""

    report: rr.RunReport
    error: BaseException | None = None


def run(
    program: Program,
    *,
    steps: int = 1,
    stop: bool = False,
    allow_none: Sequence[str] = (),
    every: int = 1,
    timeline: str | None = None,
    tensorboard: str | None = None,
    distribution: Distribution = Distribution(),  # noqa: B008  (frozen)
    on_os_exit: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Run ``program`` with every gradient call watched for its first ``steps`` executions.

    Args:
        program: the script or module and its arguments.
        steps: executions watched per call site; later ones run unwatched, at the
            program's own speed, and the program runs to its end (as ``python`` runs it).
        stop: stop the program instead at a site's first execution past ``steps``
            (``--stop``: a quick look; the rest of the program does not run).
        allow_none: globs of sources whose missing gradient is not a problem.
        every: with ``timeline`` or ``tensorboard``: every execution up to ``steps`` counts,
            and the first and every ``every``-th are measured and recorded; the others run
            unwatched.
        timeline: write the timeline JSON (contract section 7) here, however the program ends.
        tensorboard: write TensorBoard event files into this directory.
        distribution: ``mirrored`` with N replicas: N devices are made before the program
            starts, so its own ``MirroredStrategy()`` finds N (``distribute.run.for_program``).
        on_os_exit: called with the report so far (outcome ``exited``) when the program
            ends the process with ``os._exit(N)``, which nothing after it survives.

    Returns:
        The report; the program's exception, if it raised.

    Raises:
        ProgramError: the program cannot be started (exit code 2).
    """
    launch.check(program)
    from gradscope.engine.tf_import import import_tensorflow

    tf = import_tensorflow()  # once, without its banners: the program's own import is then free
    devices = _devices(tf, distribution)  # before anything initialises TensorFlow's devices

    from gradscope.frontends.program import trainable
    from gradscope.frontends.program.hooks import installed
    from gradscope.frontends.program.watch import Watcher

    recorder = None
    if timeline is not None or tensorboard is not None:
        from gradscope.timeline.record import Recorder

        recorder = Recorder(every, timeline, tensorboard, program=program.target,
                            allow_none=allow_none, site_tags=True)  # fmt: skip
    watcher = Watcher(steps, stop, recorder)

    def close() -> None:
        if recorder is not None:
            recorder.device = "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
            recorder.close()  # the file is written however the program ended (idempotent)

    hooks: list[Any] = []  # the run's Calls, once installed

    def report(outcome: str, error: BaseException | None, status: int | None,
               caught: bool = True) -> Outcome:  # fmt: skip
        calls = watcher.finish()
        if hooks:  # a trainable flag's call folded into its fit()'s own
            calls = trainable.merged(calls, hooks[0].traces)
        close()
        stop = _stop(watcher, caught, outcome == rr.FINISHED)
        if outcome == rr.FINISHED and stop is not None:  # it caught the stop and ran on
            outcome = rr.STOPPED
        return Outcome(_report(program, tf, steps, allow_none, distribution, devices, watcher,
                               calls, outcome, status, stop), error)  # fmt: skip

    def last_words(status: int) -> None:
        if on_os_exit is not None:  # os._exit(0) ends a program as returning does
            on_os_exit(report(rr.EXITED, None, status) if status else
                       report(rr.FINISHED, None, None))  # fmt: skip

    try:
        with installed(watcher) as calls, _os_exit(last_words):
            hooks.append(calls)
            outcome, error = launch.execute(program)
    except BaseException:  # gradscope's own failure: the timeline is written all the same
        close()
        raise
    status = launch.exit_status(error) if outcome == rr.EXITED else None
    caught = outcome != rr.STOPPED or len(watcher.refused) > 1  # by the program's except:
    return report(outcome, error, status, caught)


def _report(program: Program, tf: Any, steps: int, allow_none: Sequence[str],
            distribution: Distribution, devices: tuple[str, ...], watcher: Any,
            calls: Sequence[rr.CallResult], outcome: str, status: int | None,
            stop: rr.Stop | None) -> rr.RunReport:  # fmt: skip
    return rr.RunReport(
        program=program.target if not program.module else f"-m {program.target}",
        argv=tuple(program.argv),
        tensorflow=tf.__version__,
        device="GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0",
        calls=tuple(calls),
        problems=tuple(run_policy.problems_of(calls, allow_none)),
        outcome=outcome,
        steps=steps,
        notes=tuple(watcher.notes) + _unused(distribution, calls),
        distribution=distribution if distribution.active else None,
        devices=devices,
        exit_status=status,
        stop=stop,
    )


def _stop(watcher: Any, caught: bool, finished: bool) -> rr.Stop | None:
    """Where ``--stop`` stopped the program and the sites seen until then; ``caught``: the
    program caught the stop and went on (each of its gradient calls at a stopped site then
    raised it again: counted as refused), ``finished``: to its end."""
    if not watcher.refused:
        return None
    seen = dict.fromkeys(s.site for s in watcher.sites.values())
    return rr.Stop(watcher.refused[0], tuple(seen), len(watcher.refused), caught, finished)


@contextmanager
def _os_exit(last_words: Callable[[int], None]) -> Iterator[None]:
    """While the block runs, ``os._exit(N)`` in this process (not in a child forked from it,
    which ends that way) first calls ``last_words(N)``: nothing after it runs, no ``finally``,
    no ``atexit``."""
    real, pid = os._exit, os.getpid()

    def _exit(status: int) -> NoReturn:
        if os.getpid() == pid:
            os._exit = real
            try:
                last_words(status)
            finally:
                real(status)
        real(status)

    os._exit = _exit
    try:
        yield
    finally:
        os._exit = real


def _unused(distribution: Distribution, calls: Sequence[rr.CallResult]) -> tuple[str, ...]:
    """A note when ``--replicas`` made devices that no watched call ran on."""
    if not distribution.active or not calls or any(c.replica_values for c in calls):
        return ()
    return (f"--replicas {distribution.replicas}: no watched call ran inside strategy.run, "
            "so none was made per replica (does the program make a MirroredStrategy and run "
            "its train step with strategy.run, or model.fit under its scope?)",)  # fmt: skip


def _devices(tf: Any, distribution: Distribution) -> tuple[str, ...]:
    """The replicas' devices (``CPU:0``, ``CPU:1``), made now; none without a strategy."""
    if not distribution.active:
        return ()
    from gradscope.distribute.devices import configure

    return tuple(name.split("device:")[-1] for name in configure(tf, distribution.replicas))
