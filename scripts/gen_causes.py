"""Regenerate docs/reference/causes-and-fixes.md: each cause, its broken example, what gradscope
prints for it, the fix, and the fixed example, from the proven cases in tests/cases/fixes/.

Every example on the page is a file that ``tests/analysis/test_fixes_proven.py`` runs: bare
TensorFlow gives the broken one no (or a NaN) gradient and the fixed one a finite one, and
gradscope names the fix's kind and line. What gradscope prints is produced by running it
here (``gradscope run broken.py``, or ``gradscope inspect broken.py:build``, in the case's
folder, at 88 columns).

Usage: ``python scripts/gen_causes.py`` rewrites the page; ``--check`` exits 1 when the
page's examples differ from the case files (the printed output is not compared: it holds
numbers that vary across machines).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "cases" / "fixes"
PAGE = ROOT / "docs" / "reference" / "causes-and-fixes.md"

#: (case, title, what goes wrong, the fix in words), in the order of the page.
ENTRIES = [
    ("outside-tape", "The forward pass runs outside the tape",
     "A GAN's generator output is computed before `with tf.GradientTape()`: the tape never "
     "sees the generator's variables used, so they get None.",
     "Move the line inside the `with tape:` block whose loss reads it."),
    ("unwatched-tensor", "A tensor source the tape never watched",
     "A tape follows variables on its own, but a plain tensor only after `tape.watch()`.",
     "Call `tape.watch(x)` inside the tape, or make the value a `tf.Variable`."),
    ("var-list", "Gradients asked for variables the loss does not read",
     "A multi-task model: `loss1` does not read `task2`, which `loss2` trains (seed 000's "
     "`compute_gradients(loss)` without `var_list` is the TensorFlow 1 form).",
     "Ask each loss only for its own variables (`var_list=` / the sources of `tape.gradient`)."),
    ("unread-output", "An output no loss reads",
     "`compile(loss=['mse', None])` leaves output `b` without a loss: Keras warns that "
     "gradients do not exist for `b/kernel` and `b/bias`.",
     "Give the output a loss, drop it from the model, or freeze its layer."),
    ("argmax-cast", "`argmax`, then a cast (the first cut is named)",
     "`tf.argmax` returns integer indices; casting them back to float does not bring the "
     "gradient back, and a later `tf.cast(..., tf.int32)` loses it again. gradscope names "
     "the `argmax`, the first op where the gradient was lost, and lists the later cast.",
     "A straight-through one-hot: the same index forward, the softmax's gradient back."),
    ("one-hot", "`one_hot` of predicted indices",
     "`tf.one_hot(tf.argmax(logits))` is the same cut: the indices carry no gradient.",
     "A straight-through one-hot: `probs + tf.stop_gradient(hard - probs)`."),
    ("round", "`round` (or `floor`, `ceil`)",
     "TensorFlow gives `tf.round` no gradient.",
     "Pass the gradient straight through: `x + tf.stop_gradient(tf.round(x) - x)`."),
    ("cast-int", "A cast to an integer type",
     "A float cast to `int32` carries no gradient.",
     "Keep the cast's value (it truncates toward 0) and pass the gradient straight through."),
    ("comparison", "A comparison used as a value",
     "`tf.cast(h > 0.5, tf.float32)`: a boolean carries no gradient.",
     "Keep the comparison's value; pass a smooth stand-in's gradient straight through."),
    ("batch-norm", "A batch norm's `mean` and `variance`",
     "A fused batch norm (`tf.compat.v1.nn.fused_batch_norm`, TensorFlow 1's `tf.layers` "
     "and Keras 2's `BatchNormalization`) gives its `scale` and `offset` a gradient, but "
     "reads `mean` and `variance` as constants: variables fed there get None.",
     "Normalize with differentiable ops: `tf.nn.batch_normalization` computes the same."),
    ("pad-constant", "`tf.pad`'s `constant_values`",
     "`tf.pad` passes the gradient to the padded tensor, not to the value it pads with.",
     "Pad with zeros and add the value through a constant mask: the same values, and the "
     "value gets its gradient."),
    ("stop-gradient", "`stop_gradient` between chained heads",
     "Seed 001: the second head reads the first head's output through `tf.stop_gradient`, "
     "so `loss2` never reaches `output1`. (A target network's `stop_gradient`, or a "
     "straight-through estimator's, is intended: gradscope says so.)",
     "Remove the `stop_gradient` if the first head should learn from `loss2`."),
    ("assign", "`Variable.assign` in the forward pass",
     "Seed 003: `x[:2, :2].assign(patch)` copies values; TensorFlow passes no gradient "
     "through an assignment, so `patch` gets None.",
     "Compute the assigned value as a tensor (the patch padded in, the rest of `x` masked) "
     "and use that downstream."),
    ("numpy", "A NumPy round trip inside the tape",
     "`np.tanh(h.numpy())` leaves TensorFlow; what comes back is a new constant.",
     "Keep TensorFlow ops (`tf.math.tanh`)."),
    ("custom-gradient", "A `tf.custom_gradient` whose `grad_fn` returns None for variables",
     "The second list `grad_fn` returns holds one gradient per variable the function reads; "
     "None there means no gradient for that variable.",
     "Return the variable's gradient (`dy * x` here)."),
    ("variable-per-call", "A variable made on every call of the loss",
     "The loss makes its `tf.Variable` each time it runs (as a layer that makes one in "
     "`call()` does): a gradient comes back every step, but the update goes with the "
     "variable, so the loss never goes down. `gradscope run` also names a `tf.Variable` a "
     "Keras layer keeps where Keras 3 does not track it (an attribute, a plain dict).",
     "Make it once: outside the loss, or in a layer's `build()` with `self.add_weight()`."),
    ("trainable-after-compile", "A `trainable` flag changed after `compile()`",
     "Fine-tuning: the base is unfrozen and the head frozen after the first `fit()`. Keras "
     "reads `trainable` when it traces the train step, so the second `fit()` still trains "
     "the head and leaves the base out (the program's `changed` lists which weights moved).",
     "Call `compile()` again after changing `trainable`, before the `fit()`."),
    ("nan-sqrt", "NaN from `sqrt` at 0",
     "The gradient of `sqrt(x)` is `1 / (2 sqrt(x))`: infinite at 0.",
     "The double-where pattern (or an epsilon) at that line."),
    ("nan-log", "NaN from `log` at 0", "`log(0)` is -inf, and its gradient infinite.",
     "Clip the input, `tf.math.log(tf.maximum(p, 1e-7))`: every value from 1e-7 up stays."),
    ("nan-divide", "NaN from a division by 0", "`x / s` with `s = 0`.",
     "`tf.math.divide_no_nan(x, s)`: `x / s` wherever `s` is not 0."),
]  # fmt: skip

HEAD = """# Causes and fixes

Every cause gradscope finds comes with a **fix**: what to change, at your own line. This page
lists them, each with a minimal broken program, what gradscope prints for it, the fix, and
the fixed program. Every example here is a test (`tests/analysis/test_fixes_proven.py`): bare
TensorFlow gives the broken program no gradient (or a NaN) and the fixed one a finite
gradient, the fixed one computes the same values forward (a fix changes how the gradient
flows, not what the program computes), and gradscope names the fix's kind and line.

The fix is in every output: a `fix:` line in the table, a `fix` field in JSON (pairs,
sources, problems, timeline findings; `schema/`), the SARIF result's message and a related
location at the line to change, a GitHub notice on that line, Markdown and JUnit text, and
`.fix` on the Python API's results (`PairResult`, `Problem`, `SourceResult`, `RunProblem`).
Where the evidence does not single out one fix (a NaN whose op is unknown, a dead or
exploding layer over training, a gradient TensorFlow drops for no cause gradscope can see),
the fix says so and lists the candidates.
"""

TAIL = """## Over training (timelines and the Monitor)

Findings of `gradscope run --timeline` and `gradscope.keras.Monitor` carry a fix too. A
timeline sees norms, not their cause, so these list candidates, naming the layer:

- **dead** (the gradient is all zeros): LeakyReLU or ELU, He initialisation, a lower learning rate.
- **vanishing**: normalisation (BatchNormalization, LayerNormalization), He initialisation and
  non-saturating activations, residual connections.
- **exploding**: `clipnorm=1.0` on the optimizer, a lower learning rate, normalisation.
- **none** and **nan**: as above, from the cause the records hold.

## Distributed runs and upstream gradients

- A loss averaged over each replica's own batch (`replica-loss-scale`): use
  `tf.nn.compute_average_loss(per_example_loss, global_batch_size=...)`.
- A `grad_loss` (`output_gradients`) multiplier is explained, not changed: `-1` flips every
  gradient, so the optimizer ascends the loss (seed 002's GAN trick); writing the loss the
  model minimises does the same and reads plainly.
"""


def _code(path: Path) -> str:
    text = path.read_text().rstrip("\n")
    return re.sub(r"  # <- (fix|later)$", r"  # <- \1", text, flags=re.MULTILINE)


def _printed(case: str) -> str:
    """What gradscope prints for the broken program, run in the case's folder."""
    folder = CASES / case
    target = (
        ["inspect", "broken.py:build"] if "def build" in (folder / "broken.py").read_text()
        else ["run", "--continue", "broken.py"]
    )  # fmt: skip
    env = dict(os.environ, COLUMNS="88", TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "gradscope", *target], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    # ``run`` writes its report to standard error (the program's own output keeps stdout)
    lines = (done.stdout + done.stderr).splitlines()
    kept = [line for line in lines if not line.startswith(_NOISE)]
    return "\n".join(kept).strip("\n")


#: Lines that are not gradscope's report: its progress, Python's and TensorFlow's warnings.
_NOISE = ("gradscope: ", "  warnings.warn", "WARNING", "E0000", "I0000", "W0000")


def page(printed: dict[str, str]) -> str:
    parts = [HEAD]
    for case, title, wrong, fix in ENTRIES:
        broken, fixed = _code(CASES / case / "broken.py"), _code(CASES / case / "fixed.py")
        parts.append(
            f"## {title}\n\n{wrong}\n\n```python\n{broken}\n```\n\n"
            f"gradscope prints:\n\n```text\n{printed.get(case, '')}\n```\n\n"
            f"**Fix.** {fix}\n\n```python\n{fixed}\n```\n"
        )
    parts.append(TAIL)
    return "\n".join(parts)


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)\n```", text, flags=re.DOTALL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        wanted = _blocks(page({}))
        found = _blocks(PAGE.read_text()) if PAGE.exists() else []
        if wanted != found:
            print(f"{PAGE}: its examples differ from tests/cases/fixes (run {__file__})")
            return 1
        return 0
    printed = {case: _printed(case) for case, *_ in ENTRIES}
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page(printed))
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
