"""``gradscope run`` runs the program to its end by default (each call site watched for its
first ``--steps`` executions); ``--stop`` stops it early and the report says so; every
option-like word before SCRIPT is gradscope's, every word after it the program's (issue 27,
points 1 and 6). References: the same program run as Python runs it, and bare Keras."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gradscope
from tests.cli.test_run import _invoke, _program, _validate
from tests.frontends.program.test_run import line_of, site, unwatched

tf_mark = pytest.mark.tf


def _fresh() -> None:
    import keras

    keras.backend.clear_session()  # Keras' name counters, as in the new process run starts


def _json(out: str) -> tuple[str, dict]:
    """What the program printed, and the JSON report after it (``--output -``)."""
    at = out.index("{\n")
    return out[:at], json.loads(out[at:])


@pytest.fixture(scope="module")
def refreeze() -> dict[str, tuple[int, str, dict]]:
    """refreeze.py as Python runs it, under ``gradscope run`` by default, with the old
    ``--continue``, and with ``--stop``."""
    _fresh()
    runs: dict[str, tuple[int, str, dict]] = {"python": (0, unwatched("refreeze.py"), {})}
    for name, options in (("default", []), ("continue", ["--continue"]), ("stop", ["--stop"])):
        _fresh()
        code, out, _ = _invoke(*options, "--format", "json", "--output", "-",
                               _program("refreeze.py"))  # fmt: skip
        runs[name] = (code, *_json(out))
    return runs


@tf_mark
def test_run_by_default_reaches_the_second_fit_and_its_frozen_layer(refreeze) -> None:
    _, printed, _ = refreeze["python"]
    # bare Keras: the step traced by the first fit() still trains the base frozen since
    assert printed == "changed [True, True, True, True]\n"
    code, out, report = refreeze["default"]
    assert out == printed  # the program ran to its end, as python runs it
    _validate(report)
    assert code == 1 and report["outcome"] == "finished" and "stop" not in report
    second = site("refreeze.py", "before = [") .rsplit(":", 1)[0] + ":" + str(
        line_of("refreeze.py", "before = [") + 1)  # fmt: skip
    assert [(c["site"], c["step"]) for c in report["calls"]] == [
        (site("refreeze.py", "model.fit(x, y"), 1), (second, 1)]  # fmt: skip
    assert {(p["site"], p["variable"], p["kind"]) for p in report["problems"]} == {
        (second, "base/kernel", "unexpected-connected"),
        (second, "base/bias", "unexpected-connected"),
    }


@tf_mark
def test_run_continue_is_accepted_and_changes_nothing(refreeze) -> None:
    assert refreeze["continue"] == refreeze["default"]


@tf_mark
def test_run_stop_stops_says_so_and_lists_the_sites_seen(refreeze) -> None:
    code, out, report = refreeze["stop"]
    _validate(report)
    first = site("refreeze.py", "model.fit(x, y")
    assert (code, out, report["outcome"]) == (0, "", "stopped")
    assert report["stop"] == {"site": first, "steps": 1, "sites": [first], "refused": 1,
                              "caught": False, "finished": False}  # fmt: skip
    assert [c["step"] for c in report["calls"]] == [1]


@tf_mark
def test_run_stop_verdict_is_never_a_bare_green_pass() -> None:
    _fresh()
    code, _, err = _invoke("--stop", _program("refreeze.py"))
    verdict = " ".join(err.split("\n\n")[-1].split())
    first = site("refreeze.py", "model.fit(x, y")
    assert code == 0
    assert verdict == (f"1 call(s) at 1 site(s) · 0 problems · stopped by --stop at step 2 of "
                       f"{first} (--steps 1): the rest of the program did not run, so nothing in "
                       f"it was watched · call sites seen: {first}")  # fmt: skip
    from gradscope._src.report.table import run_tone as tone
    from gradscope._src.results import run as rr

    stopped = rr.RunReport("p", (), "", "CPU:0", (), (), outcome=rr.STOPPED,
                           stop=rr.Stop(first, (first,)))  # fmt: skip
    assert tone(stopped) == "yellow"


@tf_mark
def test_run_stop_github_format_warns_that_the_rest_did_not_run() -> None:
    _fresh()
    code, _, err = _invoke("--stop", "--format", "github", _program("refreeze.py"))
    assert code == 0
    (warning,) = [line for line in err.splitlines() if line.startswith("::warning")]
    assert "stopped by --stop at step 2 of" in warning and "did not run" in warning


@tf_mark
def test_run_stop_swallowed_by_a_bare_except_is_told_as_it_happened() -> None:
    import tensorflow as tf

    w, v = tf.Variable([1.0, 2.0]), tf.Variable([3.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    bare = tape.gradient(loss, [w, v])
    assert bare[0] is not None and bare[1] is None
    # as Python runs it, no call raises
    assert unwatched("swallow_stop.py") == "got [[True, False], [True, False], [True, False]]\n"
    code, out, _ = _invoke("--stop", "--format", "json", "--output", "-",
                           _program("swallow_stop.py"))  # fmt: skip
    printed, report = _json(out)
    _validate(report)
    # gradscope's stop, raised into the program at the 2nd and 3rd calls, was swallowed
    assert printed == "got [[True, False], 'raised', 'raised']\n"
    where = site("swallow_stop.py", "results.append(tape.gradient")
    assert report["outcome"] == "stopped"  # not "finished": two gradient calls were refused
    assert report["stop"] == {"site": where, "steps": 1, "sites": [where], "refused": 2,
                              "caught": True, "finished": True}  # fmt: skip
    assert [(p["variable"], p["kind"]) for p in report["problems"]] == [("v", "unexpected-none")]
    assert code == 1
    _, _, err = _invoke("--stop", _program("swallow_stop.py"))
    verdict = " ".join(err.split("\n\n")[-1].split())
    assert "ran to its end" not in verdict
    assert "the program caught the stop and went on to its end: 2 gradient call(s)" in verdict


@tf_mark
def test_run_default_with_a_timeline_runs_to_the_end(tmp_path: Path) -> None:
    timeline = tmp_path / "t.json"
    code, out, _ = _invoke("--steps", "2", "--timeline", str(timeline), "--format", "json",
                           "--output", "-", _program("clean_loop.py"))  # fmt: skip
    printed, report = _json(out)
    assert printed == unwatched("clean_loop.py")  # all 5 steps ran
    assert (code, report["outcome"]) == (0, "finished")
    steps = json.loads(timeline.read_text())["steps"]
    assert [s["step"] for s in steps] == [1, 2]  # watched: the first --steps only


@tf_mark
def test_python_api_runs_to_the_end_and_stops_when_asked(capsys) -> None:
    python = unwatched("clean_loop.py")
    report = gradscope.run(_program("clean_loop.py"))
    assert capsys.readouterr().out == python and report.outcome == "finished"
    for stopping in ({"stop": True}, {"keep_going": False}):
        report = gradscope.run(_program("clean_loop.py"), **stopping)
        assert capsys.readouterr().out == python.splitlines(True)[0]
        assert report.outcome == "stopped" and report.stop is not None
    report = gradscope.run(_program("clean_loop.py"), keep_going=True)
    assert capsys.readouterr().out == python and report.outcome == "finished"
    with pytest.raises(gradscope.UsageError, match="contradict"):
        gradscope.run(_program("clean_loop.py"), stop=True, keep_going=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--step", "3", "train.py"], "No such option '--step'. (Did you mean one of: "
         "'--help', '--steps', '--stop'?)"),
        (["--steps", "2", "--bogus", "train.py"], "No such option '--bogus'."),
        (["--stpo", "train.py"], "No such option '--stpo'. (Did you mean one of: '--steps', "
         "'--stop'?)"),
    ],
)  # fmt: skip
def test_run_unknown_option_before_script_is_gradscopes_usage_error(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("open('started', 'w').close()\n")
    code, out, err = _invoke(*args)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == f"Error: {message}"
    assert "no such file" not in err and not (tmp_path / "started").exists()


def test_run_empty_module_name_is_exit_2_in_one_line() -> None:
    code, out, err = _invoke("-m", "")
    assert (code, out, err) == (2, "", "gradscope run: -m '': give a module name (as python -m "
                                "takes)\n")  # fmt: skip


@tf_mark
@pytest.mark.parametrize("how", ["script", "module", "module-joined"])
def test_run_words_after_the_program_are_the_programs(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("import sys\nprint(sys.argv[1:])\n")
    start = {"script": ["train.py"], "module": ["-m", "train"], "module-joined": ["-mtrain"]}
    words = ["--steps", "5", "--stop", "-m", "x", "--", "--format"]
    code, out, err = _invoke("--steps", "2", *start[how], *words)
    assert code == 0, err
    assert out == f"{words}\n"
    assert "the program ran to its end" in err
