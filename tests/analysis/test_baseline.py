"""Baselines: what identifies a problem, which reports are accepted, known vs new vs fixed."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from gradscope._src.analysis.baseline import (
    Baseline,
    baseline_keys,
    key_of,
    load_baseline,
    spec_key,
)
from gradscope._src.analysis.check import check_reports
from gradscope._src.errors import UsageError
from gradscope._src.location import Location
from gradscope._src.results import report as m
from tests.checks import SPEC, clean, every_kind


def _write(tmp_path: Path, data: object, name: str = "baseline.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_baseline_spec_key_normalises_paths() -> None:
    assert spec_key("./configs//x.yaml") == "configs/x.yaml"
    assert spec_key(os.path.abspath("configs/x.yaml")) == "configs/x.yaml"
    assert spec_key("pkg.models:build") == "pkg.models:build"  # a Python target stays as is


def test_baseline_from_a_check_report_holds_every_problem(tmp_path: Path) -> None:
    r = every_kind()
    path = _write(tmp_path, check_reports([r]).to_dict())
    baseline = load_baseline(path)
    assert baseline.keys == {key_of(p) for p in r.problems}
    result = check_reports([r], baseline)
    assert result.passed and len(result.known) == 4 and result.failures == ()


def test_baseline_from_inspect_and_combined_reports(tmp_path: Path) -> None:
    r = every_kind()
    single = baseline_keys(r.to_dict())  # what `inspect --format json` prints
    combined = baseline_keys(check_reports([clean(), r]).to_dict())
    assert set(single) == set(combined) == {key_of(p) for p in r.problems}


def test_baseline_keeps_known_problems_of_a_baselined_report(tmp_path: Path) -> None:
    r = every_kind()
    first = check_reports([r], Baseline("b.json", frozenset([key_of(r.problems[0])])))
    data = first.to_dict()
    assert len(data["problems"]) == 3 and len(data["known_problems"]) == 1
    assert set(baseline_keys(data)) == {key_of(p) for p in r.problems}


def test_baseline_known_problem_passes_and_new_one_fails() -> None:
    r = every_kind()
    held = frozenset(key_of(p) for p in r.problems if p.kind != m.NEVER_TRAINED)
    result = check_reports([r], Baseline("b.json", held))
    assert [p.kind for p in result.failures] == [m.NEVER_TRAINED]
    assert len(result.known) == 3  # still visible, marked known
    assert all(p.known for p in result.known)
    assert result.exit_code == 1


def test_baseline_ignores_messages_and_lines() -> None:
    r = every_kind()
    moved = replace(r, problems=tuple(
        replace(p, message="reworded", location=Location(p.spec, p.line + 7)) for p in r.problems
    ))  # fmt: skip
    held = Baseline("b.json", frozenset(key_of(p) for p in r.problems))
    assert check_reports([moved], held).passed


def test_baseline_reports_fixed_problems_of_checked_specs_only() -> None:
    r = every_kind()
    gone = (SPEC, "loss_9", "w", m.NAN_PROBLEM)
    elsewhere = ("configs/other.yaml", "l", "w", m.NAN_PROBLEM)
    held = Baseline("b.json", frozenset({*map(key_of, r.problems), gone, elsewhere}))
    result = check_reports([r], held)
    assert result.fixed == (gone,)
    assert result.to_dict()["check"]["fixed"] == [
        {"spec": SPEC, "loss": "loss_9", "variable": "w", "kind": "nan"}
    ]
    assert "1 fixed since the baseline" in result.verdict()


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", r"baseline.json:1:2: not JSON"),
        ("[1, 2]", "not a gradscope JSON report"),
        ('{"gradscope": 1, "spec": "x.yaml"}', "not a gradscope JSON report"),
        ('{"gradscope": 1, "spec": "x.yaml", "problems": [{"loss": "l"}]}', "without a `kind`"),
    ],
)
def test_baseline_rejects_what_is_not_a_report(tmp_path: Path, content: str, message: str):
    path = tmp_path / "baseline.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        load_baseline(str(path))


def test_baseline_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read it"):
        load_baseline(str(tmp_path / "missing.json"))


def test_baseline_tells_two_targets_of_one_file_apart(tmp_path: Path) -> None:
    """A target's problems are located in its file, which other targets share: the baseline
    keys them by the target (`twin.py:t1`), so t1's problems never hide t2's."""
    problem = m.Problem.problem(
        None, "w", m.NEVER_TRAINED, "`w` is never trained", (), "twin.py", 3
    )
    t1 = replace(clean(), spec="twin.py:t1", problems=(problem,))
    t2 = replace(clean(), spec="twin.py:t2", problems=(problem,))
    baseline = load_baseline(_write(tmp_path, check_reports([t1]).to_dict()))
    assert baseline.keys == {("twin.py:t1", None, "w", m.NEVER_TRAINED)}
    assert check_reports([t1], baseline).passed
    second = check_reports([t2], baseline)
    assert not second.passed and second.failures == (problem,)


def test_baseline_written_in_another_directory_still_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written from inside bl/ (spec `s.yaml`) and checked from above (spec `bl/s.yaml`):
    the spec is also read relative to the baseline file's folder."""
    folder = tmp_path / "bl"
    folder.mkdir()
    problem = m.Problem.problem(None, "w", m.NEVER_TRAINED, "`w` is never trained", (), "s.yaml", 3)
    there = replace(clean(), spec="s.yaml", problems=(problem,))
    monkeypatch.chdir(folder)
    path = _write(folder, check_reports([there]).to_dict(), "base.json")
    monkeypatch.chdir(tmp_path)
    baseline = load_baseline("bl/base.json")
    moved = replace(problem, location=Location("bl/s.yaml", problem.line), report="bl/s.yaml")
    here = replace(clean(), spec="bl/s.yaml", problems=(moved,))
    assert check_reports([here], baseline).passed
    assert check_reports([replace(here, problems=())], baseline).fixed == (
        ("s.yaml", None, "w", m.NEVER_TRAINED),
    )
    (folder / "sub").mkdir()
    monkeypatch.chdir(folder / "sub")  # below the spec: `../s.yaml`
    below = replace(
        clean(),
        spec="../s.yaml",
        problems=(
            replace(problem, location=Location("../s.yaml", problem.line), report="../s.yaml"),
        ),
    )
    assert check_reports([below], load_baseline("../base.json")).passed
    monkeypatch.chdir(tmp_path)
    other = replace(
        clean(),
        spec="other/s.yaml",
        problems=(
            replace(
                problem, location=Location("other/s.yaml", problem.line), report="other/s.yaml"
            ),
        ),
    )
    assert not check_reports([other], baseline).passed
    assert path.endswith("base.json")
