"""The one wording of an explanation (``results/words.py``) and the one place type
(``location.py``): what each says, and that no other module words them again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gradscope._src.location import Location, line_of
from gradscope._src.results import words
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.facts import NanOrigin
from gradscope._src.results.status import Status

CUT = CutPoint("frozen", "StopGradient", "stopped", "configs/x.yaml:17")
ROOT = Path(__file__).resolve().parents[2] / "gradscope"


def test_words_cut_text_in_both_styles() -> None:
    assert words.cut_text(CUT) == "frozen (StopGradient) at configs/x.yaml:17"
    assert words.cut_text(CutPoint("a", "ArgMax", "nondifferentiable", "")) == "a (ArgMax)"
    assert words.cut_quoted(CUT) == "`frozen` (StopGradient), configs/x.yaml:17"
    two = (CUT, CutPoint("r", "Round", "nondifferentiable", "m.py:3"))
    assert words.cuts_text(two) == "frozen (StopGradient) at configs/x.yaml:17; r (Round) at m.py:3"
    assert words.cuts_quoted(two) == (
        "`frozen` (StopGradient), configs/x.yaml:17 and `r` (Round), m.py:3"
    )
    assert words.cut_names(two) == "frozen (StopGradient) and r (Round)"


def test_words_cause_is_the_cut_else_the_note() -> None:
    assert words.cause([CUT], "a note") == "cut at frozen (StopGradient) at configs/x.yaml:17"
    assert words.cause([], "a note") == "a note"
    assert words.cause([]) == ""


def test_words_every_status_has_a_meaning() -> None:
    assert set(words.MEANING) == set(Status)


@pytest.mark.parametrize(
    ("status", "cuts", "said"),
    [
        (Status.DISCONNECTED, (), "no path leads from it to the loss"),
        (Status.EXCLUDED, (), "it is outside the loss's `vars`"),
        (Status.FROZEN, (), "it is not trainable"),
        (Status.STOPPED, (CUT,), "every path is cut at `frozen` (StopGradient), configs/x.yaml:17"),
        (Status.UNEXPLAINED, (), "TensorFlow returns no gradient and gradscope found no cause"),
    ],
)
def test_words_why_none(status: Status, cuts: tuple[CutPoint, ...], said: str) -> None:
    assert words.why_none(status, cuts) == said


def test_words_nan_origin_in_a_table_and_in_a_message() -> None:
    origin = NanOrigin("s", "Sqrt", "x.yaml:9", "forward", "nan")
    assert words.origin_text(origin) == "NaN in the forward value of s (Sqrt)"
    assert words.origin_text(origin, quoted=True) == (
        "NaN first appears in the forward value of `s` (Sqrt), x.yaml:9"
    )
    read = NanOrigin("x", "Placeholder", "", "forward", "inf")
    assert words.origin_text(read, quoted=True) == "Inf is already in the value of `x`"


@pytest.mark.parametrize(
    ("text", "column", "found"),
    [
        ("train.py:57", False, Location("train.py", 57)),
        ("C:\\work\\train.py:57", False, Location("C:\\work\\train.py", 57)),
        ("spec.yaml:3:7", True, Location("spec.yaml", 3, 7)),
        ("spec.yaml:3:7", False, Location("spec.yaml:3", 7)),  # no column asked: FILE:LINE
        ("train.py", False, None),
        ("mypkg.models:build", False, None),
        ("", False, None),
        (":12", False, None),
    ],
)
def test_location_parse(text: str, column: bool, found: Location | None) -> None:
    assert Location.parse(text, column=column) == found
    if found is not None and (column or not found.column):
        assert str(found) == text  # the formatter writes what the parser reads


def test_location_defaults() -> None:
    assert Location.at("model.py:4", "spec.yaml") == Location("model.py", 4)
    assert Location.at("", "spec.yaml") == Location("spec.yaml", 1)
    assert line_of("a.py:9") == 9 and line_of("a.py") == 1
    assert str(Location("a.py")) == "a.py"


def _sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in ROOT.rglob("*.py")}


def test_cut_text_is_built_only_in_words() -> None:
    """``node (Op)`` of a cut point or an origin is put together in results/words.py only."""
    built = re.compile(r"\{\w+(?:\.node|\[.node.\])\}`? \(\{\w+(?:\.op|\[.op.\])\}\)")
    places = sorted(str(p.relative_to(ROOT)) for p, text in _sources().items()
                    if built.search(text))  # fmt: skip
    assert places == ["_src/results/words.py"]


def test_file_line_is_parsed_only_in_location() -> None:
    """No module splits a ``FILE:LINE`` on its colon but location.py (a target's
    ``module:function`` is no place, and is split where targets are read)."""
    split = re.compile(r"(?:site|source|where)\w*\)?\.rpartition\(\":\"\)|rsplit\(\":\", *1\)")
    places = sorted(str(p.relative_to(ROOT)) for p, text in _sources().items()
                    if split.search(text))  # fmt: skip
    assert places == []


#: Phrases of the causes ``gradscope run`` gives a source (why no usable gradient) and of a
#: Python target's notes, each worded in results/words.py only.
CAUSE_PHRASES = (
    "left TensorFlow at",
    "while the tape was not recording",
    "never watched",
    "a tape watches only",
    "TensorFlow filled zeros",
    "last path ends at",
    "the loss never reads it",
    "no op the tape recorded reads it",
    "the program passed None",
    "every element is 0",
    "output_gradients=",
    "a tf.Variable Keras does not track",
    "never run:",
    "train step was traced",
    "traced the train step",
    "reads trainable",
    # a Python target's notes (inspect, check, graph): why a loss was answered eagerly, or
    # its value left TensorFlow before it returned
    "which a traced tf.function cannot do",
    "cannot be traced as a tf.function",
    "The path is cut outside TensorFlow",
    "creates a new variable on every call",
    "not a tensor: TensorFlow sees a constant",
    "not a scalar: gradscope sums it",
    "running this loss eagerly raised",
    "traced and eager gradients disagree",
    "it reads NumPy arrays",
)


def _literals(text: str) -> list[str]:
    """The string literals of a module, docstrings left out (they may describe a cause)."""
    import ast

    tree = ast.parse(text)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docs]  # fmt: skip


def test_run_causes_are_worded_only_in_words() -> None:
    """No module but the registry of causes (results/causes.py) writes a cause of ``gradscope
    run`` (the front-ends make cause objects; results/words.py words a watched call's own
    notes), the registry of kinds (results/kinds.py) says what each kind means in general,
    and report/ only draws them."""
    places = sorted(
        f"{p.relative_to(ROOT)}: {phrase}"
        for p, text in _sources().items()
        if p.name not in ("words.py", "kinds.py", "causes.py")
        for literal in _literals(text)
        for phrase in CAUSE_PHRASES
        if phrase in literal
    )
    assert places == []
