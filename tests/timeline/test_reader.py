"""Reading timelines: every version, structure and type checked in one place (``reader.load``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.timeline import check, plot
from gradscope._src.timeline.findings import FLAG_KINDS, KINDS
from gradscope._src.timeline.reader import VERSIONS, TimelineError, load
from gradscope._src.timeline.record import TIMELINE_VERSION, Recorder


def _timeline(steps: int = 4) -> dict[str, Any]:
    """A small timeline as the recorder writes it: two sites, two losses on one, a None
    gradient with its cause and cut point, a NaN, and findings."""
    rng = np.random.default_rng(0)
    recorder = Recorder(every=1, program="train.py")
    cut = {"node": "frozen", "op": "StopGradient", "kind": "stopped", "source": "train.py:9"}
    for step in range(1, steps + 1):
        w, b = rng.normal(size=(3, 2)), rng.normal(size=2)
        if step == steps:
            w[0, 0] = np.nan
        entries = [("w", w, np.ones((3, 2))), ("b", None, np.ones(2), "none:stopped", "cut", [cut])]
        losses = {"a": (1.0, [("w", w)]), "c": (2.0, [("w", -w)])}
        recorder.record(step, "train.py:20", 1.0 / step, entries, losses=losses)
        recorder.record(step, "train.py:31", None, [("b", b, np.ones(2))])
    return recorder.close()


def _write(tmp_path: Path, data: Any, name: str = "t.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_load_reads_back_what_the_recorder_writes(tmp_path: Path) -> None:
    timeline = _timeline()
    assert {f["kind"] for f in timeline["findings"]} == {"nan", "none"}
    assert "losses" in timeline["steps"][0] and "cosine" in timeline["steps"][0]
    assert load(_write(tmp_path, timeline)) == timeline
    assert TIMELINE_VERSION in VERSIONS


@pytest.mark.tf
def test_load_reads_back_what_the_monitor_writes() -> None:
    from tests.timeline import scenarios

    for run in (scenarios.conflicting(), scenarios.exploding(), scenarios.dying_relu()):
        assert load(str(run.path)) == run.timeline


@pytest.mark.parametrize("version", [2, 99, 0, True, "1", 1.0, None, [1]])
def test_load_refuses_a_version_it_does_not_know(tmp_path: Path, version: Any) -> None:
    timeline = _timeline() | {"gradscope": version}
    timeline["findings"] = []  # version 99 with no findings passed CI
    path = _write(tmp_path, timeline)
    with pytest.raises(TimelineError) as error:
        load(path)
    assert str(error.value) == (
        f"{path}: timeline version {json.dumps(version)}; this gradscope reads version 1 only "
        "(a newer gradscope wrote it, or it is not a timeline)"
    )


def test_load_refuses_a_timeline_without_version(tmp_path: Path) -> None:
    timeline = _timeline()
    del timeline["gradscope"]
    path = _write(tmp_path, timeline)
    with pytest.raises(
        TimelineError, match=r"^.*t\.json: not a gradscope timeline: no `gradscope`"
    ):
        load(path)


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (
            ("steps", 3, "step"),
            "a",
            'steps[3].step: expected an integer from 0 to 2**63-1, saw "a"',
        ),
        (
            ("steps", 4, "variables", "w", "norm"),
            "big",
            'steps[4].variables["w"].norm: expected a finite number from 0 or null, saw "big"',
        ),
        (("steps", 0, "variables", "w", "status"), "fine", 'steps[0].variables["w"].status: '),
        (("steps", 1, "site"), 7, "steps[1].site: expected a string, saw 7"),
        (("steps", 1, "variables"), [], "steps[1].variables: expected an object, saw []"),
        (("steps", 2, "variables", "w", "zero_fraction"), 2, "zero_fraction: expected a finite"),
        (
            ("steps", 2, "variables", "w", "shape"),
            [3, "2"],
            "shape: expected a list of integers from 0",
        ),
        (("steps", 0, "cosine", 0, "losses"), ["a"], "steps[0].cosine[0].losses: expected the"),
        (("findings", 0, "from_step"), None, "findings[0].from_step: expected an integer"),
        (
            ("findings", 0, "kind"),
            "bad",
            "expected one of nan, exploding, dead, vanishing, none, unexpected-connected, "
            "never-trained, unexpected-none, replica-mismatch, moved-without-gradient;",
        ),
        (("thresholds", "patience"), 1.5, "thresholds.patience: expected an integer"),
        (("every",), 0, "every: expected an integer from 1 to 2**63-1, saw 0"),
        (("steps",), {}, "steps: expected a list, saw {}"),
    ],
)
def test_load_names_the_file_and_the_place_of_a_wrong_value(
    tmp_path: Path, where: tuple[Any, ...], value: Any, message: str
) -> None:
    timeline = _timeline()
    parent = timeline
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    path = _write(tmp_path, timeline)
    with pytest.raises(TimelineError) as error:
        load(path)
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_load_names_a_missing_key(tmp_path: Path) -> None:
    timeline = _timeline()
    del timeline["steps"][2]["variables"]["b"]["status"]
    with pytest.raises(TimelineError, match=r'steps\[2\]\.variables\["b"\]: `status` is missing$'):
        load(_write(tmp_path, timeline))


def test_load_refuses_non_finite_numbers_and_deep_nesting(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = json.dumps(_timeline()).replace('"loss": 1.0', '"loss": NaN', 1)
    path.write_text(text)
    with pytest.raises(TimelineError, match=r"steps\[0\]\.loss: expected a finite number or null"):
        load(str(path))
    path.write_text('{"gradscope": 1, "steps": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(TimelineError, match="not a gradscope timeline"):
        load(str(path))


def _mutations(value: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place of a JSON value (to replace or remove)."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, inner in items:
        yield (*where, key)
        if isinstance(inner, dict | list):
            yield from _mutations(inner, (*where, key))


WRONG = ["x", -1, 1e400, None, True, [], {}]


def test_no_wrong_value_or_missing_key_crashes_plot_or_check(tmp_path: Path) -> None:
    """Replace every value of a timeline by each wrong kind of value, and remove every key:
    the loader refuses the file with a located error, or what it accepts draws and checks."""
    import matplotlib.pyplot as plt

    original = _timeline(steps=2)
    assert {f["kind"] for f in original["findings"]} == {"nan", "none"}
    accepted = set()
    for where in _mutations(original):
        for wrong in [*WRONG, "remove"]:
            timeline = copy.deepcopy(original)
            parent = timeline
            for key in where[:-1]:
                parent = parent[key]
            if wrong == "remove":
                if isinstance(parent, list):
                    continue
                del parent[where[-1]]
            else:
                parent[where[-1]] = wrong
            try:
                data = load(_write(tmp_path, timeline))
            except TimelineError as error:
                assert str(error).startswith(str(tmp_path)), error
                continue
            check.report(data, "t.json")
            accepted.add(json.dumps(data, sort_keys=True))
    assert len(accepted) > 20
    for text in sorted(accepted)[::4]:  # drawing takes 0.1 s: every fourth
        plt.close(plot.figure(json.loads(text)))  # what render draws, before it is saved


def test_plot_and_check_refuse_a_bad_timeline_in_one_line(tmp_path: Path) -> None:
    timeline = _timeline()
    timeline["steps"][4]["variables"]["w"]["norm"] = "big"
    path = _write(tmp_path, timeline)
    for args in (["plot", path, "-o", str(tmp_path / "t.png")], ["check", "--timeline", path]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        command = args[0]
        assert result.stderr == (
            f'gradscope {command}: {path}: steps[4].variables["w"].norm: expected a finite '
            'number from 0 or null, saw "big"\n'
        )
    assert not (tmp_path / "t.png").exists()


@pytest.mark.parametrize("version", [2, 99])
def test_check_refuses_a_newer_timeline_with_no_findings(tmp_path: Path, version: int) -> None:
    timeline = _timeline() | {"gradscope": version, "findings": []}
    path = _write(tmp_path, timeline)
    result = CliRunner().invoke(main, ["check", "--timeline", path, "--format", "json"])
    assert result.exit_code == 2
    said = json.loads(result.stdout)  # no report of a passing check: the failure, as data
    assert "problems" not in said and said["error"]["exit_code"] == 2
    assert said["error"]["message"].startswith(f"gradscope check: {path}: timeline version")
    assert result.stderr.startswith(f"gradscope check: {path}: timeline version {version};")


def test_every_finding_kind_is_read() -> None:
    assert set(KINDS) == {"nan", "exploding", "dead", "vanishing", "none"} | set(FLAG_KINDS) | {
        "unexpected-none",
        "replica-mismatch",
        "moved-without-gradient",
    }  # a run's problems its steps do not show
    assert set(FLAG_KINDS) == {"unexpected-connected", "never-trained"}  # the Monitor's


def test_load_refuses_a_fifo_without_waiting_and_text_that_is_not_utf8(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        load(str(fifo))  # opening a FIFO to read would otherwise wait for a writer forever
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(TimelineError, match=r"b\.json: not a gradscope timeline: not UTF-8"):
        load(str(binary))


def test_load_reads_the_allowed_none_marks_of_gradscope_run(tmp_path: Path) -> None:
    timeline = _timeline() | {"allow_none": ["b"]}
    timeline["steps"][0]["variables"]["b"]["allowed"] = True
    assert load(_write(tmp_path, timeline)) == timeline
    timeline["steps"][0]["variables"]["b"]["allowed"] = "yes"
    with pytest.raises(TimelineError, match=r'variables\["b"\]\.allowed: expected true or false'):
        load(_write(tmp_path, timeline))
    timeline = _timeline() | {"allow_none": "b"}
    with pytest.raises(TimelineError, match="allow_none: expected a list"):
        load(_write(tmp_path, timeline))


def test_load_refuses_a_step_no_float_holds(tmp_path: Path) -> None:
    """A 401-digit step is JSON; it made `plot` raise OverflowError. Steps, like TensorFlow's,
    are int64."""
    timeline = _timeline()
    timeline["steps"][1]["step"] = 10**400
    with pytest.raises(TimelineError, match=r"steps\[1\]\.step: expected an integer from 0 to"):
        load(_write(tmp_path, timeline))
    timeline["steps"][1]["step"] = 2**63 - 1
    assert load(_write(tmp_path, timeline))["steps"][1]["step"] == 2**63 - 1
    result = CliRunner().invoke(main, ["plot", _write(tmp_path, {**timeline, "every": 10**400}),
                                       "-o", str(tmp_path / "p.png")])  # fmt: skip
    assert result.exit_code == 2 and "every: expected an integer" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "p.png").exists()


def test_load_keeps_names_as_written_and_shown_escapes_them(tmp_path: Path) -> None:
    """Lone surrogates (valid JSON escapes, no UTF-8 can hold them), newlines and terminal
    escapes in names are read as written (``check --timeline --format json`` is faithful);
    what ``plot`` and the text formats draw is ``printable.shown`` of it."""
    from gradscope._src.printable import shown

    timeline = _timeline()
    record = timeline["steps"][0]
    record["site"] = "train.py\n::error file=x.py::forged:20"
    record["variables"]["d\ud800/kernel"] = record["variables"].pop("w")
    timeline["program"] = "tr\udcffin\x1b[2J.py"
    loaded = load(_write(tmp_path, timeline))
    assert loaded["program"] == "tr\udcffin\x1b[2J.py"
    assert loaded["steps"][0]["site"] == "train.py\n::error file=x.py::forged:20"
    seen = shown(loaded)
    assert seen["program"] == "tr\\udcffin\\x1b[2J.py"
    assert seen["steps"][0]["site"] == "train.py\\n::error file=x.py::forged:20"
    assert "d\\ud800/kernel" in seen["steps"][0]["variables"]
    json.dumps(seen, ensure_ascii=False).encode("utf-8")  # nothing left UTF-8 cannot hold


def test_thresholds_out_of_their_range_are_an_error_at_their_place(tmp_path: Path) -> None:
    """A timeline whose ``thresholds.patience`` is 0 (no finding could ever be made) is
    refused where it is, as gradscope.Thresholds refuses it; it was read."""
    timeline = _timeline()
    timeline["thresholds"] = {"patience": 0}
    with pytest.raises(TimelineError, match=r"thresholds: patience must be a whole number of "
                       r"at least 1, saw 0"):  # fmt: skip
        load(_write(tmp_path, timeline))
