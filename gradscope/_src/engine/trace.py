"""One traced forward pass, one backward pass per loss, and the cut points of every pair.

Everything happens inside a single ``tf.function`` trace: the model's forward pass, then per
loss one ``tf.gradients`` call with respect to the variables *and* every intermediate tensor
on a path from them (those extra results cost nothing: TensorFlow builds the same backward
graph either way, and unused gradient ops are pruned before execution). Which of those
tensors got a gradient is known at trace time; the cut analysis (``flow``) reads it. The
function then runs once to fetch loss values and gradient norms.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.engine import modes, retrace
from gradscope._src.engine.graph import Extracted, GradientRegistry
from gradscope._src.engine.once import optimized_for_one_run
from gradscope._src.engine.pairs import PairBuilder, pair_outputs
from gradscope._src.engine.protocol import LossEntry, Traceable, VariableEntry
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import BuildError, UsageError
from gradscope._src.gcpause import paused
from gradscope._src.progress import Progress
from gradscope._src.results.facts import (
    EVERY_PAIR,
    Comparison,
    LossFacts,
    RunFacts,
    VariableFacts,
)


class Engine:
    """Traces a model once and answers every loss x variable pair."""

    def __init__(
        self,
        model: Traceable,
        *,
        losses: Sequence[str] | None = None,
        compare: Sequence[tuple[str, str]] = (),
        device: str | None = None,
        progress: Progress | None = None,
        autograph: bool = False,
        pictures: bool = False,
        expand: bool = False,
        one_tape: bool = False,
    ) -> None:
        self.tf = import_tensorflow()
        self.model = model
        self.only = set(losses) if losses else None
        self.compare = list(compare)
        self.device = device
        self.progress = progress or (lambda _phase: None)
        self.autograph = autograph
        self.pictures, self.expand = pictures, expand  # draw a picture per loss (picture.py)
        self.static: dict[str, Any] = {}
        # the eager route (onetape.py) may answer: the front-end's model runs eagerly as well
        # as traced, and nothing asked for needs the traced route
        self.one_tape = one_tape and not (pictures or compare) and modes.one_tape_allowed()
        self.route = "traced"  # or "one-tape", once a run has answered

    def run(self) -> RunFacts:
        with paused():
            return self._run()

    def _run(self) -> RunFacts:
        tf = self.tf
        self._check_device()
        device = self.device or self._default_device()
        if self.one_tape:
            from gradscope._src.engine import onetape

            asked = onetape.Asked(self.tf, self.model, self.only, self.device, self.progress,
                                  self.autograph, self._create_variable)  # fmt: skip
            answered = onetape.answer(asked)
            if answered is not None:
                self.route = "one-tape"
                self.static["variables"] = answered[0]
                return self._run_facts(answered[1], [], device)
        self.progress("tracing the forward and backward passes")
        function = tf.function(
            self._body, autograph=self.autograph, jit_compile=modes.jit_compile()
        )
        try:
            concrete = function.get_concrete_function()
            self.progress("computing gradients")
            kinds = {op.type for op in concrete.graph.get_operations()}
            with optimized_for_one_run(tf, kinds):
                outputs = concrete()
        except (tf.errors.OpError, ValueError) as exc:  # refusing a gradient, failing a run
            raise self.model.trace_error(exc) from exc
        numbers = {k: v.numpy() for k, v in outputs.items()}
        return self._facts(numbers, device)

    def _default_device(self) -> str:
        """Where TensorFlow's own placement puts the work: the first GPU when there is one."""
        return "GPU:0" if self.tf.config.list_logical_devices("GPU") else "CPU:0"

    def _check_device(self) -> None:
        if (
            self.device
            and self.device.startswith("GPU")
            and not self.tf.config.list_logical_devices("GPU")
        ):
            raise UsageError(
                "--device gpu: TensorFlow sees no GPU here "
                "(GPU users install tensorflow[and-cuda]; see the README)"
            )

    def _body(self) -> dict[str, Any]:
        tf = self.tf
        with retrace.placement(tf, self.device), tf.variable_creator_scope(self._create_variable):
            losses, variables = self.model.trace()
            wanted = self.only | {n for pair in self.compare for n in pair} if self.only else None
            losses = [loss for loss in losses if wanted is None or loss.name in wanted]
            graph = tf.compat.v1.get_default_graph()
            handles = [graph.capture(retrace.handle(v.variable)) for v in variables]
            extracted = Extracted(graph.get_operations(), GradientRegistry())
            self.static["variables"] = variables
            builder = PairBuilder(
                tf, self.model, extracted, variables, handles,
                pictures=self.pictures, expand=self.expand,
            )  # fmt: skip
            self.static["builder"] = builder
            outputs: dict[str, Any] = {}
            self.static["losses"] = []
            for index, loss in enumerate(losses):
                self.progress(f"gradients for loss {index + 1} of {len(losses)}: {loss.name}")
                static = builder.differentiate(loss)
                self.static["losses"].append(static)
                outputs.update(pair_outputs(tf, f"l{index}", static))
            self.static["compare"] = _pairs(self.compare, [loss.name for loss in losses])
            outputs.update(builder.compare(self.static["losses"], self.static["compare"]))
            return outputs

    def _create_variable(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        """Create variables that a trace asks for eagerly (``retrace.eager_variable``)."""
        return retrace.eager_variable(self.tf, next_creator, kwargs)

    def _facts(self, numbers: dict[str, Any], device: str) -> RunFacts:
        losses: list[LossFacts] = []
        for index, static in enumerate(self.static["losses"]):
            losses.append(static.facts(numbers, f"l{index}"))
        builder: PairBuilder = self.static["builder"]
        comparisons: list[Comparison] = [
            builder.comparison(numbers, j, a, b) for j, (a, b) in enumerate(self.static["compare"])
        ]
        return self._run_facts(losses, comparisons, device)

    def _run_facts(
        self, losses: list[LossFacts], comparisons: list[Comparison], device: str
    ) -> RunFacts:
        variables = tuple(
            VariableFacts(
                name=v.name,
                shape=_shape_of(v.variable),
                dtype=self.tf.as_dtype(v.variable.dtype).name,
                trainable=v.trainable,
                source=v.source,
                attribute=v.attribute,
            )
            for v in self.static["variables"]
        )
        return RunFacts(
            target=self.model.target,
            tensorflow=str(self.tf.__version__),
            device=device,
            variables=variables,
            losses=tuple(losses),
            comparisons=tuple(comparisons),
            route=self.route,
        )


def _shape_of(variable: Any) -> tuple[int | None, ...]:
    """A variable's static shape, or the shape of its value when it was made with an unknown
    shape (``tf.Variable(..., shape=tf.TensorShape(None))``)."""
    if variable.shape.rank is not None:
        return tuple(variable.shape.as_list())
    return tuple(int(d) for d in variable.read_value().shape)


def _pairs(compare: Sequence[tuple[str, str]], losses: list[str]) -> list[tuple[str, str]]:
    """The pairs to compare, with ``EVERY_PAIR`` expanded over the losses of the run."""
    out: list[tuple[str, str]] = []
    for pair in compare:
        out += itertools.combinations(losses, 2) if tuple(pair) == EVERY_PAIR else [pair]
    return out


__all__ = ["BuildError", "Engine", "LossEntry", "Traceable", "VariableEntry", "flow"]
