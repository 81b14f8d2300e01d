"""A loaded model as a ``gradscope.Target``: its losses written the way a user's script would
write them (``loss_fn(y, model(x, training=...))``), on the user's data or random data.

A Keras model gets one loss for a one-output model (named as ``--loss`` wrote it), or one per
output and ``total`` (their sum, what ``fit`` minimizes); ``compiled`` reuses
``gradscope.keras.targets``, so each term is exactly the one ``fit`` adds up. A SavedModel
signature gets the same, on its named outputs.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.errors import TargetError, UsageError
from gradscope._src.frontends.python.target import Target
from gradscope._src.frontends.saved import data as d
from gradscope._src.frontends.saved.load import Signature
from gradscope._src.frontends.saved.options import LoadOptions, LossChoice
from gradscope._src.printable import printable

TOTAL = "total"


@dataclass(frozen=True)
class Built:
    """A target and what the report says of how it was made."""

    target: Target
    notes: list[str]
    inputs: str  # "random", "arrays" or the file
    labels: str
    losses: dict[str, str]  # report name -> what it computes
    frozen: set[Any]  # tf.Variable refs the report shows frozen
    changed: list[str]  # what each --freeze glob changed
    tracked: set[Any] | None  # refs the model holds (None: it lists none)
    outputs: list[str]  # the model's outputs, in order
    options: dict[str, str]  # report name -> the --loss value that computes it alone


def _fail(path: str, message: str) -> TargetError:
    return TargetError(f"{printable(path)}: {message}")


# --- losses ---------------------------------------------------------------------------------


def keras_loss(choice: LossChoice) -> Callable[[Any, Any], Any]:
    """``loss(y_true, y_pred) -> scalar`` for a Keras loss name (with its arguments) or a
    callable, reduced to a mean as Keras' ``Loss`` objects reduce.

    Raises:
        UsageError: a name Keras does not know (with the closest ones it does).
    """
    import keras

    if choice.callable is not None:
        fn: Any = choice.callable
    else:
        name = str(choice.function)
        try:
            found = keras.losses.get(name)
        except (ValueError, TypeError):
            known = sorted(n for n in dir(keras.losses) if not n.startswith("_") and n != "get")
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "see keras.losses"
            raise UsageError(
                f"--loss {choice.name!r}: Keras has no loss {name!r} ({hint})"
            ) from None
        arguments = dict(choice.arguments)
        if arguments and isinstance(found, keras.losses.Loss):
            try:
                found = keras.losses.get({"class_name": name, "config": arguments})
            except (ValueError, TypeError) as exc:
                raise UsageError(f"--loss {choice.name!r}: {exc}") from None
        elif arguments:
            found = functools.partial(found, **arguments)
        fn = found

    def loss(y_true: Any, y_pred: Any) -> Any:
        value = fn(y_true, y_pred)
        return keras.ops.mean(value)

    return loss


def loss_name(obj: Any) -> str:
    """A loss's name as Keras spells it: ``mse``, ``SparseCategoricalCrossentropy``, ..."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        return str(obj.get("class_name") or obj.get("config") or "")
    inner = getattr(obj, "fn", None)  # a LossFunctionWrapper: the function it wraps
    if inner is not None and hasattr(inner, "__name__"):
        return str(inner.__name__)
    name = getattr(obj, "__name__", None)
    return str(name or type(obj).__name__)


def _per_output(
    choices: Sequence[LossChoice], outputs: Sequence[str], path: str
) -> dict[str, LossChoice]:
    """Which loss each output gets: one choice for every output, one per output in order,
    or ``OUTPUT=NAME`` for the outputs named."""
    named = [c for c in choices if c.output is not None]
    if named and len(named) != len(choices):
        raise UsageError("--loss: give every loss as OUTPUT=NAME, or none of them")
    if named:
        out = {}
        for choice in named:
            if choice.output not in outputs:
                close = difflib.get_close_matches(str(choice.output), outputs, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise UsageError(
                    f"--loss {choice.output}={choice.name}: {printable(path)} has "
                    f"no output {choice.output!r} ({hint}its outputs: "
                    f"{', '.join(outputs)})"
                )
            if choice.output in out:
                raise UsageError(f"--loss: output {choice.output!r} is given two losses")
            out[str(choice.output)] = choice
        return out
    if len(choices) == 1:
        return {name: choices[0] for name in outputs}
    if len(choices) == len(outputs):
        return dict(zip(outputs, choices, strict=True))
    raise UsageError(
        f"--loss: {len(choices)} losses for the {len(outputs)} outputs of "
        f"{printable(path)} ({', '.join(outputs)}): give one for all, one per "
        "output in order, or OUTPUT=NAME"
    )


# --- what every loaded model shares --------------------------------------------------------

#: The outputs by name, computed afresh (inside each loss, so the trace sees the forward pass).
Forward = Callable[[], Mapping[str, Any]]
#: Each output's shape and dtype name, from one eager call.
Shaped = dict[str, tuple[tuple[int, ...], str]]


def _classes(shape: tuple[int, ...]) -> int:
    return shape[-1] if shape else 1


def _kinds(per_output: Mapping[str, LossChoice], shaped: Shaped) -> dict[str, str]:
    return {
        n: d.label_kind(c.name if c.callable else str(c.function), _classes(shaped[n][0]))
        for n, c in per_output.items()
    }


def _labels(options: LoadOptions, shaped: Shaped, kinds: Mapping[str, str]) -> d.Data:
    """The user's labels (any shape the loss accepts: class ids for a 3-way softmax), with as
    many rows as the inputs; else random ones each loss accepts."""
    ports = [d.Port(n, (), "") for n in shaped]
    given = d.read(options.labels, ports, "labels", required=list(kinds))
    if given is None:
        return d.random_labels({n: (shaped[n][0], kinds[n]) for n in kinds})
    rows = {n: shaped[n][0][0] for n in kinds if shaped[n][0]}
    for name, array in given.arrays.items():
        if name in rows and (not array.shape or array.shape[0] != rows[name]):
            raise TargetError(
                f"{printable(str(options.labels))}: label {name!r} has "
                f"{array.shape[0] if array.shape else 0} rows, the inputs {rows[name]}"
            )
    return given


def _named_losses(
    per_output: Mapping[str, LossChoice],
    outputs: Sequence[str],
    forward: Forward,
    y: Mapping[str, Any],
) -> tuple[dict[str, Callable[[], Any]], dict[str, str]]:
    """One loss per output given a loss (named as written when the model has one output),
    and ``total``, their sum, when every output of several has one."""
    functions = {n: keras_loss(c) for n, c in per_output.items()}
    one = len(outputs) == 1

    def term(name: str) -> Callable[[], Any]:
        def loss() -> Any:
            return functions[name](y[name], forward()[name])

        return loss

    def total() -> Any:
        predicted = forward()
        return sum(functions[n](y[n], predicted[n]) for n in per_output)

    losses = {(c.name if one else n): term(n) for n, c in per_output.items()}
    said = {(c.name if one else n): f"{c.name} on output {n}" for n, c in per_output.items()}
    if len(per_output) > 1 and len(per_output) == len(outputs):
        name = _free(TOTAL, losses)
        losses[name] = total
        said[name] = "the sum of every output's loss"
    return losses, said


def _options(
    choices: Sequence[LossChoice], outputs: Sequence[str], losses: Mapping[str, Any]
) -> dict[str, str]:
    """Per report loss, the ``--loss`` value that computes it alone: ``mse`` for a one-output
    model, ``price=mse`` (or ``price=compiled``) for one output of several."""
    if len(outputs) == 1:
        return {name: name for name in losses}
    written = {c.output: c.name for c in choices if c.output is not None}
    default = next((c.name for c in choices if c.output is None), "compiled")
    if len(choices) > 1 and all(c.output is None for c in choices):
        written = {n: c.name for n, c in zip(outputs, choices, strict=False)}
    return {n: f"{n}={written.get(n, default)}" for n in losses if n in outputs}


def _free(name: str, taken: Mapping[str, Any]) -> str:
    while name in taken:
        name = f"fit_{name}"
    return name


def _refused(path: str, what: str, exc: BaseException, hint: str) -> TargetError:
    text = " ".join(str(exc).split())[:300]
    return _fail(path, f"{what} refused its inputs: {type(exc).__name__}: {text}{hint}")


def _data_notes(inputs: d.Data, labels: d.Data) -> list[str]:
    notes = []
    if inputs.source == "random":
        notes.append(
            f"inputs are random (seed {d.SEED}): {'; '.join(inputs.described)}; "
            "--inputs FILE.npy|.npz gives your own"
        )
    if labels.source == "random" and labels.arrays:
        notes.append(
            f"labels are random (seed {d.SEED + 1}), made for each loss: "
            f"{'; '.join(labels.described)}; --labels FILE.npy|.npz gives your own"
        )
    return notes


# --- Keras models ---------------------------------------------------------------------------


def keras_target(model: Any, options: LoadOptions, path: str) -> Built:
    """A Keras model's target, frozen as ``--freeze`` says, on the user's or random data."""
    changed = freeze(model, options.freeze, path)
    ports = _input_ports(model, path, options)
    given = d.read(options.inputs, ports, "inputs")
    inputs = given or d.random_inputs(ports, options.batch, _vocabularies(model))
    x = _structured(model, inputs.arrays, ports)
    try:
        probe = model(x, training=False)  # inference: no moving statistics are written
    except Exception as exc:
        hint = "" if given else " (give them with --inputs)"
        raise _refused(path, "the model", exc, hint) from exc
    values = _named_outputs(model, probe)
    outputs = list(values)
    shaped = {n: (tuple(int(s) for s in v.shape), _dtype(v)) for n, v in values.items()}
    choices = list(options.losses)
    if choices and not all(c.compiled for c in choices):
        if any(c.compiled for c in choices):
            raise UsageError(
                "--loss: compiled cannot be mixed with loss names; give compiled alone (or "
                "OUTPUT=compiled for some outputs), or a loss name for each output"
            )
        per_output = _per_output(choices, outputs, path)
        labels = _labels(options, shaped, _kinds(per_output, shaped))

        def forward() -> Mapping[str, Any]:
            return _named_outputs(model, model(x, training=options.training))

        losses, said = _named_losses(per_output, outputs, forward, labels.arrays)
    else:
        losses, said, labels = _compiled(model, choices, outputs, shaped, x, options, path)
    notes = [*_data_notes(inputs, labels), _mode_note(options.training)]
    target = Target(losses=losses, model=model, name=str(model.name), eager_check=False)
    return Built(
        target, notes, inputs.source, labels.source, said, _frozen(model), changed,
        {tf_ref(v) for v in model.variables}, outputs, _options(choices, outputs, losses),
    )  # fmt: skip


def _dtype(value: Any) -> str:
    dtype = value.dtype
    return str(getattr(dtype, "name", dtype))


def tf_ref(variable: Any) -> Any:
    inner = getattr(variable, "_value", variable)  # keras.Variable -> its tf.Variable
    return inner.ref()


def _frozen(model: Any) -> set[Any]:
    """Weights ``fit`` leaves alone: outside ``model.trainable_variables``."""
    trainable = {tf_ref(v) for v in model.trainable_variables}
    return {tf_ref(v) for v in model.variables if tf_ref(v) not in trainable}


def freeze(model: Any, globs: Sequence[str], path: str) -> list[str]:
    """Set ``trainable`` on the layers each glob matches (a layer's path such as
    ``MobileNetV3Small/conv``, its name, or its class such as ``BatchNormalization``), in
    order, as a script's ``layer.trainable = False`` would; ``!GLOB`` sets it back to True.

    Raises:
        UsageError: a glob that matches no layer (a typo would silently freeze nothing).
    """
    layers = list(model._flatten_layers(include_self=False, recursive=True))
    changed = []
    for glob in globs:
        unfreeze = glob.startswith("!")
        pattern = glob.lstrip("!")
        matched = [layer for layer in layers if _matches(layer, pattern)]
        if not matched:
            names = ", ".join(sorted({str(layer.name) for layer in layers})[:8])
            raise UsageError(
                f"--freeze {glob!r}: no layer of {printable(path)} matches (layers are "
                f"matched by path, name or class: {names}, ...)"
            )
        skipped = [_skip_note(layer, unfreeze) for layer in matched if _would_skip(layer, unfreeze)]
        for layer in matched:
            layer.trainable = not unfreeze  # twice: see _would_skip
            layer.trainable = unfreeze
        verb = "unfroze" if unfreeze else "froze"
        shown = ", ".join(str(getattr(m, "path", None) or m.name) for m in matched[:3])
        more = f" and {len(matched) - 3} more layers" if len(matched) > 3 else ""
        changed.append(f"--freeze {glob} {verb} {shown}{more}")
        changed += skipped
    return changed


def _would_skip(layer: Any, value: bool) -> bool:
    """Whether a script's ``layer.trainable = value`` would do nothing though some of its
    layers differ: Keras' TensorFlow backend skips assigning an attribute the value it holds
    (``KerasAutoTrackable.__setattr__``), so the setter that sets every sublayer never runs
    (a base frozen layer by layer, or saved frozen and loaded: its own flag says True)."""
    if bool(layer.trainable) != value:
        return False
    inner = layer._flatten_layers(include_self=False, recursive=True)
    return any(bool(x.trainable) != value for x in inner)


def _skip_note(layer: Any, value: bool) -> str:
    name = printable(str(layer.name))
    inner = layer._flatten_layers(include_self=False, recursive=True)
    differ = sum(bool(x.trainable) != value for x in inner)
    state = "trainable" if value else "frozen"
    return (
        f"in a script, {name}.trainable = {value} would do nothing here: {name}.trainable is "
        f"already {value} while {_count(differ, 'layer')} inside it "
        f"{'is' if differ == 1 else 'are'} not {state}, and "
        "Keras skips assigning an attribute the value it holds, so the layers inside keep "
        f"their flags; --freeze set them all. Set {name}.trainable = {not value} first, or "
        "each layer's trainable"
    )


def _matches(layer: Any, pattern: str) -> bool:
    names = (str(getattr(layer, "path", "") or ""), str(layer.name), type(layer).__name__)
    return any(name and fnmatch.fnmatchcase(name, pattern) for name in names)


def _input_ports(model: Any, path: str, options: LoadOptions) -> list[d.Port]:
    try:
        tensors = list(model.inputs)
    except (AttributeError, ValueError):
        tensors = []
    if tensors:
        return [d.Port(str(t.name), tuple(t.shape), str(t.dtype)) for t in tensors]
    config = getattr(model, "get_build_config", lambda: None)() or {}
    shape = config.get("input_shape")
    if isinstance(shape, (list, tuple)) and all(isinstance(s, (int, type(None))) for s in shape):
        return [d.Port("input", (None, *tuple(shape)[1:]), "float32")]
    if options.inputs is None:
        raise _fail(
            path,
            "the model does not say what inputs it takes (a subclassed model saved before "
            "it was built): give them with --inputs FILE.npy",
        )
    return [d.Port("input", (), "")]


def _vocabularies(model: Any) -> dict[str, int]:
    """Integer inputs feed Embedding layers: random ids stay below their vocabulary."""
    import keras

    layers = model._flatten_layers(include_self=False)
    sizes = [int(x.input_dim) for x in layers if isinstance(x, keras.layers.Embedding)]
    if not sizes:
        return {}
    try:
        names = [str(t.name) for t in model.inputs]
    except (AttributeError, ValueError):
        names = ["input"]
    return {name: min(sizes) for name in names}


def _structured(model: Any, arrays: Mapping[str, Any], ports: Sequence[d.Port]) -> Any:
    if len(ports) == 1:
        return arrays[ports[0].name]
    if isinstance(getattr(model, "_inputs_struct", None), dict):
        return {p.name: arrays[p.name] for p in ports}
    return [arrays[p.name] for p in ports]


def _named_outputs(model: Any, value: Any) -> dict[str, Any]:
    """A model's outputs by name: a dict's keys, else ``output_names`` (else the last
    layer's name, or ``output_0``, ``output_1``, ...)."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    flat = list(value) if isinstance(value, (list, tuple)) else [value]
    try:
        names = [str(n) for n in model.output_names]
    except (AttributeError, ValueError):
        names = []
    if len(names) != len(flat):
        last = getattr(model, "layers", None) or []
        one = len(flat) == 1 and last
        names = [str(last[-1].name)] if one else [f"output_{i}" for i in range(len(flat))]
    return dict(zip(names, flat, strict=True))


def _compiled(
    model: Any,
    choices: Sequence[LossChoice],
    outputs: list[str],
    shaped: Shaped,
    x: Any,
    options: LoadOptions,
    path: str,
) -> tuple[dict[str, Callable[[], Any]], dict[str, str], d.Data]:
    """The losses ``compile()`` saved, as ``gradscope.keras.targets`` computes them: one per
    output and ``total`` (what ``fit`` minimizes), or for a one-output model ``compiled``."""
    from gradscope._src.frontends.python.keras import targets

    compiled = getattr(model, "_compile_loss", None)
    if compiled is None:
        raise UsageError(
            f"{printable(path)}: --loss compiled: the model was saved without a compiled "
            "loss; name the loss: --loss mse, --loss sparse_categorical_crossentropy, or "
            "--loss OUTPUT=NAME for one output"
        )
    given = _compiled_per_output(compiled._user_loss, outputs)
    wanted = [str(c.output) for c in choices if c.output is not None]
    for name in wanted:
        if name not in outputs:
            raise UsageError(
                f"--loss {name}=compiled: {printable(path)} has no output {name!r} (its "
                f"outputs: {', '.join(outputs)})"
            )
    kinds = {n: d.label_kind(loss_name(given.get(n, "")), _classes(shaped[n][0])) for n in outputs}
    labels = _labels(options, shaped, kinds)
    y = labels.arrays
    if isinstance(compiled._user_loss, Mapping) or isinstance(
        getattr(model, "_outputs_struct", None), Mapping
    ):
        structured: Any = {n: y[n] for n in outputs}
    else:
        structured = y[outputs[0]] if len(outputs) == 1 else [y[n] for n in outputs]
    made = dict(targets(model, x, structured, training=options.training).losses)
    total = next(n for n in reversed(list(made)) if n.endswith(TOTAL))
    if len(outputs) == 1:
        what = f"the compiled loss ({loss_name(given.get(outputs[0], ''))}) plus model.losses"
        return {"compiled": made[total]}, {"compiled": what + ", as fit computes it"}, labels
    lossless = [n for n in outputs if n not in made]  # compile(loss=[..., None]): no term
    for name in wanted:
        if name in lossless:
            raise UsageError(
                f"--loss {name}=compiled: output {name!r} of {printable(path)} was compiled "
                "with no loss (None), so fit trains nothing from it; name one: "
                f"--loss {name}=mse"
            )
    losses = {n: made[n] for n in (wanted or outputs) if n in made}
    said = {n: f"the compiled loss of output {n} ({loss_name(given.get(n, ''))})" for n in losses}
    if not wanted:
        losses[TOTAL] = made[total]
        said[TOTAL] = "what fit minimizes: every output's weighted term plus model.losses"
        if lossless:
            said[TOTAL] += (
                f"; output{'s' if len(lossless) > 1 else ''} {', '.join(lossless)} compiled "
                "with no loss (None): fit trains nothing from "
                + ("them" if len(lossless) > 1 else "it")
            )
    return losses, said, labels


def _compiled_per_output(user_loss: Any, outputs: Sequence[str]) -> dict[str, Any]:
    """The loss ``compile`` was given for each output (one for all, a list, a mapping)."""
    if isinstance(user_loss, Mapping):
        return {str(k): v for k, v in user_loss.items()}
    if isinstance(user_loss, (list, tuple)) and len(user_loss) == len(outputs):
        return dict(zip(outputs, user_loss, strict=True))
    return {n: user_loss for n in outputs}


def idle_batch_norms(model: Any, graph: Any) -> str | None:
    """With ``--training``: the trainable BatchNormalization layers whose moving statistics
    the trace never wrote, so they ran in inference mode (a custom layer calls them with
    ``training=False``; a functional model's recorded ``training=False`` does not, in Keras
    3), as a note; None when none."""
    import keras

    from gradscope._src.frontends.python import isolation

    layers = [
        layer
        for layer in model._flatten_layers(include_self=False, recursive=True)
        if isinstance(layer, keras.layers.BatchNormalization) and layer.trainable
    ]
    means = [getattr(layer.moving_mean, "_value", layer.moving_mean) for layer in layers]
    if not layers or graph is None:
        return None
    written = {v.ref() for v in isolation.written(graph, graph.get_operations(), means)}
    idle = [
        str(layer.name) for layer, m in zip(layers, means, strict=True) if m.ref() not in written
    ]
    if not idle:
        return None
    names = ", ".join(idle[:3]) + (f" and {len(idle) - 3} more" if len(idle) > 3 else "")
    return (
        f"{_count(len(idle), 'BatchNormalization layer')} ({names}) are trainable but ran in "
        "inference mode under --training (a layer calls them with training=False): they "
        "normalize with their moving statistics, which fit never updates; their gamma and "
        "beta still get gradients"
    )


def _mode_note(training: bool) -> str:
    if training:
        return (
            "layers ran in training mode (training=True, as fit runs them): Dropout drops, "
            "BatchNormalization normalizes by the batch"
        )
    return (
        "layers ran in inference mode (training=False): Dropout is off and "
        "BatchNormalization uses its moving statistics; --training runs them as fit does"
    )


# --- SavedModel signatures ------------------------------------------------------------------


def signature_target(signature: Signature, options: LoadOptions, path: str) -> Built:
    """A SavedModel signature's target: its captured variables, losses on its outputs."""
    if options.training:
        raise UsageError(
            f"{printable(path)}: --training: a SavedModel signature runs its graph as it was "
            "saved (model.export saves inference mode); there is no training mode to choose"
        )
    if any(c.compiled for c in options.losses) or not options.losses:
        raise UsageError(
            f"{printable(path)}: a SavedModel keeps no compile() configuration: name the "
            "loss: --loss mse, --loss OUTPUT=NAME for one output"
        )
    ports = [
        d.Port(n, tuple(s.shape.as_list()) if s.shape.rank is not None else (), s.dtype.name)
        for n, s in signature.inputs.items()
    ]
    given = d.read(options.inputs, ports, "inputs")
    inputs = given or d.random_inputs(ports, options.batch, {})
    function, x = signature.function, dict(inputs.arrays)

    def forward() -> Mapping[str, Any]:
        out = function(**x)
        return out if isinstance(out, Mapping) else {"output_0": out}

    try:
        probe = forward()
    except Exception as exc:
        hint = "" if given else " (give them with --inputs)"
        raise _refused(path, f"signature {signature.name!r}", exc, hint) from exc
    outputs = list(probe)
    shaped = {n: (tuple(int(s) for s in v.shape), _dtype(v)) for n, v in probe.items()}
    per_output = _per_output(list(options.losses), outputs, path)
    labels = _labels(options, shaped, _kinds(per_output, shaped))
    losses, said = _named_losses(per_output, outputs, forward, labels.arrays)
    read = _signature_variables(signature, options)
    target = Target(losses=losses, variables=read.ordered, name=path, eager_check=False)
    notes = _data_notes(inputs, labels) + read.notes
    options_ = _options(list(options.losses), outputs, losses)
    return Built(
        target, notes, inputs.source, labels.source, said, read.frozen, read.changed,
        read.tracked, outputs, options_,
    )  # fmt: skip


@dataclass(frozen=True)
class _Read:
    """The variables a signature reads, trainable ones first, and what is known of them."""

    ordered: list[Any]
    frozen: set[Any]  # refs: outside the SavedModel's trainable_variables, or --freeze
    tracked: set[Any] | None  # refs the loaded object lists (None: it lists none)
    changed: list[str]  # what each --freeze glob changed
    notes: list[str]


def _signature_variables(signature: Signature, options: LoadOptions) -> _Read:
    """Which variables the signature reads, and which of them training reaches: a Keras
    export lists ``trainable_variables`` (its frozen layers' weights are outside it, though
    their tf.Variables say trainable); a tf.Module's SavedModel lists none, and each
    tf.Variable's own flag holds."""
    read = list(signature.function.variables)
    listed = getattr(signature.loaded, "trainable_variables", None)
    everything = getattr(signature.loaded, "variables", None)
    trainable = {v.ref() for v in (listed if listed is not None else read) if v.trainable}
    file_frozen = {v.ref() for v in read if v.ref() not in trainable}
    frozen, changed = set(file_frozen), []
    for glob in options.freeze:
        matched = [v for v in read if fnmatch.fnmatchcase(_plain(v), glob.lstrip("!"))]
        if not matched:
            shown = ", ".join(_plain(v) for v in read[:6])
            raise UsageError(
                f"--freeze {glob!r}: no variable of signature {signature.name!r} matches (a "
                f"SavedModel's are matched by name: {shown}, ...)"
            )
        unfreeze = glob.startswith("!")
        for v in matched:
            (frozen.discard if unfreeze else frozen.add)(v.ref())
        verb = "unfroze" if unfreeze else "froze"
        changed.append(f"--freeze {glob} {verb} {_count(len(matched), 'variable')}")
    ordered = [v for v in read if v.ref() not in frozen] + [v for v in read if v.ref() in frozen]
    tracked = {v.ref() for v in everything} if everything is not None else None
    others = [n for n in signature.names if n != signature.name]
    also = (
        f" (the SavedModel also has {', '.join(others)}; --signature picks one)" if others else ""
    )
    notes = [
        f"signature {signature.name!r} called{also}; it reads {_count(len(read), 'variable')}: "
        f"{len(read) - len(frozen)} trainable, {len(frozen)} frozen"
    ]
    if listed is None and read:
        notes.append(
            "the SavedModel lists no trainable_variables (saved from a tf.Module): training "
            "code must collect the variables itself; keras.layers.TFSMLayer tracks every "
            "variable the signature reads, but a signature called inside a Lambda layer "
            "leaves them all untracked, and fit never updates them"
        )
    flagged = [_plain(v) for v in read if v.ref() in file_frozen and v.trainable]
    if flagged:
        listed_names = ", ".join(flagged[:3]) + (", ..." if len(flagged) > 3 else "")
        notes.append(
            f"{_count(len(flagged), 'variable')} the SavedModel lists as non-trainable "
            f"({listed_names}) have trainable tf.Variables: keras.layers.TFSMLayer tracks "
            "them as trainable, so fine-tuning through it trains what the saved model had frozen"
        )
    return _Read(ordered, frozen, tracked, changed, notes)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _plain(variable: Any) -> str:
    name = str(variable.name)
    return name[:-2] if name.endswith(":0") else name
