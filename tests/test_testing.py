"""``gradscope.testing.assert_gradients``: pytest users get the check's report as the message."""

from __future__ import annotations

import pytest

import gradscope
from gradscope._src.errors import UsageError
from gradscope._src.frontends.yaml import load_spec
from gradscope._src.report import render
from gradscope.testing import assert_gradients

pytestmark = pytest.mark.tf

MULTITASK = "configs/multitask.yaml"


def test_testing_passes_on_the_specs_own_expect() -> None:
    result = assert_gradients(MULTITASK)
    assert result.passed and result.reports[0].spec == MULTITASK


def test_testing_accepts_a_spec_and_an_expect_of_its_own() -> None:
    from tests.reference import reference

    spec = load_spec(MULTITASK)
    ref = reference(spec)
    reached = sorted(v for v, g in ref["loss_2"].items() if not g.none)
    assert reached == ["body/b", "body/w", "task2/b", "task2/w"]  # bare TensorFlow
    assert_gradients(spec, expect={"loss_2": {"connected": reached, "none": "task1/*"}})


def test_testing_failure_message_is_the_check_report() -> None:
    from tests.reference import reference

    ref = reference(load_spec(MULTITASK))
    assert not ref["loss_1"]["body/w"].none  # TensorFlow gives body/w a gradient from loss_1
    expect = {"loss_1": {"none": ["body/*"]}}
    with pytest.raises(AssertionError) as info:
        assert_gradients(MULTITASK, expect=expect)
    message = str(info.value)
    assert "`body/w` gets a gradient from `loss_1`" in " ".join(message.split())
    assert "but expect.loss_1.none lists `body/*`" in " ".join(message.split())
    result = gradscope.check(MULTITASK, expect=expect)
    assert message == "gradients are not as expected\n\n" + render(result, "table", width=100)


def test_testing_unknown_loss_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="has no loss 'loss_9'"):
        assert_gradients(MULTITASK, expect={"loss_9": {"none": ["*"]}})
