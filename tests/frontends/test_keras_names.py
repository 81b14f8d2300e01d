"""Names do not depend on what ran before in the process, and gradscope leaves the user's own
later names as they would have been: each run compared with the same code in a fresh process.

The fresh processes are forked from one that imported TensorFlow and Keras and made nothing
(``tests/forked.py``: ``programs``): Keras' name counters are where a new process has them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Drivers
from tests.forked import Driver

pytestmark = pytest.mark.tf

TARGET = """\
import keras
import tensorflow as tf

def build():
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(8)(inputs)
    model = keras.Model(inputs, [keras.layers.Dense(1)(hidden), keras.layers.Dense(2)(hidden)],
                        name="detector")
    x = tf.ones((2, 4))
    return {"losses": {"main": lambda: tf.reduce_sum(model(x)[0])}, "model": model}
"""

PROGRAM = """\
import keras
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)],
                         name="detector")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model(tf.ones((2, 4))))
tape.gradient(loss, model.trainable_variables)
"""

SCRIPT = """\
import json, sys
import keras
sys.path.insert(0, {folder!r})
import target
# the user's own models first: Keras' counters move on
for _ in range(3):
    keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="detector")
names = {{}}
if {with_gradscope}:
    import gradscope
    report = gradscope.inspect("target:build")
    names["inspect"] = [v.name for v in report.variables]
    run = gradscope.run({program!r}, keep_going=True)
    names["run"] = sorted({{s.name for c in run.calls for s in c.sources}})
names["after"] = keras.layers.Dense(1).name
print("NAMES" + json.dumps(names))
"""

TARGET_ALONE = """\
import json, sys
sys.path.insert(0, {folder!r})
import target
built = target.build()
print("NAMES" + json.dumps({{"inspect": [v.path for v in built["model"].trainable_variables]}}))
"""

PROGRAM_ALONE = """\
import json, runpy
scope = runpy.run_path({program!r}, run_name="__main__")
paths = sorted(v.path for v in scope["model"].trainable_variables)
print("NAMES" + json.dumps({{"run": paths}}))
"""


def _names(fresh: Driver, code: str, cwd: Path) -> dict[str, object]:
    """What ``python -c CODE`` in ``cwd`` prints after ``NAMES``, in a fresh process."""
    script = cwd / f"names{len(list(cwd.glob('names*.py')))}.py"
    script.write_text(code, encoding="utf-8")
    done = fresh.run([script.name], cwd, os.environ, cwd / f"{script.stem}-logs")
    assert done.code == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("NAMES"))
    return dict(json.loads(line[len("NAMES") :]))


def test_names_are_those_of_a_fresh_process_and_later_names_unchanged(
    drivers: Drivers, tmp_path: Path
) -> None:
    (tmp_path / "target.py").write_text(TARGET, encoding="utf-8")
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    folder, program = str(tmp_path), str(tmp_path / "train.py")
    fresh = drivers.programs(os.environ)  # each below in a fresh process, forked
    alone = _names(fresh, TARGET_ALONE.format(folder=folder), tmp_path)
    alone |= _names(fresh, PROGRAM_ALONE.format(program=program), tmp_path)
    plain = _names(fresh, SCRIPT.format(folder=folder, program=program,
                                        with_gradscope=False), tmp_path)  # fmt: skip
    watched = _names(fresh, SCRIPT.format(folder=folder, program=program,
                                          with_gradscope=True), tmp_path)  # fmt: skip
    assert sorted(watched["inspect"]) == sorted(alone["inspect"])  # type: ignore[arg-type]
    assert watched["run"] == alone["run"]
    assert watched["after"] == plain["after"]  # the user's next layer: as without gradscope
