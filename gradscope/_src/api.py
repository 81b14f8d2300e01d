"""The Python API: ``inspect`` a spec or target and get a ``Report``; the CLI calls the same."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from gradscope._src import arguments as given
from gradscope._src import pipeline
from gradscope._src.analysis.check import ExpectMap
from gradscope._src.errors import GradscopeError, UsageError
from gradscope._src.frontends.yaml.model import DEFAULT_MAX_ELEMENTS
from gradscope._src.progress import Progress, prefixed, quiet
from gradscope._src.results import report as m
from gradscope._src.results.check import CheckResult
from gradscope._src.results.facts import EVERY_PAIR
from gradscope._src.results.report import Report

if TYPE_CHECKING:
    from gradscope._src.engine.picture.draw import Picture
    from gradscope._src.results.diff import DiffMatrix, DiffReport
    from gradscope._src.results.run import RunReport

__all__ = ["check", "diff", "graph", "inspect", "run"]


def _run(target: Any, **fields: Any) -> pipeline.Outcome:
    fields["device"] = pipeline.device_name(fields.get("device"))
    fields["distribution"] = pipeline.distribution(fields.pop("strategy", "default"),
                                                   fields.pop("replicas", None))  # fmt: skip
    for key in ("losses", "compare"):
        if fields.get(key) is not None:
            fields[key] = tuple(fields[key])
    return pipeline.run(target, pipeline.Request(**fields))


#: How the command line and the API spell the options of a saved model, for errors.
_SPELLED = {"safe_mode": "--no-safe-mode (safe_mode=False)", "loss": "--loss (loss=)"}


def _same(value: Any, default: Any) -> bool:
    return isinstance(value, bool) and value == default  # arrays compare element-wise


def saved_target(target: Any, **given: Any) -> Any:
    """A saved model with its options (``loss=``, ``inputs=``, ... as ``inspect`` takes them);
    any other target as it is, refused when given options only a saved model takes.

    Raises:
        UsageError: saved-model options for a target that is not one.
    """
    from gradscope._src.frontends.saved import LoadOptions, SavedTarget, is_saved_target
    from gradscope._src.frontends.saved.options import freeze_globs, loss_choices

    defaults = {"training": False, "safe_mode": True}
    named = [k for k, v in given.items() if v is not None and not _same(v, defaults.get(k))]
    if not is_saved_target(target):
        if named:
            spelled = [_SPELLED.get(k, f"--{k.replace('_', '-')} ({k}=)") for k in named]
            raise UsageError(
                f"{', '.join(spelled)}: only for a saved model (a .keras or .h5 file, a "
                f"SavedModel directory, a Keras model); {getattr(target, 'path', target)} is "
                "not one"
            )
        return target
    objects = given["custom_objects"]
    mapping = tuple(objects.items()) if isinstance(objects, Mapping) else ()
    strings = () if objects is None or mapping else tuple(
        [objects] if isinstance(objects, str) else objects)  # fmt: skip
    options = LoadOptions(
        losses=loss_choices(given["loss"]), inputs=given["inputs"], labels=given["labels"],
        freeze=freeze_globs(given["freeze"]), training=bool(given["training"]),
        custom_objects=strings, custom_mapping=mapping, safe_mode=bool(given["safe_mode"]),
        signature=given["signature"],
    )  # fmt: skip
    source = target.source if isinstance(target, SavedTarget) else target
    return SavedTarget(source, options)


def inspect(
    target: Any,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    pictures: bool = False,
    numeric: bool = False,
    strategy: str = "default",
    replicas: int | None = None,
    mode: str | Sequence[str] = "function",
    loss: Any = None,
    inputs: Any = None,
    labels: Any = None,
    freeze: str | Sequence[str] | None = None,
    training: bool = False,
    custom_objects: Sequence[str] | Mapping[str, Any] | None = None,
    safe_mode: bool = True,
    signature: str | None = None,
) -> Report:
    """Every loss x every variable of a spec, a Python target or a saved model: status,
    norm, cut points.

    Args:
        target: a spec path (``configs/multitask.yaml``) or a loaded ``Spec``; a Python
            target: ``"my_pkg.models:build"``, ``"path/to/train.py:build"``, a
            ``gradscope.Target``, a mapping with its fields, or a zero-argument function
            returning one of those; or a saved model: a ``.keras`` or ``.h5`` file, a
            SavedModel directory, or a Keras model object.
        losses: only these losses (default: all).
        device: ``"auto"`` (TensorFlow's placement), ``"cpu"``, ``"gpu"`` or ``"GPU:1"``.
        max_elements: the largest tensor a spec may ask for (specs only).
        progress: called with a short phase description as work proceeds.
        pictures: also draw each loss's gradient-flow picture (``report.picture(loss)``),
            for the markdown and html formats.
        numeric: also compare every ``ok`` gradient with central finite differences (in
            float64 where a spec allows; up to 16 coordinates per variable): each such pair
            gets a ``numeric`` verdict (``agrees``, ``differs``, ``expected-difference``,
            ``skipped``), and an unexplained difference is a ``numeric-differs`` problem.
        strategy: ``"mirrored"`` or ``"multiworker"`` runs each loss per replica under that
            ``tf.distribute`` strategy (a spec's inputs split along their first axis; a Python
            target's losses run whole on every replica, its data being closed over): each
            pair then shows the all-reduced gradient (a target's: the replicas' mean) and lists
            every replica's (``pair.replicas``), and replicas that disagree are a
            ``replica-mismatch`` problem. ``"default"``: one device.
        replicas: how many replicas (default 2 with a strategy; logical CPU devices, or GPUs
            when there are enough; ``multiworker``: one local worker process each).
        mode: how gradients are computed: ``"function"`` (traced, as a ``tf.function``
            training step; the default), ``"xla"`` (traced with ``jit_compile=True``) or
            ``"eager"`` (a ``GradientTape`` run eagerly). Several modes: the report is the
            first's, and its notes name every pair whose status or norm differs between
            them (a parity check).
        loss: a saved model's loss: ``"compiled"`` (what ``compile()`` saved; the default
            when there is one), a Keras loss name (``"mse"``,
            ``"SparseCategoricalCrossentropy(from_logits=True)"``) for every output, a list
            of them (one per output, in order), ``"OUTPUT=NAME"`` or a mapping
            ``{output: name or callable}``, or a callable ``loss(y_true, y_pred)``. A
            one-output model gets one loss, named as written; several outputs get one loss
            per output and ``total``, their sum.
        inputs: a saved model's inputs: a ``.npy``/``.npz`` path, an array, a list or a
            mapping by input name (default: random values of the inputs' shapes, said in a
            note).
        labels: the same for its outputs (default: random labels each loss accepts).
        freeze: globs over a saved model's layers (path, name or class, as
            ``"MobileNetV3Small"`` or ``"BatchNormalization"``), frozen in order as a
            script's ``layer.trainable = False`` would; ``"!GLOB"`` unfreezes. A SavedModel's
            globs match its variables' names.
        training: run a Keras model's layers in training mode (Dropout, BatchNormalization
            by the batch), as ``fit`` does; default inference mode.
        custom_objects: the custom classes and functions a saved model needs:
            ``"my_pkg.layers:MyLayer"`` / ``"path/to/layers.py:MyLayer"`` strings (imported,
            which runs that module) or a mapping ``{name: class}``.
        safe_mode: keep Keras' safe_mode on (the default): a ``Lambda`` layer's bytecode or
            a ``TFSMLayer`` in the file is refused, as are SavedModel ops that touch files or
            run Python. False runs them: only for files you trust as your own code.
        signature: the SavedModel signature to call (default ``serving_default``).

    Returns:
        The ``Report``; ``report.to_dict()`` is the JSON report, and rich consoles and
        notebooks print it as the table (``Report.__rich__``).

    Raises:
        SpecErrors: the spec is invalid. BuildError: TensorFlow refused a node.
        TargetError: the Python target cannot be imported, called or understood.
        UsageError: an unknown loss name.

    Example:
        >>> report = gradscope.inspect("configs/multitask.yaml")
        >>> report.loss("loss_1").pair("task2/w").status
        'none:disconnected'
        >>> def build():
        ...     w = tf.Variable(2.0, name="w")
        ...     return gradscope.Target(losses={"frozen": lambda: tf.stop_gradient(w) * 3.0})
        >>> gradscope.inspect(build).loss("frozen").pair("w").cut_points[0].op
        'StopGradient'
    """
    who = "gradscope.inspect"
    given.target(who, target)
    losses = given.strings(who, "losses", losses, optional=True)
    given.check_common(who, device=device, max_elements=max_elements, progress=progress,
                       strategy=strategy, replicas=replicas)  # fmt: skip
    given.flag(who, "pictures", pictures)
    given.flag(who, "numeric", numeric)
    wanted = given.modes(who, mode)
    target = saved_target(
        target,
        loss=loss,
        inputs=inputs,
        labels=labels,
        freeze=freeze,
        training=training,
        custom_objects=custom_objects,
        safe_mode=safe_mode,
        signature=signature,
    )
    return pipeline.in_modes(
        lambda: _run(
            target, losses=losses, device=device, max_elements=max_elements, progress=progress,
            pictures=pictures, numeric=numeric, strategy=strategy, replicas=replicas,
        ).report,
        wanted,
    )  # fmt: skip


@overload
def diff(
    target: Any,
    loss_a: str,
    loss_b: str,
    *,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    strategy: str = "default",
    replicas: int | None = None,
) -> DiffReport: ...


@overload
def diff(
    target: Any,
    loss_a: None = None,
    loss_b: None = None,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    strategy: str = "default",
    replicas: int | None = None,
) -> DiffMatrix: ...


def diff(
    target: Any,
    loss_a: str | None = None,
    loss_b: str | None = None,
    *,
    losses: Sequence[str] | None = None,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    strategy: str = "default",
    replicas: int | None = None,
    loss: Any = None,
    inputs: Any = None,
    labels: Any = None,
    freeze: str | Sequence[str] | None = None,
    training: bool = False,
    custom_objects: Sequence[str] | Mapping[str, Any] | None = None,
    safe_mode: bool = True,
    signature: str | None = None,
) -> DiffReport | DiffMatrix:
    """Two losses side by side, or the whole-model cosine of every pair of losses.

    Everything comes from one traced forward pass, the same as ``inspect``'s: one backward
    pass per loss, and the dot products of the gradients inside the same trace.

    Args:
        target: anything ``inspect`` accepts (a spec path, a ``Spec``, a Python target, ...).
        loss_a: the first loss; with ``loss_b``, a ``DiffReport`` of the two.
        loss_b: the second loss.
        losses: without ``loss_a``/``loss_b``: the losses of the matrix (default: all).
        device: ``"auto"`` (TensorFlow's placement), ``"cpu"``, ``"gpu"`` or ``"GPU:1"``.
        max_elements: the largest tensor a spec may ask for.
        progress: called with a short phase description as work proceeds.
        strategy: as for ``inspect``: statuses and norms are the all-reduced gradients';
            cosines compare the one-device gradients of the whole batch.
        replicas: as for ``inspect``.
        loss: a saved model's loss, as for ``inspect`` (``loss_a`` and ``loss_b`` then name
            two of the losses it makes: two outputs, or an output and ``total``).
        inputs: as for ``inspect``; so are ``labels``, ``freeze``, ``training``,
            ``custom_objects``, ``safe_mode`` and ``signature``.
        labels: as for ``inspect``.
        freeze: as for ``inspect``.
        training: as for ``inspect``.
        custom_objects: as for ``inspect``.
        safe_mode: as for ``inspect``.
        signature: as for ``inspect``.

    Returns:
        A ``DiffReport`` for two losses, a ``DiffMatrix`` otherwise; ``.to_dict()`` of either
        is its JSON report.

    Raises:
        SpecErrors: the spec is invalid. BuildError: TensorFlow refused a node.
        UsageError: an unknown loss name, or one loss where two (or none) were expected.

    Example:
        >>> d = gradscope.diff("configs/gan-grad-loss.yaml", "d_loss", "g_loss_all")
        >>> d.diff.variable("disc/w").cosine
        -1.0
        >>> gradscope.diff("configs/multitask.yaml").cosine("loss_1", "loss_2")
        -0.144...
    """
    from gradscope._src.analysis.diff import compare, matrix
    from gradscope._src.results.diff import DiffReport

    who = "gradscope.diff"
    given.target(who, target)
    given.text(who, "loss_a", loss_a, optional=True)
    given.text(who, "loss_b", loss_b, optional=True)
    losses = given.strings(who, "losses", losses, optional=True)
    given.check_common(who, device=device, max_elements=max_elements, progress=progress,
                       strategy=strategy, replicas=replicas)  # fmt: skip
    options: dict[str, Any] = {"device": device, "max_elements": max_elements,
                               "strategy": strategy, "replicas": replicas}  # fmt: skip
    options["progress"] = progress
    target = saved_target(
        target,
        loss=loss,
        inputs=inputs,
        labels=labels,
        freeze=freeze,
        training=training,
        custom_objects=custom_objects,
        safe_mode=safe_mode,
        signature=signature,
    )
    if losses and (loss_a is not None or loss_b is not None):
        raise UsageError("diff: give two losses (loss_a, loss_b) or losses=, not both")
    if loss_a is not None and loss_b is not None:
        out = _run(target, losses=[loss_a, loss_b], compare=[(loss_a, loss_b)], **options)
        return DiffReport(out.report, compare(out.report, out.facts.comparisons[0]))
    names = list(dict.fromkeys(losses or [n for n in (loss_a, loss_b) if n is not None]))
    if len(names) == 1:
        raise UsageError(
            f"diff: only one loss given ({names[0]!r}); name two to compare them side by side, "
            "or none for the matrix of every pair"
        )
    pairs = list(itertools.combinations(names, 2)) if names else [EVERY_PAIR]
    out = _run(target, losses=names or None, compare=pairs, **options)
    return matrix(out.report, out.facts.comparisons)


def check(
    targets: Any,
    *,
    expect: ExpectMap | None = None,
    baseline: str | None = None,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    numeric: bool = False,
    strategy: str = "default",
    replicas: int | None = None,
    loss: Any = None,
    inputs: Any = None,
    labels: Any = None,
    freeze: str | Sequence[str] | None = None,
    training: bool = False,
    custom_objects: Sequence[str] | Mapping[str, Any] | None = None,
    safe_mode: bool = True,
    signature: str | None = None,
) -> CheckResult:
    """The CI gate: run every target once and hold it to its ``expect`` and the policy.

    A check fails on any ``nan`` gradient, any pair that contradicts ``expect``, and any
    trainable variable no loss trains unless an ``expect.<loss>.none`` pattern names it.

    Args:
        targets: one target (what ``inspect`` accepts: a spec path, a ``Spec``, a Python target
            string, a ``Target``, ...) or a list of them; several give one result.
        expect: ``{loss: {"none": [globs], "connected": [globs], "numeric": [globs]}}`` to
            use instead of each target's own ``expect`` block (for Python targets and tests).
        baseline: a JSON report from ``inspect`` or ``check``; the problems it holds are
            marked known and do not fail the check.
        device: ``"auto"`` (TensorFlow's placement), ``"cpu"``, ``"gpu"`` or ``"GPU:1"``.
        max_elements: the largest tensor a spec may ask for.
        progress: called with a short phase description as work proceeds.
        numeric: also compare every ``ok`` gradient with finite differences and fail on
            ``numeric-differs`` (see ``inspect``).
        strategy: as for ``inspect``; also fails on the ``replica-*`` problems.
        replicas: as for ``inspect``.
        loss: for the saved models among ``targets``, as for ``inspect``.
        inputs: as for ``inspect``.
        labels: as for ``inspect``.
        freeze: as for ``inspect``.
        training: as for ``inspect``.
        custom_objects: as for ``inspect``.
        safe_mode: as for ``inspect``.
        signature: as for ``inspect``.

    Returns:
        The ``CheckResult``: ``passed``, ``exit_code``, ``failures``, ``to_dict()``.

    Raises:
        SpecErrors: one or more targets are invalid (every error of every target; no
            partial result). UsageError: an unreadable baseline, a bad ``expect``.

    Example:
        >>> result = gradscope.check(["configs/multitask.yaml", "configs/stop-gradient.yaml"])
        >>> result.passed, int(result.exit_code)
        (True, 0)
    """
    from gradscope._src.analysis.baseline import load_baseline
    from gradscope._src.analysis.check import check_reports
    from gradscope._src.errors import SpecError, SpecErrors, TargetError

    who = "gradscope.check"
    given.expect(who, expect)
    given.path(who, "baseline", baseline, optional=True)
    given.check_common(who, device=device, max_elements=max_elements, progress=progress,
                       strategy=strategy, replicas=replicas)  # fmt: skip
    given.flag(who, "numeric", numeric)
    items = _unique(targets) if isinstance(targets, (list, tuple)) else [targets]
    if not items:
        raise UsageError(f"{who}: targets must name at least one spec or target, saw []")
    for item in items:
        given.target(who, item, "each of targets" if isinstance(targets, (list, tuple)) else
                     "targets")  # fmt: skip
    held = load_baseline(baseline) if baseline is not None else None  # before any TensorFlow
    items = _saved_items(
        items,
        loss=loss,
        inputs=inputs,
        labels=labels,
        freeze=freeze,
        training=training,
        custom_objects=custom_objects,
        safe_mode=safe_mode,
        signature=signature,
    )
    reports: list[m.Report] = []
    errors: list[GradscopeError] = []
    for index, target in enumerate(items):
        name = getattr(target, "path", target)
        label = f"[{index + 1}/{len(items)}] {name}: " if len(items) > 1 else ""
        try:
            report = _run(
                target, device=device, max_elements=max_elements,
                progress=prefixed(progress, label), numeric=numeric, expect=expect,
                strategy=strategy, replicas=replicas,
            ).report  # fmt: skip
        except (SpecErrors, SpecError, TargetError) as exc:  # keep going: report every error
            errors.append(exc)
            continue
        reports.append(report)
        if report.unmatched and expect is None:  # a typo in a pattern would turn the gate off
            errors.append(SpecErrors(report.unmatched))
    if errors:
        raise _combined(errors)
    return check_reports(reports, held)


def _saved_items(items: list[Any], **given: Any) -> list[Any]:
    """``check``'s targets, the saved models among them with their options (which are
    refused only when no target is a saved model)."""
    from gradscope._src.frontends.saved import is_saved_target

    if not any(is_saved_target(t) for t in items):
        return [saved_target(t, **given) for t in items]  # refused if any option was given
    return [saved_target(t, **given) if is_saved_target(t) else t for t in items]


def _unique(targets: Sequence[Any]) -> list[Any]:
    """The targets in order, each once (a glob and an explicit path may name the same file)."""
    seen: set[object] = set()
    out = []
    for t in targets:
        key = t if isinstance(t, str) else id(t)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _combined(errors: Sequence[Exception]) -> Exception:
    """One exception for every target that failed: ``SpecErrors`` when they all are spec errors."""
    from gradscope._src.errors import ErrorGroup, GradscopeError, SpecError, SpecErrors

    if len(errors) == 1:
        return errors[0]
    if all(isinstance(e, (SpecErrors, SpecError)) for e in errors):
        flat: list[SpecError] = []
        for e in errors:
            if isinstance(e, SpecErrors):
                flat.extend(e.errors)
            elif isinstance(e, SpecError):
                flat.append(e)
        return SpecErrors(flat)
    return ErrorGroup([e for e in errors if isinstance(e, GradscopeError)])


def graph(
    target: Any,
    loss: str | None = None,
    *,
    expand: bool = False,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    progress: Progress = quiet,
    inputs: Any = None,
    labels: Any = None,
    freeze: str | Sequence[str] | None = None,
    training: bool = False,
    custom_objects: Sequence[str] | Mapping[str, Any] | None = None,
    safe_mode: bool = True,
    signature: str | None = None,
) -> Picture:
    """The gradient-flow picture of one loss, as ``gradscope graph`` draws it.

    Args:
        target: anything ``inspect`` accepts.
        loss: the loss to draw; may be left out when the target has exactly one. For a
            saved model, the loss to compute, as ``inspect``'s ``loss`` (one that makes a
            single loss: ``"mse"`` on a one-output model, ``"out_a=compiled"``).
        expand: one box per TensorFlow op, not per spec node or layer.
        device: as for ``inspect``.
        max_elements: the largest tensor a spec may ask for.
        progress: called with a short phase description as work proceeds.
        inputs: for a saved model, as for ``inspect``; so are ``labels``, ``freeze``,
            ``training``, ``custom_objects``, ``safe_mode`` and ``signature``.
        labels: as for ``inspect``.
        freeze: as for ``inspect``.
        training: as for ``inspect``.
        custom_objects: as for ``inspect``.
        safe_mode: as for ``inspect``.
        signature: as for ``inspect``.

    Returns:
        The ``Picture`` (boxes, links, cut points); ``gradscope.draw`` draws a report's pictures as
        SVG, PNG, DOT, Mermaid or HTML.

    Raises:
        UsageError: no ``loss`` given and the target has several, or an unknown loss.
    """
    who = "gradscope.graph"
    given.target(who, target)
    given.text(who, "loss", loss, optional=True)
    given.flag(who, "expand", expand)
    given.check_common(who, device=device, max_elements=max_elements, progress=progress)
    from gradscope._src.frontends.saved import is_saved_target

    saved = is_saved_target(target)
    target = saved_target(
        target, loss=loss if saved else None, inputs=inputs, labels=labels, freeze=freeze,
        training=training, custom_objects=custom_objects, safe_mode=safe_mode,
        signature=signature,
    )  # fmt: skip
    report = _run(
        target, losses=[loss] if loss and not saved else None, device=device,
        max_elements=max_elements, progress=progress, pictures=True, expand=expand,
    ).report  # fmt: skip
    names = [x.name for x in report.losses]
    if len(names) != 1:
        raise UsageError(f"{report.spec} has {len(names)} losses; pick one: {', '.join(names)}")
    picture = report.picture(names[0])
    assert picture is not None  # pictures=True draws one per loss
    return picture


def run(
    script: str,
    *args: str,
    module: bool = False,
    steps: int = 1,
    stop: bool = False,
    allow_none: Sequence[str] = (),
    strategy: str | None = None,
    replicas: int | None = None,
    keep_going: bool | None = None,
) -> RunReport:
    """Run a training program as ``gradscope run`` does, watching its gradient calls.

    The program runs in this process as ``python SCRIPT ARGS`` would (``sys.argv``,
    ``__main__``); every ``GradientTape.gradient``, ``tf.gradients``, ``compute_gradients``,
    ``apply_gradients`` and ``fit`` it makes is reported for its first ``steps`` executions;
    the later ones run unwatched, and the program runs to its end.

    Args:
        script: the script's path, or with ``module`` a module name (``python -m``).
        *args: the program's own arguments.
        module: run ``script`` as a module.
        steps: executions watched per call site; the later ones run unwatched, at the
            program's own speed.
        stop: stop the program at a site's first execution past ``steps`` (a quick look:
            the rest does not run; ``RunReport.stop`` says where, and the sites seen).
        allow_none: globs of sources whose missing gradient is not a problem.
        strategy: ``"mirrored"``: as ``replicas`` (2 unless told); the program picks its
            own strategy (``"multiworker"`` is refused).
        replicas: give the program's own ``MirroredStrategy()`` this many devices (logical
            CPU devices, made before TensorFlow initialises its devices: call this before
            anything else in the process touches TensorFlow). Calls made inside
            ``strategy.run`` report every replica (``SourceResult.replicas``) and their sum.
        keep_going: older spelling: ``True`` is the default now; ``False`` is ``stop=True``.

    Returns:
        The ``RunReport``: ``calls``, ``problems``, ``exit_code``, ``to_dict()``. A program
        that calls ``sys.exit()`` with a nonzero status returns too: outcome ``exited``, its
        status in ``exit_status``, ``exit_code`` 4.

    Raises:
        ProgramError: the program cannot be started (no such file, a syntax error).
        UsageError: a ``strategy`` or ``replicas`` that cannot be given to a program, or
            ``replicas`` once TensorFlow already runs on fewer devices; ``stop`` with
            ``keep_going=True``.
        ProgramRaised: the program raised; ``exc.report`` holds the calls seen so far and
            ``exc.__cause__`` the program's own exception.
    """
    from gradscope._src.distribute.run import for_program
    from gradscope._src.frontends import keras_names
    from gradscope._src.watch import run as program_run
    from gradscope._src.watch.launch import Program, ProgramRaised

    who = "gradscope.run"
    given.path(who, "script", script)
    for arg in args:
        given.text(who, "each of the program's arguments", arg)
    given.flag(who, "module", module)
    given.whole(who, "steps", steps)
    given.flag(who, "stop", stop)
    allow_none = given.strings(who, "allow_none", allow_none)
    if strategy is not None:
        given.one_of(who, "strategy", strategy, given.STRATEGIES)
    given.whole(who, "replicas", replicas, optional=True)
    if keep_going is not None:
        given.flag(who, "keep_going", keep_going)
    if stop and keep_going:
        raise UsageError("gradscope.run: stop=True and keep_going=True contradict each other")
    with keras_names.fresh():  # the names the program gets when run alone
        outcome = program_run.run(
            Program(os.fspath(script), tuple(args), module), steps=steps,
            stop=stop or keep_going is False,
            allow_none=allow_none, distribution=for_program(strategy, replicas),
        )  # fmt: skip
    if outcome.error is not None and not isinstance(outcome.error, SystemExit):
        raise ProgramRaised(outcome.report) from outcome.error
    return outcome.report


def draw(report: Report, loss: str, fmt: str = "mermaid") -> str | bytes:
    """One loss's picture of a report made with ``pictures=True``, as ``gradscope graph``
    writes it.

    Args:
        report: from ``inspect(..., pictures=True)``.
        loss: the loss whose picture to draw.
        fmt: ``mermaid`` or ``dot`` (text that needs nothing), ``svg`` or ``html`` (text laid
            out by Graphviz's ``dot``), ``png`` (bytes, Graphviz too).

    Raises:
        UsageError: an unknown format or loss, or a report made without pictures.
    """
    from gradscope._src.report.draw import PictureFormat
    from gradscope._src.report.draw import draw as drawn

    if not isinstance(report, m.Report):
        raise given.refused("gradscope.draw", "report", "a Report (inspect(..., pictures=True))",
                            report)  # fmt: skip
    given.text("gradscope.draw", "loss", loss)

    try:
        chosen = PictureFormat(fmt)
    except ValueError:
        known = ", ".join(f.value for f in PictureFormat)
        raise UsageError(f"draw: unknown format {fmt!r}; known: {known}") from None
    names = [x.name for x in report.losses]
    if loss not in names:
        raise UsageError(f"draw: no loss {loss!r} in the report; its losses: {', '.join(names)}")
    if report.picture(loss) is None:
        raise UsageError("draw: the report has no pictures: inspect(..., pictures=True)")
    return drawn(report, loss, chosen)
