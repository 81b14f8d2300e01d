"""Every public function refuses a wrong argument before any work with a ``UsageError`` that
names the function, the argument and what it received: ``check([spec], expect=5)`` raised
``AttributeError`` and ``assert_gradients(spec, expect={'main': 5})`` ``TypeError`` from
inside, once TensorFlow had run the spec. None of these imports TensorFlow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import gradscope
from gradscope.testing import assert_gradients

SPEC = "configs/two-heads.yaml"

#: (call, what the message starts with, what it says was received)
CASES = [
    pytest.param(
        lambda: gradscope.check([SPEC], expect=5),
        "gradscope.check: expect must be a mapping",
        "saw 5 (int)",
        id="check expect=5",
    ),
    pytest.param(
        lambda: gradscope.check([SPEC], expect={"main": 5}),
        "gradscope.check: expect['main'] must be a mapping",
        "saw 5 (int)",
        id="check expect loss=5",
    ),
    pytest.param(
        lambda: gradscope.check(SPEC, expect={"main": {"none": 5}}),
        "gradscope.check: expect['main']['none'] must be a glob or a list of globs",
        "saw 5 (int)",
        id="check expect field=5",
    ),
    pytest.param(
        lambda: gradscope.check(SPEC, expect={"main": {"nun": []}}),
        "gradscope.check: expect['main'] has the unknown field 'nun'",
        "'nun'",
        id="check expect unknown field",
    ),
    pytest.param(
        lambda: assert_gradients(SPEC, expect={"main": 5}),
        "gradscope.testing.assert_gradients: expect['main'] must be a mapping",
        "saw 5 (int)",
        id="assert_gradients expect loss=5",
    ),
    pytest.param(
        lambda: assert_gradients(5),
        "gradscope.testing.assert_gradients: target must be a spec path",
        "saw 5 (int)",
        id="assert_gradients target=5",
    ),
    pytest.param(
        lambda: gradscope.check(SPEC, baseline=5),
        "gradscope.check: baseline must be a path",
        "saw 5 (int)",
        id="check baseline=5",
    ),
    pytest.param(
        lambda: gradscope.check(5),
        "gradscope.check: targets must be a spec path",
        "saw 5 (int)",
        id="check targets=5",
    ),
    pytest.param(
        lambda: gradscope.check([None]),
        "gradscope.check: each of targets must be a spec path",
        "saw None",
        id="check targets=[None]",
    ),
    pytest.param(
        lambda: gradscope.check([]),
        "gradscope.check: targets must name at least one",
        "saw []",
        id="check targets=[]",
    ),
    pytest.param(
        lambda: gradscope.check(SPEC, numeric="yes"),
        "gradscope.check: numeric must be True or False",
        "saw 'yes'",
        id="check numeric='yes'",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, losses="loss_1"),
        "gradscope.inspect: losses must be a list of strings",
        "saw the string 'loss_1' (write ['loss_1'])",
        id="inspect losses str",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, losses=[5]),
        "gradscope.inspect: losses must be a list of strings",
        "saw [5] (list)",
        id="inspect losses=[5]",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, device=5),
        "gradscope.inspect: device must be a string",
        "saw 5 (int)",
        id="inspect device=5",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, max_elements=0),
        "gradscope.inspect: max_elements must be a whole number of at least 1",
        "saw 0 (int)",
        id="inspect max_elements=0",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, max_elements="x"),
        "gradscope.inspect: max_elements must be a whole number",
        "saw 'x'",
        id="inspect max_elements='x'",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, progress=5),
        "gradscope.inspect: progress must be a function",
        "saw 5 (int)",
        id="inspect progress=5",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, strategy=5),
        "gradscope.inspect: strategy must be one of 'default', 'mirrored', 'multiworker'",
        "saw 5 (int)",
        id="inspect strategy=5",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, replicas="2"),
        "gradscope.inspect: replicas must be a whole number of at least 1, or None",
        "saw '2'",
        id="inspect replicas='2'",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, mode=[]),
        "gradscope.inspect: mode must be one of 'function', 'eager', 'xla'",
        "saw [] (list)",
        id="inspect mode=[]",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, mode=5),
        "gradscope.inspect: mode must be one of",
        "saw 5 (int)",
        id="inspect mode=5",
    ),
    pytest.param(
        lambda: gradscope.inspect(SPEC, pictures=1),
        "gradscope.inspect: pictures must be True or False",
        "saw 1 (int)",
        id="inspect pictures=1",
    ),
    pytest.param(
        lambda: gradscope.inspect(None),
        "gradscope.inspect: target must be a spec path",
        "saw None",
        id="inspect target=None",
    ),
    pytest.param(
        lambda: gradscope.diff(SPEC, 5, "loss_2"),
        "gradscope.diff: loss_a must be a string",
        "saw 5 (int)",
        id="diff loss_a=5",
    ),
    pytest.param(
        lambda: gradscope.diff(SPEC, losses="ab"),
        "gradscope.diff: losses must be a list of strings",
        "saw the string 'ab'",
        id="diff losses str",
    ),
    pytest.param(
        lambda: gradscope.graph(SPEC, 5),
        "gradscope.graph: loss must be a string",
        "saw 5 (int)",
        id="graph loss=5",
    ),
    pytest.param(
        lambda: gradscope.graph(SPEC, "loss_1", expand="x"),
        "gradscope.graph: expand must be True or False",
        "saw 'x'",
        id="graph expand='x'",
    ),
    pytest.param(
        lambda: gradscope.run(5),
        "gradscope.run: script must be a path",
        "saw 5 (int)",
        id="run script=5",
    ),
    pytest.param(
        lambda: gradscope.run("train.py", steps=0),
        "gradscope.run: steps must be a whole number of at least 1",
        "saw 0 (int)",
        id="run steps=0",
    ),
    pytest.param(
        lambda: gradscope.run("train.py", allow_none="a*"),
        "gradscope.run: allow_none must be a list of strings",
        "saw the string 'a*'",
        id="run allow_none str",
    ),
    pytest.param(
        lambda: gradscope.run("train.py", 5),
        "gradscope.run: each of the program's arguments must be a string",
        "saw 5 (int)",
        id="run argument 5",
    ),
    pytest.param(
        lambda: gradscope.run("train.py", replicas=0),
        "gradscope.run: replicas must be a whole number of at least 1",
        "saw 0 (int)",
        id="run replicas=0",
    ),
    pytest.param(
        lambda: gradscope.draw(5, "x"),
        "gradscope.draw: report must be a Report",
        "saw 5 (int)",
        id="draw report=5",
    ),
]


@pytest.mark.parametrize(("call", "starts", "received"), CASES)
def test_a_wrong_argument_is_a_usage_error_naming_it_and_what_was_received(
    call: Callable[[], Any], starts: str, received: str
) -> None:
    with pytest.raises(gradscope.UsageError) as raised:
        call()
    message = str(raised.value)
    assert message.startswith(starts), message
    assert received in message and "\n" not in message, message


@pytest.mark.parametrize(
    ("given", "builtin", "said"),
    [
        ({"patience": 0}, ValueError, "patience must be a whole number of at least 1, saw 0"),
        ({"patience": "3"}, TypeError, "patience must be a whole number of at least 1, saw '3'"),
        ({"warmup": 1.5}, TypeError, "warmup must be a whole number of at least 0, saw 1.5"),
        (
            {"dead_fraction": 2.0},
            ValueError,
            "dead_fraction must be a number above 0 and at most 1, saw 2.0",
        ),
        (
            {"vanishing_ratio": float("nan")},
            ValueError,
            "vanishing_ratio must be a number above 0, saw nan",
        ),
        ({"exploding_factor": 1}, ValueError, "exploding_factor must be a number above 1, saw 1"),
    ],
)
def test_thresholds_are_checked_when_made(given: dict[str, Any], builtin: type, said: str) -> None:
    """``Thresholds(patience=0)`` was accepted; the Monitor then never found anything (or
    raised from inside a fit). The error is a ``UsageError`` and the ``TypeError`` or
    ``ValueError`` a Python function raises (the Monitor's own arguments are the same)."""
    with pytest.raises(gradscope.UsageError) as raised:
        gradscope.Thresholds(**given)
    assert isinstance(raised.value, builtin)
    assert str(raised.value) == f"gradscope.Thresholds: {said}"
