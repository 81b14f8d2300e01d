"""What ``gradscope run`` fails on: a watched source with no gradient, a NaN one, one whose
replicas disagree, and a variable whose ``trainable`` flag the traced train step of a
``fit()`` no longer follows."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import replace

from gradscope._src.analysis.replicas import replica_words
from gradscope._src.results import causes, words
from gradscope._src.results import report as m
from gradscope._src.results.causes import OverflowSkipped
from gradscope._src.results.run import CallResult, RunProblem, SourceResult
from gradscope._src.results.status import ProblemKind, overflow_skipped

#: Said of a non-finite gradient under a loss scale that no later watched step showed finite.
UNTOLD = ("; under loss scale {scale:g} an overflow Keras' LossScaleOptimizer skips (lowering its "
          "scale) looks the same at one step: watch more steps (--steps 10), a gradient that "
          "stays non-finite is a real NaN")  # fmt: skip

Key = tuple[str, tuple[str, ...], str]


def overflowed(calls: Sequence[CallResult]) -> dict[tuple[Key, int], int]:
    """The non-finite gradients a loss scale explains: at a call that scaled its loss (mixed
    precision), a source whose gradient a later watched step of the same site gives finite.
    Keras' ``LossScaleOptimizer`` skips a step whose gradients overflow and halves its scale, so
    early steps of a healthy program are non-finite; a real NaN stays. ``((site, via, source),
    step)`` -> the later finite step."""
    seen: dict[Key, list[tuple[int, str]]] = {}  # each source's (step, status) under a scale
    for call in calls:
        for s in call.sources:
            if call.loss_scale is not None:
                seen.setdefault((call.site, call.via, s.name), []).append((call.step, s.status))
    found = {}
    for call in calls:
        for s in call.sources:
            key = (call.site, call.via, s.name)
            later = [(k, status) for k, status in seen.get(key, []) if k > call.step]
            if overflow_skipped(s.status, call.loss_scale is not None, (st for _, st in later)):
                found[(key, call.step)] = min(k for k, st in later if st in (m.OK, m.ZERO))
    return found


def explained(calls: Sequence[CallResult]) -> list[CallResult]:
    """``calls`` with each non-finite gradient a loss scale explains (:func:`overflowed`) told
    on its source's note."""
    found = overflowed(calls)
    out = []
    for call in calls:
        sources = []
        for s in call.sources:
            finite = found.get(((call.site, call.via, s.name), call.step))
            if finite is not None and not s.cause and call.loss_scale is not None:
                s = replace(s, cause=OverflowSkipped(scale=call.loss_scale, finite=finite))
            sources.append(s)
        out.append(replace(call, sources=tuple(sources)))
    return out


def problems_of(calls: Sequence[CallResult], allow_none: Sequence[str]) -> list[RunProblem]:
    """``unexpected-none`` for a source with no gradient unless an ``--allow-none`` glob names
    it, ``nan`` for a non-finite gradient (not one a loss scale explains, :func:`overflowed`),
    ``replica-mismatch`` where the replicas of a call made inside ``strategy.run`` disagree on
    a source's status; for a variable whose changed
    ``trainable`` flag the traced Keras train step disagrees with
    (``frontends/program/trainable.py``), ``never-trained`` (the step leaves it out; an
    ``--allow-none`` glob allows it too) or ``unexpected-connected`` (frozen, still trained).
    One problem per site (with its ``via``), source and kind (its first step). A variable a
    Keras model holds where Keras does not track it, read by a call's tape and asked for by
    no call of the program (``CallResult.unasked``), is ``never-trained`` at the first call
    that read it, unless an ``--allow-none`` glob names it."""
    seen: dict[tuple[str, tuple[str, ...], str, str], RunProblem] = {}
    skipped = overflowed(calls)
    asked = {s.name for call in calls for s in call.sources}
    for call in calls:
        for name, attribute in call.unasked:
            allowed = any(fnmatch.fnmatchcase(name, p) for p in allow_none)
            once: tuple[str, tuple[str, ...], str, str] = ("", (), name, m.NEVER_TRAINED)
            if name not in asked and not allowed and once not in seen:
                seen[once] = RunProblem.run_problem(
                    call.site, call.step, name, m.NEVER_TRAINED,
                    _untracked(call, name, attribute), (), call.via, call=call.label)  # fmt: skip
    for call in calls:
        for name, made in call.left_out:
            allowed = any(fnmatch.fnmatchcase(name, p) for p in allow_none)
            once = ("", (), name, m.NEVER_TRAINED)
            if not allowed and once not in seen:  # no op trains it: asked or not, it never trains
                cause = causes.LeftOut(names=(name,), line=made, api=call.api)
                seen[once] = RunProblem.run_problem(
                    call.site, call.step, name, m.NEVER_TRAINED,
                    f"{call.api} at {call.where}: {cause}, so it keeps its initial value", (),
                    call.via, call=call.label, cause=cause)  # fmt: skip
    for call in calls:
        for s in call.sources:
            kind = _kind(s, allow_none)
            if kind == m.NAN_PROBLEM and ((call.site, call.via, s.name), call.step) in skipped:
                kind = None
            key = (call.site, call.via, s.name, kind or "")
            if kind is not None and key not in seen:
                seen[key] = RunProblem.run_problem(
                    call.site, call.step, s.name, kind, _message(call, s, kind), s.cut_points,
                    call.via, call=call.label, cause=s.cause)  # fmt: skip
            key = (call.site, call.via, s.name, m.MOVED_WITHOUT_GRADIENT)
            if s.moved_by and key not in seen:  # --allow-none allows the None, not the move
                seen[key] = RunProblem.run_problem(
                    call.site, call.step, s.name, m.MOVED_WITHOUT_GRADIENT, _moved(call, s),
                    s.cut_points, call.via, call=call.label, cause=s.cause)  # fmt: skip
            key = (call.site, call.via, s.name, m.REPLICA_MISMATCH)
            if len({r.status for r in s.replicas}) > 1 and key not in seen:
                seen[key] = RunProblem.run_problem(
                    call.site, call.step, s.name, m.REPLICA_MISMATCH, _mismatch(call, s),
                    s.cut_points, call.via, call=call.label, cause=s.cause)  # fmt: skip
    return list(seen.values())


def _untracked(call: CallResult, name: str, attribute: str) -> str:
    return (
        f"{name} (the model's `{attribute}`) is a tf.Variable that Keras does not track: the "
        f"loss of {call.api} at {call.where} reads it, but model.trainable_variables leaves "
        "it out and no gradient call of the program asks for it, so it never trains"
    )


def _moved(call: CallResult, source: SourceResult) -> str:
    said = words.moved_without_gradient(source.moved_by, [source.name])
    return f"{call.api} at {call.where} (step {call.step}): {said}"


def _mismatch(call: CallResult, source: SourceResult) -> str:
    """Which replicas got which status, as ``inspect --strategy`` says it."""
    groups: dict[str, list[int]] = {}
    for r in source.replicas:
        groups.setdefault(str(r.status), []).append(r.replica)
    said = "; ".join(f"{replica_words(ids)} {status}" for status, ids in groups.items())
    return (
        f"replicas disagree on {source.name} at {call.site} (step {call.step}): {said}. Each "
        "replica's share of the batch takes a different path to the loss (a data-dependent "
        "mask or branch), what PyTorch DDP reports as unused parameters"
    )


def _kind(source: SourceResult, allow_none: Sequence[str]) -> ProblemKind | None:
    allowed = any(fnmatch.fnmatchcase(source.name, p) for p in allow_none)
    if source.trainable_changed:
        if m.has_gradient(source.status):
            return m.UNEXPECTED_CONNECTED
        return None if allowed else m.NEVER_TRAINED
    if source.status == m.NAN:
        return m.NAN_PROBLEM
    if m.is_none(source.status):
        return None if allowed else m.UNEXPECTED_NONE
    if source.status == m.ZERO and isinstance(source.cause, causes.ZeroDerivative):
        return None if allowed else ProblemKind.ALWAYS_ZERO
    return None


def _message(call: CallResult, source: SourceResult, kind: str) -> str:
    if kind == m.NAN_PROBLEM:
        text = f"{source.name} gets a NaN or infinite gradient at {call.where} (step {call.step})"
        if source.nan_origin is not None:
            text += f": {words.origin_text(source.nan_origin, quoted=True)}"
        if call.loss_scale is not None:
            text += UNTOLD.format(scale=call.loss_scale)
        return text
    if kind == m.NEVER_TRAINED:
        return f"{call.api} at {call.where} does not train {source.name}: {source.note}"
    if kind == m.UNEXPECTED_CONNECTED:
        return f"{call.api} at {call.where} still trains {source.name}: {source.note}"
    if kind == ProblemKind.ALWAYS_ZERO:
        return f"{call.api} at {call.where} gives {source.name} a gradient of 0: {source.note}"
    why = source.status.removeprefix("none:")
    text = f"{call.api} at {call.where} gives {source.name} no gradient ({why})"
    cause = words.cause(source.cut_points[:1], source.note)  # the first cut, else the cause
    return f"{text}: {cause}" if cause else text
