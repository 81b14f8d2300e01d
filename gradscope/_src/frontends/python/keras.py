"""``gradscope.keras.targets``: one loss per output of a compiled Keras model, no code needed.

Keras resolves ``model.compile(loss=...)`` (a dict by output name, a list, one loss for all
outputs, ``"crossentropy"`` picking its flavour from the labels) into one loss per output.
gradscope reuses that resolution rather than repeating it, so each loss is exactly the term
``model.fit`` adds up: the output's loss function times its ``loss_weights`` entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gradscope._src.errors import TargetError
from gradscope._src.frontends.python.target import Target


def _compiled_loss(model: Any) -> Any:
    # NOTE: Keras 3 keeps the resolved compile loss in `model._compile_loss` (a CompileLoss
    # whose `_flat_losses` lists one (path, loss, weight, name) per output); there is no public
    # accessor. Older Keras versions fail here with the message below.
    compiled = getattr(model, "_compile_loss", None)
    if compiled is None:
        if hasattr(model, "compile"):
            raise TargetError(
                f"gradscope.keras.targets: model {getattr(model, 'name', '')!r} has no compiled "
                "loss; call model.compile(loss=...) first"
            )
        raise TargetError(
            "gradscope.keras.targets: expected a compiled Keras 3 model, "
            f"saw {type(model).__name__}"
        )
    return compiled


def _one_output(compiled: Any, flat: Any) -> Any:
    """A copy of the compile loss that computes only one output's term (and no metrics)."""
    # copy.copy would go through Keras' serialization, which CompileLoss refuses.
    single = object.__new__(type(compiled))
    single.__dict__.update(compiled.__dict__)
    single._flat_losses = [flat]
    single._metrics = []
    return single


def targets(
    model: Any,
    x: Any,
    y: Any,
    *,
    sample_weight: Any = None,
    expect: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    name: str | None = None,
    training: bool = True,
) -> Target:
    """One loss per output of a compiled multi-output Keras model.

    Args:
        model: a Keras 3 model compiled with a loss (``model.compile(loss={...})``).
        x: the model's input, as ``model.fit`` takes it.
        y: the targets, as ``model.fit`` takes them (a dict by output name or a list).
        sample_weight: optional, as ``model.fit`` takes it.
        expect: optional, as ``Target.expect`` (by output name).
        name: a name for reports (default: the model's name).
        training: run the model as ``fit`` does (True: Dropout drops, BatchNormalization
            uses the batch), or in inference mode (False).

    Returns:
        A ``Target`` named after the model, with one loss per output (named like the output,
        computed in training mode, as ``fit`` does), one
        more loss ``total`` (what ``fit`` minimizes: every output's weighted term plus
        ``model.losses``), and the model's variables.

    Raises:
        TargetError: the model is not compiled, or ``y`` does not fit its outputs.

    Example:
        >>> # my_pkg/models.py
        >>> def build():
        ...     model = make_two_headed_model()
        ...     model.compile(optimizer="adam", loss={"price": "mse", "kind": "crossentropy"})
        ...     return gradscope.keras.targets(model, x, {"price": p, "kind": k})
    """
    compiled = _compiled_loss(model)
    if not compiled.built:
        try:
            # Keras matches the labels to the outputs while it first computes the loss (and
            # builds); its metric trackers are reset afterwards.
            compiled(y, model(x), sample_weight)
        except Exception as exc:
            raise TargetError(
                f"gradscope.keras.targets: the labels do not fit model {model.name!r}'s "
                f"outputs: {' '.join(str(exc).split())}"
            ) from exc
        for metric in compiled.metrics:  # building may add loss trackers; leave them fresh
            metric.reset_state()
    losses: dict[str, Callable[[], Any]] = {}
    for flat in compiled._flat_losses:
        single = _one_output(compiled, flat)
        key = str(flat.name) if flat.name not in losses else f"{flat.name}_{len(losses)}"
        losses[key] = _loss(single, model, x, y, sample_weight, training)
    losses[_unused(TOTAL, losses)] = _total(model, x, y, sample_weight, training)
    return Target(losses=losses, model=model, expect=expect, name=name or str(model.name))


#: The name of the loss ``fit`` minimizes: every output's term plus ``model.losses``.
TOTAL = "total"


def _unused(name: str, taken: Mapping[str, Any]) -> str:
    while name in taken:
        name = f"fit_{name}"
    return name


def _loss(
    single: Any, model: Any, x: Any, y: Any, sample_weight: Any, training: bool = True
) -> Callable[[], Any]:
    """One output's term, computed as ``fit`` computes it: the model in training mode (Dropout
    drops, BatchNormalization uses the batch's statistics). The model's own losses
    (``add_loss``, weight regularizers) are in ``total`` only, so a term still shows which
    variables its output reaches."""

    def loss() -> Any:
        return single(y, model(x, training=training), sample_weight)

    return loss


def _total(
    model: Any, x: Any, y: Any, sample_weight: Any, training: bool = True
) -> Callable[[], Any]:
    """The loss ``fit`` minimizes, as its train step computes it (``Model.compute_loss``)."""

    def loss() -> Any:
        y_pred = model(x, training=training)
        return model.compute_loss(
            x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training
        )

    return loss
