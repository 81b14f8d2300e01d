"""The ops a due step of the Keras ``Monitor`` builds: gradients and weights reduced to a few
float64 numbers per variable, and the variables that hold them (a copy per replica)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def local_variable(shape: Any, dtype: Any, name: str, value: Any = 0) -> tf.Variable:
    """A variable filled with ``value`` (zeros) outside the model that each replica writes its
    own copy of (under a ``tf.distribute`` strategy; a plain variable without one), made
    eagerly."""
    with tf.init_scope():
        initial = tf.fill(shape, tf.constant(value, dtype))
        if tf.distribute.get_strategy().num_replicas_in_sync == 1:
            return tf.Variable(initial, trainable=False, name=name)
        return tf.Variable(
            initial,
            trainable=False,
            name=name,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.NONE,
        )


def due(step: Any, every: int) -> Any:
    """Whether the Monitor records ``step`` (a tensor, from 1): the first step and every
    ``every``-th, as ``gradscope run --every`` does."""
    return tf.logical_or(tf.equal(step % every, 0), tf.equal(step, 1))


def copies(model: Any, variable: tf.Variable) -> list[Any]:
    """The replicas' copies of a variable made by :func:`local_variable`, replica 0 first."""
    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    return list(strategy.experimental_local_results(variable))


def dense(value: Any) -> Any:
    """A gradient (``IndexedSlices`` made dense) or a variable's value, as a tensor (one
    read, no copy: a Keras variable is read through its ``tf.Variable``)."""
    variable = getattr(value, "value", None)  # a Keras variable: its tf.Variable
    return tf.convert_to_tensor(variable if isinstance(variable, tf.Variable) else value)


def wide(value: Any) -> Any:
    """:func:`dense`, in float64."""
    tensor = dense(value)
    return tensor if tensor.dtype == tf.float64 else tf.cast(tensor, tf.float64)


# A due step reduces small tensors of one shape together: stacking copies them (on due steps
# only), which costs less than the ops reducing each alone would cost to trace for tensors
# of up to SMALL elements; a stack holds at most STACK_ELEMENTS.
SMALL, STACK_ELEMENTS = 1 << 14, 1 << 20


def summarize(tensors: list[Any], weights: list[Any] | None = None) -> Any:
    """``[sum of squares, zero elements]`` in float64 per tensor, shape [len(tensors), 2]; a
    None (no gradient) gives zeros: the reader knows which those are. With ``weights`` (as
    many: variables or tensors, None allowed), a third column: each one's sum of squares.

    Tracing a graph and making it ready cost by the op, once a fit, so small tensors of one
    shape and dtype (biases, normalization scales) are reduced together: stacked, and each
    one's norm and zeros found along all but the first axis, a few ops a stack rather than a
    few a tensor. A large tensor is reduced alone: copying it into a stack would cost more,
    on every due step, than its ops cost once. A 24-layer MLP's recording: 380 ops, 540 when
    each tensor was reduced alone (its first step ~0.1 s shorter; bench/RESULTS.md)."""
    weights = weights if weights is not None else []
    slots = [(0, i, dense(t)) for i, t in enumerate(tensors) if t is not None]
    slots += [(1, i, dense(w)) for i, w in enumerate(weights) if w is not None]
    # Zeros are counted in int32 (half the bytes of int64: counting is a due step's largest
    # cost), unless a tensor has 2**31 elements or more.
    sized = [d.shape.num_elements() for kind, _, d in slots if kind == 0]
    count_type = tf.int64 if any(k is None or k >= 2**31 for k in sized) else tf.int32
    shared = _Shared()
    norms, zeros = _Pieces(double=True), _Pieces()  # square sums; gradients' zero counts
    places = []  # per stack: its slots, where its norms and zero counts are
    for stack in _stacks(slots):
        values = [d for _, _, d in stack]
        whole = values[0] if len(values) == 1 else tf.stack(values)
        axes = shared.axes(whole.shape.rank, 1 if len(values) > 1 else 0)
        wide = whole if whole.dtype == tf.float64 else tf.cast(whole, tf.float64)
        if len(values) == 1:  # l2_loss: sum(x**2)/2 in one pass, without a squared copy
            norm = norms.add(tf.nn.l2_loss(wide))
        else:
            norm = norms.add(tf.reduce_sum(tf.square(wide), axes))
        counted = None
        if stack[0][0] == 0:  # a gradients' stack (weights' zeros are not recorded)
            found = tf.equal(whole, shared.zero(whole.dtype))
            counted = zeros.add(tf.reduce_sum(tf.cast(found, count_type), axes))
        places.append((stack, norm, counted))
    at: dict[tuple[int, int], tuple[int, int]] = {}  # (kind, i) -> (norm, zero count) index
    for stack, norm, counted in places:
        for row, (kind, i, _) in enumerate(stack):
            zero = zeros.first(counted) + row if counted is not None else -1
            at[(kind, i)] = (norms.first(norm) + row, zero)
    squares = norms.joined(tf.float64)
    # one vector: the square sums, the zero counts, a 0 for what is missing
    vector = [squares]
    if zeros.size:
        vector.append(tf.cast(zeros.joined(count_type), tf.float64))
    vector.append(tf.zeros([1], tf.float64))
    missing = norms.size + zeros.size
    index: list[list[int]] = []
    for i in range(max(len(tensors), len(weights))):
        square_at, zero_at = at.get((0, i), (missing, -1))
        entry = [square_at, norms.size + zero_at if zero_at >= 0 else missing]
        if weights:
            entry.append(at.get((1, i), (missing, -1))[0])
        index.append(entry)
    return tf.gather(tf.concat(vector, 0), tf.constant(index, tf.int32))


class _Shared:
    """The constants a due step's reductions share: one zero a dtype, one list of axes a
    rank (each op traced costs, constants too)."""

    def __init__(self) -> None:
        self._zeros: dict[Any, Any] = {}
        self._axes: dict[Any, Any] = {}

    def zero(self, dtype: Any) -> Any:
        if dtype not in self._zeros:
            self._zeros[dtype] = tf.constant(0, dtype)
        return self._zeros[dtype]

    def axes(self, rank: int | None, first: int) -> Any:
        """The axes from ``first`` on (a stack's: after its own first); None for an unknown
        rank (every axis, found when it runs)."""
        if rank is None:
            return None
        if (rank, first) not in self._axes:
            self._axes[(rank, first)] = tf.constant(list(range(first, rank)), tf.int32)
        return self._axes[(rank, first)]


class _Pieces:
    """Reductions joined into one vector: the stacks' vectors in order, then the lone
    tensors' scalars, stacked by one op (``double``: and doubled by one, ``l2_loss``'s halves)."""

    def __init__(self, double: bool = False) -> None:
        self.double = double
        self.vectors: list[Any] = []
        self.scalars: list[Any] = []

    def add(self, value: Any) -> tuple[bool, int]:
        """A stack's vector or a lone tensor's scalar; where it is, for :meth:`first`."""
        kept = self.scalars if value.shape.rank == 0 else self.vectors
        kept.append(value)
        return kept is self.scalars, len(kept) - 1

    @property
    def size(self) -> int:
        return _length(self.vectors) + len(self.scalars)

    def first(self, place: tuple[bool, int]) -> int:
        """The index in :meth:`joined` of a value's first element."""
        scalar, k = place
        return _length(self.vectors) + k if scalar else _length(self.vectors[:k])

    def joined(self, dtype: Any) -> Any:
        parts = [*self.vectors]
        if self.scalars:
            scalars = tf.stack(self.scalars)
            parts.append(2.0 * scalars if self.double else scalars)
        if not parts:
            return tf.zeros([0], dtype)
        return parts[0] if len(parts) == 1 else tf.concat(parts, 0)


def _length(vectors: list[Any]) -> int:
    return sum(int(v.shape[0]) for v in vectors)


def _stacks(slots: list[tuple[int, int, Any]]) -> list[list[tuple[int, int, Any]]]:
    """``slots`` in stacks of one kind (gradients, weights), shape and dtype, at most
    :data:`STACK_ELEMENTS` elements a stack; a tensor of more than :data:`SMALL` elements,
    or of unknown shape, alone."""
    groups: dict[Any, list[tuple[int, int, Any]]] = {}
    for slot in slots:
        d = slot[2]
        key: Any = (slot[0], slot[1])  # a large tensor, or one of unknown shape: alone
        size = d.shape.num_elements()
        if size is not None and size <= SMALL:  # gradients and weights apart: zeros of the first
            key = (slot[0], tuple(d.shape.as_list()), d.dtype)
        groups.setdefault(key, []).append(slot)
    stacks = []
    for group in groups.values():
        per = max(STACK_ELEMENTS // max(group[0][2].shape.num_elements() or 1, 1), 1)
        stacks += [group[k : k + per] for k in range(0, len(group), per)]
    return stacks


def dots(a: list[Any], b: list[Any]) -> Any:
    """Per variable, the dot product of two losses' float64 gradients (0 where one is None)."""
    zero = tf.constant(0.0, tf.float64)
    return tf.stack([zero if x is None or y is None else tf.reduce_sum(x * y)
                     for x, y in zip(a, b, strict=True)])  # fmt: skip
