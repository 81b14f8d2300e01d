"""A path that exists is a spec: a file named like a Python target never runs code."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradscope._src.frontends.python import is_python_target


def test_an_existing_file_named_like_a_target_is_a_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "x.py").write_text("open('MARKER', 'w')\ny = 1\n", encoding="utf-8")
    (tmp_path / "configs" / "x.py:y").write_text("gradscope: 1\n", encoding="utf-8")
    assert not is_python_target("configs/x.py:y")  # the file exists: a spec
    assert not is_python_target("configs/x.py:y.yaml")  # a YAML name, even when absent
    assert not is_python_target("configs/x.py:y.yml")
    assert is_python_target("configs/x.py:build")  # no such file: the target is asked for
    assert is_python_target("my_pkg.models:build")
    assert not (tmp_path / "MARKER").exists()


def test_a_spec_or_target_name_with_a_newline_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradscope._src.errors import SpecErrors, TargetError
    from gradscope._src.frontends.python.resolve import resolve
    from gradscope._src.frontends.yaml import load_spec

    monkeypatch.chdir(tmp_path)
    name = "a\n::error::pwned.yaml"
    (tmp_path / name).write_text("gradscope: 1\nlosses: {l: s}\n", encoding="utf-8")
    with pytest.raises(SpecErrors) as refused:
        load_spec(name)
    assert str(refused.value) == (
        "a\\n::error::pwned.yaml:1:1: the file name has control characters; rename the file"
    )
    with pytest.raises(TargetError, match=r"^a\\n::error::x\.py:build: the target has control"):
        resolve("a\n::error::x.py:build")
