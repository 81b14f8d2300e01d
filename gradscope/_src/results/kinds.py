"""The registry of finding kinds: each kind's id, SARIF rule, short description and help.

One entry per kind, one meaning per kind whatever the door (a spec, a Python target,
``gradscope run``, a timeline): every format reads the kind's words here (SARIF's
``tool.driver.rules``; the id is what JSON, JUnit, GitHub annotations, Markdown and tables
print). Which kinds a command can report is a tuple of ids (:data:`CHECK`, :data:`RUN`,
:data:`TIMELINE`), never a second table of words (mypy keeps its error codes with their
descriptions in the same way).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gradscope._src.results.status import PROBLEM_KINDS, FindingKind, ProblemKind


@dataclass(frozen=True)
class Kind:
    """A finding kind: its id (the JSON ``kind``), SARIF rule name, short description and
    help (what it means for training, and what to change)."""

    id: str
    rule: str
    short: str
    help: str


def _kinds(*kinds: Kind) -> dict[str, Kind]:
    return {str(k.id): k for k in kinds}


#: Every kind, by id: the problem kinds in the contract's order, then the timeline's.
KINDS: Mapping[str, Kind] = _kinds(
    Kind(
        ProblemKind.UNEXPECTED_NONE,
        "UnexpectedNoneGradient",
        "A variable expected to get a gradient gets none.",
        "The variable was expected to train: `expect.<loss>.connected` lists it (there, an "
        "all-zero gradient counts as none too), or a gradient call of the program asks for "
        "its gradient and no --allow-none glob names it. TensorFlow returns no gradient, so "
        "an optimizer step on that loss never updates it. The cut points and the cause name "
        "the line: a stop_gradient, an assign, an op with no gradient (argmax, round, an "
        "integer cast), a value through .numpy(), a path computed outside the tape, an output "
        "no loss reads, or no path at all. Reconnect the variable, or declare the missing "
        "gradient intended (`expect.<loss>.none`, --allow-none).",
    ),
    Kind(
        ProblemKind.UNEXPECTED_CONNECTED,
        "UnexpectedGradient",
        "A variable expected to get no gradient gets one.",
        "The variable was expected not to train: `expect.<loss>.none` lists it, or its "
        "`trainable` flag was turned off after Keras traced the train step, which still "
        "computes its gradient. An optimizer step on that loss changes it. Cut the path (a "
        "stop_gradient, a var_list), remove the variable from `none`, or call compile() again "
        "after changing `trainable`.",
    ),
    Kind(
        ProblemKind.NAN,
        "NonFiniteGradient",
        "A gradient has a NaN or an infinity.",
        "One optimizer step with this gradient turns the variable into NaN. Typical causes: "
        "log or sqrt of zero, a division by zero, an overflowing exp.",
    ),
    Kind(
        ProblemKind.NEVER_TRAINED,
        "NeverTrainedVariable",
        "A trainable variable is trained by no loss.",
        "No loss gives this variable a gradient, or a `trainable` flag turned on after Keras "
        "traced the train step leaves it out of that step (Keras reads the flag when it "
        "traces the step, at the first fit() after compile(), and reuses the step until the "
        "next compile()). It keeps its initial value forever. Connect it, make it "
        "non-trainable, list it under some `expect.<loss>.none` to declare it unused, or call "
        "compile() again after changing `trainable`.",
    ),
    Kind(
        ProblemKind.NUMERIC_DIFFERS,
        "GradientDiffersFromFiniteDifferences",
        "A gradient disagrees with central finite differences of its loss (--numeric).",
        "TensorFlow's gradient is not the derivative of the loss: a wrong custom gradient, an "
        "op whose registered gradient is not its derivative, or a deliberate difference (a "
        "straight-through estimator, an assign, a custom gradient) on a variable that "
        "`expect.<loss>.numeric` asks to agree. Compare the analytic and numeric values at "
        "the worst coordinate in the JSON report.",
    ),
    Kind(
        ProblemKind.REPLICA_MISMATCH,
        "ReplicasDisagree",
        "Replicas disagree on a gradient's status (--strategy).",
        "Each replica computes the loss on its share of the batch; here one replica's gradient "
        "is usable and another's is zero, NaN or None: the data takes different paths (a "
        "mask, a branch), the failure PyTorch DDP reports as unused parameters. The message "
        "names the replicas.",
    ),
    Kind(
        ProblemKind.REPLICA_LOSS_SCALE,
        "LossNotScaledByGlobalBatch",
        "The all-reduced gradient is N times the whole batch's (--strategy).",
        "apply_gradients sums the replicas' gradients, so a loss averaged over each replica's "
        "own examples trains with N times the intended gradient. Divide the per-example loss "
        "by the global batch (tf.nn.compute_average_loss).",
    ),
    Kind(
        ProblemKind.REPLICA_GRADIENT_DIFFERS,
        "AllReducedGradientDiffers",
        "The all-reduced gradient is no multiple of the whole batch's (--strategy).",
        "Splitting the batch changes the gradient: the loss is not a sum over examples (a mean "
        "over unevenly split shares, batch statistics, a reduction across the batch axis).",
    ),
    Kind(
        ProblemKind.REPLICA_VARIABLES_DIFFER,
        "ReplicaCopiesDiffer",
        "Replicas' copies of a variable differ after a step (--strategy).",
        "Every replica applies the same all-reduced update, so copies stay equal unless they "
        "are written per replica (an assign of per-replica data); then the replicas train "
        "different models.",
    ),
    Kind(
        ProblemKind.ALWAYS_ZERO,
        "GradientZeroByConstruction",
        "A variable's gradient is zero at every step by construction.",
        "Every path from the variable to the loss crosses an op whose gradient TensorFlow "
        "defines as zero everywhere (tf.sign): TensorFlow returns a gradient, all zeros, at "
        "every step, so the variable never trains, and neither TensorFlow nor Keras warns. "
        "Pass the gradient straight through the op (`x + tf.stop_gradient(tf.sign(x) - x)`), "
        "or allow it (--allow-none) when the variable is meant to stay.",
    ),
    Kind(
        ProblemKind.MOVED_WITHOUT_GRADIENT,
        "MovedWithoutGradient",
        "An optimizer changes a variable no gradient reaches (JAX).",
        "On JAX a variable no loss reaches gets a gradient of zeros, never None, and the "
        "optimizer steps it anyway: weight decay (AdamW) shrinks it and momentum moves it, so it "
        "changes every step without learning from the loss, and 'did the weights move?' no "
        "longer tells whether it trains (on TensorFlow the gradient is None and Keras skips the "
        "variable). Reconnect it; or, when the cut is meant, keep the optimizer off it "
        "(`trainable = False`, `optimizer.exclude_from_weight_decay(var_names=[...])`). "
        "--allow-none allows the missing gradient, not the move.",
    ),
    Kind(
        FindingKind.EXPLODING,
        "ExplodingGradient",
        "A gradient norm jumped far above its running median.",
        "The next optimizer steps overshoot; NaN often follows. Lower the learning "
        "rate or clip gradients.",
    ),
    Kind(
        FindingKind.DEAD,
        "DeadGradient",
        "Most of a gradient is exactly zero for several recorded steps.",
        "The units feeding the variable output 0 for every input (a dying ReLU) or its "
        "path is masked, so it stops training. Lower the learning rate, use LeakyReLU or "
        "GELU, or check the bias initialization.",
    ),
    Kind(
        FindingKind.VANISHING,
        "VanishingGradient",
        "A gradient is tiny next to its variable's own norm.",
        "The variable barely changes. Look for saturating activations, a missing "
        "normalization or residual connection.",
    ),
    Kind(
        FindingKind.NO_GRADIENT,
        "NoGradient",
        "A variable gets no gradient during training.",
        "TensorFlow returned None: the variable never trains from that step on. "
        "`gradscope run` or `gradscope inspect` names where the path is cut.",
    ),
)

#: The kinds ``check`` (and ``inspect``) report, every one listed in its SARIF rules.
CHECK: tuple[str, ...] = PROBLEM_KINDS
#: The kinds ``gradscope run`` reports.
RUN: tuple[str, ...] = (
    ProblemKind.UNEXPECTED_NONE,
    ProblemKind.NAN,
    ProblemKind.NEVER_TRAINED,
    ProblemKind.UNEXPECTED_CONNECTED,
    ProblemKind.REPLICA_MISMATCH,
    ProblemKind.MOVED_WITHOUT_GRADIENT,
    ProblemKind.ALWAYS_ZERO,
)
#: The kinds only a timeline finds (over training); ``check --timeline`` lists those it holds.
TIMELINE: tuple[str, ...] = (
    FindingKind.EXPLODING,
    FindingKind.DEAD,
    FindingKind.VANISHING,
    FindingKind.NO_GRADIENT,
)


def kind(kind_id: str) -> Kind:
    """The registry's entry for a kind id (``KeyError`` for an unknown one)."""
    return KINDS[str(kind_id)]
