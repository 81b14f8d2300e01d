"""The JAX analysis core (``engine/jax``): None-ness and cut points read off a jaxpr.

Two references, neither of them gradscope's: JAX's own forward-mode AD, whose symbolic zeros
say which inputs' tangents never reach the output (the JVP's jaxpr, pruned by JAX's own dead
code elimination, reads no tangent of such an input); and, for the primitives TensorFlow
also has, bare TensorFlow's ``None`` for the same function written with ``tf`` ops. The cut
points must name the op and the line of this file that made it.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="JAX is not installed: pip install '.[jax]' (make demo installs it)",
)

HERE = str(Path(__file__).resolve())


def _line(fn: Callable[..., Any], text: str) -> str:
    """``test_jax_jaxpr.py:N`` of the line of ``fn`` holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    index = next(i for i, line in enumerate(lines) if text in line)
    return f"{Path(HERE).name}:{first + index}"


def _analysed(fn: Callable[..., Any], *args: Any) -> Any:
    import jax

    from gradscope._src.engine.jax.analysis import analyse
    from gradscope._src.frontends.python.jax_lines import locate

    closed = jax.make_jaxpr(fn)(*args)
    n = len(jax.tree_util.tree_leaves(args))
    return analyse(closed, list(range(n)), [0], locate)


def _jax_none(fn: Callable[..., Any], *args: Any) -> list[bool]:
    """Per input leaf: whether JAX's own JVP gives the output a symbolically zero tangent
    from it (its tangent is not read once JAX drops dead code)."""
    import jax
    from jax._src.interpreters import partial_eval as pe

    flat, tree = jax.tree_util.tree_flatten(args)

    def tangent_out(*tangents: Any) -> Any:
        primals = jax.tree_util.tree_unflatten(tree, flat)
        ts = jax.tree_util.tree_unflatten(tree, list(tangents))
        return jax.jvp(fn, tuple(primals), tuple(ts))[1]

    closed = jax.make_jaxpr(tangent_out)(*flat)
    _, used = pe.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    return [not u for u in used]


def _cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    x = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)
    w = jnp.ones((3, 2)) * 0.5
    v = jnp.ones((2,)) * 0.3

    def stopped(w: Any, v: Any) -> Any:
        h = x @ w
        return jnp.sum(lax.stop_gradient(h) * v)

    def argmax(w: Any, v: Any) -> Any:
        picked = jnp.argmax(x @ w, axis=-1).astype(jnp.float32)
        return jnp.sum(picked * v)

    def rounded(w: Any, v: Any) -> Any:
        return jnp.sum(jnp.round(x @ w) * v)

    def floored_sign(w: Any, v: Any) -> Any:
        return jnp.sum(jnp.floor(x @ w) + jnp.sign(v))

    def cast(w: Any, v: Any) -> Any:
        counts = (x @ w * 10).astype(jnp.int32)
        return jnp.sum(counts.astype(jnp.float32) * v)

    def compared(w: Any, v: Any) -> Any:
        mask = (x @ w > 0).astype(jnp.float32)
        return jnp.sum(mask * v)

    def straight_through(w: Any, v: Any) -> Any:
        h = x @ w
        return jnp.sum((h + lax.stop_gradient(jnp.round(h) - h)) * v)

    def unused(w: Any, v: Any) -> Any:
        return jnp.sum(x * 2.0)

    def branches(w: Any, v: Any) -> Any:
        h = x @ w
        y = lax.cond(jnp.sum(x) > 0, lambda h: h * v, lambda h: lax.stop_gradient(h), h)
        return jnp.sum(y)

    def scanned(w: Any, v: Any) -> Any:
        def body(c: Any, row: Any) -> Any:
            return c * v + row @ w, jnp.sum(c)

        c, ys = lax.scan(body, jnp.zeros(2), x)
        return jnp.sum(c) + jnp.sum(ys)

    def scan_stopped(w: Any, v: Any) -> Any:
        def body(c: Any, row: Any) -> Any:
            return lax.stop_gradient(c) + row @ w, None

        c, _ = lax.scan(body, v, x)
        return jnp.sum(c)

    def looped(w: Any, v: Any) -> Any:
        n = lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0)
        return jnp.sum(x @ w) * n

    def remat(w: Any, v: Any) -> Any:
        return jnp.sum(jax.checkpoint(lambda w: jnp.sin(x @ w))(w) * v)

    @jax.custom_vjp
    def clip(t: Any) -> Any:
        return t

    clip.defvjp(lambda t: (t, None), lambda _, g: (jnp.clip(g, -1, 1),))

    def custom(w: Any, v: Any) -> Any:
        return jnp.sum(jax.nn.relu(clip(x @ w)) * lax.stop_gradient(v))

    def jitted(w: Any, v: Any) -> Any:
        return jnp.sum(jax.jit(lambda w: jnp.round(x @ w))(w)) + jnp.sum(v)

    cases = {f.__name__: (f, (w, v)) for f in (
        stopped, argmax, rounded, floored_sign, cast, compared, straight_through, unused,
        branches, scanned, scan_stopped, looped, remat, custom, jitted)}  # fmt: skip
    cases["dict"] = (lambda p: jnp.sum(x @ p["w"]) + jnp.round(p["v"]).sum(), ({"w": w, "v": v},))
    return cases


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    return _cases()


# ``scan_stopped`` is left out: JAX's JVP carries the initial carry's tangent into the scan
# (its carry is live, from ``w``), though the body drops it; bare TensorFlow is its reference
NAMES = ["stopped", "argmax", "rounded", "floored_sign", "cast", "compared", "straight_through",
         "unused", "branches", "scanned", "looped", "remat", "custom", "jitted",
         "dict"]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_none_ness_is_jaxs_own_symbolic_zeros(name: str, cases: Any) -> None:
    fn, args = cases[name]
    analysed = _analysed(fn, *args)
    assert [not leaf.has_gradient for leaf in analysed.leaves] == _jax_none(fn, *args)


def test_cut_points_name_the_op_kind_and_line(cases: Any) -> None:
    def cut(name: str, leaf: int = 0) -> list[tuple[str, str, str]]:
        fn, args = cases[name]
        points = _analysed(fn, *args).leaves[leaf].cut_points
        return [(c.op, c.kind, c.source.rsplit("/", 1)[-1]) for c in points]

    fns = {n: f for n, (f, _) in cases.items()}
    assert cut("stopped") == [("StopGradient", "stopped",
                               _line(fns["stopped"], "lax.stop_gradient(h)"))]  # fmt: skip
    # the op that made the float an integer, not the later cast back
    assert cut("argmax") == [("ArgMax", "nondifferentiable", _line(fns["argmax"], "jnp.argmax("))]
    assert cut("rounded") == [("Round", "nondifferentiable", _line(fns["rounded"], "jnp.round("))]
    assert cut("floored_sign", 1) == [("Sign", "nondifferentiable",
                                       _line(fns["floored_sign"], "jnp.sign"))]  # fmt: skip
    assert cut("cast") == [("Cast", "nondifferentiable", _line(fns["cast"], "astype(jnp.int32)"))]
    assert cut("compared") == [("Greater", "nondifferentiable", _line(fns["compared"], "> 0"))]
    # a straight-through estimator is ok, its deliberate cut listed (the user wrote it)
    fn, args = cases["straight_through"]
    analysed = _analysed(fn, *args)
    assert analysed.leaves[0].has_gradient
    assert [c.op for c in analysed.leaves[0].cut_points] == ["StopGradient"]
    # inside a jit body: the line of the user's function, read through the call around it
    assert cut("jitted") == [("Round", "nondifferentiable", _line(fns["jitted"], "jnp.round"))]
    # inside a scan body
    assert cut("scan_stopped", 1) == [("StopGradient", "stopped",
                                       _line(fns["scan_stopped"], "stop_gradient(c)"))]  # fmt: skip


def test_unused_leaf_is_disconnected_without_cut_points(cases: Any) -> None:
    fn, args = cases["unused"]
    analysed = _analysed(fn, *args)
    assert [(leaf.reachable, leaf.has_gradient, leaf.cut_points) for leaf in analysed.leaves] == [
        (False, False, []),
        (False, False, []),
    ]


def test_scan_carry_stopped_in_its_body_matches_bare_tensorflow(cases: Any) -> None:
    """The initial carry reaches the loss only through the body's ``stop_gradient``: bare
    TensorFlow's eager ``tf.scan`` gives it None (inside ``tf.function`` its while loop fills
    in zeros), and the weights a gradient."""
    import tensorflow as tf

    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    w, v = tf.Variable(np.full((3, 2), 0.5, np.float32)), tf.Variable(np.full(2, 0.3, np.float32))
    with tf.GradientTape() as tape:
        c = tf.scan(lambda c, row: tf.stop_gradient(c) + tf.linalg.matvec(w, row, True), x,
                    initializer=v)  # fmt: skip
        loss = tf.reduce_sum(c[-1])
    expected = [g is None for g in tape.gradient(loss, [w, v])]
    fn, args = cases["scan_stopped"]
    analysed = _analysed(fn, *args)
    assert [not leaf.has_gradient for leaf in analysed.leaves] == expected == [False, True]


def test_none_ness_matches_bare_tensorflow() -> None:
    """The primitives TensorFlow has too: the same function in ``tf`` ops, and its tape."""
    import jax
    import jax.numpy as jnp
    import tensorflow as tf

    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    w0 = np.full((3, 2), 0.5, np.float32)
    pairs = [
        (lambda w: jnp.sum(jax.lax.stop_gradient(x @ w)), lambda w: tf.stop_gradient(x @ w)),
        (lambda w: jnp.sum(jnp.argmax(x @ w, -1).astype(jnp.float32)),
         lambda w: tf.cast(tf.argmax(x @ w, -1), tf.float32)),
        (lambda w: jnp.sum(jnp.round(x @ w)), lambda w: tf.round(x @ w)),
        (lambda w: jnp.sum(jnp.floor(x @ w)), lambda w: tf.floor(x @ w)),
        (lambda w: jnp.sum((x @ w > 0).astype(jnp.float32)),
         lambda w: tf.cast(x @ w > 0, tf.float32)),
        (lambda w: jnp.sum((x @ w).astype(jnp.int32).astype(jnp.float32)),
         lambda w: tf.cast(tf.cast(x @ w, tf.int32), tf.float32)),
        (lambda w: jnp.sum(jnp.tanh(x @ w)), lambda w: tf.tanh(x @ w)),
        (lambda w: jnp.sum(jnp.maximum(x @ w, 0.0)), lambda w: tf.nn.relu(x @ w)),
    ]  # fmt: skip
    for jax_fn, tf_fn in pairs:
        variable = tf.Variable(w0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf_fn(variable))
        tf_none = tape.gradient(loss, variable) is None
        (leaf,) = _analysed(jax_fn, jnp.asarray(w0)).leaves
        assert (not leaf.has_gradient) == tf_none
