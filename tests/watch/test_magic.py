"""``%load_ext gradscope`` in an IPython shell (in this process): the cell and line magics,
their options, and a failing cell."""

from __future__ import annotations

from typing import Any

import pytest

from gradscope._src.watch.magic import split_line

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell  # the dev extra installs it

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "gradscope")
    ip.run_cell(
        "import tensorflow as tf\n"
        "w = tf.Variable([1.0, 2.0], name='w')\n"
        "b = tf.Variable([3.0], name='b')\n"
    )
    return ip


CUT = (
    "with tf.GradientTape() as tape:\n"
    "    loss = tf.reduce_sum(w * w) + tf.stop_gradient(b[0])\n"
    "grads = tape.gradient(loss, [w, b])\n"
)


def test_cell_magic_watches_the_cell_and_shows_its_report(shell: Any, capsys: Any) -> None:
    result = shell.run_cell(f"%%gradscope --steps 2\n{CUT}", store_history=True)
    assert result.success
    out = capsys.readouterr().out
    grads = shell.user_ns["grads"]
    assert grads[1] is None  # bare TensorFlow's answer, given to the cell unchanged
    report = shell.user_ns["_gradscope"]
    (call,) = report.calls
    assert [(s.name, s.status) for s in call.sources] == [("w", "ok"), ("b", "none:stopped")]
    assert call.sources[0].norm == pytest.approx(float(tf_norm(grads[0])))
    cell = report.program.rpartition(" in ")[2]  # the cell, as IPython numbers it
    assert cell == f"In[{result.execution_count}]" and report.program.startswith("%%gradscope in ")
    # lines as the notebook shows the cell: the %%gradscope line is its line 1
    assert call.site == f"{cell}:4" and call.sources[1].cut_points[0].source == f"{cell}:3"
    assert "gradscope watch · %%gradscope in" in out and "StopGradient" in out  # the table
    assert report.steps == 2


def tf_norm(tensor: Any) -> float:
    import numpy as np

    return float(np.linalg.norm(tensor.numpy()))


def test_a_failing_cell_shows_its_report_and_raises(shell: Any, capsys: Any) -> None:
    result = shell.run_cell(f"%%gradscope --allow-none b\n{CUT}1 / 0\n")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    captured = capsys.readouterr()
    assert "the block raised" in captured.out and "none:stopped" in captured.out
    report = shell.user_ns["_gradscope"]
    assert report.outcome == "raised" and report.problems == ()  # b is allowed


def test_line_magic_watches_one_statement(shell: Any, capsys: Any) -> None:
    defined = shell.run_cell("def step():\n" + "".join(f"    {line}\n" for line in CUT.splitlines())
                             + "    return grads\n", store_history=True)  # fmt: skip
    result = shell.run_cell("x = 1\n%gradscope --allow-none 'b' -- got = step()\n",
                            store_history=True)  # fmt: skip
    assert result.success
    # the call is in the cell that defined step(), the watch in the line's own cell and line
    assert shell.user_ns["_gradscope"].calls[0].site == f"In[{defined.execution_count}]:4"
    assert shell.user_ns["_gradscope"].program.endswith(f"In[{result.execution_count}]")
    assert shell.user_ns["got"][1] is None
    report = shell.user_ns["_gradscope"]
    assert [s.status for s in report.calls[0].sources] == ["ok", "none:stopped"]
    assert report.problems == ()
    assert "1 call(s) at 1 site(s) · 0 problems" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("%%gradscope --stpes 2", "Error: No such option '--stpes'. Did you mean '--steps'?"),
        ("%%gradscope --steps 0", "Error: Invalid value for '--steps': 0 is not in the range "
                                  "x>=1."),
        ("%gradscope --alow-none x f()", "Error: No such option '--alow-none'. Did you mean "
                                         "'--allow-none'?"),
    ],
)  # fmt: skip
def test_unknown_option_is_refused_as_click_says_it(
    shell: Any, capsys: Any, line: str, said: str
) -> None:
    shell.user_ns.pop("ran", None)
    result = shell.run_cell(f"{line}\nran = True\n" if line.startswith("%%") else line)
    assert result.success
    err = capsys.readouterr().err
    assert said in err and "Usage: %" in err
    assert "ran" not in shell.user_ns  # the cell did not run


def test_split_line_keeps_the_statement() -> None:
    assert split_line("--steps 2 --allow-none 'gen/*' model.fit(x, y)") == (
        ["--steps", "2", "--allow-none", "gen/*"], "model.fit(x, y)")  # fmt: skip
    assert split_line("--steps=3 x = f(-1)") == (["--steps=3"], "x = f(-1)")
    assert split_line("-- -x + 1") == ([], "-x + 1")
    assert split_line("fit()") == ([], "fit()")
