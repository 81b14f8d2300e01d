"""What an optimizer moves without a gradient on JAX, whichever of a compiled step's two host
callbacks comes first: the step's gradients (which record its call) or the optimizer's
comparison of the weights (which marks the call's sources as moved). Callbacks with unordered
effects arrive in either order; a one-step fit lost the mark when the comparison came first."""

from __future__ import annotations

import numpy as np

from gradscope._src.frontends.program.analyse import SourceStatic
from gradscope._src.frontends.program.jax_calls import JaxCalls, _Static
from gradscope._src.frontends.program.watch import Static, Watcher


def _step() -> tuple[JaxCalls, object, _Static]:
    watcher = Watcher(steps=1)
    calls = JaxCalls(watcher)
    state = watcher.site("train.py:9", "fit", "function")
    sources = [SourceStatic("head/kernel", (4, 1), True, requested=True, reachable=True),
               SourceStatic("body/kernel", (3, 4), False, requested=True)]  # fmt: skip
    return calls, state, _Static(Static(sources, "train.py:5"), [True, True], None)


def _record(calls: JaxCalls, state: object, static: _Static) -> None:
    total, norms, largest = np.array([0.5, 1.0]), np.array([2.0, 0.0]), np.array([1.0, 0.0])
    calls._record(state, static, [0, 1], total, norms, largest)  # type: ignore[arg-type]


def test_the_optimizers_callback_before_the_steps_own_marks_the_call_it_precedes() -> None:
    calls, state, static = _step()
    calls._moved(state, ["body/kernel"], "AdamW (weight_decay=0.1)", np.array([True]))  # type: ignore[arg-type]
    assert calls.watcher.calls == []  # nothing recorded yet: kept for the step's call
    _record(calls, state, static)
    (call,) = calls.watcher.calls
    moved = {s.name: s.moved_by for s in call.sources}
    assert moved == {"head/kernel": "", "body/kernel": "AdamW (weight_decay=0.1)"}
    assert any(n.startswith("AdamW (weight_decay=0.1) moved body/kernel") for n in call.notes)


def test_the_optimizers_callback_after_the_steps_own_marks_it_too() -> None:
    calls, state, static = _step()
    _record(calls, state, static)
    calls._moved(state, ["body/kernel"], "SGD (momentum=0.9)", np.array([True]))  # type: ignore[arg-type]
    (call,) = calls.watcher.calls
    assert [s.moved_by for s in call.sources] == ["", "SGD (momentum=0.9)"]


def test_nothing_moved_marks_nothing() -> None:
    calls, state, static = _step()
    calls._moved(state, ["body/kernel"], "Adam", np.array([False]))  # type: ignore[arg-type]
    _record(calls, state, static)
    (call,) = calls.watcher.calls
    assert [s.moved_by for s in call.sources] == ["", ""]
    assert not any("moved" in n for n in call.notes)
