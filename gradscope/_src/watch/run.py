"""``gradscope run`` as a library call: start the program watched, and report what it did.

The watching itself is ``watcher``'s (its hooks and ``Watcher``), as for
``gradscope.watch()`` (``block.py``); :func:`reported` makes the report of both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.analysis import fixes
from gradscope._src.analysis import run as run_policy
from gradscope._src.errors import GradscopeError
from gradscope._src.frontends import backend
from gradscope._src.results import exits
from gradscope._src.results import run as rr
from gradscope._src.results.replicas import Distribution
from gradscope._src.watch import endings, launch
from gradscope._src.watch.launch import Program


@dataclass(frozen=True)
class Outcome:
    """The report, and the program's own exception when it raised (exit code 4), or its
    ``SystemExit`` when it exited with a nonzero status (outcome ``exited``)."""

    report: rr.RunReport
    error: BaseException | None = None
    #: outputs that could not be written (a full disk): ``cannot write --timeline F: why``
    unwritten: tuple[str, ...] = ()


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
    on_end: Callable[[Outcome], None] | None = None,
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
        on_end: called with the report so far when the program's process ends in a way
            nothing after it survives (``endings.py``): ``os._exit(N)`` (outcome
            ``finished`` or ``exited``), an ``os.exec*`` (``replaced``), SIGTERM or SIGHUP
            (``interrupted``, its ``signal``). Without it these endings are not caught.

    Returns:
        The report; the program's exception, if it raised.

    Raises:
        ProgramError: the program cannot be started (exit code 2).
        NotTensorFlow: the program computes its gradients with PyTorch (Keras 3 on its
            ``torch`` backend, ``loss.backward()``): stopped there, at once
            (``frontends/backend.py``; exit code 2).
    """
    launch.check(program)
    environ = dict(os.environ)
    what = program.target if not program.module else f"-m {program.target}"
    script, module = (None, program.target) if program.module else (program.target, None)
    backend.check_program(script, module, what)  # Keras on PyTorch: nothing runs
    # TensorFlow (or JAX) is the program's to import, as under python: Keras (which TensorFlow
    # imports) reads KERAS_BACKEND then, and the hooks are set once it has (hooks.py). Only
    # devices for --replicas must be made before the program starts TensorFlow.
    from gradscope._src import patching
    from gradscope._src.engine.tf_import import import_tensorflow, program_import

    devices: tuple[str, ...] = ()
    if distribution.active:
        devices = _devices(import_tensorflow(), distribution)
    waiting = patching.after_import(("tensorflow", "keras"), lambda: None, around=program_import)

    from gradscope._src.watcher import trainable
    from gradscope._src.watcher.hooks import installed
    from gradscope._src.watcher.watch import Watcher

    recorder = None
    if timeline is not None or tensorboard is not None:
        from gradscope._src.timeline.record import Recorder

        recorder = Recorder(every, timeline, tensorboard, program=program.target,
                            allow_none=allow_none, site_tags=True)  # fmt: skip
    watcher = Watcher(steps, stop, recorder)

    unwritten: list[str] = []

    def close() -> None:
        if recorder is not None:
            recorder.device = device(_imported())
            try:  # the file is written however the program ended (idempotent)
                recorder.close()
            except (OSError, GradscopeError) as exc:  # a full disk: said after the report
                why = getattr(exc, "why", None) or getattr(exc, "strerror", None) or str(exc)
                said = f"--timeline {timeline}" if timeline else f"--tensorboard {tensorboard}"
                unwritten.append(f"cannot write {said}: {why}")

    hooks: list[Any] = []  # the run's block of the watch (hooks.Member), once entered

    def report(outcome: str, error: BaseException | None, status: int | None,
               signal: str | None = None, caught: bool = True) -> Outcome:  # fmt: skip
        member = hooks[0] if hooks else None
        if member is None or member.first:
            calls = watcher.finish()
        else:  # run inside another watch (a test under pytest --gradscope): it joined it
            calls = member.session.watcher.finish(member.thread, member.start, member.sites)
        if member is not None:  # a trainable flag's call folded into its fit()'s own
            calls = trainable.merged(calls, member.calls.traces)
        stop = _stop(watcher, caught, outcome == rr.FINISHED)
        if outcome == rr.FINISHED and stop is not None:  # it caught the stop and ran on
            outcome = rr.STOPPED
        made = _report(program, _imported(), steps, allow_none, distribution, devices, watcher,
                       calls, outcome, status, stop)  # fmt: skip
        if recorder is not None:  # the timeline carries every problem the run reports
            recorder.keep([p.run_dict() for p in made.problems])
        close()
        if signal is not None:
            made = dataclasses.replace(made, signal=signal)
        return Outcome(made, error, tuple(unwritten))

    def last_words(ending: endings.Ending) -> int:
        """The report delivered before the process ends (``endings.py``); the exit code."""
        if ending.kind == "os._exit":  # os._exit(0) ends a program as returning does
            said = (report(rr.EXITED, None, ending.status) if ending.status else
                    report(rr.FINISHED, None, None))  # fmt: skip
        elif ending.kind == "exec":
            said = report(rr.REPLACED, None, None)
        else:
            said = report(rr.INTERRUPTED, None, None, signal.Signals(ending.signum).name)
        assert on_end is not None
        on_end(said)
        return exit_code(said)

    ends = endings.caught(last_words) if on_end is not None else contextlib.nullcontext()
    try:
        with (backend.refusing(what), installed(watcher) as member, ends,
              _programs_logging(watcher, environ)):  # fmt: skip
            hooks.append(member)
            outcome, error = launch.execute(program)
    except backend.NotTensorFlow:  # refused before it started: nothing to write
        raise
    except BaseException:  # gradscope's own failure: the timeline is written all the same
        close()
        raise
    finally:
        if waiting is not None:
            waiting.cancel()
    refused = error.error if isinstance(error, backend.Refused) else None
    if refused is None and not watcher.sites:  # it trained with no call gradscope could see
        refused = backend.refusal(what)
    if refused is not None:  # one line, exit 2: no report of a program gradscope cannot watch
        raise refused from None
    status = launch.exit_status(error) if outcome == rr.EXITED else None
    caught = outcome != rr.STOPPED or len(watcher.refused) > 1  # by the program's except:
    return report(outcome, error, status, caught=caught)


def _imported() -> Any:
    """TensorFlow, when the program (or ``--replicas``) imported it; else None."""
    return sys.modules.get("tensorflow")


@contextlib.contextmanager
def _programs_logging(watcher: Any, environ: dict[str, str]) -> Iterator[None]:
    """The environment and TensorFlow's Python logger as the program finds them under
    ``python``: without the ``TF_CPP_MIN_LOG_LEVEL`` gradscope set to import TensorFlow
    quietly (the program and its children read the environment), and with TensorFlow's
    warnings (a retracing ``tf.function``, the program's own ``tf.get_logger()``) shown as
    Python's logging shows them; those of gradscope's own work stay hidden."""
    added = {k: v for k, v in os.environ.items() if k not in environ}
    for key in added:
        del os.environ[key]
    logger = logging.getLogger("tensorflow")  # tf.get_logger()'s, TensorFlow imported or not
    level = logger.level

    def not_gradscopes(record: Any) -> bool:
        return not watcher.busy_here()

    logger.setLevel(logging.NOTSET)
    logger.addFilter(not_gradscopes)
    try:
        yield
    finally:
        logger.removeFilter(not_gradscopes)
        if logger.level == logging.NOTSET:  # a level the program set meanwhile stays
            logger.setLevel(level)
        for key, value in added.items():
            os.environ.setdefault(key, value)


def exit_code(outcome: Outcome) -> int:
    """gradscope's exit code for an outcome: the report's, or 2 when an output could not be
    written (``cannot write``, said after the report)."""
    report = outcome.report
    return exits.exit_code(len(report.problems), report.outcome, report.signal,
                           unwritten=bool(outcome.unwritten))  # fmt: skip


def _report(program: Program, tf: Any, steps: int, allow_none: Sequence[str],
            distribution: Distribution, devices: tuple[str, ...], watcher: Any,
            calls: Sequence[rr.CallResult], outcome: str, status: int | None,
            stop: rr.Stop | None) -> rr.RunReport:  # fmt: skip
    return reported(tf, watcher, calls, allow_none, outcome, steps,
                    _unused(distribution, calls),
                    program=program.target if not program.module else f"-m {program.target}",
                    argv=tuple(program.argv), distribution=distribution if distribution.active
                    else None, devices=devices, exit_status=status, stop=stop)  # fmt: skip


def reported(tf: Any | None, watcher: Any, calls: Sequence[rr.CallResult],
             allow_none: Sequence[str],
             outcome: str, steps: int, notes: tuple[str, ...] = (),
             **fields: Any) -> rr.RunReport:  # fmt: skip
    """The report of the calls a watcher saw (``gradscope run``, ``gradscope.watch()``): each
    call's sources explained and given their fixes, the problems the policy finds in them.

    Args:
        tf: TensorFlow, imported; None when the watched code never imported it.
        watcher: the ``Watcher`` that saw the calls (its notes are the report's).
        calls: the calls, as ``Watcher.finish`` and ``trainable.merged`` give them.
        allow_none: globs of sources whose missing gradient is not a problem.
        outcome: how the watched code ended.
        steps: executions watched per call site.
        notes: the report's notes after the watcher's.
        **fields: the report's other fields (``program``, ``argv``, ``entry``, ...).
    """
    calls = run_policy.explained(fixes.fixed_calls(calls))
    problems = fixes.fixed_run_problems(run_policy.problems_of(calls, allow_none), calls)
    fields.setdefault("argv", ())
    if _on_jax(tf, calls):  # JAX computed them (Keras on JAX, or plain JAX)
        from gradscope._src.frontends.python.jax_lines import versions

        fields.setdefault("jax", versions())
        if tf is None:  # TensorFlow never imported: not what ran
            fields.setdefault("tensorflow", "")
    fields.setdefault("tensorflow", _version(tf))
    return rr.RunReport(device=device(tf), calls=tuple(calls),
                        problems=tuple(problems), outcome=outcome, steps=steps,
                        notes=tuple(watcher.notes) + notes, **fields)  # fmt: skip


def device(tf: Any) -> str:
    """The device a report names: ``GPU:0`` when TensorFlow has one, else ``CPU:0``; when
    TensorFlow was never imported, JAX's (``CPU:0`` without JAX too)."""
    if tf is None:
        from gradscope._src.frontends.python.jax_lines import device as jax_device

        return jax_device()
    return "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"


def _on_jax(tf: Any, calls: Sequence[rr.CallResult]) -> bool:
    """Whether JAX computed the gradients: a JAX API watched, Keras on JAX, or JAX imported
    where TensorFlow never was."""
    if any(c.api.startswith("jax.") for c in calls) or backend.keras_backend() == "jax":
        return True
    return tf is None and "jax" in sys.modules


def _version(tf: Any) -> str:
    """TensorFlow's version: the imported module's, or the installed package's."""
    if tf is not None:
        return str(tf.__version__)
    from importlib import metadata

    try:
        return metadata.version("tensorflow")
    except metadata.PackageNotFoundError:
        return ""


def _stop(watcher: Any, caught: bool, finished: bool) -> rr.Stop | None:
    """Where ``--stop`` stopped the program and the sites seen until then; ``caught``: the
    program caught the stop and went on (each of its gradient calls at a stopped site then
    raised it again: counted as refused), ``finished``: to its end."""
    if not watcher.refused:
        return None
    seen = dict.fromkeys(s.site for s in watcher.sites.values())
    return rr.Stop(watcher.refused[0], tuple(seen), len(watcher.refused), caught, finished)


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
    from gradscope._src.distribute.devices import configure

    return tuple(name.split("device:")[-1] for name in configure(tf, distribution.replicas))
