"""Every fix gradscope suggests is proven: on a broken program it names the right kind of fix at
the right line, and the same program with that fix applied computes what the broken one
computed forward and gets a gradient from bare TensorFlow (or a finite one, for NaN) where the
broken one gets None (or NaN).

The programs are in ``tests/cases/fixes/<case>/``: ``broken.py`` marks the line the fix must
name with ``# <- fix`` (and a later place on the same path with ``# <- later``); ``fixed.py``
is the broken program with the fix applied as gradscope words it; ``case.yaml`` says how to
prove it:

- ``fix``: the fix kind gradscope must name at the marked line;
- ``door``: ``run`` (a program ``gradscope run`` watches, leaving its gradients in ``grads``),
  ``inspect`` (a Python target's ``build()``), ``mirrored`` (a spec, ``broken.yaml``,
  inspected under ``--strategy mirrored``; its ``broken.py`` the same step in bare TensorFlow);
- ``forward``: the value the fix keeps, a name the program leaves (``losses``: every loss of a
  target), and ``exact``: whether it is kept bit for bit (false: to float tolerance, where the
  fixed program computes the same math with other ops);
- ``changed`` (a program that leaves no ``grads``: what its weights did, broken and fixed; a
  target's: whether each loss went down) and ``on_loss`` (the fix is the loss's own).

A value the broken program computes as NaN or an infinity has nothing to keep: the fix must
make it finite, and keep it where it is finite, with every variable moved off the point
(``+ 1``).
"""

from __future__ import annotations

import math
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.tf

CASES_DIR = Path(__file__).resolve().parents[1] / "cases" / "fixes"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # the fix kind gradscope must suggest
    door: str = "run"
    forward: str = "loss"
    exact: bool = True
    changed: tuple[tuple[bool, ...], tuple[bool, ...]] | None = None
    on_loss: bool = False
    says: str = ""  # words the fix must hold (the op that fixed.py uses)

    @classmethod
    def load(cls, folder: Path) -> Case:
        data = yaml.safe_load((folder / "case.yaml").read_text())
        changed = data.get("changed")
        return cls(folder.name, data["fix"], data.get("door", "run"),
                   data.get("forward", "loss"), bool(data.get("exact", True)),
                   (tuple(changed[0]), tuple(changed[1])) if changed else None,
                   bool(data.get("on_loss", False)), str(data.get("says", "")))  # fmt: skip

    def path(self, which: str) -> Path:
        return CASES_DIR / self.name / f"{which}.py"

    def read(self) -> Path:
        """The broken file gradscope reads (and its marks)."""
        return self.path("broken").with_suffix(".yaml" if self.door == "mirrored" else ".py")

    def line(self, mark: str) -> list[int]:
        text = self.read().read_text().splitlines()
        return [i for i, line in enumerate(text, 1) if line.rstrip().endswith(f"# <- {mark}")]


CASES = [Case.load(p) for p in sorted(CASES_DIR.iterdir()) if (p / "case.yaml").exists()]


def _params() -> list[object]:
    """The cases, a spec run under ``--strategy mirrored`` on the session's logical devices."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.replicas] if c.door == "mirrored"
                         else []) for c in CASES]  # fmt: skip


#: Plain SGD steps a target's loss is trained for, to see whether it goes down.
STEPS = 3


@dataclass(frozen=True)
class Ran:
    """What bare TensorFlow computed: the gradients (or what trained), and the forward value
    the fix must keep (``forward``: a list of arrays)."""

    gradients: list[object]
    forward: list[Any]
    moved: list[Any]  # ``forward`` with every variable moved off the point (``inspect``)
    #: every trainable variable the program made eagerly (the model's, not an optimizer's),
    #: by name, with the value it started from: a fix changes the code, never the values it
    #: starts from
    started: dict[str, Any]


def _bare(case: Case, which: str, path: Path | None = None) -> Ran:
    """What bare TensorFlow returns: a program's own ``grads`` and ``forward`` value, or for a
    target the gradient of each loss with respect to the variables it reads, under one plain
    tape, and each loss's value. Seeded the same for the broken and the fixed program
    (``path``: the program at another path, the broken one as gradscope's edit made it)."""
    import keras
    import numpy as np
    import tensorflow as tf

    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    started: dict[str, Any] = {}

    def made(next_creator: Any, **kwargs: Any) -> Any:
        v = next_creator(**kwargs)
        if v.trainable and tf.executing_eagerly():
            started.setdefault(v.name, v.numpy())
        return v

    with tf.variable_creator_scope(made):
        if case.door in ("run", "mirrored"):
            found = runpy.run_path(str(path or case.path(which)), run_name="__main__")
            grads = list(found["grads"]) if "grads" in found else list(found["changed"])
            return Ran(grads, _arrays(found[case.forward]), [], started)
        losses = runpy.run_path(str(path or case.path(which)))["build"]()["losses"]
        forward = [np.asarray(loss()) for loss in losses.values()]
    moved = []
    for loss in losses.values():
        with tf.GradientTape() as tape:
            loss()
        for v in tape.watched_variables():
            v.assign_add(tf.ones_like(v))
        moved.append(np.asarray(loss()))
    keras.utils.set_random_seed(0)
    losses = runpy.run_path(str(path or case.path(which)))["build"]()["losses"]
    if case.changed is not None:
        return Ran([_trains(loss) for loss in losses.values()], forward, moved, started)
    out: list[object] = []
    for loss in losses.values():
        with tf.GradientTape() as tape:
            value = loss()
        out += tape.gradient(value, list(tape.watched_variables()))
    return Ran(out, forward, moved, started)


def _arrays(value: Any) -> list[Any]:
    import numpy as np

    items = value if isinstance(value, (list, tuple)) else [value]
    return [np.asarray(v) for v in items]


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


def _same(broken: list[Any], fixed: list[Any], exact: bool) -> bool:
    """Whether the fixed program computed the broken one's values: bit for bit, or to float
    tolerance."""
    import numpy as np

    if len(broken) != len(fixed):
        return False
    for a, b in zip(broken, fixed, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not (np.array_equal(a, b) if exact else np.allclose(a, b, rtol=1e-6, atol=1e-6)):
            return False
    return True


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
def test_fix_keeps_the_forward_value_and_bare_tensorflow_gets_a_gradient(case: Case) -> None:
    import numpy as np

    broken, fixed = _bare(case, "broken"), _bare(case, "fixed")
    assert broken.started.keys() == fixed.started.keys(), "the fix makes other variables"
    for name, value in broken.started.items():
        assert np.array_equal(value, fixed.started[name]), f"the fix starts {name} elsewhere"
    finite = all(np.all(np.isfinite(v)) for v in broken.forward)
    if finite:
        assert _same(broken.forward, fixed.forward, case.exact), (broken.forward, fixed.forward)
    else:  # nothing to keep where it is not finite: finite once fixed, the same elsewhere
        assert all(np.all(np.isfinite(v)) for v in fixed.forward), fixed.forward
        assert broken.moved and all(np.all(np.isfinite(v)) for v in broken.moved)
        assert _same(broken.moved, fixed.moved, case.exact), (broken.moved, fixed.moved)
    if case.changed is not None:  # what trained, as Keras ran it
        assert (tuple(broken.gradients), tuple(fixed.gradients)) == case.changed
        return
    assert not all(_usable(g) for g in broken.gradients), "the broken program already trains"
    assert fixed.gradients and all(_usable(g) for g in fixed.gradients), (
        "the fix leaves a None or NaN gradient"
    )


@pytest.mark.parametrize("case", _params())
def test_fix_names_the_kind_and_the_line(case: Case, tmp_path: Path) -> None:
    found = _fixes(case)
    wrong = [(status, fix) for status, fix in found
             if status.startswith("none:") or status == "nan" or case.changed]  # fmt: skip
    assert wrong, "gradscope saw nothing wrong"
    assert all(fix is not None for _, fix in wrong), "a none or nan source has no fix"
    (line,) = case.line("fix")
    at = f"{case.read().name}:{line}"
    kinds = [(fix.kind, fix.where) for _, fix in wrong]  # type: ignore[attr-defined]
    assert any(k == case.kind and w.endswith(at) for k, w in kinds), kinds
    if case.says:  # the example matches what the line does (np.clip: tf.clip_by_value)
        texts = [fix.text for _, fix in wrong if fix.kind == case.kind]  # type: ignore[attr-defined]
        assert all(case.says in t for t in texts), texts
    for later in case.line("later"):
        fix = next(f for _, f in wrong if f.kind == case.kind)  # type: ignore[attr-defined]
        assert any(p.endswith(f"broken.py:{later}") for p in fix.later), fix.later  # type: ignore[attr-defined]
    edits = {fix.edit for _, fix in wrong if fix.kind == case.kind and fix.edit}  # type: ignore[attr-defined]
    assert (len(edits) == 1) is (case.name in EDITED), edits
    for edit in edits:  # the edit an agent would apply proves itself as fixed.py does
        _edit_proves_itself(case, edit, tmp_path)


#: The cases whose fix is a text edit (``analysis/fixes/edit.py``).
EDITED = {"cast-int", "nan-divide", "nan-log", "nan-sqrt", "numpy", "numpy-clip", "outside-tape",
          "pad-constant", "round", "stop-gradient", "unwatched-tensor"}  # fmt: skip


def _edit_proves_itself(case: Case, edit: Any, tmp_path: Path) -> None:
    """gradscope's edit made on the broken program: bare TensorFlow computes the broken
    program's forward value and gets a usable gradient, as for the fixed program."""
    import numpy as np

    lines = case.read().read_text().split("\n")
    assert "\n".join(lines[edit.start_line - 1 : edit.end_line]) == edit.old
    lines[edit.start_line - 1 : edit.end_line] = edit.new.split("\n")
    edited = tmp_path / case.read().name
    edited.write_text("\n".join(lines))
    broken, made = _bare(case, "broken"), _bare(case, "edited", edited)
    if all(np.all(np.isfinite(v)) for v in broken.forward):
        assert _same(broken.forward, made.forward, case.exact), (broken.forward, made.forward)
    else:
        assert all(np.all(np.isfinite(v)) for v in made.forward), made.forward
    assert made.gradients and all(_usable(g) for g in made.gradients), made.gradients


def test_fix_cases_each_have_both_programs() -> None:
    names = {p.name for p in CASES_DIR.iterdir() if p.is_dir()}
    assert names == {c.name for c in CASES}, "a case folder without case.yaml"
    for case in CASES:
        assert case.path("broken").exists() and case.path("fixed").exists()
        assert case.read().exists() and case.read().with_stem("fixed").exists()
        assert len(case.line("fix")) == 1, f"{case.name}: mark exactly one line '# <- fix'"


def test_fix_usable_refuses_nan() -> None:
    assert not _usable(float("nan")) and not _usable(None) and _usable(1.0) and math.isfinite(1.0)
