"""Every fix gradscope suggests is proven: on a broken program it names the right kind of fix at
the right line, and the same program with that fix applied gets a gradient from bare
TensorFlow (or a finite one, for NaN) where the broken one gets None (or NaN).

The programs are in ``tests/cases/fixes/<case>/``: ``broken.py`` marks the line the fix must
name with ``# <- fix`` (and a later place on the same path with ``# <- later``); ``fixed.py``
is the broken program with the fix applied. ``gradscope run`` watches the programs that call
``tape.gradient`` themselves (they leave the result in ``grads``); ``inspect`` reads the
Python targets (``build()``) whose NaN needs the op where it first appeared.
"""

from __future__ import annotations

import math
import runpy
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

CASES_DIR = Path(__file__).resolve().parents[1] / "cases" / "fixes"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # the fix kind gradscope must suggest
    #: "run": a program; "inspect": a Python target's build(); "mirrored": a spec
    #: (``broken.yaml``) inspected under ``--strategy mirrored``, its ``broken.py`` the same
    #: training step in bare TensorFlow
    door: str = "run"
    #: for a program that leaves no ``grads`` (a fit): what its weights did, broken and fixed;
    #: for a target whose gradients are all there (``trains``): whether each loss went down
    changed: tuple[tuple[bool, ...], tuple[bool, ...]] | None = None
    #: the fix is the loss's own (``LossResult.fix``), not a pair's: every pair may be ok
    on_loss: bool = False

    def path(self, which: str) -> Path:
        return CASES_DIR / self.name / f"{which}.py"

    def read(self) -> Path:
        """The broken file gradscope reads (and its marks)."""
        return self.path("broken").with_suffix(".yaml" if self.door == "mirrored" else ".py")

    def line(self, mark: str) -> list[int]:
        text = self.read().read_text().splitlines()
        return [i for i, line in enumerate(text, 1) if line.rstrip().endswith(f"# <- {mark}")]


CASES = [
    Case("argmax-cast", "soft-argmax"),
    Case("one-hot", "soft-argmax"),
    Case("round", "straight-through"),
    Case("cast-int", "straight-through"),
    Case("comparison", "soft-comparison"),
    Case("batch-norm", "differentiable-op"),
    Case("pad-constant", "differentiable-op"),
    Case("stop-gradient", "remove-stop-gradient"),
    Case("assign", "assign-as-tensor"),
    Case("numpy", "keep-tensorflow-ops"),
    Case("outside-tape", "move-into-tape"),
    Case("unwatched-tensor", "watch"),
    Case("custom-gradient", "custom-gradient"),
    Case("var-list", "var-list"),
    Case("unread-output", "unread-output"),
    Case("nan-sqrt", "double-where", "inspect"),
    Case("nan-log", "safe-log", "inspect"),
    Case("nan-divide", "divide-no-nan", "inspect"),
    # base unfrozen and head frozen after compile(): the broken fit trains the head and not
    # the base (kernel, bias, kernel, bias); once compiled again, the base and not the head
    Case(
        "trainable-after-compile",
        "compile-again",
        changed=((False, False, True, True), (True, True, False, False)),
    ),
    # every call of the loss makes its variable again: a gradient comes back every step, but
    # the update is thrown away with the variable, so the loss never goes down
    Case("variable-per-call", "build-add-weight", "inspect", ((False,), (True,)), on_loss=True),
    # a mean per replica: the replicas' summed gradient is twice the whole batch's (the loss's
    # entry is the line named: a spec's loss is where the problem is located)
    Case("per-replica-mean", "compute-average-loss", "mirrored", ((False, False), (True, True))),
]


def _params() -> list[object]:
    """The cases, a spec run under ``--strategy mirrored`` on the session's logical devices."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.replicas] if c.door == "mirrored"
                         else []) for c in CASES]  # fmt: skip


#: Plain SGD steps a target's loss is trained for, to see whether it goes down.
STEPS = 3


def _bare_gradients(case: Case, which: str) -> list[object]:
    """What bare TensorFlow returns: a program's own ``grads``, or for a target the gradient
    of each loss with respect to the variables it reads, under one plain tape."""
    import keras
    import tensorflow as tf

    keras.backend.clear_session()
    if case.door in ("run", "mirrored"):
        found = runpy.run_path(str(case.path(which)), run_name="__main__")
        return list(found["grads"]) if "grads" in found else list(found["changed"])
    target = runpy.run_path(str(case.path(which)))["build"]()
    if case.changed is not None:
        return [_trains(loss) for loss in target["losses"].values()]
    out: list[object] = []
    for loss in target["losses"].values():
        with tf.GradientTape() as tape:
            value = loss()
        out += tape.gradient(value, list(tape.watched_variables()))
    return out


def _trains(loss: object) -> bool:
    """Whether ``STEPS`` plain SGD steps on the variables the loss reads make it go down."""
    import tensorflow as tf

    values = []
    for _ in range(STEPS):
        with tf.GradientTape() as tape:
            value = loss()  # type: ignore[operator]
        variables = list(tape.watched_variables())
        for v, g in zip(variables, tape.gradient(value, variables), strict=True):
            if g is not None:
                v.assign_sub(0.01 * g)
        values.append(float(value))
    return values[-1] < values[0]


def _usable(grad: object) -> bool:
    import numpy as np

    return grad is not None and bool(np.all(np.isfinite(np.asarray(grad))))


def _fixes(case: Case) -> list[tuple[str, object]]:
    """``(status, fix)`` of every source (``run``) or pair (``inspect``) of the broken one."""
    import keras

    keras.backend.clear_session()
    if case.door == "run":
        from gradscope._src.frontends.program.launch import Program
        from gradscope._src.watch.run import run

        report = run(Program(str(case.path("broken")), ())).report  # runs to its end
        return [(str(s.status), s.fix) for c in report.calls for s in c.sources
                if case.changed is None or s.trainable_changed]  # fmt: skip
    import gradscope

    if case.door == "mirrored":
        report = gradscope.inspect(str(case.read()), strategy="mirrored")
        return [("problem", p.fix) for p in report.problems]
    found = gradscope.inspect(f"{case.path('broken')}:build")
    if case.on_loss:
        return [("loss", loss.fix) for loss in found.losses]
    return [(str(p.status), p.fix) for _, p in found.pairs()]


@pytest.mark.parametrize("case", _params())
def test_fix_bare_tensorflow_gets_a_gradient_once_fixed(case: Case) -> None:
    broken = _bare_gradients(case, "broken")
    fixed = _bare_gradients(case, "fixed")
    if case.changed is not None:  # what trained, as Keras ran it
        assert (tuple(broken), tuple(fixed)) == case.changed
        return
    assert not all(_usable(g) for g in broken), "the broken program already trains"
    assert fixed and all(_usable(g) for g in fixed), "the fix leaves a None or NaN gradient"


@pytest.mark.parametrize("case", _params())
def test_fix_names_the_kind_and_the_line(case: Case) -> None:
    found = _fixes(case)
    wrong = [(status, fix) for status, fix in found
             if status.startswith("none:") or status == "nan" or case.changed]  # fmt: skip
    assert wrong, "gradscope saw nothing wrong"
    assert all(fix is not None for _, fix in wrong), "a none or nan source has no fix"
    (line,) = case.line("fix")
    at = f"{case.read().name}:{line}"
    kinds = [(fix.kind, fix.where) for _, fix in wrong]  # type: ignore[attr-defined]
    assert any(k == case.kind and w.endswith(at) for k, w in kinds), kinds
    for later in case.line("later"):
        fix = next(f for _, f in wrong if f.kind == case.kind)  # type: ignore[attr-defined]
        assert any(p.endswith(f"broken.py:{later}") for p in fix.later), fix.later  # type: ignore[attr-defined]


def test_fix_cases_each_have_both_programs() -> None:
    names = {p.name for p in CASES_DIR.iterdir() if p.is_dir()}
    assert names == {c.name for c in CASES}
    for case in CASES:
        assert case.path("broken").exists() and case.path("fixed").exists()
        assert case.read().exists() and case.read().with_stem("fixed").exists()
        assert len(case.line("fix")) == 1, f"{case.name}: mark exactly one line '# <- fix'"


def test_fix_usable_refuses_nan() -> None:
    assert not _usable(float("nan")) and not _usable(None) and _usable(1.0) and math.isfinite(1.0)
