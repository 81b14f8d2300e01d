"""Fixes from a cause a front-end gave in words (a source's note), and where there is no path
and no cause: ``CAUSES`` is the table a new cause adds its case to."""

from __future__ import annotations

import re
from collections.abc import Callable

from gradscope._src.analysis.fixes.evidence import Evidence, name, short, words
from gradscope._src.results.fix import Fix

_LINE = r"(?P<line>\S+:\d+)"


def _outside_tape(e: Evidence, found: re.Match[str]) -> Fix:
    line = found["line"]
    return Fix(
        "move-into-tape",
        line,
        f"{line} runs while the tape is not recording, so the tape never sees "
        f"{name(e.variable)} used: move that line inside the `with tf.GradientTape() "
        f"as tape:` block whose loss reads it (a GAN's `fake = generator(z)` goes under "
        "the generator's tape).",
    )


def _numpy(e: Evidence, found: re.Match[str]) -> Fix:
    line = found["line"]
    return Fix(
        "keep-tensorflow-ops",
        line,
        f"At {line} the value leaves TensorFlow (`.numpy()`, `np.*`, `float()`), and "
        "what comes back is a new constant: keep TensorFlow ops there (`tf.math.tanh(h)` "
        "for `np.tanh(h.numpy())`).",
    )


def _no_var_list(e: Evidence, found: re.Match[str]) -> Fix:
    return Fix(
        "var-list",
        e.site,
        f"{e.api} at {e.site} was given no `var_list`, so it differentiates every trainable "
        f"variable, {name(e.variable)} included, which {e.target} does not read: pass "
        f"{found['which']}.",
    )


def _unwatched_variable(e: Evidence, found: re.Match[str]) -> Fix:
    return Fix(
        "watch",
        e.site,
        f"The tape has `watch_accessed_variables=False` and never watches "
        f"{name(e.variable)}: call `tape.watch({short(e.variable)})` first thing "
        "inside `with tf.GradientTape(...) as tape:`, or drop "
        "`watch_accessed_variables=False`.",
    )


def _unwatched_tensor(e: Evidence, found: re.Match[str]) -> Fix:
    return Fix(
        "watch",
        e.site,
        f"{name(e.variable)} is a tensor, and a tape follows a tensor only once it is watched: "
        "call `tape.watch(x)` first thing inside `with tf.GradientTape() as tape:` (before "
        "the line that uses it), or make it a `tf.Variable`.",
    )


def _unread_output(e: Evidence, found: re.Match[str]) -> Fix:
    heads = found["heads"]
    return Fix(
        "unread-output",
        e.site,
        f"{name(e.variable)} feeds only output {heads}, which no loss reads: give it a "
        "loss (in `compile(loss=...)`, one per output, or in the loss your step "
        "computes), or drop that output from the model, or freeze its layer "
        "(`layer.trainable = False`, then `compile()`) if it is meant to stay as it is.",
    )


def _off_path(e: Evidence, found: re.Match[str]) -> Fix:
    return Fix(
        "off-path-layer",
        e.site,
        f"The layer of {name(e.variable)} is not called between the model's inputs and "
        f"outputs ({found['model']}): call it in `call()` (or in the functional graph "
        "that builds the outputs), or remove it.",
    )


def compile_again(e: Evidence, found: re.Match[str] | None) -> Fix:
    if "frozen while this fit() ran" in e.note:  # a callback froze it: trace the step again
        return Fix(
            "compile-again",
            e.site,
            f"The `trainable` flag of {name(e.variable)} changed while `fit()` ran (in a "
            "callback), after Keras traced the train step: call "
            "`self.model.make_train_function(force=True)` right after changing it, so the "
            "next step is traced with the new flag.",
        )
    if "made trainable while this fit() ran" in e.note:  # the built optimizer cannot take it
        return Fix(
            "compile-again",
            e.site,
            f"{name(e.variable)} was made trainable while `fit()` ran (in a callback), after "
            "Keras traced the train step, and the optimizer was built without it: stop that "
            "`fit()` there (two `fit()` calls, one per phase) and call `compile()` with a new "
            "optimizer between them.",
        )
    compiled = f" at {found['line']}" if found and found["line"] else ""
    before = f"the `{e.api or 'fit'}()` at {e.site}" if e.site else "`fit()`"
    return Fix(
        "compile-again",
        e.site or (found["line"] if found and found["line"] else ""),
        f"The `trainable` flag of {name(e.variable)} changed after `compile()`{compiled}, "
        f"which Keras reads only when it traces the train step: call `compile()` again "
        f"after changing it, before {before} (with a new optimizer, if you pass one).",
    )


COMPILE = re.compile(
    r"(?:compile\(\) at (?P<line>\S+:\d+)|train step was traced|trainable "
    r"flags changed)"
)

#: Causes a front-end words in a note, each with the fix it calls for: a new cause gets
#: its fix by adding a case here.
CAUSES: tuple[tuple[re.Pattern[str], Callable[[Evidence, re.Match[str]], Fix]], ...] = (
    (re.compile(rf"used only through {_LINE} .*not recording"), _outside_tape),
    (re.compile(rf"left TensorFlow at {_LINE}"), _numpy),
    (re.compile(r"given no var_list.*; pass (?P<which>a var_list of .+?) \(the"), _no_var_list),
    (re.compile(r"converts a tensor to NumPy at (?P<line>\S+:\d+)"), _numpy),
    (re.compile(r"never watched: a tensor"), _unwatched_tensor),
    (re.compile(r"never watched"), _unwatched_variable),
    (re.compile(r"reaches only outputs? (?P<heads>.+?), which"), _unread_output),
    (re.compile(r"reaches no output of (?P<model>model '[^']*')"), _off_path),
    (COMPILE, compile_again),
)


# --- no path, no cause --------------------------------------------------------------------


#: Calls that take every trainable variable unless given a ``var_list`` (seed 000).
EVERY_VARIABLE = ("compute_gradients", "minimize")


def disconnected(e: Evidence) -> Fix:
    own = f"[{', '.join(e.reads)}]" if e.reads else "the variables it reads"
    arg = f"`var_list={own}`" if e.reads else "`var_list=`"
    if e.api in EVERY_VARIABLE and not e.spec:
        also = f"; {name(e.variable)} gets its gradient from {words(e.reached_by)}" if (
            e.reached_by) else ""  # fmt: skip
        return Fix(
            "var-list",
            e.site,
            f"{e.api} at {e.site or 'this line'} differentiates {e.target} with respect to "
            f"{name(e.variable)}, which is not on its path{also}: pass {arg}, the variables "
            "this loss reads.",
        )
    if e.reached_by:
        where = words(e.reached_by)
        ask = f"{e.api} at {e.site}" if e.api and e.site else e.api or "the gradient call"
        if e.spec:
            how = (
                "give the loss its own variables (`vars:` with its patterns), or list "
                f"`{e.variable}` under `expect.<loss>.none`"
            )
        elif e.api in ("compute_gradients", "minimize"):
            how = "pass only the loss's own variables, `compute_gradients(loss, var_list=...)`"
        else:
            how = f"pass only the variables the loss reads, {own}"
        return Fix(
            "var-list",
            e.site,
            f"{e.target} does not read {name(e.variable)}, which gets its gradient from "
            f"{where}: {ask} asks for it anyway. If that is meant (one loss per head), "
            f"{how}.",
        )
    return Fix(
        "unread-variable",
        e.site,
        f"No loss reads {name(e.variable)}, so it would never train. The evidence does "
        "not single out why.",
        (
            "give the head or output it belongs to a loss",
            "remove it if it is unused",
            "freeze it (`trainable=False`) if it is meant to stay as it is",
            *(
                [f"leave it out of this call's sources (the loss reads {own})"]
                if e.reads and not e.spec
                else []
            ),
        ),
    )


def unexplained(e: Evidence) -> Fix:
    return Fix(
        "unexplained",
        e.site,
        f"TensorFlow returns no gradient for {name(e.variable)} and gradscope found no "
        "op that cut it; the evidence singles out no fix.",
        (
            "a value converted to NumPy or a Python number and back",
            "a `tf.py_function` or `tf.numpy_function` on the path",
            "ops run under `tape.stop_recording()`",
        ),
    )


def zero(e: Evidence) -> Fix:
    return Fix(
        "zero-gradient",
        e.site,
        f"{name(e.variable)} gets a gradient that is exactly zero everywhere: a "
        "differentiable path exists, but nothing flows along it. The evidence does not "
        "single out why.",
        (
            "dead ReLUs before it (`LeakyReLU`, He initialisation)",
            "a mask or `tf.where` that zeroes its path",
            "a loss that is constant in it",
        ),
    )


_FRESH = re.compile(r"creates a new variable on every call \((?:`[^`]*`)(?: at (?P<line>\S+:\d+))?")


def loss_fix(note: str, where: str) -> Fix | None:
    """A fix for what a loss's own note says (a Python target's), or None: a loss that makes
    a new variable on every call trains nothing, as a variable a layer makes in ``call()``."""
    found = _FRESH.search(note)
    if found is None:
        return None
    line = found["line"] or where
    return Fix(
        "build-add-weight",
        line,
        f"At {line or 'the line that makes it'} a new variable is made on every call, so it "
        "starts again from its initial value each step: create it once, in a Keras layer's "
        "`build()` with `self.add_weight(...)` (Keras then tracks and trains it), or outside "
        "the loss; never in `call()` or in the loss itself.",
    )


def untracked(variable: str, attribute: str, site: str) -> Fix:
    """A ``tf.Variable`` a Keras layer holds where Keras does not track it (``gradscope run``):
    make it a weight Keras tracks, or ask for it yourself."""
    short = attribute.rsplit(".", 1)[-1] or "w"
    return Fix(
        "build-add-weight",
        site,
        f"`{variable}` (`{attribute}`) is a raw tf.Variable, which Keras 3 does not track, so "
        f"`model.trainable_variables` (what {site} asks gradients for) leaves it out: create it "
        f"in the layer's `build()` with `self.{short} = self.add_weight(...)` (or as a "
        "`keras.Variable`), never in a plain dict or in `call()`; or add it to the variables "
        "given to `tape.gradient` and the optimizer.",
    )
