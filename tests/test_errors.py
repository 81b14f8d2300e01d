"""``errors.py``: a spec error is located by the one ``Location`` type, and worded from it."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradscope
from gradscope._src.errors import SpecError, SpecErrors
from gradscope._src.frontends.yaml import load_spec


def test_spec_error_carries_the_location_every_finding_carries() -> None:
    error = SpecError(gradscope.Location("specs/a.yaml", 5, 40), "nodes[0]", "saw 'ww'")
    assert isinstance(error.location, gradscope.Location)
    assert (error.path, error.line, error.column) == ("specs/a.yaml", 5, 40)
    assert str(error) == "specs/a.yaml:5:40: nodes[0]: saw 'ww'"


def test_spec_error_of_a_whole_file_names_the_file_only() -> None:
    error = SpecError(gradscope.Location("gone.yaml"), "", "no such file")
    assert str(error) == "gone.yaml: no such file"


def test_spec_errors_of_a_spec_are_located_at_its_lines(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("gradscope: 1\ninputs:\n  x: {shape: three}\n", encoding="utf-8")
    with pytest.raises(SpecErrors) as raised:
        load_spec(str(spec))
    shape = {e.field: e for e in raised.value.errors}["inputs.x.shape"]
    assert shape.location == gradscope.Location(str(spec), 3, 14)  # `three`
    assert str(shape) == (
        f"{spec}:3:14: inputs.x.shape: expected a list of non-negative integers, saw 'three'"
    )
