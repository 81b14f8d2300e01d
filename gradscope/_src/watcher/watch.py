"""The watcher's state: call sites, their executions, and when to stop the program."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from gradscope._src.results import causes, words
from gradscope._src.results.causes import Cause
from gradscope._src.results.replicas import ReplicaResult
from gradscope._src.results.run import EAGER, GRAPH, CallResult, SourceResult
from gradscope._src.watcher import analyse, process
from gradscope._src.watcher.sites import Chain
from gradscope._src.watcher.values import Numbers


class Timeline(Protocol):
    """Where the watcher records the measured executions, every K-th (``--every K``): the
    timeline's ``Recorder``, which ``watch/run.py`` makes."""

    histograms: bool  # TensorBoard's histograms need each gradient's elements

    def due(self, step: int) -> bool: ...

    def record(self, step: int, site: str, loss: Any, entries: Sequence[Sequence[Any]],
               *, loss_scaled: bool = False) -> Any: ...  # fmt: skip


class StopProgram(BaseException):
    """Raised into the program, with ``--stop``, when a site would run once more than
    ``--steps`` allows."""


@dataclass
class Static:
    """One traced (or built, or eagerly run) call: what is known before its numbers."""

    sources: list[analyse.SourceStatic]
    target_source: str
    notes: tuple[str, ...] = ()
    measured: bool = True  # False: no numbers are expected (a record of what a step does)
    replicas: list[list[analyse.SourceStatic]] = field(default_factory=list)  # strategy.run
    multiplier: tuple[float, ...] = ()  # distinct values of the output_gradients given
    unasked: tuple[tuple[str, str], ...] = ()  # (name, attribute) of untracked variables read
    #: a TensorFlow 1 call's: which variables its loss reads, its var_list leaves out and
    #: nothing trains, asked when its result is made (``var_lists.left_out``)
    left_out: Callable[[], tuple[tuple[str, str], ...]] | None = None


@dataclass
class SiteState:
    """One call site of the program."""

    site: str
    api: str
    mode: str
    key: tuple[str, str, int] = ("", "", -1)
    count: int = 0  # executions recorded
    unrecorded: int = 0  # eager executions before the first recorded, their ops not recorded
    executions: int = 0  # executions counted (with a timeline: measured or not)
    measuring: bool = True  # what the in-graph flags say now
    outer: tuple[str, ...] = ()  # the user's lines that called the site, innermost first
    flags: list[Any] = field(default_factory=list)  # in-graph "still watching" variables
    unrun: list[Static] = field(default_factory=list)  # built or traced, maybe never run
    replica_watch: bool = False  # eager, inside strategy.run: what replica 0 decided
    traced: set[tuple[tuple[str, bool], ...]] = field(default_factory=set)  # which sources
    # got a gradient, per trace of a tf.function seen at this site
    retraced: int = 0  # executions past --steps watched: a later trace that differs
    owner: int = 0  # the thread whose watch first saw it (``process.owner_here``)


class Watcher:
    """Counts each site's executions, keeps their results, and decides when to stop."""

    def __init__(self, steps: int, stop: bool = False, timeline: Timeline | None = None) -> None:
        self.steps = steps
        self.stop = stop  # --stop: the program is stopped at a site's execution past --steps
        #: the sites gradscope's stop was raised at, in order (one per refused call): more
        #: than one, or a program that went on, means the program caught it (``except:``)
        self.refused: list[str] = []
        self.timeline = timeline  # --every K --timeline: executions measured every K
        self.sites: dict[tuple[str, str, int], SiteState] = {}
        self.calls: list[CallResult] = []
        self._keys: list[tuple[str, str, int]] = []  # each call's site key
        self._owners: list[int] = []  # each call's thread (``process.owner_here``)
        self._chains: dict[tuple[str, str, Chain, str, int], SiteState] = {}
        self._lines: dict[tuple[str, str], list[tuple[str, Chain]]] = {}  # chains at a line
        self.notes: list[str] = []
        self._local = threading.local()
        self.lock = threading.RLock()  # the report may be made in a signal handler

    # -- reentrancy: gradscope's own gradient calls are never watched -----------------------

    @property
    def busy(self) -> bool:
        """Whether gradient calls made now run unwatched: gradscope's own, or the program's
        outside the watched thread and process (``process.py``)."""
        return bool(getattr(self._local, "busy", 0)) or not process.watched_here()

    def busy_here(self) -> bool:
        """Whether gradscope's own work is running in this thread."""
        return bool(getattr(self._local, "busy", 0))

    @contextmanager
    def own_work(self) -> Iterator[None]:
        self._local.busy = getattr(self._local, "busy", 0) + 1
        try:
            yield
        finally:
            self._local.busy -= 1

    # -- sites and steps --------------------------------------------------------------------

    def site(self, site: str, api: str, mode: str, where: int = -1) -> SiteState:
        """The state of a call site; ``where`` tells apart calls on one line."""
        key = (site, api, where)
        if key not in self.sites:
            self.sites[key] = SiteState(site, api, mode, key=key, owner=process.owner_here())
        return self.sites[key]

    def at(self, chain: Chain, api: str, mode: str) -> SiteState:
        """The state of the call site the program asks from, through its helpers: its line
        and ``chain`` (``sites.chain``), so that no call is taken for another one's step (two
        calls of one helper, two calls on one line). Eagerly the chain alone finds a known
        site (the hot path: no source maps read); while tracing, the line is read too (Keras'
        own step, traced with none of the program's frames inside, is its ``fit()`` line)."""
        eager = mode == EAGER
        owner = process.owner_here()  # two threads' blocks at one line: two sites
        if eager:
            known = self._chains.get((api, mode, chain, "", owner))
            if known is not None:
                return known
        from gradscope._src.watcher.sites import described

        site, outer = described()
        key = (api, mode, chain, "" if eager else site, owner)
        state = self._chains.get(key)
        if state is None:
            seen = self._lines.setdefault((site, api), [])
            seen.append((mode, chain))
            where = len(seen) - 1 or -1  # the first at a line keeps the line's own key
            state = self.site(site, api, mode, where)
            state.outer = outer
            self._chains[key] = state
        return state

    def done(self, state: SiteState) -> bool:
        if self.timeline is not None:
            return state.executions >= self.steps
        return state.count >= self.steps + state.retraced

    def unwatched(self, state: SiteState) -> bool:
        """Whether every later execution of ``state`` runs unwatched, with nothing to count:
        it has had its ``--steps``, and neither ``--stop`` nor a timeline asks more."""
        return not self.stop and self.timeline is None and self.done(state)

    def trace(self, state: SiteState, static: Static) -> None:
        """A new trace of a ``tf.function`` at ``state`` (other Python arguments, another
        model passed in): one whose sources get a gradient where no earlier trace's did, or
        none where one did, is a different computation, so its first execution is watched
        even past ``--steps`` (a None gradient there would otherwise pass unseen)."""
        seen = tuple((s.name, s.has_gradient) for s in static.sources)
        if seen in state.traced:
            return
        if state.traced and self.timeline is None and self.done(state):
            state.retraced += 1
        state.traced.add(seen)

    def due(self, state: SiteState, ahead: int = 0) -> bool:
        """Whether execution ``executions + ahead`` of ``state`` is measured: every one
        without a timeline; with one, the first and every K-th."""
        n = state.executions + ahead
        return self.timeline is None or n == 1 or self.timeline.due(n)

    def before_execution(self, state: SiteState) -> bool:
        """Whether to watch the next execution of ``state``; past ``--steps`` it runs
        unwatched, or with ``--stop`` the program is stopped there. With a timeline every
        execution is counted here, and only the due ones are watched."""
        if not self.done(state):
            if self.timeline is None:
                return True
            state.executions += 1
            return self.due(state)
        if not self.stop or not process.can_stop():
            return False  # a finalizer's call: StopProgram would be printed and ignored
        self.refused.append(state.site)
        raise StopProgram

    def record(self, state: SiteState, static: Static, numbers: Numbers | None,
               arrays: Sequence[tuple[Any, Any]] | None = None,
               each: Sequence[Numbers] = (), owner: int | None = None) -> None:  # fmt: skip
        """One execution's result (``numbers`` None: built, never run); ``arrays``, per
        source (gradient, value), go to the timeline (numpy-readable or ``Summary``);
        ``each``: every replica's numbers, when the call was made per replica (``numbers``
        are then the all-reduced gradient's); ``owner``: the thread whose watch it belongs
        to (None: the site's; a traced call's numbers arrive in TensorFlow's threads)."""
        with self.lock:
            if self.timeline is None:
                if self.done(state):
                    return
                state.count += 1
            elif numbers is None:  # traced or built, never run
                state.count = max(state.executions, 1)
            elif not self.due(state) or state.count == state.executions:
                return  # an execution not due (no flag left to skip it), or measured already
            else:
                state.count = state.executions
            result = _result(state, static, numbers, each)
            self.calls.append(result)
            self._keys.append(state.key)
            self._owners.append(state.owner if owner is None else owner)
            if self.timeline is not None and numbers is not None:
                self._to_timeline(state, result, numbers, arrays)

    def _to_timeline(self, state: SiteState, result: CallResult, numbers: Numbers,
                     arrays: Sequence[tuple[Any, Any]] | None) -> None:  # fmt: skip
        assert self.timeline is not None
        pairs = arrays or [(None, None)] * len(result.sources)
        entries = [(s.name, g, v, *_cause(s))
                   for s, (g, v) in zip(result.sources, pairs, strict=True)]  # fmt: skip
        scaled = result.loss_scale is not None  # mixed precision: overflowing steps skipped
        self.timeline.record(state.count, state.site, numbers[0], entries, loss_scaled=scaled)

    def finish(self, owner: int | None = None, calls: int = 0, sites: int = 0
               ) -> list[CallResult]:  # fmt: skip
        """Every call, graph-mode calls that never ran included (with no numbers); with
        ``owner``, those of one block of a watch only (``hooks.Member``): made by that
        thread's watch after the block's first ``calls`` calls and ``sites`` sites."""
        with self.lock:
            states = list(self.sites.values())
            for state in states[sites:]:
                if state.count == 0 and owner in (None, state.owner):
                    for static in state.unrun[:1]:
                        self.record(state, static, None, owner=state.owner)
            via = _via(states)
            made = zip(self.calls[calls:], self._keys[calls:], self._owners[calls:], strict=True)
            return [dataclasses.replace(c, via=via[k]) if k in via else c
                    for c, k, o in made if owner in (None, o)]  # fmt: skip


def _via(states: Sequence[SiteState]) -> dict[tuple[str, str, int], tuple[str, ...]]:
    """For sites on one line reached through different callers (one helper called from two
    places), the callers' lines that tell them apart, innermost first: as few as needed."""
    by_line: dict[str, list[SiteState]] = {}
    for state in states:
        by_line.setdefault(state.site, []).append(state)
    out = {}
    for same in by_line.values():
        outers = {s.outer for s in same}
        if len(outers) < 2:
            continue  # one caller (or calls on one line): the line says it
        deepest = max(len(o) for o in outers)
        depth = next((d for d in range(1, deepest + 1)
                      if len({o[:d] for o in outers}) == len(outers)), deepest)  # fmt: skip
        out.update({s.key: s.outer[:depth] for s in same})
    return out


def _result(state: SiteState, static: Static, numbers: Numbers | None,
            each: Sequence[Numbers] = ()) -> CallResult:  # fmt: skip
    never_run = numbers is None and static.measured  # no value: no step, no numeric status
    value, stats, scale = numbers if numbers is not None else (None, [None] * len(static.sources),
                                                                None)  # fmt: skip
    sources = []
    for i, (s, measured) in enumerate(zip(static.sources, stats, strict=True)):
        norm, largest = measured if measured is not None else (None, None)
        status = analyse.status(s, norm, largest, not never_run)
        cuts = () if status in ("excluded", "frozen") else tuple(s.cut_points)
        cause = s.cause or (analyse.zero_cause(s) if status == "zero" else None)
        cause = cause or causes.multiplied(status, static.multiplier, state.site)
        replicas = tuple(_replica(r, mine[i], each[r][1][i] if each else None)
                         for r, mine in enumerate(static.replicas))  # fmt: skip
        norm = norm if s.has_gradient else None
        origin = s.nan_origin if status == "nan" else None
        sources.append(SourceResult(s.name, status, norm, s.shape, s.sparse, cuts, cause,
                                    s.trainable_changed, replicas, nan_origin=origin,
                                    attribute=s.attribute, copy_of=s.copy_of))  # fmt: skip
    notes = static.notes + tuple(str(causes.Untracked(names=(n, a))) for n, a in static.unasked)
    left_out = static.left_out() if static.left_out is not None else ()
    notes += tuple(str(causes.LeftOut(names=(n,), line=made, api=state.api))
                   for n, made in left_out)  # fmt: skip
    if numbers is None and state.mode == GRAPH:
        notes += (words.NEVER_RUN_GRAPH,)
    elif numbers is None and static.measured:
        notes += (words.NEVER_RUN_TRACED,)
    step = 0 if never_run else state.count + state.unrecorded  # the execution's own number
    return CallResult(state.site, state.api, state.mode, step, static.target_source,
                      value, tuple(sources), notes, scale, tuple(n[0] for n in each),
                      multiplier=static.multiplier, unasked=static.unasked,
                      left_out=left_out)  # fmt: skip


def _cause(source: SourceResult) -> tuple[str, str, tuple[dict[str, str], ...], Cause | None]:
    """The timeline's ``status``, ``cause``, ``cut_points`` and the cause itself of a source,
    as the Monitor records them (``analyse.recorded``); ``recorder`` keeps them only for a
    None gradient."""
    said = analyse.recorded(source.status, source.cut_points, source.cause)
    return said.status, said.why, said.cut_points, said.cause


def _replica(replica: int, static: analyse.SourceStatic,
             measured: tuple[float, float] | None) -> ReplicaResult:  # fmt: skip
    """One replica's status and norm of a source, decided as the source's own."""
    norm, largest = measured if measured is not None else (None, None)
    status = analyse.status(static, norm, largest)
    return ReplicaResult(replica, status, norm if static.has_gradient else None)
