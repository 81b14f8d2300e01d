"""Fixes decided from values: where a NaN first appeared, a timeline's norms over training,
a distributed loss's scale, a ``grad_loss`` multiplier."""

from __future__ import annotations

from collections.abc import Sequence

from gradscope._src.analysis.fixes.evidence import NAN_DIVIDE, NAN_LOG, NAN_ROOT, Evidence, name, op
from gradscope._src.results.fix import Fix


def nan_fix(e: Evidence) -> Fix:
    o = e.nan_origin
    if o is None or o.op in ("Placeholder", "ReadVariableOp"):
        what = (
            f"{o.node}'s value is already non-finite ({o.source})"
            if o
            else f"{name(e.variable)}'s gradient holds a NaN or an infinity"
        )
        return Fix(
            "nan-candidates",
            o.source if o else e.site,
            f"{what}; the evidence does not single out the op that made it.",
            (
                "a `log` or `sqrt` of 0, or a division by 0: guard it (double `tf.where`, "
                "or an epsilon)",
                "a learning rate too high (the weights diverged)",
                "`tf.debugging.enable_check_numerics()` to stop at the first op",
            ),
        )
    at = f"At {o.source}" if o.source else f"At `{o.node}`"
    where = "its gradient" if o.where == "gradient" else "its value"
    if o.op in NAN_LOG:
        return Fix(
            "safe-log",
            o.source,
            f"{at} {op(o)} makes {where} non-finite at 0: clip its input, "
            f"`{_LOGS.get(o.op, _LOGS['Log'])}`, which keeps every value of x from the bound "
            "up (an epsilon, `x + 1e-7`, shifts them all).",
        )
    if o.op in NAN_ROOT:
        return Fix("double-where", o.source, f"{at} {op(o)} {_double_where(o.op, where)}")
    if o.op in NAN_DIVIDE:
        return Fix(
            "divide-no-nan",
            o.source,
            f"{at} {op(o)} divides by 0: use `tf.math.divide_no_nan(a, b)`, which is `a / b` "
            "wherever `b` is not 0, and 0 there.",
        )
    return Fix(
        "nan-candidates",
        o.source,
        f"{at} {op(o)} first makes {where} non-finite; the evidence does not single out a guard.",
        (
            "keep its input inside the op's domain (`tf.clip_by_value`)",
            "the double-where pattern: compute it only where the input is safe",
        ),
    )


#: Each log-like op with its input clipped above the point where it is not finite.
_LOGS = {"Log": "tf.math.log(tf.maximum(x, 1e-7))",
         "Log1p": "tf.math.log1p(tf.maximum(x, 1e-7 - 1.0))",
         "Xlogy": "tf.math.xlogy(a, tf.maximum(x, 1e-7))",
         "Digamma": "tf.math.digamma(tf.maximum(x, 1e-7))",
         "Lgamma": "tf.math.lgamma(tf.maximum(x, 1e-7))"}  # fmt: skip

#: The call each root-like op is written with, and the input it is safe at.
_ROOTS = {"Sqrt": ("tf.sqrt", "1.0"), "Rsqrt": ("tf.math.rsqrt", "1.0"),
          "Pow": ("tf.pow", "1.0"), "Acos": ("tf.acos", "0.0"), "Asin": ("tf.asin", "0.0"),
          "Atanh": ("tf.atanh", "0.0")}  # fmt: skip


def _double_where(op_type: str, where: str) -> str:
    """The double-where guard of a root-like op, written so the values stay what they were:
    ``sqrt`` is 0 at 0, so the guard gives 0 there; any other op keeps its own value where
    the input is outside the safe set, with no gradient through it."""
    if op_type == "Sqrt":
        return (
            f"makes {where} non-finite at 0 (its gradient is 1/(2·sqrt(x))): guard it with the "
            "double-where pattern, `ok = x > 0; y = tf.where(ok, tf.sqrt(tf.where(ok, x, 1.0)), "
            "0.0)`, which has sqrt's values (0 at 0) and a finite gradient."
        )
    fn, safe = _ROOTS.get(op_type, ("f", "safe"))
    args = ", a" if op_type == "Pow" else ""
    return (
        f"makes {where} non-finite at the edge of its domain: guard it with the double-where "
        f"pattern, `ok = <x strictly inside the domain>; y = tf.where(ok, {fn}(tf.where(ok, "
        f"x, {safe}){args}), {fn}(tf.stop_gradient(x){args}))`, which keeps every value and "
        "gives a finite gradient."
    )


def trend_fix(kind: str, variable: str, site: str) -> Fix | None:
    """The fix of a timeline's ``dead``, ``vanishing`` or ``exploding`` finding: the layer
    and the candidates (a timeline sees norms, not their cause), else None."""
    layer = variable.rsplit("/", 1)[0] if "/" in variable else variable
    if kind == "dead":
        return Fix(
            "dead",
            site,
            f"Layer `{layer}` gets all-zero gradients: its ReLU units have died. The "
            "evidence does not single out one fix.",
            (
                "`LeakyReLU` (or ELU) in place of ReLU",
                "He initialisation (`kernel_initializer='he_normal'`)",
                "a lower learning rate",
            ),
        )
    if kind == "vanishing":
        return Fix(
            "vanishing",
            site,
            f"Layer `{layer}`'s gradient is vanishingly small against its weights. The "
            "evidence does not single out one fix.",
            (
                "normalisation (`BatchNormalization`, `LayerNormalization`)",
                "He initialisation and non-saturating activations (ReLU, not sigmoid/tanh)",
                "residual connections around deep stacks",
            ),
        )
    if kind == "exploding":
        return Fix(
            "exploding",
            site,
            f"Layer `{layer}`'s gradient grew far beyond its earlier norm. The evidence "
            "does not single out one fix.",
            (
                "clip it: `keras.optimizers.Adam(clipnorm=1.0)`",
                "a lower learning rate",
                "normalisation (`BatchNormalization`, `LayerNormalization`)",
            ),
        )
    return None


def per_replica_mean(loss: str, where: str) -> Fix:
    """A loss averaged over each replica's batch, not the global one (``replica-loss-scale``)."""
    return Fix(
        "compute-average-loss",
        where,
        f"{loss} is averaged over each replica's own batch, so the all-reduced gradient "
        "is the replicas' count times too large: average over the global batch, "
        "`tf.nn.compute_average_loss(per_example_loss, global_batch_size=...)`, in place "
        "of `tf.reduce_mean`.",
    )


def multiplier(loss: str, where: str, values: Sequence[float]) -> Fix | None:
    """What a ``grad_loss``/``output_gradients`` multiplier does to every gradient of a loss
    (``values``: its elements), or None for the plain 1."""
    found = sorted(set(values))
    if not found or found == [1.0]:
        return None
    if len(found) > 1:
        flips = " and flips the sign of those with a negative weight" if found[0] < 0 else ""
        does = (
            f"weights the gradient of each element of the loss differently (from "
            f"{found[0]:g} to {found[-1]:g}){flips}, as multiplying each element would"
        )
    elif found[0] == -1:
        does = (
            "flips every gradient: an optimizer then ascends this loss (a GAN generator "
            "trained on the discriminator's loss); writing the loss the model minimises "
            "(`-d_loss`, or the non-saturating `-log D(G(z))`) does the same and reads "
            "plainly"
        )
    elif found[0] < 0:
        does = (
            f"flips every gradient and scales it by {-found[0]:g}: an optimizer ascends this loss"
        )
    elif found[0] == 0:
        does = "zeroes every gradient: nothing trains from this loss"
    else:
        does = f"scales every gradient by {found[0]:g}, as multiplying the loss would"
    shown = f"{found[0]:g}" if len(found) == 1 else "per element"
    return Fix(
        "gradient-multiplier",
        where,
        f"The `grad_loss`/`output_gradients` of {loss} ({shown}) {does}.",
    )
