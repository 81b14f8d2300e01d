"""The JAX side of ``tests/frontends/program/test_jax_doors.py``: one process with
``KERAS_BACKEND=jax`` (the backend is read at Keras' first import) walks every door and
prints one JSON object: the matrix under ``gradscope.watch()``, ``gradscope run`` of a Keras
``fit`` and of a plain JAX program (and its timeline), the Keras ``Monitor``, the Python
targets (``inspect``, ``check``, ``diff``, ``graph``), ``pytest --gradscope``, the
``%%gradscope`` magic, the weights a watched fit leaves, and JAX's own gradients of the
plain program (the reference for its norms). Run by the test as
``python jax_doors.py OUT_DIR``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "jax")  # before Keras' first import
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import keras_matrix  # noqa: E402  (beside this file)


def _run(program: str, **options: Any) -> dict[str, Any]:
    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    with contextlib.redirect_stdout(io.StringIO()):
        outcome = run(Program(str(HERE / program), ()), **options)
    return outcome.report.to_dict()


def _guide() -> str:
    """``KERAS_BACKEND=jax gradscope run docs/examples/keras_jax.py`` as the guide shows it
    (from the repository's root, 120 columns)."""
    from gradscope._src.report import render
    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    with contextlib.redirect_stdout(io.StringIO()):
        outcome = run(Program("docs/examples/keras_jax.py", ()))
    return render(outcome.report, "table", width=120)


def _bare_plain() -> dict[str, Any]:
    """JAX's own gradients of the plain program's last eager call, unwatched: the norms
    gradscope must report (its None-ness comes from bare TensorFlow, in the test)."""
    import jax
    import numpy as np

    namespace: dict[str, Any] = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile((HERE / "jax_plain.py").read_text(), "jax_plain.py", "exec"), namespace)
    grads = jax.grad(namespace["loss_fn"])(namespace["params"], namespace["x"], namespace["y"])
    flat, _ = jax.tree_util.tree_flatten_with_path(grads)
    return {"/".join(str(getattr(k, "key", k)) for k in path): float(np.linalg.norm(g))
            for path, g in flat}  # fmt: skip


def _weights(watched: bool) -> list[str]:
    """The bytes of each weight after a few steps of a fit, watched or not."""
    import keras

    import gradscope

    keras.backend.clear_session()
    keras_matrix.seed(0)
    model, x, y = keras_matrix.stop_gradient()
    block = gradscope.watch() if watched else contextlib.nullcontext()
    with block:
        model.fit(x, y, batch_size=2, epochs=2, verbose=0, shuffle=False)
    return [bytes(memoryview(v.numpy())).hex() for v in model.weights]


def _moved() -> list[str]:
    """The weights a bare fit of ``jax_fit.py`` (unwatched) changes: what the optimizer
    moved, gradient or not."""
    import jax_fit
    import keras
    import numpy as np

    keras.backend.clear_session()
    model, x, y = jax_fit.build()
    before = {v.path: np.array(v.numpy()) for v in model.trainable_variables}
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    return [v.path for v in model.trainable_variables
            if not np.array_equal(before[v.path], v.numpy())]  # fmt: skip


def _monitor(out: Path) -> dict[str, Any]:
    import keras
    import numpy as np

    from gradscope.keras import Monitor

    keras.backend.clear_session()
    keras_matrix.seed(0)
    model, x, y = keras_matrix.unused_head()
    x, y = np.tile(x, (4, 1)), [np.tile(t, (4, 1)) for t in y]
    monitor = Monitor(every=2, timeline=str(out / "monitor.json"))
    model.make_train_function()
    keras_own = model.train_function
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[monitor])
    return {"steps": monitor.steps, "findings": [f.to_dict() for f in monitor.findings],
            "file": json.loads((out / "monitor.json").read_text()),
            "restored": keras_own is model.train_function}  # fmt: skip


def _targets() -> dict[str, Any]:
    import gradscope

    target = str(HERE / "jax_target.py") + ":build"
    check = gradscope.check(target)
    picture = gradscope.graph(target, loss="main")
    return {
        "inspect": gradscope.inspect(target).to_dict(),
        "diff": gradscope.diff(target, "main", "aux").to_dict(),
        "check": [p.to_dict() for p in check.failures],
        "graph": {"boxes": [(b.name, b.kind) for b in picture.boxes],
                  "links": [(link.src, link.dst, link.flow) for link in picture.links]},
    }  # fmt: skip


def _pytest() -> dict[str, Any]:
    import pytest

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--gradscope",
                            str(HERE / "jax_pytest_case.py")])  # fmt: skip
    return {"exit": int(code), "output": buffer.getvalue()}


def _magic() -> dict[str, Any]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gradscope")
    cell = (
        "import keras_matrix\nmodel, x, y = keras_matrix.argmax()\nkeras_matrix.train(model, x, y)"
    )
    with contextlib.redirect_stdout(io.StringIO()):
        shell.run_cell_magic("gradscope", "", cell)
    return shell.user_ns["_gradscope"].to_dict()


def main(out: Path) -> dict[str, Any]:
    import gradscope

    found: dict[str, Any] = {}
    found["matrix"] = keras_matrix.run_all(gradscope.watch)
    found["run_fit"] = _run("jax_fit.py")
    found["moved"] = _moved()
    found["run_plain"] = _run("jax_plain.py", steps=2, every=1, timeline=str(out / "plain.json"))
    found["timeline_plain"] = json.loads((out / "plain.json").read_text())
    found["bare_plain"] = _bare_plain()
    found["weights"] = [_weights(False), _weights(True)]
    found["monitor"] = _monitor(out)
    found["targets"] = _targets()
    found["pytest"] = _pytest()
    found["magic"] = _magic()
    found["guide"] = _guide()
    found["tensorflow_imported"] = "tensorflow" in sys.modules
    return found


if __name__ == "__main__":
    directory = Path(sys.argv[1])
    json.dump(main(directory), sys.stdout)
