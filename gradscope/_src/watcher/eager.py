"""Eager ops as a graph: what ran, recorded with TensorFlow's op callbacks (as tfdbg does).

An eager tape keeps no graph a reader can walk, so while the program is watched every eager
op is recorded: its type, the ids of its input and output tensors, and the user's line that
ran it. Outputs of ops run while a tape records are kept too, so the tape itself can be
asked which of them receive a gradient. TensorFlow's C fast path calls the callbacks, but
converts some inputs without them (reads of variables passed straight to an op, numpy values
made constants), so while recording an op given such an input takes the Python path, which
records them; every other op keeps the fast path (the Python path costs each op far more).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src import patching, tfcompat
from gradscope._src.engine import custom_gradient
from gradscope._src.engine import cuts as flow
from gradscope._src.engine.graph import _OVERWRITES, NONE_INPUTS, is_write
from gradscope._src.frontends.python import frames
from gradscope._src.results.facts import CutPoint
from gradscope._src.watcher import numpy_calls, sites
from gradscope._src.watcher.analyse import Problem

#: How many recent eager ops are kept outside the span of a tape that may still be asked: what
#: such a tape recorded is always kept (the history grows rather than lose a step's ops).
HISTORY = 100_000


@dataclass
class Record:
    """One eager op as it ran."""

    seq: int
    type: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    differentiable: tuple[bool, ...]
    half: tuple[bool, ...]
    site: frames.Site | None
    tensors: tuple[Any, ...] = ()  # the outputs, kept while a tape records


class _GradOp:
    """Enough of an op for ``ops.get_gradient_function``."""

    _gradient_function = None

    def __init__(self, op_type: str) -> None:
        self.type = op_type
        self.inputs = (None,)

    def get_attr(self, name: str) -> Any:
        raise ValueError(name)


class Recorder:
    """Records eager ops while installed."""

    def __init__(self, recording: Callable[[], bool], busy: Callable[[], bool]) -> None:
        self.records: collections.deque[Record] = collections.deque()
        #: records up to this ``seq`` may be forgotten past ``HISTORY`` (None: any); later
        #: ones a tape not yet asked recorded (``Calls`` keeps it)
        self.floor: int | None = None
        self.kept: list[Record] = []  # records still holding their output tensors
        self.seq = 0
        self._recording = recording  # whether some tape records now
        self._busy = busy
        self._no_gradient: dict[str, bool] = {}
        self._call_writes: dict[str, frozenset[int]] = {}
        self._copying: dict[str, tuple[str, str, frames.Site | None] | None] = {}
        self._bodies: dict[str, tuple[Any, dict[str, frames.Site | None]] | None] = {}
        self._descent: Any = None
        #: id of an op inside a function body ``inside`` named -> its type and line
        self.inner_sites: dict[int, tuple[str, frames.Site | None]] = {}
        self.installed = False
        self._fast: Any = None
        self.created: dict[int, frames.Site | None] = {}  # variable handle id -> its line
        #: tensor id -> where the program took its value out of TensorFlow, when (``at``) and
        #: how (``float()``, ``.numpy()``, ``model.predict()``, ...)
        self.left: dict[int, tuple[frames.Site | None, tuple[int, int], str]] = {}
        #: what takes values out of TensorFlow now, when not the tensor's own method (a
        #: ``model.predict()`` hands back numpy arrays)
        self.taking: str | None = None
        #: eager constant id -> when it was made and, made from a floating numpy value while a
        #: tape records, the constant itself until released (a loss rebuilt from values that
        #: left TensorFlow)
        self.constants: dict[int, tuple[tuple[int, int], Any]] = {}
        self._held: list[int] = []  # ids of constants held
        self._ticks = 0  # reads and constants between two ops, in order
        self._patches: patching.Patches | None = None
        self._threads: set[int] = set()  # the threads whose op callbacks are ours
        #: what the report says about watching itself (numpy's reads not seen here)
        self.notes: list[str] = []
        #: output id of a tf.custom_gradient's Identity -> its grad_fn's (name, FILE:LINE) and
        #: the op's ``seq``
        self.custom: dict[int, tuple[str, str, int]] = {}

    def at(self) -> tuple[int, int]:
        """Now, in the order of recorded ops (an op ``seq`` is ``(seq, 0)``) and of the reads
        and constants made after the last of them."""
        self._ticks += 1
        return (self.seq, self._ticks)

    def install(self) -> None:
        """Record eager ops from now on in this thread (op callbacks are per thread), until
        :meth:`uninstall`; numpy's reads of eager tensors and the tensor methods by which a
        value leaves TensorFlow are noted too (:meth:`_note_exits`)."""
        import numpy as np

        from gradscope._src.watcher import process

        fallback = tfcompat.get("FallbackException")
        # What the C fast path converts without a callback: a variable (its read) or a numpy
        # value (its constant, ``_constants`` in hooks.py); every other op keeps the fast path,
        # which calls the recorder as the Python path does.
        converted = (tfcompat.get("BaseResourceVariable"), np.ndarray, np.generic)

        def fast_path(fast: Any) -> Any:
            def fast_unless_converted(*args: Any) -> Any:
                for arg in args:
                    if isinstance(arg, converted) or (
                        type(arg) in (list, tuple) and any(isinstance(a, converted) for a in arg)
                    ):
                        raise fallback("gradscope records this op's conversions")
                return fast(*args)

            return fast_unless_converted

        patches = self._patches = patching.Patches(when=process.watched_here)
        patches.set("pywrap_tfe.TFE_Py_FastPathExecute", fast_path)
        self.add_thread()
        patches.on_undo(self.remove_thread)
        self._note_exits(patches)
        self.installed = True

    def add_thread(self) -> None:
        """Record this thread's eager ops too (a thread that joined the watch)."""
        me = threading.get_ident()
        if me not in self._threads:
            tfcompat.get("op_callbacks").add_op_callback(self._callback)
            self._threads.add(me)

    def remove_thread(self) -> None:
        """Stop recording this thread's eager ops (its block ended, or recording did)."""
        me = threading.get_ident()
        if me in self._threads:
            self._threads.discard(me)
            with contextlib.suppress(KeyError, ValueError):  # gone already
                tfcompat.get("op_callbacks").remove_op_callback(self._callback)

    def uninstall(self) -> None:
        if not self.installed:
            return
        if self._patches is not None:
            self._patches.undo()
            self._patches = None
        self.installed = False
        self.records.clear()
        self.release(self.seq)

    def _callback(self, op_type: Any, inputs: Any, attrs: Any, outputs: Any,
                  op_name: Any = None, graph: Any = None) -> None:  # fmt: skip
        if graph is not None or outputs is None or not self.installed or self._busy():
            return
        kind = op_type.decode() if isinstance(op_type, bytes) else str(op_type)
        kept = self._recording()
        site = sites.fast_current()
        if kind == "VarHandleOp" and outputs:
            self.created[outputs[0]._id] = site
        if kind == "Identity" and outputs:
            custom = custom_gradient.eager_site(frames.display_path)
            if custom is not None:  # tf.custom_gradient's Identity: a cut is its grad_fn's
                self.custom[outputs[0]._id] = (*custom, self.seq + 1)
                _forget(self.custom, lambda c: c[2], self.floor)
        self.seq += 1
        ids, carries, half = [], [], []
        for t in outputs:
            ids.append(t._id)
            dtype = t.dtype
            of = _DTYPES.get(dtype)
            if of is None:
                of = _DTYPES[dtype] = (_carries(dtype), dtype.name in ("float16", "bfloat16"))
            carries.append(of[0])
            half.append(of[1])
        self._append(
            Record(
                self.seq,
                kind,
                tuple([getattr(t, "_id", -1) for t in inputs]),
                tuple(ids),
                tuple(carries),
                tuple(half),
                site,
                tuple(outputs) if kept else (),
            )
        )

    def _append(self, record: Record) -> None:
        self.records.append(record)
        if record.tensors:
            self.kept.append(record)
        if len(self.records) > HISTORY and (
            self.floor is None or self.records[0].seq <= self.floor
        ):
            self.records.popleft()

    def release(self, up_to: int) -> None:
        """Drop the output tensors kept for ops up to ``up_to``: no tape that may still be
        asked for a gradient recorded them (the memory of a step's activations)."""
        keep = []
        for record in self.kept:
            if record.seq <= up_to:
                record.tensors = ()
            else:
                keep.append(record)
        self.kept = keep
        held = []
        for t in self._held:
            at, tensor = self.constants.get(t, ((0, 0), None))
            if tensor is not None and at[0] <= up_to:
                self.constants[t] = (at, None)
            elif tensor is not None:
                held.append(t)
        self._held = held

    def _note_exits(self, patches: patching.Patches) -> None:
        """Note where the program takes a tensor's value out of TensorFlow (``.numpy()``,
        ``float(t)``, ``int(t)``, and numpy reading it: ``np.asarray(t)``, ``np.tanh(t)``,
        ``np.mean(t)``, through its buffer, ``numpy_calls.py``): a path to the loss that goes
        through numpy ends there."""
        recorder = self

        def wrap(name: str) -> Callable[[Any], Any]:
            def make(original: Any) -> Any:
                def taken(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                    if not recorder._busy():
                        recorder.took(tensor, recorder.taking or _TAKEN[name])
                    return original(tensor, *args, **kwargs)

                return taken

            return make

        for name in _TAKEN:
            patches.set(f"_EagerTensorBase.{name}", wrap(name))
        put_back = numpy_calls.install(tfcompat.get("EagerTensor"), self._read_by_numpy)
        if put_back is not None:
            patches.on_undo(put_back)
        elif numpy_calls.UNSEEN not in self.notes:
            self.notes.append(numpy_calls.UNSEEN)

    def _read_by_numpy(self, tensor: Any, frame: Any) -> None:
        """numpy read ``tensor``'s buffer, called from ``frame``: the program's line took its
        value out (unless TensorFlow or Keras read it for themselves)."""
        if self._busy() or not hasattr(tensor, "_id"):
            return
        how = self.taking or numpy_calls.called(frame)
        if how is not None:
            self.took(tensor, how)

    def took(self, tensor: Any, how: str) -> None:
        """The program took ``tensor``'s value out of TensorFlow, ``how``, at its line now."""
        self.left[tensor._id] = (sites.fast_current(), self.at(), how)
        _forget(self.left, lambda v: v[1][0], self.floor)

    def made_constant(self, tensor: Any, value: Any) -> None:
        """An eager constant the program made (``tf.constant``, ``convert_to_tensor``) from
        ``value``."""
        import numpy as np

        rebuilt = isinstance(value, (np.ndarray, np.generic)) and _carries(tensor.dtype)
        held = rebuilt and self._recording()
        self.constants[tensor._id] = (self.at(), tensor if held else None)
        if held:
            self._held.append(tensor._id)
        _forget(self.constants, lambda v: v[0][0], self.floor)

    def call_writes(self, op_type: str) -> frozenset[int]:
        """The inputs a ``tf.function`` called eagerly writes (op ``__inference_...``, or
        ``__forward_...`` under a tape)."""
        if not op_type.startswith("__"):
            return frozenset()
        if op_type not in self._call_writes:
            from gradscope._src.engine.graph import written_inputs

            context = tfcompat.get("context")

            try:
                definition = context.context().get_function_def(op_type)
            except Exception:  # a function TensorFlow no longer holds: no writes known
                self._call_writes[op_type] = frozenset()
            else:
                self._call_writes[op_type] = written_inputs(definition)
        return self._call_writes[op_type]

    def copying_write(self, op_type: str) -> tuple[str, str, frames.Site | None] | None:
        """The first write inside a ``tf.function`` called eagerly that copies its inputs'
        values into a variable (``graph.copying_writes``): its node name, op type and the
        user's line that made it (TensorFlow keeps the stack in the function's debug info)."""
        if not op_type.startswith("__"):
            return None
        if op_type not in self._copying:
            self._copying[op_type] = _copying_write(op_type)
        return self._copying[op_type]

    def inside(self, op_type: str, in_bits: list[int], wanted: list[bool]
               ) -> list[tuple[Any, CutPoint]]:  # fmt: skip
        """The cuts inside a ``tf.function`` called eagerly (op ``__inference_...``) whose
        input ``k`` carries ``in_bits[k]`` and whose ``wanted`` outputs get a gradient, each
        at the user's line inside the function (``bodies.Descent``, as ``inspect`` finds
        them), with its cut point."""
        if op_type not in self._bodies:
            self._bodies[op_type] = _body(op_type)
        known = self._bodies[op_type]
        if known is None:
            return []
        body, lines = known
        if self._descent is None:
            from gradscope._src.engine.bodies import Descent
            from gradscope._src.watcher.graphs import registry

            self._descent = Descent(registry())
        try:
            found = self._descent.inside(body, in_bits, wanted)
        except Exception:  # a body the rebuilt graph cannot analyse: the call stays the cut
            return []

        def point(op: Any, kind: str) -> CutPoint:
            site = lines.get(op.name)
            self.inner_sites[id(op)] = (op.type, site)
            return CutPoint(op.name, op.type, kind, "" if site is None else str(site))

        return [(c, flow.with_later(point(c.op, c.kind), [point(o, c.kind) for o in c.later]))
                for c in found]  # fmt: skip

    def no_gradient(self, op_type: str) -> bool:
        if op_type.startswith("__") or op_type.endswith("PartitionedCall"):
            return False  # a tf.function called eagerly: its gradient is the function's
        if op_type not in self._no_gradient:
            from gradscope._src.watcher.graphs import registry

            self._no_gradient[op_type] = registry().no_gradient(_GradOp(op_type))
        return self._no_gradient[op_type]


def _copying_write(function: str) -> tuple[str, str, frames.Site | None] | None:
    """``Recorder.copying_write`` of the function TensorFlow holds by that name."""
    from gradscope._src.engine.graph import copying_writes

    context = tfcompat.get("context")

    try:
        definition = context.context().get_function_def(function)
        info = context.context().get_graph_debug_info(function)
    except Exception:  # a function TensorFlow no longer holds: no write known
        return None
    names = copying_writes(definition)
    if not names:
        return None
    node = next(n for n in definition.node_def if n.name == names[0])
    return node.name, node.op, _site(info, node.name)


def _site(info: Any, node: str) -> frames.Site | None:
    """The user's line that made ``node`` of a function, from the stacks TensorFlow keeps in
    its ``GraphDebugInfo`` (a body rebuilt from its definition has no ``op.traceback``)."""
    key = info.name_to_trace_id.get(node)  # a protobuf map: .get(node, -1) would not fit
    trace = info.traces_by_id.get(key) if key is not None else None
    stack = [info.frames_by_id[k] for k in (trace.frame_id if trace is not None else ())
             if k in info.frames_by_id]  # fmt: skip
    return frames.innermost([frames.Site(info.files[f.file_index], f.line, f.func)
                             for f in stack if f.file_index < len(info.files)])  # fmt: skip


def _body(function: str) -> tuple[Any, dict[str, frames.Site | None]] | None:
    """The body of the function TensorFlow holds by that name, rebuilt as a ``FuncGraph``
    from its definition, and the user's line of each of its ops (None: not held)."""
    context = tfcompat.get("context")
    function_def_to_graph = tfcompat.get("function_def_to_graph")
    try:
        definition = context.context().get_function_def(function)
        info = context.context().get_graph_debug_info(function)
        body = function_def_to_graph(definition)
    except Exception:  # a function TensorFlow no longer holds, or cannot rebuild
        return None
    return body, {op.name: _site(info, op.name) for op in body.get_operations()}


#: The tensor methods by which a value leaves TensorFlow, and how a report names each.
_TAKEN = {"numpy": ".numpy()", "__array__": "np.asarray()", "__float__": "float()",
          "__int__": "int()", "__index__": "int()", "__complex__": "complex()"}  # fmt: skip


def _same(a: Any, b: Any, np: Any) -> bool:
    """Whether two eager tensors hold the same values (a value back from numpy unchanged)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a._numpy(), b._numpy(), equal_nan=True))


def _forget(kept: dict[int, Any], seq: Callable[[Any], int], floor: int | None) -> None:
    """Forget the oldest entry of ``kept`` past ``HISTORY`` unless a tape not yet asked may
    need it (``seq`` of it after ``floor``)."""
    if len(kept) > HISTORY:
        oldest = next(iter(kept))
        if floor is None or seq(kept[oldest]) <= floor:
            del kept[oldest]


#: Per dtype: whether it carries a gradient, whether it is a half-precision float.
_DTYPES: dict[Any, tuple[bool, bool]] = {}


def _carries(dtype: Any) -> bool:
    return bool(dtype.is_floating or dtype.is_complex or dtype.name in ("resource", "variant"))


class EagerCall:
    """The ops of one eager gradient call as a ``flow.Graph``."""

    def __init__(
        self,
        recorder: Recorder,
        records: Sequence[Record],
        sources: Sequence[int | None],
        targets: Sequence[int | None],
    ) -> None:
        self.recorder = recorder
        self.records = list(records)
        self.tensors: dict[int, int] = {}  # eager tensor id -> flow tensor id
        self.objects: list[Any] = []  # flow tensor id -> the eager tensor, when kept
        self.ops: list[flow.Op] = []
        self.sites: list[frames.Site | None] = []
        self.seqs: list[int] = []  # per op, the ``seq`` of its record (0: made before them)
        self.producer: list[int] = []
        self.differentiable: list[bool] = []
        self.half: list[bool] = []
        self.probe_grads: dict[int, Any] = {}  # flow tensor id -> its gradient (``received``)
        produced = {t for r in self.records for t in r.outputs}
        for t in dict.fromkeys(s for s in sources if s is not None):
            if t not in produced:
                self._add("Source", [], [t], [True], None, ())
        for r in self.records:
            self._add(r.type, list(r.inputs), list(r.outputs), list(r.differentiable), r.site,
                      r.tensors, list(r.half), r.seq)  # fmt: skip
        self._link_assignments()
        graph = flow.Graph(self.ops, self.producer, self.differentiable)
        ids = [self.tensors.get(s) if s is not None else None for s in sources]
        found = [self.tensors[t] for t in targets if t is not None and t in self.tensors]
        self.problem = Problem(graph, ids, found, half=self.half)

    def _add(self, kind: str, inputs: list[int], outputs: list[int], diff: list[bool],
             site: frames.Site | None, kept: tuple[Any, ...],
             half: list[bool] | None = None, seq: int = 0) -> None:  # fmt: skip
        for t in inputs:
            if t not in self.tensors:  # made before the record (a constant, a handle)
                self._add("Input", [], [t], [True], None, ())
        known = [self.tensors[t] for t in inputs]
        index = len(self.ops)
        ids = []
        for k, t in enumerate(outputs):
            self.tensors[t] = len(self.producer)
            ids.append(len(self.producer))
            self.producer.append(index)
            self.differentiable.append(diff[k])
            self.half.append(bool(half and half[k]))
            self.objects.append(kept[k] if k < len(kept) else None)
        write = is_write(kind)
        no_grad = kind != "Source" and bool(inputs) and self.recorder.no_gradient(kind)
        writes = [known[k] for k in sorted(self.recorder.call_writes(kind)) if k < len(known)]
        none = [known[k] for k in sorted(NONE_INPUTS.get(kind, ())) if k < len(known)]
        self.ops.append(flow.Op(f"{kind}", kind, known, ids, write=write, no_gradient=no_grad,
                                writes=writes, none_inputs=none))  # fmt: skip
        self.sites.append(site)
        self.seqs.append(seq)

    def _link_assignments(self) -> None:
        # A read of a variable sees the last write to it before the read (eager order).
        last_write: dict[int, int] = {}
        for i, node in enumerate(self.ops):
            for t in dict.fromkeys(node.inputs):
                if node.type in _OVERWRITES and node.inputs[0] == t:
                    continue  # the old value is gone: nothing of it reaches later reads
                w = last_write.get(t)
                if w is not None and w != i:
                    node.assign_preds.append(w)
            if node.write and node.inputs:
                last_write[node.inputs[0]] = i
            for t in node.writes:
                last_write[t] = i

    def received(self, ids: Sequence[int], grads: Sequence[Any]) -> None:
        """Record which probes got a gradient (kept for a NaN's origin, ``origin.py``)."""
        self.problem.received.update(t for t, g in zip(ids, grads, strict=True) if g is not None)
        self.probe_grads = {t: g for t, g in zip(ids, grads, strict=True) if g is not None}

    def probe_tensors(self, ids: Sequence[int]) -> tuple[list[int], list[Any]]:
        """The probes whose eager tensors were kept (ran while a tape recorded)."""
        kept = [t for t in ids if self.objects[t] is not None]
        return kept, [self.objects[t] for t in kept]

    def locate(self, index: int, kind: str) -> CutPoint:
        site = self.sites[index]
        op = self.ops[index]
        made = {flow_id: t for t, flow_id in self.tensors.items()}
        custom = self.recorder.custom.get(made.get(op.outputs[0], -1)) if op.outputs else None
        if custom is not None:  # the user's grad_fn gave this input None (as ``inspect``)
            return CutPoint(custom[0], op.type, kind, custom[1])
        write = self.recorder.copying_write(op.type) if kind == flow.ASSIGN else None
        if write is not None and op.writes:  # cut at the assign inside the tf.function
            name, write_type, inside = write
            return CutPoint(name, write_type, kind, "" if inside is None else str(inside))
        op_type = "PartitionedCall" if op.type.startswith("__") else op.type  # a tf.function
        return CutPoint(op_type, op_type, kind, "" if site is None else str(site))

    def visible(self, index: Any) -> bool:
        """Whether the user wrote op ``index`` (or an op inside a body ``inside`` named)."""
        from gradscope._src.watcher.graphs import visible

        if not isinstance(index, int):
            op_type, site = self.recorder.inner_sites.get(id(index), (index.type, None))
            return visible(op_type, site)
        return visible(self.ops[index].type, self.sites[index])

    def inside(self, cuts: list[flow.Cut], live: list[int], received: set[int],
               reach: list[bool]) -> list[tuple[Any, CutPoint]]:  # fmt: skip
        """The cuts, those at a ``tf.function`` called eagerly replaced by the ops inside its
        body that made them (as ``bodies.located`` does for a traced call), each with its cut
        point."""
        inner: dict[int, list[tuple[Any, CutPoint]]] = {}
        for index, op in enumerate(self.ops):
            if not (op.type.startswith("__") and reach[index]):
                continue
            in_bits = [live[self.producer[t]] for t in op.inputs]
            wanted = [t in received for t in op.outputs]
            if any(in_bits) and any(wanted):
                inner[index] = self.recorder.inside(op.type, in_bits, wanted)
        out: list[tuple[Any, CutPoint]] = []
        for cut in sorted(cuts, key=lambda c: c.op):
            explained = 0
            for found, _ in inner.get(cut.op, ()):
                explained |= found.variables & cut.variables
            if cut.variables & ~explained:
                point = flow.with_later(self.locate(cut.op, cut.kind),
                                        [self.locate(i, cut.kind) for i in cut.later])  # fmt: skip
                out.append((dataclasses.replace(cut, variables=cut.variables & ~explained), point))
        for index in sorted(inner):
            out += inner[index]
        return out

    def came_back(self, start: int, created: dict[int, frames.Site | None]
                  ) -> Callable[[int], str | None]:  # fmt: skip
        """Which op's value came back as a constant the targets read: the constants the
        program made from floating numpy values after op ``start``, on the targets' paths,
        compared with the output of op ``k`` made before them (``analyse.dead_end_notes``).
        Op index -> the line that made the constant holding its value, or None."""
        import numpy as np

        from gradscope._src.watcher.analyse import reaching

        reach = reaching(self.problem)
        back = []
        for t, flow_id in self.tensors.items():
            at, value = self.recorder.constants.get(t, ((0, 0), None))
            op = self.producer[flow_id]
            if value is None or at <= (start, 0) or self.ops[op].inputs or not reach[op]:
                continue
            back.append((at, value, sites.text(created.get(t))))

        def line(k: int) -> str | None:
            for t in self.ops[k].outputs:
                mine = self.objects[t]
                if mine is None:
                    continue
                for at, value, where in back:
                    if at > (self.seqs[k], 0) and _same(mine, value, np):
                        return where
            return None

        return line

    def used(self, asked: dict[int, None]) -> Callable[[int], bool]:
        """Whether the program used flow tensor ``t`` outside TensorFlow's ops: took its value
        out (printed it) or asked a gradient of it (``asked``, eager ids)."""
        flow_ids = {f for t, f in self.tensors.items() if t in asked or t in self.recorder.left}
        return flow_ids.__contains__

    def left(self, start: int, targets: Sequence[int | None]) -> dict[int, tuple[str, str]]:
        """Tensors the program took out of TensorFlow (``.numpy()``, ``float()``) that may
        have cut a path to ``targets``: made after op ``start`` (a value read before the tape
        started, a ``get_weights()``, is no cut) and read before the targets were made (what
        came back from a later read cannot feed them; a target made from numpy, by
        ``convert_to_tensor``, was made when that constant was). Flow tensor id -> the line
        that read it and how."""
        made = {t: (r.seq, 0) for r in self.records for t in r.outputs}
        constants = {t: at for t, (at, _) in self.recorder.constants.items()}
        end = max((made.get(t, constants.get(t, (0, 0))) for t in targets if t is not None),
                  default=(0, 0))  # fmt: skip
        return {self.tensors[t]: (sites.text(site), how)
                for t, (site, at, how) in self.recorder.left.items()
                if t in self.tensors and made.get(t, (0, 0)) > (start, 0) and at < end}  # fmt: skip
