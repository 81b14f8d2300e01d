"""Gradient assertions for pytest (or any test runner): ``assert_gradients``.

Example::

    from gradscope.testing import assert_gradients

    def test_heads_train_only_their_task():
        assert_gradients(
            "configs/multitask.yaml",
            expect={"loss_1": {"none": ["task2/*"], "connected": ["body/*", "task1/*"]}},
        )

A failure raises ``AssertionError`` whose message is the same report ``gradscope check``
prints: every problem with its loss, variable, cut points and spec line.
"""

from __future__ import annotations

from typing import Any

from gradscope._src.analysis.check import ExpectMap
from gradscope._src.frontends.yaml.model import DEFAULT_MAX_ELEMENTS
from gradscope._src.results.check import CheckResult

#: The width of the report inside an assertion message (pytest does not wrap it).
WIDTH = 100


def assert_gradients(
    target: Any,
    expect: ExpectMap | None = None,
    *,
    baseline: str | None = None,
    device: str | None = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    numeric: bool = False,
) -> CheckResult:
    """Assert that gradients flow as ``expect`` says, under the same policy as ``check``.

    Fails on any ``nan`` gradient, any pair that contradicts ``expect``, and any trainable
    variable no loss trains unless an ``expect.<loss>.none`` pattern names it.

    Args:
        target: anything ``gradscope.check`` accepts: a spec path, a loaded ``Spec``, a
            Python target (``module:function``, ``file.py:function``, a ``Target``, a
            mapping or a callable), or a list of them.
        expect: ``{loss: {"none": [globs], "connected": [globs], "numeric": [globs]}}``;
            replaces the spec's own ``expect`` block. None (the default) uses the spec's own.
        baseline: a JSON report whose problems are known and do not fail.
        device: ``"auto"`` (TensorFlow's placement), ``"cpu"``, ``"gpu"`` or ``"GPU:1"``.
        max_elements: the largest tensor a spec may ask for.
        numeric: also compare every ``ok`` gradient with finite differences and fail on an
            unexplained difference (``check --numeric``).

    Returns:
        The ``CheckResult`` (for further assertions) when the check passes.

    Raises:
        AssertionError: the check failed; the message is the check's report.
        SpecErrors: the spec is invalid. UsageError: ``expect`` names an unknown loss.
    """
    __tracebackhide__ = True  # pytest: show the caller's line, not this one
    from gradscope._src import api
    from gradscope._src import arguments as given

    who = "gradscope.testing.assert_gradients"
    for each in target if isinstance(target, (list, tuple)) else [target]:
        given.target(who, each)
    given.expect(who, expect)
    given.path(who, "baseline", baseline, optional=True)
    given.check_common(who, device=device, max_elements=max_elements)
    given.flag(who, "numeric", numeric)
    from gradscope._src.report import render

    result = api.check(
        target, expect=expect, baseline=baseline, device=device, max_elements=max_elements,
        numeric=numeric,
    )  # fmt: skip
    if not result.passed:
        raise AssertionError(
            "gradients are not as expected\n\n" + render(result, "table", width=WIDTH)
        )
    return result


__all__ = ["assert_gradients"]
