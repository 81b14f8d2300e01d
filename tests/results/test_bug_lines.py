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


def _sources(*shapes: tuple[int, ...], prefix: str = "q_target") -> list:
    from gradscope._src.watcher.analyse import SourceStatic

    return [SourceStatic(f"{prefix}/v{i}", shape, False) for i, shape in enumerate(shapes)]


def test_a_target_networks_var_list_names_the_var_list() -> None:
    """A DQN asking for its target network's variables: the call's line, what it asked, the
    variables the loss trains and their holder, how the asked ones reach the loss."""
    from gradscope._src.results.cut import CutPoint
    from gradscope._src.watcher.analyse import asked_others

    asked = _sources((4, 8), (8,), prefix="twin")  # a clone: the same shapes, one for one
    asked[0].cut_points.append(CutPoint("StopGradient", "StopGradient", "stopped", "d.py:28"))
    found = asked_others(asked, [("q/kernel", (4, 8)), ("q/bias", (8,))], "d.py:33",
                         "twin.trainable_variables", "main_nn")  # fmt: skip
    assert found is not None and all(s.cause == found for s in asked)
    fix = found.fix(causes.Context("none:stopped", "twin/v0"))
    assert (fix.kind, fix.where) == ("var-list", "d.py:33")
    assert "asks for `twin.trainable_variables`" in fix.text
    assert "through `tf.stop_gradient` at d.py:28" in fix.text
    assert "pass `main_nn.trainable_variables` there" in fix.text
    assert "`q/kernel` and `q/bias`" in fix.text and "recording" not in str(found)


def test_a_gans_generator_outside_its_tape_is_no_var_list() -> None:
    """A generator run outside its tape reads as the same shape of facts (the discriminator's
    variables get a gradient, unasked), but the generator is no twin of the discriminator:
    its cause stays (move the line into the tape)."""
    from gradscope._src.watcher.analyse import asked_others

    asked = _sources((4, 3), (3,), prefix="generator")
    outside = causes.OutsideTape(line="gan.py:21", op="BiasAdd")
    for s in asked:
        s.cause = outside
    assert asked_others(asked, [("d/kernel", (3, 1)), ("d/bias", (1,))], "gan.py:26",
                        "generator.trainable_variables", "discriminator") is None  # fmt: skip
    assert all(s.cause is outside for s in asked)
    named = _sources((4, 3), (3,))  # a target network by its name, though shaped otherwise
    assert asked_others(named, [("d/kernel", (3, 1))], "t.py:9", "", "") is not None
