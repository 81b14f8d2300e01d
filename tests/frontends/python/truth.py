"""Compare a gradscope report with bare TensorFlow, pair by pair (issue 15's golden tests).

The statuses gradscope prints are the traced ones (what a ``tf.function`` training step
computes): each pair's None-ness, zero-ness and norm must equal ``tf.gradients``' inside
``tf.function``. Where eager TensorFlow (a GradientTape) disagrees about None-ness, the
loss must carry a note saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from gradscope._src.results import report as m
from tests.frontends.python import bare


def agrees(
    report: m.Report,
    losses: Mapping[str, Callable[[], Any]],
    variables: Sequence[Any],
    *,
    names: Mapping[str, str] | None = None,
    eager: bool = True,
    traceable: bool = True,
    rel: float = 1e-4,
) -> dict[str, dict[str, str]]:
    """Assert every pair agrees with bare TensorFlow; return ``{loss: {variable: status}}``.

    Args:
        report: gradscope's report of the target.
        losses: the same losses, built from fresh objects with the same values.
        variables: the variables to compare, from the same fresh objects.
        names: bare variable name -> gradscope's name, where they differ.
        eager: also check the eager tape (a note where it disagrees with the trace).
        traceable: False for losses bare ``tf.function`` cannot trace (``.numpy()``): the
            eager tape is then the reference, as gradscope answers them eagerly.
        rel: relative tolerance on norms.
    """
    names = names or {}
    seen: dict[str, dict[str, str]] = {}
    for loss, fn in losses.items():
        traced = bare.traced(fn, variables) if traceable else bare.tape(fn, variables)[1]
        got = report.loss(loss)
        seen[loss] = {}
        for name, grad in traced.items():
            pair = got.pair(names.get(name, name))
            seen[loss][name] = pair.status
            assert m.is_none(pair.status) == grad.none, (loss, name, pair.status, grad)
            if grad.none:
                continue
            assert (pair.status == m.ZERO) == grad.zero, (loss, name, pair.status, grad)
            assert (pair.status == m.NAN) == (not grad.finite), (loss, name, pair.status)
            if grad.finite:
                assert pair.norm == pytest.approx(grad.norm, rel=rel, abs=1e-6), (loss, name)
        if eager:
            _, taped = bare.tape(fn, variables)
            differs = [n for n, g in taped.items() if g.none != traced[n].none]
            if differs:
                assert any("disagree" in note for note in got.notes), (loss, differs, got.notes)
    return seen


def cut_sources(report: m.Report, loss: str, variable: str) -> list[tuple[str, str, str]]:
    """``(op, kind, source)`` of every cut point of one pair."""
    return [(c.op, c.kind, c.source) for c in report.loss(loss).pair(variable).cut_points]
