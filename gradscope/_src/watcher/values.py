"""The numbers of one execution: the target's value and each gradient's norm and largest element.

Eager gradients and ``Session.run`` results are measured in numpy. Inside a ``tf.function``
the measuring ops sit in a ``tf.cond`` on a flag the watcher clears after ``--steps``
executions, so later steps run none of them; the numbers leave through one ``py_function``.

Inside an XLA-compiled function (``jit_compile``) there is no ``tf.cond``: its operands must
be whole buffers, so XLA would store each gradient it otherwise computes inside the fusion
that reads it (the optimizer's update), and the CPU code of that fusion would change: with
the gradient in a register, LLVM contracts its multiply and the update's subtract into one
fused multiply-add (``vfmsub``), rounded once; stored, they are rounded twice, and an Adam
moment differs in its last bit. Unconditional reductions are fusions of their own that XLA
computes the gradient into a second time, leaving the program's fusions as they were; they
run on every step and the flag only chooses whether the mailbox is written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gradscope._src.watcher import reads

#: (value, per gradient (norm, largest |g|) or None where there is none, loss scale or None);
#: with a loss scale, the value and the gradients are divided by it (unscaled).
Numbers = tuple[float | None, list[tuple[float, float] | None], float | None]


#: A multiplier with more elements than this is not read (its values are not kept).
MULTIPLIER_ELEMENTS = 1 << 20
#: Distinct values of a multiplier kept (a few say "per element"; its sign is what matters).
MULTIPLIER_VALUES = 8


def multiplier(given: Any) -> tuple[float, ...]:
    """The distinct values of a call's ``output_gradients`` (``grad_ys``), sorted; ``()``
    when none was given or its values are not known (a tensor a traced function computes:
    only a constant is read), or it is too large to read.

    Example:
        >>> multiplier(-1.0), multiplier(None), multiplier([[1.0, 2.0, 1.0]])
        ((-1.0,), (), (1.0, 2.0))
    """
    if given is None:
        return ()
    import tensorflow as tf

    found: set[float] = set()
    for part in tf.nest.flatten(given):
        if part is None:
            continue
        value = tf.get_static_value(part) if tf.is_tensor(part) else np.asarray(part)
        if value is None or np.size(value) > MULTIPLIER_ELEMENTS:
            return ()
        found.update(float(v) for v in np.unique(np.asarray(value, dtype=np.float64)))
    ordered = sorted(found)
    if len(ordered) > MULTIPLIER_VALUES:
        ordered = [*ordered[: MULTIPLIER_VALUES // 2], *ordered[-MULTIPLIER_VALUES // 2 :]]
    return tuple(ordered)


def dense(grad: Any) -> Any:
    """A numpy gradient, with ``IndexedSlices`` rows summed as densifying would."""
    values = getattr(grad, "values", None)
    indices = getattr(grad, "indices", None)
    if values is not None and indices is not None:
        values, indices = np.asarray(values), np.asarray(indices)
        unique, inverse = np.unique(indices, return_inverse=True)
        out = np.zeros((len(unique), *values.shape[1:]), dtype=np.float64)
        np.add.at(out, inverse, values)
        return out
    if hasattr(grad, "numpy"):
        grad = grad.numpy()
    return np.asarray(grad)


def stats(grad: Any, scale: float = 1.0) -> tuple[float, float]:
    """``(L2 norm, largest |g|)`` of one gradient, divided by ``scale`` (a loss scale)."""
    g = dense(grad)
    if g.dtype.kind == "c":
        g = np.abs(g)
    g = g.astype(np.float64) / scale
    if g.size == 0:
        return 0.0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.sum(np.square(g)))), float(np.max(np.abs(g)))


def total(value: Any) -> float | None:
    """A target's value, summed as a loss is."""
    try:
        array = dense(value)
        return float(np.sum(np.real(array).astype(np.float64)))
    except (TypeError, ValueError):
        return None


def of_arrays(values: Sequence[Any], grads: Sequence[Any], scale: float | None = None) -> Numbers:
    """The numbers of arrays (eager tensors, ``Session.run`` results): the targets' summed
    value, each gradient's stats, both divided by ``scale`` when given (a loss scale)."""
    parts = [total(v) for v in values]
    value = None if not parts or None in parts else sum(p for p in parts if p is not None)
    by = scale or 1.0
    if value is not None:
        value /= by
    return value, [None if g is None else stats(g, by) for g in grads], scale


def in_graph(
    flag: Any,
    targets: Sequence[Any],
    grads: Sequence[Any],
    sink: Callable[[Numbers, list[tuple[Any, Any]] | None], None],
    scale: Any = None,
    weights: Sequence[Any] | None = None,
    raw: bool = False,
    box: Any = None,
    origin: Any = None,
    program: Any = None,
) -> None:
    """Add, inside the function being traced, the ops that hand one execution's numbers to
    ``sink`` while ``flag`` (a boolean variable) holds.

    Args:
        flag: a boolean ``tf.Variable``; False skips every op added here (None: always run).
        target: the target tensor.
        grads: the gradients, None where there is none.
        sink: called with the numbers of each watched execution.
        scale: a loss scale (a variable, a tensor or a number) dividing the target and
            every gradient; it is delivered with the numbers.
        weights: per gradient, the value of its source (a tensor, or None): with them the
            sink also gets, per gradient, ``(Summary of the gradient, Summary of the value)``
            for the timeline (two more reductions each: a count of zeros, a square sum).
        raw: with ``weights``, the gradients' elements also leave the function (dense,
            float64, unscaled), kept in their ``Summary`` for TensorBoard histograms (not
            under XLA: a ``box`` carries scalars only).
        box: an ``xla.Mailbox`` the numbers are written to instead of a ``py_function``
            (which XLA cannot compile); they reach ``sink`` when it is read after the call.
            The ops then run on every execution, outside any ``tf.cond``, and ``flag``
            chooses whether they are written (the module docstring says why).
        origin: an ``origin.InGraph`` (not with a ``box``): it is handed its tensors'
            values, before the sink its numbers, when a gradient's norm or largest element
            is non-finite (``_origin_values`` says how they leave the function).
        program: the program's ops (a ``reads.Program``): the measuring branch reads its
            tensors as ``reads.branch`` says, so that Grappler optimizes the program's ops
            as it would unwatched (None: read as they are).
    """
    import tensorflow as tf

    present = [i for i, g in enumerate(grads) if g is not None]

    raw = raw and box is None  # a box (XLA) carries scalars only
    extra = list(origin.tensors) if origin is not None and box is None else []
    marks: list[Any] = [None] * len(extra)  # what the origin keeps of this execution's values
    grouped = bool(extra) and flag is not None  # marked in groups as they are made

    def measure() -> Any:
        # what the py_function waits for: the origin's marks taken (``_origin_marks``)
        before = [_origin_marks(tf, extra, origin.mark, marks)] if grouped else []
        by = tf.constant(1.0, tf.float64) if scale is None else tf.cast(scale, tf.float64)
        sums = [tf.reduce_sum(tf.cast(tf.math.real(t), tf.float64)) for t in targets]
        scalars = [tf.add_n(sums) / by, by]
        if box is None:
            measured = _each(tf, [grads[i] for i in present], by if scale is not None else None)
        else:  # XLA: the float64 ops that leave the program's fusions as they were
            flat, axis = tf.constant([-1]), tf.constant([0])  # shared by every gradient's ops
            measured = [_norm_largest(tf, _float64(tf, grads[i], scale, by), flat, axis)
                        for i in present]  # fmt: skip
        scalars += [x for pair in measured for x in pair]
        if weights is not None:
            scalars += _summaries(tf, grads, weights) + (_elements(tf, grads, by) if raw else [])
        scaled = scale is not None
        count = len(scalars)

        def deliver(xs: Sequence[Any]) -> None:
            if extra and not all(math.isfinite(float(x)) for x in xs[2 : 2 + 2 * len(present)]):
                found = marks if before else [origin.mark(i, x) for i, x in enumerate(xs[count:])]
                origin.deliver(found)  # before the numbers: their record reads it
            _deliver(sink, present, grads, xs[:count], scaled, weights)

        if box is not None:
            box.write(scalars, deliver, flag)
        else:  # the marks (an int) are an input: only this op waits for them to be taken
            given = scalars + (extra if not before else [])
            tf.py_function(lambda *xs: deliver(xs[: len(given)]), given + before, Tout=[])
        return tf.constant(0)

    if box is not None:  # XLA: never a cond around the program's values
        measure()
    else:  # lowered to Switch/Merge (``_each`` says why)
        tf.cond(_on(tf, flag), reads.branch(program, measure), lambda: tf.constant(0))


def _on(tf: Any, flag: Any) -> Any:
    """What the measuring ``tf.cond`` sits on: ``flag``; without one (the pool is used up),
    a predicate Grappler cannot fold (a constant one would take the cond away, and the
    branch's copies of the program's ops would be merged back into them: ``reads.py``)."""
    return flag if flag is not None else tf.timestamp() >= 0.0


#: The origin's tensors leave a watched step in this many groups at most (``_origin_marks``).
GROUPS = 8


def _origin_marks(tf: Any, tensors: Sequence[Any], mark: Callable[[int, Any], Any],
                  marks: list[Any]) -> Any:  # fmt: skip
    """Inside the measuring ``tf.cond``'s branch, the ops handing ``tensors`` (the NaN
    origin's gradients of every tensor on the paths: thousands on a ResNet) to ``mark``,
    keeping each one's mark at its index in ``marks``; their output, for the ``py_function``
    delivering the numbers to wait on.

    The branch is lowered to a Switch per value it reads (``_each`` says why): one op taking
    them all, as a call would, holds each until the last is computed, in every step,
    measured or not (the whole backward pass's gradients at once: a small CNN's unmeasured
    steps took ~10% more CPU). A Switch hands each on, or drops it, as soon as it is made.
    The marks share the measuring cond, not a cond of their own: a value crossing into a
    lowered cond costs the step's graph a Switch and two Identity nodes, and the call's own
    gradients, read by both, crossed twice (a 4-step ResNet50 fit's graph: ~1,000 nodes
    more for Grappler to optimise on the first call). In a measured step the tensors are
    marked in ``GROUPS`` ``py_function`` calls, in the order they are made, so each group's
    are freed once its last is made and marked, not all kept to the end of the backward pass.
    """
    order = sorted(range(len(tensors)), key=lambda i: tensors[i].op._id)
    size = -(-len(order) // GROUPS)
    groups = [order[k : k + size] for k in range(0, len(order), size)]

    def take(indices: list[int]) -> Callable[..., int]:
        def marked(*xs: Any) -> int:
            for i, x in zip(indices, xs, strict=True):
                marks[i] = mark(i, x)
            return 0

        return marked

    done = [tf.py_function(take(g), [tensors[i] for i in g], Tout=tf.int32) for g in groups]
    return tf.add_n(done)


def _each(tf: Any, grads: Sequence[Any], by: Any = None) -> list[list[Any]]:
    """Per gradient, ``[L2 norm, largest |g|]`` as float64 scalars, divided by ``by`` (a loss
    scale) when given; a gradient with no element has 0 for both.

    The measuring ``tf.cond`` is lowered to a Switch per value it reads (as ``_origin_marks``
    is), not kept a function call: one call op takes every gradient, so it holds each to the
    end of the backward pass, and its float64 copies were alive at once (a 4-step ResNet50
    fit's peak: 1,786 MB against plain Python's 1,603; lowered, 1,723 against 1,585).
    Lowered, each gradient is measured, and freed, as soon as it is made; the gradients are
    measured one after another, in the order they are made, so one float64 copy at most is
    alive. The largest element is found in the gradient's own dtype (a cast to float64 and a
    division by a positive number keep the order of values: the same number), then the norm
    of a float64 copy (a float32 square overflows from 1.9e19) by one op that keeps no
    squares. In a step not measured the Switches hand on nothing and no measuring op runs;
    the ops join the step's graph, made ready with it (its first run is measured: a call's
    branch is made ready then too; a 4-step ResNet50 fit watched, alternating: 68.7 and
    74.5 s CPU as a call, 71.7 and 71.1 s lowered).
    """
    flat, axis = tf.constant([-1]), tf.constant([0])  # shared by every gradient's ops
    out: list[list[Any]] = [[]] * len(grads)
    after: list[Any] = []  # the last gradient's norm: the next gradient's work waits for it
    for k in sorted(range(len(grads)), key=lambda k: _made(grads[k])):
        g = grads[k]
        with tf.control_dependencies(after):
            if isinstance(g, tf.IndexedSlices):  # rows summed as densifying would
                g = tf.math.unsorted_segment_sum(g.values, *_segments(tf, g.indices))
            size = g.shape.num_elements()
            g = tf.reshape(g, flat)
            modulus = tf.abs(g)  # complex: as float
            if size is None or size == 0:  # the largest of no element is 0, not the lowest
                modulus = tf.concat([modulus, tf.zeros([1], modulus.dtype)], 0)
            largest = tf.cast(tf.reduce_max(modulus, axis), tf.float64)
        with tf.control_dependencies([largest]):  # that |g| freed before the float64 copy
            x = tf.cast(tf.abs(g) if g.dtype.is_complex else g, tf.float64)
        if by is not None:
            x, largest = x / by, largest / by
        after = [tf.math.reduce_euclidean_norm(x, axis)]
        out[k] = [after[0], largest]
    return out


def _made(grad: Any) -> int:
    """When a gradient is made in its graph (its op's id), for ordering."""
    return int(getattr(getattr(grad, "values", grad).op, "_id", 0))


def _float64(tf: Any, g: Any, scale: Any, by: Any) -> Any:
    """A gradient dense (rows summed), as float64 (complex: its modulus), divided by ``by``
    when there is a ``scale``."""
    if isinstance(g, tf.IndexedSlices):
        g = tf.math.unsorted_segment_sum(g.values, *_segments(tf, g.indices))
    g = tf.cast(tf.abs(g) if g.dtype.is_complex else g, tf.float64)
    return g if scale is None else g / by  # dividing by 1.0 changes no value: no op for it


def _norm_largest(tf: Any, g: Any, flat: Any, axis: Any) -> list[Any]:
    """``[L2 norm, largest |g|]`` of a float64 gradient, in few ops (each op a trace adds
    costs the trace more than it costs the step): ``flat`` and ``axis`` are the constants
    ``[-1]`` and ``[0]``, made once. A gradient with no element has 0 for both."""
    x = tf.reshape(g, flat)
    norm = tf.sqrt(tf.reduce_sum(tf.square(x), axis))
    size = g.shape.num_elements()
    if size is None or size == 0:  # the largest of no element is 0, not the lowest float
        x = tf.concat([x, tf.zeros([1], x.dtype)], 0)
    return [norm, tf.reduce_max(tf.abs(x), axis)]


def in_graph_replicas(
    flag: Any,
    parts: Sequence[tuple[Sequence[Any], Sequence[Any]]],
    sink: Callable[[Numbers, list[Numbers], list[tuple[Any, Any]] | None], None],
    scale: Any = None,
    weights: Sequence[Any] | None = None,
    raw: bool = False,
    box: Any = None,
    program: Any = None,
) -> None:
    """``in_graph`` for one call made once per replica inside ``strategy.run``: ``parts`` holds
    each replica's ``(targets, gradients)``, in replica order. ``sink`` gets the numbers of
    the all-reduced gradient (each source's sum over the replicas, what ``apply_gradients``
    uses; the value is the sum of the replicas' values), every replica's, and with
    ``weights`` the timeline's summaries of the all-reduced gradient (as ``in_graph``). The
    sums are made inside the measuring branch: outside it they would be more readers of
    every replica's gradients, in every step."""
    import tensorflow as tf

    count = len(parts[0][1])
    raw = raw and box is None  # a box (XLA) carries scalars only

    def measure() -> Any:
        summed = [_sum(tf, [grads[i] for _, grads in parts]) for i in range(count)]
        rows = [*parts, ([t for targets, _ in parts for t in targets], summed)]
        by = tf.constant(1.0, tf.float64) if scale is None else tf.cast(scale, tf.float64)
        scalars = [by]
        none = [tf.constant(-1.0, tf.float64)] * 2
        unscale = by if scale is not None else None  # dividing by 1.0 changes no value
        for targets, grads in rows:
            sums = [tf.reduce_sum(tf.cast(tf.math.real(t), tf.float64)) for t in targets]
            scalars.append(tf.add_n(sums) / by)
            given = [g for g in grads if g is not None]
            if box is None:
                measured = iter(_each(tf, given, unscale))
            else:  # XLA (``in_graph``)
                measured = iter([_stat(tf, g, by) for g in given])
            scalars += [x for g in grads for x in (none if g is None else next(measured))]
        if weights is not None:
            scalars += _summaries(tf, summed, weights) + (_elements(tf, summed, by) if raw else [])

        def deliver(xs: Sequence[Any]) -> None:
            _deliver_rows(sink, rows, xs, scale is not None, weights)

        if box is not None:  # XLA (``in_graph``)
            box.write(scalars, deliver, flag)
        else:
            tf.py_function(lambda *xs: deliver(xs), scalars, Tout=[])
        return tf.constant(0)

    if box is not None:  # XLA: no cond (``in_graph``)
        measure()
    else:  # lowered (``_each``)
        tf.cond(_on(tf, flag), reads.branch(program, measure), lambda: tf.constant(0))


def _sum(tf: Any, grads: Sequence[Any]) -> Any:
    """The replicas' gradients of one source added up (None where no replica has one):
    ``IndexedSlices`` stay row lists, as TensorFlow all-reduces them."""
    present = [g for g in grads if g is not None]
    if not present:
        return None
    if all(isinstance(g, tf.IndexedSlices) for g in present):
        return tf.IndexedSlices(tf.concat([g.values for g in present], 0),
                                tf.concat([g.indices for g in present], 0),
                                present[0].dense_shape)  # fmt: skip
    return tf.add_n([tf.convert_to_tensor(g) for g in present])


def _stat(tf: Any, g: Any, by: Any) -> list[Any]:
    """``[norm, largest |g|]`` of one gradient divided by ``by``, in float64."""
    if isinstance(g, tf.IndexedSlices):
        g = tf.math.unsorted_segment_sum(g.values, *_segments(tf, g.indices))
    g = tf.cast(tf.abs(g) if g.dtype.is_complex else g, tf.float64) / by
    return [tf.norm(tf.reshape(g, [-1])), _largest(tf, g)]


def _deliver_rows(sink: Callable[[Numbers, list[Numbers], list[tuple[Any, Any]] | None], None],
                  rows: Sequence[tuple[Sequence[Any], Sequence[Any]]], xs: Sequence[Any],
                  scaled: bool, weights: Sequence[Any] | None) -> None:  # fmt: skip
    scale = float(xs[0]) if scaled else None
    at, out = 1, list[Numbers]()
    for _, grads in rows:
        value, at = float(xs[at]), at + 1
        stats: list[tuple[float, float] | None] = []
        for g in grads:
            stats.append(None if g is None else (float(xs[at]), float(xs[at + 1])))
            at += 2
        out.append((value, stats, scale))
    summed = rows[-1][1]
    arrays = None if weights is None else _arrays(summed, weights, out[-1][1], xs[at:])
    sink(out[-1], out[:-1], arrays)


def summed(grads: Sequence[Any]) -> Any:
    """Eager gradients of one source from every replica, added up as numpy (None: no
    replica has one); ``IndexedSlices`` rows are summed as densifying would."""
    present = [g for g in grads if g is not None]
    if not present:
        return None
    if all(hasattr(g, "indices") for g in present):
        indices = np.concatenate([np.asarray(g.indices) for g in present])
        rows = np.concatenate([np.asarray(g.values) for g in present])
        return dense(_Rows(rows, indices))
    return sum(_full(g) for g in present)


def _full(grad: Any) -> Any:
    """A gradient as a full dense numpy array (``IndexedSlices`` scattered into its shape)."""
    if not hasattr(grad, "indices"):
        return np.asarray(dense(grad))
    values = np.asarray(grad.values)
    out = np.zeros(tuple(np.asarray(grad.dense_shape)), dtype=values.dtype)
    np.add.at(out, np.asarray(grad.indices), values)
    return out


class _Rows:
    """Rows and their indices, read by ``dense`` as it reads ``IndexedSlices``."""

    def __init__(self, values: Any, indices: Any) -> None:
        self.values, self.indices = values, indices


def _segments(tf: Any, indices: Any) -> tuple[Any, Any]:
    unique, index = tf.unique(indices)
    return index, tf.shape(unique)[0]


def _largest(tf: Any, g: Any) -> Any:
    flat = tf.reshape(tf.abs(g), [-1])
    return tf.reduce_max(tf.concat([flat, tf.zeros([1], flat.dtype)], 0))


def _summaries(tf: Any, grads: Sequence[Any], weights: Sequence[Any]) -> list[Any]:
    """Per gradient, its count of nonzero elements (0 when there is none) and the square
    sum of its source's value (-1 when unknown), as float64 scalars."""
    out = []
    for g, w in zip(grads, weights, strict=True):
        if isinstance(g, tf.IndexedSlices):  # rows summed as densifying would
            g = tf.math.unsorted_segment_sum(g.values, *_segments(tf, g.indices))
        if g is None:
            out.append(tf.constant(0.0, tf.float64))
        else:
            out.append(tf.cast(tf.math.count_nonzero(g, dtype=tf.int64), tf.float64))
        if w is None or not (w.dtype.is_floating or w.dtype.is_complex):
            out.append(tf.constant(-1.0, tf.float64))
        else:
            w64 = tf.cast(tf.abs(w) if w.dtype.is_complex else w, tf.float64)
            out.append(tf.reduce_sum(tf.square(w64)))
    return out


def _elements(tf: Any, grads: Sequence[Any], by: Any) -> list[Any]:
    """Each gradient there is, dense (``IndexedSlices`` scattered into their shape, as
    ``tf.convert_to_tensor`` does), in float64 and divided by ``by`` (the loss scale)."""
    out = []
    for g in grads:
        if g is not None:
            g = tf.convert_to_tensor(g)
            out.append(tf.cast(tf.abs(g) if g.dtype.is_complex else g, tf.float64) / by)
    return out


def _shape(tensor: Any) -> tuple[int, ...] | None:
    dims = getattr(getattr(tensor, "shape", None), "as_list", lambda: None)()
    return None if dims is None or None in dims else tuple(int(d) for d in dims)


def _deliver(sink: Callable[[Numbers, list[tuple[Any, Any]] | None], None], present: list[int],
             grads: Sequence[Any], xs: Sequence[Any], scaled: bool,
             weights: Sequence[Any] | None) -> None:  # fmt: skip
    numbers: list[tuple[float, float] | None] = [None] * len(grads)
    for k, i in enumerate(present):
        numbers[i] = (float(xs[2 + 2 * k]), float(xs[3 + 2 * k]))
    arrays = None
    if weights is not None:
        arrays = _arrays(grads, weights, numbers, xs[2 + 2 * len(present) :])
    sink((float(xs[0]), numbers, float(xs[1]) if scaled else None), arrays)


def _arrays(grads: Sequence[Any], weights: Sequence[Any],
            numbers: list[tuple[float, float] | None],
            extra: Sequence[Any]) -> list[tuple[Any, Any]]:  # fmt: skip
    """The timeline's ``(gradient, value)`` per source, as ``Summary`` objects."""
    from gradscope._src.results.summary import Summary

    out: list[tuple[Any, Any]] = []
    kept = iter(extra[2 * len(grads) :])  # the gradients' elements, when ``raw``
    for i, (g, w) in enumerate(zip(grads, weights, strict=True)):
        nonzero, square = float(extra[2 * i]), float(extra[2 * i + 1])
        shape = _shape(w) or _shape(g) or ()
        value = Summary(square, 0, shape) if square >= 0 else None
        measured = numbers[i]
        elements = None if g is None else next(kept, None)
        if g is None or measured is None:
            out.append((None, value))
            continue
        zeros = max(0, math.prod(shape) - int(nonzero))
        sparse = hasattr(g, "indices")
        elements = None if elements is None else elements.numpy()
        out.append((Summary(measured[0] ** 2, zeros, shape, sparse, elements), value))
    return out
