"""Fixes at a cut point: the op that cut the last paths names the change and its line."""

from __future__ import annotations

from gradscope._src.analysis.fixes.evidence import (
    ARGMAX,
    COMPARISONS,
    CUSTOM,
    ROUNDING,
    Evidence,
    also,
    at,
    name,
    op,
    op_code,
    target_network,
    then,
)
from gradscope._src.results.cut import NONE_INPUT_NAMES, STOP_TYPES, CutPoint
from gradscope._src.results.fix import INTENDED, Fix


def cut_fix(e: Evidence, c: CutPoint) -> Fix:
    later = c.later
    more = also(e.cut_points[1:])
    if c.kind == "assign":
        return _assign(e, c, more)
    if c.kind == "stopped":
        return _stopped(e, c, more)
    if c.op in ARGMAX:
        return _argmax(e, c, more, later)
    if c.op in ROUNDING or c.op == "Cast":
        return _rounding(e, c, more, later)
    if c.op in COMPARISONS:
        return _comparison(e, c, more, later)
    if c.op in NONE_INPUT_NAMES:
        return _none_input(e, c, more, later)
    if c.op in CUSTOM and not e.spec:
        return Fix(
            "custom-gradient",
            c.source,
            f"{at(c)} the `grad_fn` of `{c.node.split('.')[0]}` returns None for "
            f"{name(e.variable)}: return its gradient in the second list, one entry per "
            "variable in `variables` (`return dy * w, [tf.reduce_sum(dy * x)]`), or "
            f"`tf.zeros_like(v)` for a variable it means to leave alone.{more}",
        )
    return Fix(
        "no-gradient-op",
        c.source,
        f"{at(c)} {op(c)} has no gradient in TensorFlow, and every path from "
        f"{name(e.variable)} to {e.target} crosses it.{more} The evidence does not "
        "single out a replacement.",
        (
            "a differentiable op that computes the same value",
            f"`x + tf.stop_gradient({op_code(c)}(x) - x)` to keep its value and pass the "
            "gradient straight through",
        ),
        later,
    )


def _none_input(e: Evidence, c: CutPoint, also: str, later: tuple[str, ...]) -> Fix:
    """An op whose gradient reaches some of its inputs and not the one the variable feeds
    (``NONE_INPUT_NAMES``): where TensorFlow has a differentiable way to compute the same,
    it is the fix."""
    given = " and ".join(f"`{n}`" for n in NONE_INPUT_NAMES[c.op].values())
    if c.op.startswith("FusedBatchNorm"):
        text = (
            f"{at(c)} the fused batch norm ({c.op}) gives its {given} no gradient in "
            f"TensorFlow{then(later)}: to learn them, normalize with differentiable ops, "
            "`tf.nn.batch_normalization(x, mean, variance, offset, scale, "
            f"variance_epsilon)`, which computes the same normalization.{also}"
        )
        return Fix("differentiable-op", c.source, text, (), later)
    if c.op == "PadV2":
        text = (
            f"{at(c)} `tf.pad` (PadV2) gives its {given} no gradient in TensorFlow"
            f"{then(later)}: pad with zeros and add the value through a constant mask, "
            "`tf.pad(x, paddings) + c * tf.pad(tf.zeros_like(x), paddings, "
            f"constant_values=1)`, which gives the same values and `c` its gradient.{also}"
        )
        return Fix("differentiable-op", c.source, text, (), later)
    cut = f"{at(c)} {op(c)} gives its {given} no gradient in TensorFlow{then(later)}"
    candidates = ["a differentiable op that computes the same value"]
    if c.op.startswith("QuantizeAndDequantize"):
        candidates.append("`tf.quantization.fake_quant_with_min_max_vars(x, min, max)`, whose "
                          "gradient reaches `min` and `max`")  # fmt: skip
    text = (
        f"{cut}, and every path from {name(e.variable)} to {e.target} enters it "
        f"there.{also} The evidence does not single out a replacement."
    )
    return Fix("no-gradient-op", c.source, text, tuple(candidates), later)


def _argmax(e: Evidence, c: CutPoint, also: str, later: tuple[str, ...]) -> Fix:
    if e.spec:
        text = (
            f"{at(c)} `{c.node}` (argmax) gives integer indices, which carry no gradient: keep "
            "its value and pass the softmax's gradient straight through, `probs + "
            "stop_gradient(one_hot(argmax(logits), depth) - probs)` (nodes `op: nn.softmax`, "
            "`op: one_hot`, `op: subtract`, `op: stop_gradient`, `op: add`), whose value is "
            f"the one-hot of the same index.{also}"
        )
    else:
        text = (
            f"{at(c)} `tf.argmax` gives integer indices, which carry no gradient{then(later)}: "
            "keep the value and pass the softmax's gradient straight through, `probs = "
            "tf.nn.softmax(logits); hard = probs + tf.stop_gradient(tf.one_hot(tf.argmax("
            "logits, -1), depth) - probs)` (the one-hot of the same index; the index itself "
            "is `tf.reduce_sum(hard * tf.range(depth, dtype=hard.dtype), -1)`). The "
            "probabilities themselves, or a Gumbel-softmax sample, train too but change the "
            f"values the loss reads.{also}"
        )
    return Fix("soft-argmax", c.source, text, (), later)


#: What each rounding op computes, as the TensorFlow call that computes the same (``Round``
#: rounds half to even, as ``tf.round`` does; a ``Cast`` to an integer truncates toward 0).
ROUNDING_CALLS = {
    "Round": "tf.round(x)",
    "Floor": "tf.floor(x)",
    "Ceil": "tf.math.ceil(x)",
    "Rint": "tf.math.rint(x)",
    "Cast": "tf.cast(tf.cast(x, tf.int32), x.dtype)",
}


def _rounding(e: Evidence, c: CutPoint, also: str, later: tuple[str, ...]) -> Fix:
    same = ROUNDING_CALLS.get(c.op, f"{op_code(c)}(x)")
    what = "a cast to an integer type" if c.op == "Cast" else f"`{same.removesuffix('(x)')}`"
    dtype = (
        " (with the integer dtype your cast names: the cast truncates toward 0, and so does this)"
        if c.op == "Cast"
        else ""
    )
    if e.spec:
        text = (
            f"{at(c)} `{c.node}` ({what}) has no gradient: keep its value and pass the "
            f"gradient straight through, `x + stop_gradient({same.replace('tf.', '')} - x)`"
            f"{dtype}, as nodes (`op: subtract`, `op: stop_gradient`, `op: add`).{also}"
        )
    else:
        text = (
            f"{at(c)} {what} has no gradient{then(later)}: keep its value and pass the "
            f"gradient straight through with `x + tf.stop_gradient({same} - x)`{dtype}, "
            f"a float with the same values.{also}"
        )
    return Fix("straight-through", c.source, text, (), later)


def _comparison(e: Evidence, c: CutPoint, also: str, later: tuple[str, ...]) -> Fix:
    text = (
        f"{at(c)} {op(c)} gives a boolean, which carries no gradient{then(later)}: keep its "
        "value and pass a smooth stand-in's gradient straight through, `soft = "
        "tf.sigmoid((a - b) / temperature); mask = soft + tf.stop_gradient(tf.cast(a > b, "
        "soft.dtype) - soft)` for `a > b` (the stand-in alone, `soft`, trains too but "
        f"changes the values the loss reads).{also}"
    )
    return Fix("soft-comparison", c.source, text, (), later)


def _stopped(e: Evidence, c: CutPoint, also: str) -> Fix:
    if c.op not in STOP_TYPES:
        return Fix(
            "stop-gradients-argument",
            c.source,
            f"{at(c)} `{c.node}` is named in the gradient call's `stop_gradients`, so it "
            f"is a constant to {e.target}: take it out of `stop_gradients` if "
            f"{name(e.variable)} should learn from it.{also}",
        )
    if target_network(e, c):
        copied, where = e.copy_of
        what = (
            f"a copy of `{copied}` (assigned{f' at {where}' if where else ''}), as a target "
            "network's copy should be"
            if copied
            else "as a target network's copy should be"
        )
        return Fix(
            INTENDED,
            c.source,
            f"{at(c)} `stop_gradient` keeps {name(e.variable)} out of {e.target}'s "
            f"gradient, {what}: nothing to change (allow it: `--allow-none`, or "
            "`expect.<loss>.none`).",
        )
    how = (
        f"have the nodes that read `{c.node}` read its input"
        if e.spec
        else "use its argument (`tf.stop_gradient(h) @ w2` becomes `h @ w2`)"
    )
    allow = (
        "list it under `expect.<loss>.none`"
        if e.spec
        else "allow it (`--allow-none` for `gradscope run`, `expect` for a target)"
    )
    return Fix(
        "remove-stop-gradient",
        c.source,
        f"{at(c)} `stop_gradient` cuts every path from {name(e.variable)} to {e.target}: "
        f"to train it from {e.target}, {how}; if the cut is meant (a target network, a frozen "
        f"feature extractor), {allow}.{also}",
    )


def _assign(e: Evidence, c: CutPoint, also: str) -> Fix:
    if e.spec:
        text = (
            f"{at(c)} `{c.node}` copies {name(e.variable)} into another variable, and "
            "TensorFlow passes no gradient through an assignment: compute the variable's new "
            "value as a tensor and read that downstream, `x * (1 - pad(ones_like(patch))) + "
            "pad(patch)` (nodes `op: pad` with the slice's `paddings`, `op: multiply`, `op: "
            f"add`), which holds the values the assign writes.{also}"
        )
    else:
        text = (
            f"{at(c)} `assign` copies {name(e.variable)}'s value into a variable, and "
            "TensorFlow passes no gradient through an assignment: compute the new value as a "
            "tensor and use it downstream, `mask = tf.pad(tf.ones_like(patch), paddings); "
            "x_new = x * (1 - mask) + tf.pad(patch, paddings)` for `x[:2, :2].assign(patch)` "
            "(the same values the assign writes; keep the assign too if later steps read "
            f"`x`).{also}"
        )
    return Fix("assign-as-tensor", c.source, text)


def flowing_cut(e: Evidence) -> Fix | None:
    """A path cut while the gradient still flows: a straight-through estimator (or a
    detached term) is deliberate; an ``assign`` on the side loses that path's share."""
    c = e.cut_points[0]
    if c.kind == "stopped":
        return Fix(
            INTENDED,
            c.source,
            f"{at(c)} `stop_gradient` cuts one path while the gradient of "
            f"{name(e.variable)} flows along another (a straight-through estimator, "
            "`x + tf.stop_gradient(f(x) - x)`): intended, nothing to change.",
        )
    return None
