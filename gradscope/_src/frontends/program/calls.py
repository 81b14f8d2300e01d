"""One watched gradient call: ask TensorFlow, analyse the cuts, and arrange for the numbers.

The program's own call always runs as written; its result goes back unchanged. Tapes are
asked once, with the tensors on the paths added as extra sources (they receive exactly the
gradients the backward pass computes anyway); ``tf.gradients`` and ``compute_gradients`` are
asked again in a copy of the graph.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.frontends.program import (
    analyse,
    every,
    fit,
    graphs,
    names,
    origin,
    reads,
    session,
    sites,
    thrown_away,
    values,
)
from gradscope._src.frontends.program.analyse import SourceStatic
from gradscope._src.frontends.program.eager import EagerCall, Recorder
from gradscope._src.frontends.program.flags import Flags
from gradscope._src.frontends.program.replicas import (
    Gathering,
    Part,
    combined,
    eager_numbers,
    first_replica_decides,
)
from gradscope._src.frontends.program.trainable import Traces
from gradscope._src.frontends.program.watch import SiteState, Static, Watcher
from gradscope._src.frontends.program.xla import Boxes
from gradscope._src.frontends.python import frames
from gradscope._src.results import causes
from gradscope._src.results.report import NAN
from gradscope._src.results.run import EAGER, FUNCTION


class Calls:
    """Handles every watched call of one run."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.recorder = Recorder(self.eager_recording, lambda: watcher.busy)
        self.sessions = session.Sessions(watcher)
        self.open_eager = 0  # eager tape spans still open
        #: eager tapes not yet asked: the tensors they recorded are kept for their own call
        self.unasked: weakref.WeakSet[Any] = weakref.WeakSet()
        self.asked: dict[int, None] = {}  # eager ids of recent targets: no value thrown away
        self.functions: dict[int, set[tuple[str, str, int]]] = {}  # id(tf.function) -> sites
        self._local = threading.local()
        self.flags = Flags()
        self.scaled: list[tuple[Any, Any]] = []  # (scaled loss, the loss scale it used)
        self.pending: dict[int, list[Callable[[reads.Program], None]]] = {}  # id(graph) -> adds
        #: id(graph) -> whether TensorFlow throws that trace away (``thrown_away.py``)
        self.thrown_away: dict[int, Callable[[], bool]] = {}
        self.given_none: set[int] = set()  # id() of variables a watched call gave None
        self.traces = Traces(watcher)  # each Keras model's traced train step
        self.gathering = Gathering()  # calls made per replica in strategy.run
        self.now: dict[tuple[str, str, int], SiteState] = {}  # traced site -> running one
        self.boxes = Boxes(watcher)  # numbers of XLA-compiled sites

    def eager_recording(self) -> bool:
        return self.open_eager > 0

    # -- tapes: which ops each recorded -----------------------------------------------------

    def push(self, tape: Any) -> None:
        import tensorflow as tf

        spans = tape.__dict__.setdefault("_gradscope_spans", [])
        if tf.executing_eagerly():
            if not self.recorder.installed:
                return  # no op is recorded: no span to keep (the program's own speed)
            self.recorder.add_thread()  # a block that joined from another thread: its ops too
            if not self.open_eager:  # a new step: tapes of earlier ones are done with
                self.recorder.release(self.recorder.seq)
            self.open_eager += 1
            spans.append([None, self.recorder.seq, None])
            self.unasked.add(tape)
            self.recorder.floor = self._first_unasked()
        else:
            graph = tf.compat.v1.get_default_graph()
            spans.append([graph, graphs.mark(graph), None])

    def pop(self, tape: Any) -> None:
        spans = tape.__dict__.get("_gradscope_spans")
        if not spans or spans[-1][2] is not None:
            return
        graph = spans[-1][0]
        if graph is None:
            self.open_eager -= 1
            spans[-1][2] = self.recorder.seq
        else:
            spans[-1][2] = graphs.mark(graph)

    def _release_after(self, tape: Any) -> None:
        """Drop the tensors kept for a tape just answered, but none that another tape not yet
        asked recorded: two tapes opened in one ``with`` (TensorFlow's DCGAN tutorial) are
        asked one after the other, and the second needs what both recorded."""
        self.unasked.discard(tape)
        self.recorder.floor = self._first_unasked()
        if not self.open_eager:
            self.recorder.release(self.recorder.seq if self.recorder.floor is None
                                  else self.recorder.floor)  # fmt: skip

    def _first_unasked(self) -> int | None:
        """Where the earliest eager span of a tape that may still be asked starts (what it
        recorded after that is kept whatever its length), None when there is none."""
        spans = [t.__dict__.get("_gradscope_spans", []) for t in list(self.unasked)]
        starts = [start for each in spans for g, start, _ in each if g is None]
        return min(starts, default=None)

    def _spans(self, tape: Any, graph: Any) -> list[tuple[int, int]]:
        out = []
        for g, start, end in tape.__dict__.get("_gradscope_spans", []):
            if g is graph:
                now = self.recorder.seq if graph is None else graphs.mark(graph)
                out.append((start, now if end is None else end))
        return out

    # -- tf.function calls: the stack, to know which function holds a site -----------------

    def calling(self) -> list[Any]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack  # type: ignore[no-any-return]

    def before_function(self, fn: Any) -> None:
        """Stop before a ``tf.function`` runs a site once more than ``--steps`` allows."""
        self.flags.make()  # on the first call (flags.py)
        every.before_function(self.watcher, self.functions.get(id(fn), ()), self._running)

    def _running(self, traced: SiteState) -> SiteState:
        """The site this execution of ``traced`` is recorded at (``fit.running``)."""
        state: SiteState = fit.running(traced, self.watcher.site)
        self.now[traced.key] = state
        return state

    def _in_functions(self, state: SiteState) -> None:
        known = [self.functions.setdefault(id(fn), set()) for fn in self.calling()]
        if self.watcher.timeline is not None:
            every.first_trace(state, known)
        for k in known:
            k.add(state.key)

    # -- GradientTape.gradient ---------------------------------------------------------------

    def tape_gradient(self, orig: Callable[..., Any], tape: Any, target: Any, sources: Any,
                      output_gradients: Any, unconnected: Any) -> Any:  # fmt: skip
        """``tape.gradient`` as the program asked for it, watched.

        gradscope's own work never breaks the program: if it fails, the program's call runs
        as written and the report says which site could not be analysed.
        """
        import tensorflow as tf

        eager = tf.executing_eagerly()
        api = fit.api() or "GradientTape.gradient"
        state = self.watcher.at(sites.chain(), api, EAGER if eager else FUNCTION)
        if eager and self.watcher.unwatched(state):  # done with: the program's own speed
            self._recorder_off()
            return orig(tape, target, sources, output_gradients, unconnected)
        if eager and not first_replica_decides(state, lambda: self._eager_watch(state)):
            self._next_eager()
            return orig(tape, target, sources, output_gradients, unconnected)
        flat_s, flat_t = tf.nest.flatten(sources), tf.nest.flatten(target)
        if eager:
            self.asked.update(dict.fromkeys(_eager_ids(flat_t)))  # type: ignore[arg-type]
            while len(self.asked) > 1000:
                del self.asked[next(iter(self.asked))]
        try:
            call, probe_ids, probe_ts = (self._eager_call if eager else self._function_call)(
                tape, flat_s, flat_t
            )
        except Exception as exc:  # gradscope's failure, never the program's
            self._failed(state, exc)
            answer = orig(tape, target, sources, output_gradients, unconnected)
            if not eager:  # what Keras' traced step trains, known however its analysis went
                self.traces.gradients(flat_s, tf.nest.flatten(answer))
            return answer
        with self.watcher.own_work():
            tensors = names.tensors_watched(tape, flat_s)  # before a non-persistent tape ends
            held = names.held_as(flat_s, sys._getframe(1))  # the user's names of tensors
            given = values.multiplier(output_gradients)
            read = names.read_variables(tape)  # before a non-persistent tape forgets them
            grads = orig(tape, target, flat_s + probe_ts, output_gradients,
                         tf.UnconnectedGradients.NONE)  # fmt: skip
        user = list(grads[: len(flat_s)])
        if not eager:  # what Keras' traced step trains, known however its analysis goes
            self.traces.gradients(flat_s, user)
        zero = unconnected == tf.UnconnectedGradients.ZERO  # TF fills zeros: the program's
        filled = [tf.zeros_like(s) if g is None and zero else g
                  for s, g in zip(flat_s, user, strict=True)]  # fmt: skip
        try:  # gradscope's own reads (.numpy() of the target) are no round-trip of the program
            call.received(probe_ids, grads[len(flat_s) :])
            asked = (probe_ids, list(grads[len(flat_s) :]))
            with self.watcher.own_work():
                self._after(state, tape, call, flat_s, flat_t, user, eager, filled, tensors,
                            asked, given, read, held)  # fmt: skip
        except Exception as exc:  # gradscope's failure, never the program's
            self._failed(state, exc)
        if eager:
            self._next_eager()
        return tf.nest.pack_sequence_as(sources, filled)

    def _after(self, state: SiteState, tape: Any, call: Any, flat_s: list[Any],
               flat_t: list[Any], user: list[Any], eager: bool,
               filled: list[Any], tensors: list[bool | None] | None = None,
               asked: tuple[list[int], list[Any]] = ([], []),
               given: tuple[float, ...] = (), read: Sequence[Any] = (),
               held: dict[int, str] | None = None) -> None:  # fmt: skip
        """Analyse a tape's answer (``user``; ``filled``: what the program receives, with
        ``unconnected_gradients=ZERO``'s zeros; ``asked``: the probes and their gradients;
        ``given``: the ``output_gradients`` multiplier's values; ``read``: the variables the
        tape watched; ``held``: the user's names of tensor sources) and arrange for its
        numbers."""
        statics = names.statics(flat_s, user, call, self.recorder.created, held)
        self.given_none.update(id(s) for s, g in zip(flat_s, user, strict=True) if g is None)
        analyse.analyse(call.problem, statics, call.locate, call.visible, call.inside)
        analyse.through_branches(call.problem, statics, lambda k: call.locate(k, "").source)
        analyse.through_zero_derivative(call.problem, statics,
                                        lambda k: call.locate(k, "").source)  # fmt: skip
        analyse.unwatched(statics, names.watching(tape, flat_s),
                          [getattr(s, "trainable", True) for s in flat_s],
                          getattr(tape, "_watch_accessed_variables", True), tensors)  # fmt: skip
        dead_ends = self._outside(tape, flat_s, flat_t, statics, eager, state.site)
        target_source = names.target_source(call, flat_t, eager, self.recorder.created)
        fit.notes(call, statics, flat_s, target_source)
        dead_ends()  # the last, most general cause: a model output no loss reads is more
        if not eager:
            analyse.through_numpy_function(statics, flat_t,
                                           lambda op: sites.text(frames.of_op(op)))  # fmt: skip
        analyse.filled(statics, filled)
        user = filled
        unasked = names.unasked(read, flat_s, call, self.recorder.created)
        static = Static(statics, target_source, multiplier=given, unasked=unasked)
        scale = self._scale_of(flat_t)
        graph = None if eager else flat_t[0].graph
        parts = self.gathering.add(state, Part(static, flat_t, user), graph)
        if not parts:
            return  # inside strategy.run: measured once every replica has made the call
        static = combined(parts) if len(parts) > 1 else static
        if eager:
            by = None if scale is None else values.total(scale)
            numbers, each, grads = eager_numbers(parts, by) if len(parts) > 1 else (
                values.of_arrays(flat_t, user, by), [], user)  # fmt: skip
            if len(parts) == 1:
                nan = [st is not None and analyse.status(s, *st) == NAN
                       for s, st in zip(static.sources, numbers[1], strict=True)]  # fmt: skip
                origin.eager(call, static.sources, nan, user)
            timeline = self.watcher.timeline is not None
            arrays = list(zip(grads, flat_s, strict=True)) if timeline else None
            self.watcher.record(state, static, numbers, arrays, each)
            if not tape._persistent:
                self._release_after(tape)
        else:
            self.watcher.trace(state, static)
            state.unrun.append(static)
            self._in_functions(state)
            origins = origin.in_graph(call, static.sources, *asked, user)
            self._numbers_in_graph(state, static, flat_t, user, scale, flat_s, parts, origins)

    def guarded(self, work: Callable[..., None], *args: Any) -> None:
        """Run gradscope's side of a call; a failure is noted in the report, never raised
        into the program (``StopProgram`` and Ctrl-C pass)."""
        try:
            work(*args)
        except Exception as exc:  # gradscope's failure, never the program's
            site = sites.text(sites.current())
            self._failed(SiteState(site, "", ""), exc)

    def _failed(self, state: SiteState, exc: Exception) -> None:
        """Say in the report that a site could not be analysed (a gradscope bug)."""
        from gradscope._src.engine.messages import one_line

        message = one_line(f"{type(exc).__name__}: {exc}", 200)
        note = f"{state.site}: gradscope could not analyse this call ({message}); please report it"
        if note not in self.watcher.notes:
            self.watcher.notes.append(note)

    def _eager_watch(self, state: SiteState) -> bool:
        """Whether to watch this eager execution. Once every eager site has had its
        ``--steps``, eager ops are no longer recorded, so the program runs
        at its own speed; a site first seen after that is watched from its next execution."""
        if self.watcher.timeline is not None:
            installed = self.recorder.installed  # ops of this step recorded: cuts analysable
            return self.watcher.before_execution(state) and installed
        if not self.watcher.before_execution(state):
            self._recorder_off()
            return False
        if not self.recorder.installed:
            self.recorder.install()
            state.unrecorded += 1  # its ops were not recorded: the next execution is watched
            return False
        return True

    def _recorder_off(self) -> None:
        """Stop recording eager ops once every eager site has had its ``--steps`` and no
        tape is open: an open tape may be asked at a site not seen yet (MAML's outer tape,
        asked after the inner tapes' sites are done), whose execution needs its ops."""
        if self.recorder.installed and not self.open_eager:
            eager = [s for s in self.watcher.sites.values() if s.mode == EAGER]
            if all(self.watcher.done(s) for s in eager):
                self.recorder.uninstall()

    def _next_eager(self) -> None:
        if self.watcher.timeline is not None:
            every.next_eager(self.watcher, self.recorder, self.open_eager > 0)

    def _function_call(self, tape: Any, flat_s: list[Any], flat_t: list[Any]) -> Any:
        import tensorflow as tf

        graph = tf.compat.v1.get_default_graph()
        spans = self._spans(tape, graph)
        tensors = [graphs.source_tensor(graph, s) for s in flat_s]
        call = graphs.GraphCall(graphs.ops_in(graph, spans), tensors, flat_t)
        probe_ids = analyse.probes(call.problem)
        return call, probe_ids, call.probe_tensors(probe_ids)

    def _eager_call(self, tape: Any, flat_s: list[Any], flat_t: list[Any]) -> Any:
        spans = self._spans(tape, None)
        records = [r for r in self.recorder.records if any(a < r.seq <= b for a, b in spans)]
        call = EagerCall(self.recorder, records, _eager_ids(flat_s), _eager_ids(flat_t))
        probe_ids, probe_ts = call.probe_tensors(analyse.probes(call.problem))
        return call, probe_ids, probe_ts

    def _outside(self, tape: Any, flat_s: list[Any], flat_t: list[Any],
                 statics: list[SourceStatic], eager: bool,
                 site: str = "") -> Callable[[], None]:  # fmt: skip
        """Notes for sources the tape never saw reach the target; returns what names the
        dead ends of the paths that remain unexplained (``analyse.dead_end_notes``), to run
        once the other causes had their say (``site``: the call's own line)."""
        if all(s.reachable or s.has_gradient for s in statics):
            return lambda: None
        if eager:
            spans = self._spans(tape, None)
            full = EagerCall(self.recorder, list(self.recorder.records), _eager_ids(flat_s),
                             _eager_ids(flat_t))  # fmt: skip
            recorded = _in_spans(spans, lambda k: full.seqs[k])
            where: Callable[[int], str] = lambda k: sites.text(full.sites[k])  # noqa: E731
            analyse.outside_notes(full.problem, statics, recorded, where)
            start = min(a for a, _ in spans) if spans else 0
            analyse.roundtrip_notes(full.problem, statics, full.left(start, _eager_ids(flat_t)))
            back = full.came_back(start, self.recorder.created)
            used = full.used(self.asked)
            analyse.dead_end_notes(full.problem, statics, recorded, where, back, True, used)
            return lambda: analyse.dead_end_notes(full.problem, statics, recorded, where,
                                                  used=used, unread=causes.Unread(),
                                                  site=site)  # fmt: skip
        import tensorflow as tf

        from gradscope._src.frontends.program.graph_calls import outside

        graph = tf.compat.v1.get_default_graph()
        tensors = [graphs.source_tensor(graph, s) for s in flat_s]
        return outside(graph, self._spans(tape, graph), tensors, flat_t, statics, site=site)

    def saw_scaled(self, scaled: Any, scale: Any) -> None:
        """A loss ``LossScaleOptimizer.scale_loss`` multiplied by ``scale``."""
        self.scaled = [*self.scaled[-99:], (scaled, scale)]

    def _scale_of(self, flat_t: list[Any]) -> Any:
        """The loss scale of a target made by ``scale_loss``, else None."""
        if len(flat_t) != 1:
            return None
        return next((scale for t, scale in reversed(self.scaled) if t is flat_t[0]), None)

    def _numbers_in_graph(self, state: SiteState, static: Static, flat_t: list[Any],
                          grads: list[Any], scale: Any = None, sources: list[Any] | None = None,
                          parts: Sequence[Part] = (),
                          origins: origin.InGraph | None = None) -> None:  # fmt: skip
        jit = any(getattr(fn, "_jit_compile", False) for fn in self.calling())
        box = self.boxes.new(state) if jit else None  # XLA compiles no py_function (xla.py)
        flag = self._flag()
        if flag is not None:
            state.flags.append(flag)
            state.measuring = True  # a fresh flag is on: the next call sets every flag
        watcher = self.watcher

        def sink(numbers: values.Numbers, arrays: list[tuple[Any, Any]] | None,
                 each: Sequence[values.Numbers] = ()) -> None:  # fmt: skip
            try:
                running = self.now.get(state.key, state)
                watcher.record(running, static, numbers, arrays, each)
                if watcher.done(running) and flag is not None:
                    flag.assign(False)
                    state.measuring = False
            except Exception as exc:  # never fail the program's function
                self._failed(state, exc)

        graph = flat_t[0].graph

        def add(program: reads.Program) -> None:
            try:
                measure(program)
            except Exception as exc:  # gradscope's failure, never the program's
                self._failed(state, exc)

        def measure(program: reads.Program) -> None:
            with self.watcher.own_work():
                weights, raw = None, False
                if watcher.timeline is not None and sources is not None:
                    weights = [graphs.value_before(graph, s) for s in sources]
                    raw = watcher.timeline.histograms  # TensorBoard's need the elements
                if len(parts) > 1:
                    rows = [(p.targets, p.grads) for p in parts]
                    values.in_graph_replicas(flag, rows, lambda n, e, a: sink(n, a, e), scale,
                                             weights, raw, box, program)  # fmt: skip
                    return
                values.in_graph(flag, flat_t, grads, sink, scale, weights, raw, box,
                                None if box is not None else origins, program)  # fmt: skip

        if getattr(graph, "experimental_acd_manager", None) is None:
            add(reads.Program(graph))  # no end of trace to wait for
        else:
            self.pending.setdefault(id(graph), []).append(add)
            self.thrown_away.setdefault(id(graph), thrown_away.check(graph))

    def end_of_trace(self, graph: Any) -> None:
        """Add the measuring ops once the program's function body has run: added any earlier
        they would shift the ids of the program's later ops, and so the seeds TensorFlow
        derives from them for random ops (``tf.random.set_seed`` without an op seed). None
        are added to a trace TensorFlow throws away (it never runs: ``thrown_away.py``)."""
        adds = self.pending.pop(id(graph), [])
        if self.thrown_away.pop(id(graph), lambda: False)():
            return
        if not adds:
            return
        # the tensors it returns (``mark_as_return``): with its stateful ops, what runs
        manager = getattr(graph, "experimental_acd_manager", None)
        program = reads.Program(graph, getattr(manager, "_returned_tensors", ()))
        for add in adds:
            add(program)
        graphs.captures_last(graph)

    def forget(self, graph: Any) -> None:
        """A trace that failed: its measuring ops are never added. A call some replicas made
        before it failed is a call traced, never run, as one made outside ``strategy.run``
        is: its statuses and causes from the trace."""
        self.pending.pop(id(graph), None)
        self.thrown_away.pop(id(graph), None)
        for state, parts in self.gathering.left_open(graph):
            static = combined(parts) if len(parts) > 1 else parts[0].static
            self.watcher.trace(state, static)
            state.unrun.append(static)

    def _flag(self) -> Any:
        return self.flags.take()

    # -- apply_gradients -----------------------------------------------------------------

    def apply_gradients(self, pairs: list[Any]) -> None:
        """A ``None`` passed to ``apply_gradients`` that no watched call returned (the program
        made or replaced it) is reported at the ``apply_gradients`` line."""
        import tensorflow as tf

        unexplained = [v for g, v in pairs if g is None and id(v) not in self.given_none]
        if not unexplained:
            return
        eager = tf.executing_eagerly()
        state = self.watcher.at(sites.chain(), "apply_gradients", EAGER if eager else FUNCTION)
        if eager and not self.watcher.before_execution(state):
            return
        names = sites.unique([sites.variable_name(v) for _, v in pairs])
        statics = []
        for name, (g, v) in zip(names, pairs, strict=True):
            shape = tuple(v.shape.as_list()) if hasattr(v.shape, "as_list") else tuple(v.shape)
            static = SourceStatic(name, shape, g is not None, reachable=True)
            if g is None:
                static.cause = causes.PassedNone()
            statics.append(static)
        static_call = Static(statics, "")
        if eager:
            with self.watcher.own_work():
                grads = [g for g, _ in pairs]
                self.watcher.record(state, static_call, values.of_arrays([], grads))
        else:
            static_call.measured = False
            state.unrun.append(static_call)

    # -- tf.gradients and compute_gradients --------------------------------------------------

    def graph_gradients(self, helper: Callable[..., Any], api: str, ys: Sequence[Any],
                        xs: Sequence[Any], grads: Sequence[Any],
                        stops: Sequence[Any], every: bool = False) -> None:  # fmt: skip
        """Analyse a graph-level gradient call the program just made (``graph_calls.py``;
        ``every``: ``xs`` are every trainable variable, the call given no ``var_list``)."""
        from gradscope._src.frontends.program.graph_calls import graph_gradients

        graph_gradients(self, helper, api, ys, xs, grads, stops, every)


def _eager_ids(items: Sequence[Any]) -> list[int | None]:
    out: list[int | None] = []
    for item in items:
        handle = getattr(item, "handle", None)
        tensor = handle if handle is not None else item
        out.append(getattr(tensor, "_id", None))
    return out


def _in_spans(
    spans: list[tuple[int, int]], position: Callable[[int], int]
) -> Callable[[int], bool]:
    return lambda k: any(a < position(k) <= b for a, b in spans)
