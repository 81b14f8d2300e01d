"""``gradscope check --timeline``: findings of real runs gate CI, in every check format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.timeline.record import write
from tests.cli.test_check import _validate
from tests.conftest import RunCli
from tests.timeline.test_plot import deep_timeline


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.tf
def test_check_timeline_of_a_healthy_run_passes() -> None:
    from tests.timeline import scenarios

    code, stdout, _ = _invoke("check", "--timeline", str(scenarios.healthy().path))
    assert code == 0
    assert "passed" in stdout


@pytest.mark.tf
def test_check_names_what_it_checked_timelines_as_timelines() -> None:
    """The verdict, the table's header (of several) and GitHub's group count specs and
    timelines apart: a timeline was called a spec."""
    from tests.timeline import scenarios

    timeline = str(scenarios.healthy().path)
    code, alone, _ = _invoke("check", "--timeline", timeline)
    assert code == 0
    assert "passed: 1 timeline," in alone
    assert "spec" not in alone.splitlines()[-1]
    _, github, _ = _invoke("check", "--timeline", timeline, "--format", "github")
    assert github.splitlines()[0] == "::group::gradscope check: 1 timeline"
    # configs/two-heads.yaml fails (its stop_gradient cuts what it expects connected)
    code, both, _ = _invoke("check", "configs/two-heads.yaml", "--timeline", timeline)
    assert code == 1
    assert "· 1 spec and 1 timeline ·" in both.splitlines()[0]
    assert "in 1 of 2 files: 1 spec and 1 timeline" in both.splitlines()[-1]


@pytest.mark.tf
def test_check_timeline_findings_fail_in_every_format() -> None:
    from tests.timeline import scenarios

    run = scenarios.dying_relu()
    findings = run.timeline["findings"]
    site = run.timeline["steps"][0]["site"]
    file, _, line = site.rpartition(":")
    outputs = {}
    for fmt in ("table", "json", "junit", "sarif", "github", "markdown"):
        code, outputs[fmt], _ = _invoke("check", "--timeline", str(run.path), "--format", fmt)
        assert code == 1, fmt
    problems = json.loads(outputs["json"])["problems"]
    assert [(p["kind"], p["variable"], p["source"]) for p in problems] == [
        (f["kind"], f["variable"], site) for f in findings
    ]
    junit = ET.fromstring(outputs["junit"])
    assert junit.get("failures") == str(len(findings))
    sarif = json.loads(outputs["sarif"])["runs"][0]
    rules = [r["id"] for r in sarif["tool"]["driver"]["rules"]]
    assert "dead" in rules
    for result in sarif["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"] == "dead"
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == file
        assert location["region"]["startLine"] == int(line)
    annotations = [x for x in outputs["github"].splitlines() if x.startswith("::error")]
    assert len(annotations) == len(findings)
    assert all(
        a.startswith(f"::error file={file},line={line},title=gradscope dead::") for a in annotations
    )
    # said once (issue 45.1): the three dead layers' findings are one line naming each variable
    problems_md = outputs["markdown"].split("**Problems**")[1].split("<details")[0]
    dead = [x for x in problems_md.splitlines() if "**dead**" in x]
    assert len(dead) == 1 and f"{len(findings)} problems" in outputs["markdown"]
    assert all(f["variable"] in dead[0] for f in findings)
    assert "dying ReLU" in outputs["table"]


def test_check_timeline_needs_no_tensorflow(
    tmp_path: Path, run_cli: RunCli, no_tensorflow: dict[str, str]
) -> None:
    path = tmp_path / "t.json"
    write(str(path), deep_timeline(layers=8))
    done = run_cli("check", "--timeline", str(path), "--format", "github", env=no_tensorflow)
    assert done.returncode == 1, done.stderr
    assert "::error file=deep.py,line=40,title=gradscope dead::block_7/dense/kernel" in done.stdout


def test_check_without_spec_or_timeline_is_a_usage_error() -> None:
    code, _, stderr = _invoke("check")
    assert code == 2 and "Missing argument 'SPEC...' (or --timeline FILE)." in stderr


def test_check_unreadable_timeline_is_exit_2(tmp_path: Path) -> None:
    code, _, stderr = _invoke("check", "--timeline", str(tmp_path / "missing.json"))
    assert code == 2 and stderr.startswith("gradscope check: cannot read")


# --- a `gradscope run` timeline whose sites watch different variables (a GAN) ---------------

GAN = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = tf.constant(rng.randn(8, 4).astype("float32"))
g = tf.Variable(rng.randn(4, 4).astype("float32"), name="gen/w")
d = tf.Variable(rng.randn(4, 1).astype("float32"), name="disc/w")


@tf.function
def disc_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.softplus(tf.stop_gradient(x @ g) @ d))
    grads = tape.gradient(loss, [d, g])
    d.assign_sub(0.01 * grads[0])


for _ in range(4):
    disc_step()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(-(x @ g) @ d)
    grads = tape.gradient(loss, [g])
    g.assign_sub(0.01 * grads[0])
"""
DISC_LINE, GEN_LINE = 14, 22


def gan_reference() -> list[dict[str, dict[str, float | None]]]:
    """The GAN's four steps in bare TensorFlow: per step, per site, each variable's gradient
    norm (None: TensorFlow returned no gradient)."""
    import tensorflow as tf

    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(8, 4).astype("float32"))
    g = tf.Variable(rng.randn(4, 4).astype("float32"))
    d = tf.Variable(rng.randn(4, 1).astype("float32"))
    out = []
    for _ in range(4):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.softplus(tf.stop_gradient(x @ g) @ d))
        gd, gg = tape.gradient(loss, [d, g])
        d.assign_sub(0.01 * gd)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(-(x @ g) @ d)
        (gen,) = tape.gradient(loss, [g])
        g.assign_sub(0.01 * gen)
        norm = lambda t: None if t is None else float(np.linalg.norm(t.numpy()))  # noqa: E731
        out.append({"disc": {"disc/w": norm(gd), "gen/w": norm(gg)}, "gen": {"gen/w": norm(gen)}})
    return out


@pytest.fixture(scope="module")
def gan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GAN run under `gradscope run --steps 4 --every 2 --timeline`: its timeline file."""
    folder = tmp_path_factory.mktemp("gan")
    (folder / "gan.py").write_text(GAN)
    timeline = folder / "gan.json"
    code, _, stderr = _invoke(
        "run", "--steps", "4", "--every", "2", "--timeline", str(timeline), str(folder / "gan.py")
    )
    assert code == 1, stderr  # gen/w gets no gradient at the discriminator's call
    return timeline


@pytest.mark.tf
def test_check_timeline_of_sites_watching_different_variables_in_every_format(
    gan: Path,
) -> None:
    expected = gan_reference()[-1]  # check shows the last recorded step (4)
    outputs = {}
    for fmt in ("table", "json", "junit", "sarif", "github", "markdown"):
        code, outputs[fmt], stderr = _invoke("check", "--timeline", str(gan), "--format", fmt)
        assert code == 1, (fmt, stderr)
    losses = json.loads(outputs["json"])["losses"]
    disc = next(v["variables"] for k, v in losses.items() if k.endswith(f"gan.py:{DISC_LINE}"))
    gen = next(v["variables"] for k, v in losses.items() if k.endswith(f"gan.py:{GEN_LINE}"))
    assert expected["disc"]["gen/w"] is None and disc["gen/w"]["status"] == "none:stopped"
    assert disc["disc/w"]["status"] == "ok"
    assert disc["disc/w"]["norm"] == pytest.approx(expected["disc"]["disc/w"], rel=1e-5)
    assert gen["gen/w"]["status"] == "ok"
    assert gen["gen/w"]["norm"] == pytest.approx(expected["gen"]["gen/w"], rel=1e-5)
    assert gen["disc/w"]["status"] == "excluded"  # the generator's call asks no gradient for it
    table = outputs["table"].splitlines()
    # one column per site (in blocks when the sites' names are wide): the generator's excluded
    cells = [cell for line in table if line.startswith("disc/w") for cell in line.split()[2:]]
    assert cells.count("excluded") == 1 and cells.count("ok") == 1, table
    assert "excluded: disc/w (this call asks no gradient for it)" in outputs["table"]
    assert "| `disc/w` | [4,1] | ✅ ok" in outputs["markdown"]
    assert "▫️ excluded |" in outputs["markdown"]
    _validate(json.loads(outputs["json"]), "report-v1.json")


@pytest.mark.tf
def test_check_timeline_json_is_valid_against_the_schema(gan: Path) -> None:
    from tests.timeline import scenarios

    paths = [str(scenarios.dying_relu().path), str(scenarios.exploding().path)]
    kinds = set()
    for path in paths:
        code, out, _ = _invoke("check", "--timeline", path, "--format", "json")
        assert code == 1
        report = json.loads(out)
        _validate(report, "report-v1.json")
        kinds |= {p["kind"] for p in report["problems"]}
    assert {"dead", "exploding", "nan"} <= kinds
    both = ["--timeline", paths[0], "--timeline", str(gan)]
    code, out, _ = _invoke("check", *both, "--format", "json")
    combined = json.loads(out)
    _validate(combined, "check-v1.json")
    assert {p["kind"] for p in combined["problems"]} == {"dead", "none"}


@pytest.mark.tf
def test_check_timeline_baseline_holds_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.timeline import scenarios

    run = scenarios.exploding()
    monkeypatch.chdir(run.path.parent.parent)
    relative = f"{run.path.parent.name}/{run.path.name}"  # written as a relative path ...
    base = tmp_path / "base.json"
    code, _, _ = _invoke("check", "--timeline", relative, "--write-baseline", str(base))
    assert code == 1
    written = json.loads(base.read_text())["problems"]
    assert {(p["kind"], p["variable"]) for p in written} == {
        (f["kind"], f["variable"]) for f in run.timeline["findings"]
    }
    # ... and checked by its absolute path: the same identity rules as a spec's
    code, out, _ = _invoke("check", "--timeline", str(run.path), "--baseline", str(base),
                           "--format", "json")  # fmt: skip
    report = json.loads(out)
    assert code == 0, report["problems"]
    assert report["problems"] == [] and len(report["known_problems"]) == len(written)
    assert report["check"]["passed"] and report["check"]["known"] == len(written)
    # A finding the baseline does not hold still fails, alone.
    dropped = written.pop()
    base.write_text(json.dumps({**json.loads(base.read_text()), "problems": written}))
    code, out, _ = _invoke("check", "--timeline", relative, "--baseline", str(base),
                           "--format", "json")  # fmt: skip
    problems = json.loads(out)["problems"]
    assert code == 1
    assert [(p["kind"], p["variable"], p["known"]) for p in problems] == [
        (dropped["kind"], dropped["variable"], False)
    ]


@pytest.mark.tf
def test_check_timeline_fails_on_records_its_findings_do_not_hold(tmp_path: Path) -> None:
    from tests.timeline import scenarios

    run = scenarios.exploding()
    nan_variables = {
        name
        for record in run.timeline["steps"]
        for name, v in record["variables"].items()
        if v["norm"] is None and v["status"] == "nan"
    }
    assert nan_variables  # the records hold NaN gradients
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps({**run.timeline, "findings": []}))
    code, out, _ = _invoke("check", "--timeline", str(stripped), "--format", "json")
    assert code == 1
    problems = json.loads(out)["problems"]
    assert {p["variable"] for p in problems if p["kind"] == "nan"} == nan_variables
    # Read again with the file's thresholds, the records give the findings the file had.
    code, whole, _ = _invoke("check", "--timeline", str(run.path), "--format", "json")
    key = lambda p: (p["kind"], p["variable"], p["message"])  # noqa: E731
    assert sorted(map(key, problems)) == sorted(map(key, json.loads(whole)["problems"]))
    code, table, _ = _invoke("check", "--timeline", str(stripped))
    assert f"{len(problems)} findings read from the recorded steps" in table


@pytest.mark.tf
def test_check_timeline_junit_points_at_the_program_line() -> None:
    from tests.timeline import scenarios

    run = scenarios.exploding()
    site = run.timeline["steps"][0]["site"]
    code, out, _ = _invoke("check", "--timeline", str(run.path), "--format", "junit")
    assert code == 1
    cases = ET.fromstring(out).iter("testcase")
    texts = [case.findtext("system-out") or "" for case in cases]
    assert texts and all(text.split("\n")[0] == f"at: {site}" for text in texts)


@pytest.mark.tf
def test_check_timeline_says_its_numbers_were_recorded_not_traced() -> None:
    from tests.timeline import scenarios

    run = scenarios.exploding()
    code, out, _ = _invoke("check", "--timeline", str(run.path), "--format", "json")
    assert code == 1 and json.loads(out)["route"] == "timeline"
    # No NaN origin was searched in a recorded run: no "not found" section claims one was.
    for fmt in ("table", "markdown"):
        code, out, _ = _invoke("check", "--timeline", str(run.path), "--format", fmt)
        assert "nan" in out and "Where NaN/Inf first appeared" not in out, fmt


def _forging_timeline(tmp_path: Path) -> str:
    """A timeline whose site and variable names hold a newline and a workflow command, and
    a lone surrogate; its variable stops getting a gradient (a `none` finding)."""
    site = "train.py\n::error file=forged.py,line=1::site:20"
    variable = "d\ud800/kernel\n::warning::forged"
    steps = [{"step": i, "site": site, "loss": 0.5,
              "variables": {variable: {"status": "ok" if i < 3 else "none:disconnected",
                                       "norm": 0.1 if i < 3 else None}}}
             for i in range(1, 6)]  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"gradscope": 1, "program": "x\n::error::p.py", "steps": steps}))
    return str(path)


@pytest.mark.parametrize("fmt", ["github", "table", "markdown"])
def test_check_timeline_names_cannot_forge_workflow_commands(tmp_path: Path, fmt: str) -> None:
    code, stdout, stderr = _invoke("check", "--timeline", _forging_timeline(tmp_path),
                                   "--format", fmt)  # fmt: skip
    assert code == 1, stderr
    lines = stdout.splitlines()
    commands = [line for line in lines if line.startswith("::")]
    if fmt == "github":  # the group, its end, the one finding's annotation, two notes
        kinds = [c.split(" ")[0].split("::")[1] for c in commands]
        assert kinds == ["group", "endgroup", "error", "notice", "notice"]
    else:
        assert commands == []
    forged = ("::error file=forged.py", "::warning::forged", "::error::p.py")
    assert not any(line.lstrip().startswith(forged) for line in lines)
    assert "\\ud800" in stdout and "\\n::warning::forged" in stdout


def test_check_timeline_baseline_with_escaped_names_round_trips(tmp_path: Path) -> None:
    """A lone surrogate in a timeline, then in the baseline written from it, crashed `check`;
    the names are escaped the same way on both sides, so the baseline holds the finding."""
    timeline = _forging_timeline(tmp_path)
    baseline = str(tmp_path / "baseline.json")
    code, _, stderr = _invoke("check", "--timeline", timeline, "--write-baseline", baseline)
    assert code == 1, stderr
    code, stdout, stderr = _invoke("check", "--timeline", timeline, "--baseline", baseline)
    assert code == 0, stdout + stderr
    assert "1 known" in stdout or "known" in stdout


def test_check_timeline_fails_on_a_flag_changed_after_the_trace(tmp_path: Path) -> None:
    """The Monitor's findings of a ``trainable`` flag changed after Keras traced the step
    (``unexpected-connected``, ``never-trained``) fail the check as ``run``'s problems do."""
    site = "train.py:12"
    message = ("frozen after the train step was traced at train.py:9, which still updates it: "
               "call compile() again after changing trainable")  # fmt: skip
    findings = [
        {"kind": "unexpected-connected", "site": site, "variable": "base/kernel", "from_step": 7,
         "message": f"base/kernel: {message}", "traced_at": "train.py:9"},
        {"kind": "never-trained", "site": site, "variable": "head/bias", "from_step": 7,
         "message": "head/bias: made trainable after the train step was traced at train.py:9",
         "traced_at": "train.py:9"},
    ]  # fmt: skip
    stats = {"status": "ok", "norm": 0.5, "weight_norm": 1.0, "zero_fraction": 0.0}
    path = tmp_path / "timeline.json"
    write(str(path), {"gradscope": 1, "program": "train.py", "findings": findings,
                      "steps": [{"step": 7, "site": site, "loss": 0.25,
                                 "variables": {"base/kernel": stats}}]})  # fmt: skip
    code, stdout, stderr = _invoke("check", "--timeline", str(path), "--format", "json")
    assert code == 1, stderr
    problems = json.loads(stdout)["problems"]
    assert [(p["kind"], p["variable"]) for p in problems] == [
        ("unexpected-connected", "base/kernel"), ("never-trained", "head/bias")]  # fmt: skip
