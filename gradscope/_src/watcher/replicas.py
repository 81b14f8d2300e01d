"""A watched call made once per replica inside ``strategy.run``, gathered into one execution.

``MirroredStrategy`` runs the program's replica function once per replica, each in a thread
of its own and one after another until a collective; inside a ``tf.function`` every replica
traces its part of the same graph. Each replica so makes the same gradient call. They are
gathered here, per call site and trace (or eager step), until every replica has made it; the
execution is then measured once: every replica's gradient, and their sum, the all-reduced
gradient that ``apply_gradients`` uses under a strategy (contract section 8), whose status
and norm the source shows.

The replicas' threads start with the state of the thread that runs ``strategy.run`` (the
``tf.function`` being traced, ``model.fit``, the user's line): ``inherit`` patches
TensorFlow's replica thread.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from gradscope._src import patching
from gradscope._src.watcher.watch import SiteState, Static


def replica_of(tf: Any) -> tuple[int, int] | None:
    """``(replica, replicas)`` when called inside ``strategy.run`` of a strategy with more
    than one replica; None in the default strategy or in cross-replica code.

    The replica id is known when the call is traced (``tf.function``) or run eagerly:
    MirroredStrategy builds each replica's part separately, with a constant id.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync < 2:
        return None
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    return None if replica is None else (int(replica), int(context.num_replicas_in_sync))


@dataclass
class Part:
    """One replica's call: its analysis, targets and gradients (None where there is none)."""

    static: Static
    targets: list[Any]
    grads: list[Any]


class Gathering:
    """The replicas' calls of every site, until each site's are all in."""

    def __init__(self) -> None:
        self.open: dict[tuple[Any, ...], tuple[SiteState, dict[int, Part]]] = {}
        self.lock = threading.Lock()

    def add(self, state: SiteState, part: Part, graph: Any) -> list[Part]:
        """``[part]`` outside ``strategy.run`` (or with one replica); every replica's part,
        in replica order, once the last one is in; ``[]`` while some are still to come."""
        import tensorflow as tf

        where = replica_of(tf)
        if where is None or _local_replicas(tf) < where[1]:
            # one worker of a MultiWorkerMirroredStrategy the program's own launcher
            # started: the other replicas run in other processes, this one's call stands
            return [part]
        replica, replicas = where
        key = (id(graph), *state.key)
        with self.lock:
            _, parts = self.open.setdefault(key, (state, {}))
            parts[replica] = part
            if len(parts) < replicas:
                return []
            del self.open[key]
        return [parts[r] for r in range(replicas)]

    def left_open(self, graph: Any) -> list[tuple[SiteState, list[Part]]]:
        """The sites of ``graph`` some replicas made their call at and others never did (its
        trace failed in between: ``apply_gradients`` raised "No gradients provided" on the
        first replica), each with the parts that are in, in replica order; no longer open."""
        with self.lock:
            keys = [k for k in self.open if k[0] == id(graph)]
            taken = [self.open.pop(k) for k in keys]
        return [(state, [parts[r] for r in sorted(parts)]) for state, parts in taken]


def _local_replicas(tf: Any) -> int:
    """How many replicas of the current strategy run in this process."""
    extended = tf.distribute.get_strategy().extended
    return len(getattr(extended, "worker_devices", ())) or 1


def first_replica_decides(state: SiteState, decide: Callable[[], bool]) -> bool:
    """Whether to watch an eager execution of ``state``: ``decide()`` (which counts the
    execution), asked once per step: inside ``strategy.run`` replica 0 asks, and the other
    replicas, which run after it, follow its answer."""
    import tensorflow as tf

    where = replica_of(tf)
    if where is not None and where[0] > 0:
        return state.replica_watch
    state.replica_watch = decide()
    return state.replica_watch


def combined(parts: Sequence[Part]) -> Static:
    """The call the report shows for all replicas: replica 0's analysis, a source having a
    gradient when any replica's has one, and every replica's sources kept."""
    first = parts[0].static
    sources = [
        dataclasses.replace(s, has_gradient=any(p.static.sources[i].has_gradient for p in parts))
        for i, s in enumerate(first.sources)
    ]
    replicas = [p.static.sources for p in parts]
    return Static(sources, first.target_source, first.notes, first.measured, replicas)


def eager_numbers(parts: Sequence[Part], by: float | None) -> tuple[Any, list[Any], list[Any]]:
    """The numbers of an eager call made by every replica: the all-reduced gradient's (the
    sum of the replicas'; the value, the sum of theirs), each replica's, and the summed
    gradients themselves (numpy; None where no replica has one)."""
    from gradscope._src.watcher import values

    each = [values.of_arrays(p.targets, p.grads, by) for p in parts]
    count = len(parts[0].grads)
    summed = [values.summed([p.grads[i] for p in parts]) for i in range(count)]
    targets = [t for p in parts for t in p.targets]
    return values.of_arrays(targets, summed, by), each, summed


def inherit(calling: Callable[[], list[Any]], patches: patching.Patches) -> None:
    """Start each of ``MirroredStrategy``'s replica threads with the ``tf.function`` stack
    (``calling``), the ``model.fit`` state and the user's line of the thread that made it
    (a replica's own stack starts in TensorFlow), watched when that thread is."""
    from gradscope._src.watcher import fit, process, sites

    def make_init(original_init: Any) -> Any:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            self._gradscope_parent = (list(calling()), fit.snapshot(), sites.current())
            self._gradscope_maps = sites.source_maps()
            self._gradscope_watched = process.watched_here()
            self._gradscope_owner = process.owner_here()

        return init

    def make_run(original_run: Any) -> Any:
        def run(self: Any) -> None:
            stack, state, site = getattr(self, "_gradscope_parent", ([], None, None))
            calling()[:] = stack
            fit.restore(state)
            sites.set_outer(site)
            owner = getattr(self, "_gradscope_owner", None)
            watched = (process.watching(owner) if getattr(self, "_gradscope_watched", False)
                       else None)  # fmt: skip
            with sites.mapped_as(getattr(self, "_gradscope_maps", None)), watched or nullcontext():
                original_run(self)

        return run

    patches.set("_MirroredReplicaThread.__init__", make_init, everywhere=True)
    patches.set("_MirroredReplicaThread.run", make_run, everywhere=True)  # a new thread
