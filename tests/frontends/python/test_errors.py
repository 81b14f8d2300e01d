"""A target that cannot be used: one line naming the place, exit code 2, no traceback."""

from __future__ import annotations

import pytest

import gradscope
from gradscope._src.errors import TargetError, UsageError
from tests.conftest import RunCli
from tests.frontends.python.bare import DATA, line_of

pytestmark = pytest.mark.tf

BROKEN = DATA / "broken.py"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("broken.py:raises", "broken.py:{raise ValueError}: broken.py:raises raised ValueError: "
         "the data directory is missing (--traceback shows the traceback)"),
        ("broken.py:wrong_type", "broken.py:wrong_type: returned int; expected a "
         "gradscope.Target or a mapping with 'losses'"),
        ("broken.py:rasies", "broken.py:rasies: the module has no function 'rasies' "
         "(did you mean 'raises'?)"),
        ("broken.py:NOT_CALLABLE", "broken.py:NOT_CALLABLE: 'NOT_CALLABLE' is an int, not a "
         "function"),
        ("broken.py:takes_arguments", "broken.py:takes_arguments: the target function must "
         "take no arguments, but it takes (model)"),
        ("broken.py:bad_key", "broken.py:bad_key: unknown key 'variabels' (did you mean "
         "'variables'?)"),
        ("broken.py:loss_with_arguments", "loss 'l' must take no arguments, but it takes "
         "(y_true, y_pred); wrap it, e.g. lambda: loss_fn(y, model(x))"),
        ("broken.py:loss_raises", "broken.py:{raise KeyError}: broken.py:loss_raises: loss "
         "'l' raised KeyError: 'labels'"),
        ("broken.py:loss_returns_none", "broken.py:{lambda: None}: loss 'l' returned None; a "
         "loss returns one tensor"),
        ("broken.py:loss_returns_a_list", "loss 'l' returned a list; a loss returns one tensor"),
        ("broken.py:integer_loss", "broken.py:{lambda: w * 2}: loss 'l' returned an int32 "
         "tensor; a loss must be floating-point"),
        ("broken.py:bad_expect", "expect names loss 'm', which the target does not define"),
        ("broken.py:not_variables", "broken.py:not_variables: variables[0] is an "
         "EagerTensor, not a variable"),
        ("broken.py:runtime_failure", "broken.py:{tf.gather(w, [5])}: broken.py:runtime_failure: "
         "op 'Gather' (ResourceGather): indices[0] = 5 is not in [0, 2)"),
        ("missing.py:build", "missing.py:build: no such file: missing.py"),
        ("no_such_pkg.models:build", "no_such_pkg.models:build: no module named 'no_such_pkg' "
         "(looked in the current directory and on sys.path)"),
        ("broken.py", "broken.py: name the function that builds the target, as broken.py:build"),
        ("broken.py:", "broken.py:: name the function after the colon, as broken.py:build"),
        ("mypkg.models:", "mypkg.models:: name the function after the colon, as "
         "mypkg.models:build"),
    ],
)  # fmt: skip
def test_target_error_names_the_place(in_data: None, target: str, message: str) -> None:
    markers = (
        "raise ValueError",
        "raise KeyError",
        "lambda: None",
        "lambda: w * 2",
        "tf.gather(w, [5])",
    )
    for marker in markers:
        message = message.replace("{" + marker + "}", str(line_of(BROKEN, marker)))
    with pytest.raises(TargetError) as caught:
        gradscope.inspect(target)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text


def test_unknown_loss_is_a_usage_error(in_data: None) -> None:
    with pytest.raises(UsageError, match="unknown loss 'nope'; the target has price, kind"):
        gradscope.inspect("mypkg.models:two_heads", losses=["nope"])


def test_cli_target_errors_exit_2_in_one_line(run_cli: RunCli) -> None:
    for target in ("broken.py:raises", "broken.py:wrong_type", "broken.py:rasies"):
        result = run_cli("inspect", target, cwd=DATA)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ("--traceback", "inspect", "broken.py:raises"),
        ("inspect", "broken.py:raises", "--traceback"),
    ],
)
def test_cli_traceback_shows_the_users_own_code(run_cli: RunCli, args: tuple[str, ...]) -> None:
    result = run_cli(*args, cwd=DATA)  # before the command, or after it as users type it
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert f'broken.py", line {line_of(BROKEN, "raise ValueError")}, in raises' in result.stderr
    assert "--traceback shows" not in result.stderr  # the hint is moot once it is shown
