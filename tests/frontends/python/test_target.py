"""The TensorFlow-free parts of Python targets: parsing, checking, naming, locating."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gradscope
from gradscope._src.errors import TargetError
from gradscope._src.frontends.python import frames, is_python_target
from gradscope._src.frontends.python.target import Target, coerce, expectations
from gradscope._src.frontends.python.variables import unique_names
from gradscope._src.results.expect import Pos


def _loss() -> float:
    return 1.0


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ("my_pkg.models:build", True),
        ("models:build", True),
        ("path/to/train.py:build", True),
        ("train.py:Models.build", True),
        ("train.py", True),  # a target missing its function: resolved into a clear error
        ("configs/multitask.yaml", False),
        ("spec.yml", False),
        (Path("configs/multitask.yaml"), False),
        (Target(losses={"l": _loss}), True),
        ({"losses": {"l": _loss}}, True),
        (_loss, True),
    ],
)
def test_is_python_target(obj: object, expected: bool) -> None:
    assert is_python_target(obj) is expected


def test_target_is_exported_lazily_from_the_package() -> None:
    assert gradscope.Target is Target
    assert "Target" in dir(gradscope)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"losses": {}}, "must map names to zero-argument callables, saw an empty mapping"),
        ({"losses": [_loss]}, "'losses' must map names to zero-argument callables, saw list"),
        ({"losses": {"l": 3}}, "loss 'l' must be a zero-argument callable, saw int"),
        ({"losses": {"": _loss}}, "loss names must be non-empty strings, saw ''"),
        ({"losses": {"l": _loss}, "variables": "w"}, "'variables' must be a list of variables"),
        ({"losses": {"l": _loss}, "eager_check": "yes"}, "'eager_check' must be True or False"),
        ({"losses": {"l": _loss}, "name": 3}, "'name' must be a string, saw int"),
        ({"losses": {"l": _loss}, "expect": {"l": {"nope": []}}},
         "expect['l'] must be a mapping with 'none', 'connected' and/or 'numeric'"),
        ({"losses": {"l": _loss}, "expect": {"l": {"none": [1]}}},
         "expect['l']['none'] must be a list of glob strings"),
        ({"variables": []}, "the mapping has no 'losses'"),
        ({"losses": {"l": _loss}, "los": 1}, "unknown key 'los' (did you mean 'losses'?)"),
        ("losses", "returned str; expected a gradscope.Target or a mapping"),
    ],
)  # fmt: skip
def test_coerce_refuses_what_is_not_a_target(value: object, message: str) -> None:
    with pytest.raises(TargetError) as caught:
        coerce(value, "t.py:build")
    assert str(caught.value) == f"t.py:build: {message}" or message in str(caught.value)


def test_expectations_point_at_the_line_that_wrote_each_glob() -> None:
    lines = [
        "def build():\n",
        "    return {\n",
        '        "losses": {"main": f},\n',
        '        "expect": {\'main\': {"none": [\'head/*\'], "connected": ["body/*"]}},\n',
        "    }\n",
    ]
    target = Target(
        losses={"main": _loss}, expect={"main": {"none": ["head/*"], "connected": "body/*"}}
    )
    (e,) = expectations(target, lines, 10)
    assert e.loss == "main"
    assert e.none[0].glob == "head/*"
    assert e.none[0].pos == Pos(13, lines[3].index("'head/*'") + 1)
    assert e.connected[0].pos == Pos(13, lines[3].index('"body/*"') + 1)
    assert e.pos == Pos(12, lines[2].index('"main"') + 1)  # the first line quoting the loss


def test_expectations_without_source_use_the_function_line() -> None:
    target = Target(losses={"main": _loss}, expect={"main": {"none": ["x"]}})
    (e,) = expectations(target, [], 7)
    assert e.none[0].pos == Pos(7, 1)


def test_unique_names_suffix_clashes_without_merging() -> None:
    assert unique_names(["w", "w", "b", "w_1", "w"]) == ["w", "w_2", "b", "w_1", "w_3"]


def test_display_path_is_relative_below_the_current_directory(tmp_path: Path) -> None:
    inside = Path.cwd() / "pkg" / "m.py"
    assert frames.display_path(str(inside)) == os.path.join("pkg", "m.py")
    assert frames.display_path(str(tmp_path / "x.py")) == str(tmp_path / "x.py")


def test_innermost_skips_libraries_and_callers_of_gradscope() -> None:
    user = str(Path.cwd() / "train.py")
    tf_file = os.path.join(os.path.dirname(frames.__file__), "..", "api.py")  # gradscope itself
    stdlib = os.__file__
    stack = [
        frames.Site(user, 3, "<module>"),  # the caller of gradscope: never the answer
        frames.Site(frames.__file__, 99, "call_user"),
        frames.Site(user, 42, "loss"),
        frames.Site(stdlib, 10, "helper"),
        frames.Site(tf_file, 5, "inner"),
    ]
    assert frames.innermost(stack) == frames.Site(user, 42, "loss")
    assert frames.innermost(stack[:2] + stack[3:]) is None  # nothing of the user's below


def test_first_message_line_drops_autograph_frames() -> None:
    exc = AttributeError(
        'in user code:\n\n    File "train.py", line 5, in loss  *\n        x.numpy()\n\n'
        "    AttributeError: 'SymbolicTensor' object has no attribute 'numpy'\n"
    )
    assert frames.first_message_line(exc) == (
        "AttributeError: 'SymbolicTensor' object has no attribute 'numpy'"
    )
    site = frames.of_exception(exc)
    assert site is not None and (Path(site.filename).name, site.line) == ("train.py", 5)
