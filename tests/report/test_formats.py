"""Every inspect format renders the same report; none is forgotten."""

from __future__ import annotations

import pytest

from gradscope._src.report import INSPECT_FORMATS, Format, render
from tests.report import samples


@pytest.mark.parametrize("fmt", list(INSPECT_FORMATS))
def test_format_renders_every_member(fmt: Format) -> None:
    text = render(samples.inspect_report(), fmt.value)
    assert text.endswith("\n")
    assert "body/w" in text and "spare" in text
