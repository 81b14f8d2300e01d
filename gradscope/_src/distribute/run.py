"""``--strategy``: a run's one-device facts, measured again across replicas and merged."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from gradscope._src.distribute import devices, workers
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import UsageError
from gradscope._src.results.facts import RunFacts
from gradscope._src.results.replicas import STRATEGIES, Distribution


def check(distribution: Distribution) -> None:
    """Refuse what cannot run, before anything is built.

    Raises:
        UsageError: an unknown strategy, fewer than one replica, or ``--replicas`` with the
            default strategy (which has one).
    """
    if distribution.strategy not in STRATEGIES:
        raise UsageError(f"--strategy: expected one of {', '.join(STRATEGIES)}, "
                         f"saw {distribution.strategy!r}")  # fmt: skip
    if distribution.replicas < 1:
        raise UsageError(f"--replicas: expected at least 1, saw {distribution.replicas}")
    if not distribution.active and distribution.replicas != 1:
        raise UsageError("--replicas needs --strategy mirrored or multiworker "
                         "(the default strategy has one replica)")  # fmt: skip


def for_program(strategy: str | None, replicas: int | None) -> Distribution:
    """What ``gradscope run --strategy S --replicas N`` makes for the program.

    A program picks its own strategy (``tf.distribute.MirroredStrategy()``, ``model.fit``
    under its ``scope()``); ``gradscope run`` only makes the devices that strategy finds:
    ``--replicas N`` (or ``--strategy mirrored``, 2 unless told) splits the CPU into N logical
    devices, or uses N GPUs where there are that many. Every call made inside ``strategy.run``
    is reported per replica whatever the options.

    Raises:
        UsageError: ``--strategy multiworker`` (a program's workers read their cluster from
            the ``TF_CONFIG`` its own launcher sets), or ``--strategy default`` with more than
            one replica.
    """
    if strategy == "multiworker":
        raise UsageError(
            "gradscope run: --strategy multiworker: a program's MultiWorkerMirroredStrategy "
            "reads its cluster from the TF_CONFIG its own launcher sets; start each worker "
            "under gradscope run (each reports its own replica), or use --replicas N for N "
            "local devices (MirroredStrategy)"
        )
    if strategy == "default" and replicas not in (None, 1):
        raise UsageError(f"gradscope run: --replicas {replicas} needs --strategy mirrored, or "
                         "no --strategy (the default strategy has one replica)")  # fmt: skip
    if strategy == "default" or (strategy is None and replicas is None):
        return Distribution()
    wanted = Distribution("mirrored", 2 if replicas is None else replicas)
    check(wanted)
    return wanted


def prepare(distribution: Distribution) -> None:
    """Make the replicas' devices; must run before TensorFlow initialises its devices (the
    pipeline calls it right after importing TensorFlow). Workers make their own."""
    if distribution.strategy == "mirrored":
        devices.configure(import_tensorflow(), distribution.replicas)


@functools.cache
def _mirrored(names: tuple[str, ...]) -> Any:
    """One ``MirroredStrategy`` per set of devices for the whole process.

    NOTE: every new strategy numbers its collective ops from the same start, and TensorFlow
    remembers the shapes of earlier ones by number: a second strategy over the same devices
    fails with "Shape mismatch in the collective instance 100".
    """
    return import_tensorflow().distribute.MirroredStrategy(list(names))


def distributed(frontend: Any, facts: RunFacts, distribution: Distribution, *,
                losses: list[str] | None, max_elements: int,
                timeout: float = workers.TIMEOUT) -> RunFacts:  # fmt: skip
    """``facts`` with every pair's all-reduced gradient and its replicas'.

    A spec's inputs are split across the replicas; a Python target's losses run whole on
    every replica (``distribute/target.py``).

    Raises:
        UsageError: too few rows to split; ``multiworker`` with a Python target object.
        TargetError: a Python target that cannot run across replicas.
        WorkerError: a worker of ``multiworker`` failed or timed out.
    """
    from gradscope._src.distribute.merge import merge  # numpy: only for a distributed run

    spec = getattr(frontend, "spec", None)
    if spec is None:
        return _target(frontend, facts, distribution, losses, timeout)
    if distribution.strategy == "multiworker":
        request = {"spec": spec.path, "max_elements": max_elements, "losses": losses}
        measured = workers.run(request, distribution.replicas, timeout)
    else:
        from gradscope._src.distribute.replica import measure

        tf = import_tensorflow()
        names = devices.configure(tf, distribution.replicas)
        measured = measure(spec, _mirrored(tuple(names)), losses)
    return merge(facts, measured, distribution)


def _target(frontend: Any, facts: RunFacts, distribution: Distribution,
            losses: list[str] | None, timeout: float) -> RunFacts:  # fmt: skip
    """A Python target's pass across replicas (``distribute/target.py``), merged.

    Raises:
        UsageError: ``multiworker`` with a target given as an object, not a string.
    """
    from gradscope._src.distribute import target
    from gradscope._src.distribute.merge import merge

    before = target.one_device(frontend)
    if distribution.strategy == "multiworker":
        if not isinstance(frontend.obj, str):
            raise UsageError(
                "--strategy multiworker: a Python target given as an object (a Target, a "
                "mapping, a function) cannot be sent to worker processes; give it as "
                "module:function or file.py:function, or use --strategy mirrored"
            )
        measured = workers.run_target(frontend.obj, before, losses, distribution.replicas,
                                      timeout)  # fmt: skip
        notes = measured.pop("notes")
    else:
        names = devices.configure(import_tensorflow(), distribution.replicas)
        measured, notes = target.measure(frontend.obj, before, _mirrored(tuple(names)), losses)
    merged = merge(facts, measured, distribution, reduced="mean")
    return dataclasses.replace(merged, notes=merged.notes + tuple(notes))
