"""A target network is told by what the program does, not by its name: ``lagged`` is assigned
the online network's weights (``set_weights(get_weights())`` and ``assign``), so its
``stop_gradient`` cut is intended; compared with the same program run bare."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from tests.frontends.program.test_run import PROGRAMS, site, watched

pytestmark = pytest.mark.tf

SCHEMA = Path(__file__).resolve().parents[3] / "schema" / "run-v1.json"
PROGRAM = "dqn_lagged.py"


def test_run_tells_a_target_network_by_its_copies() -> None:
    import jsonschema
    import keras

    from gradscope._src.frontends import keras_names

    with keras_names.fresh():  # the names gradscope run gives them
        bare = runpy.run_path(str(PROGRAMS / PROGRAM), run_name="__main__")
    none = {v.path for v, g in zip(bare["variables"], bare["grads"], strict=True) if g is None}
    assert none == {v.path for v in bare["lagged"].trainable_variables}  # bare TF: the copy
    keras.backend.clear_session()
    outcome, _ = watched(PROGRAM)
    (call,) = outcome.report.calls
    sources = {s.name: s for s in call.sources}
    assert {n for n, s in sources.items() if s.status == "none:stopped"} == none
    online = [v.path for v in bare["online"].trainable_variables]
    lagged = [v.path for v in bare["lagged"].trainable_variables]
    copied, assigned = site(PROGRAM, "# copied"), site(PROGRAM, "# assigned")
    assert [sources[n].copy_of for n in lagged] == [
        (online[0], copied), (online[1], copied), (online[2], assigned), (online[3], assigned)
    ]  # fmt: skip
    assert all(sources[n].copy_of == ("", "") for n in online)
    for name in lagged:  # the cut is where the copy is read, and it is meant
        fix = sources[name].fix
        assert fix is not None and (fix.kind, fix.where) == ("intended", site(PROGRAM, "# cut"))
        assert f"a copy of `{sources[name].copy_of[0]}`" in fix.text
    data = outcome.report.to_dict()
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    entry = data["calls"][0]["sources"][lagged[0]]
    assert entry["copy_of"] == {"variable": online[0], "source": copied}
    assert "copy_of" not in data["calls"][0]["sources"][online[0]]


def test_run_without_a_copy_the_stop_gradient_is_to_remove(tmp_path: Path) -> None:
    """The same program with the copies taken out: nothing says ``lagged`` is a target
    network (its name does not), so the fix is to remove the stop_gradient."""
    text = (PROGRAMS / PROGRAM).read_text()
    text = text.replace("lagged.layers[0].set_weights", "# lagged.layers[0].set_weights")
    text = text.replace("    mine.assign(theirs)", "    pass")
    program = tmp_path / "no_copy.py"
    program.write_text(text, encoding="utf-8")
    import keras

    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    keras.backend.clear_session()
    report = run(Program(str(program), ())).report
    stopped = [s for s in report.calls[0].sources if s.status == "none:stopped"]
    assert len(stopped) == 4
    assert {s.fix.kind for s in stopped if s.fix} == {"remove-stop-gradient"}
    assert all(s.copy_of == ("", "") for s in stopped)
