"""The line where the bug was written, in a cause's words (issue 45.3), on hand-made facts (no
TensorFlow; the runs that find these facts are proven in tests/frontends/program/test_run.py
and tests/cases/fixes/): a forgotten head names its compile() line; a NumPy round trip's
example is the op for the function the line calls; a whole variable written with assign (a
hypernetwork's predicted weights) says the predicted tensor is copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradscope._src.results import causes
from gradscope._src.watcher.analyse import numpy_calls


def test_a_forgotten_head_names_the_compile_line() -> None:
    head = causes.UnreadOutput(names=("category",), model="m", line="t.py:19", compiled=True,
                               compiled_at="t.py:18")  # fmt: skip
    assert head.message() == (
        "reaches only output 'category', which no loss reads (compile() at t.py:18 gives it "
        "no loss)"
    )
    fix = head.fix(causes.Context("none:disconnected", "category/kernel", site="t.py:19"))
    assert fix.where == "t.py:18" and "`compile(loss=...)` at t.py:18" in fix.text
    unknown = causes.UnreadOutput(names=("category",), model="m", compiled=True)
    assert "(compile() gives it no loss)" in unknown.message()
    assert unknown.fix(causes.Context("none:disconnected", "c/kernel", site="t.py:19")).where == (
        "t.py:19"
    )


@pytest.mark.parametrize(
    ("names", "example"),
    [
        (("clip",), "`tf.clip_by_value(h, lo, hi)` for `np.clip(h.numpy(), lo, hi)`"),
        (("tanh",), "`tf.math.tanh(h)` for `np.tanh(h.numpy())`"),
        (("exp", "tanh"), "`tf.exp(h)` for `np.exp(h.numpy())`"),
        (("frobnicate",), "the `tf.` op for `np.frobnicate(...)`"),
        ((), "`tf.math.tanh(h)` for `np.tanh(h.numpy())`"),
    ],
)
def test_a_numpy_round_trip_example_matches_the_function(names: tuple[str, ...],
                                                         example: str) -> None:  # fmt: skip
    left = causes.LeftTensorFlow(line="t.py:7", how=".numpy()", names=names)
    assert example in left.fix(causes.Context("none:disconnected", "w")).text


def test_the_numpy_functions_a_line_calls(tmp_path: Path) -> None:
    program = tmp_path / "t.py"
    program.write_text("x = 1\nv = np.clip(np.exp(h.numpy()), 0.0, 1.0)  # note\n"
                       "with tape:\n    y = (f(\n")  # fmt: skip
    assert numpy_calls(f"{program}:2") == ("clip", "exp")
    assert numpy_calls(f"{program}:1") == ()
    assert numpy_calls(f"{program}:4") == ()  # half a statement: nothing said
    assert numpy_calls(f"{program}:3") == ()
    assert numpy_calls("nowhere") == ()


def test_a_whole_variable_assigned_says_the_tensor_is_copied() -> None:
    context = causes.Context("none:assign", "hyper/kernel")
    whole = causes.Assign(line="h.py:9", op="AssignVariableOp", node="w")
    said = whole.fix(context).text
    assert "writes a tensor made from `hyper/kernel` into another variable" in said
    assert "use that tensor itself in the forward pass" in said and "copies" not in said
    sliced = causes.Assign(line="h.py:9", op="ResourceStridedSliceAssign", node="x")
    assert "x_new = x * (1 - mask)" in sliced.fix(context).text
