"""The patch registry (``patching.py``): what gradscope patches is declared there and set and
put back there, as pytest's MonkeyPatch does; a patch the program makes meanwhile stays."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gradscope._src import patching


class _Base:
    def method(self) -> str:
        return "base"


class _Owner(_Base):
    def own(self, x: int) -> int:
        return x + 1


def _register(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Declare ``_Owner.NAME`` attributes for the test (given as owner at ``set``)."""
    for name in names:
        monkeypatch.setitem(patching.ATTRIBUTES, f"<test>.{name}",
                            patching.Attribute("<test>", name, "builtins", "a test"))  # fmt: skip


def test_undo_puts_back_own_and_inherited_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    _register(monkeypatch, "own", "method")
    own, inherited = vars(_Owner)["own"], "method" in vars(_Owner)
    with patching.Patches() as patches:
        patches.set("<test>.own", lambda f: lambda self, x: f(self, x) * 10, owner=_Owner)
        patches.set("<test>.method", lambda f: lambda self: "patched", owner=_Owner)
        assert _Owner().own(1) == 20 and _Owner().method() == "patched"
    assert vars(_Owner)["own"] is own and ("method" in vars(_Owner)) is inherited is False
    assert _Owner().own(1) == 2 and _Owner().method() == "base"


def test_a_patch_made_meanwhile_stays_and_ours_inside_it_calls_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pytest's MonkeyPatch restores only what is still its own: the program's patch on top
    of gradscope's stays after the undo, and gradscope's, which it still calls, only calls
    through to the original."""
    _register(monkeypatch, "own")
    seen: list[int] = []
    original = vars(_Owner)["own"]
    patches = patching.Patches()
    patches.set("<test>.own", lambda f: lambda self, x: seen.append(x) or f(self, x), owner=_Owner)
    ours = vars(_Owner)["own"]

    def programs(self: Any, x: int) -> int:  # a library wrapping what it finds
        return ours(self, x) + 100

    _Owner.own = programs  # type: ignore[method-assign]
    patches.undo()
    assert vars(_Owner)["own"] is programs
    assert _Owner().own(1) == 102 and seen == []  # gradscope's wrapper: switched off
    _Owner.own = original  # type: ignore[method-assign]


def test_installations_undone_out_of_order_leave_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads' installations on one attribute (the Monitor's step traced per replica),
    the first undone first: the attribute ends as it began, not with a wrapper switched off."""
    _register(monkeypatch, "own")
    original = vars(_Owner)["own"]
    first, second = patching.Patches(), patching.Patches()
    first.set("<test>.own", lambda f: lambda self, x: f(self, x) + 1, owner=_Owner)
    second.set("<test>.own", lambda f: lambda self, x: f(self, x) + 10, owner=_Owner)
    assert _Owner().own(0) == 12
    first.undo()
    assert _Owner().own(0) == 11
    second.undo()
    assert vars(_Owner)["own"] is original


def test_a_wrapper_runs_only_in_its_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    _register(monkeypatch, "own")
    me = threading.get_ident()
    got: list[int] = []
    with patching.Patches(when=lambda: threading.get_ident() == me) as patches:
        patches.set("<test>.own", lambda f: lambda self, x: -1, owner=_Owner)
        thread = threading.Thread(target=lambda: got.append(_Owner().own(1)))
        thread.start()
        thread.join()
        assert _Owner().own(1) == -1 and got == [2]


def test_an_install_waits_for_the_programs_outermost_import(tmp_path: Path) -> None:
    """A module not imported yet is patched once the program's own import of it has run, and
    of one imported inside another watched one, once the outer has (both are whole)."""
    (tmp_path / "gs_outer_mod.py").write_text("import gs_inner_mod\nVALUE = 1\n")
    (tmp_path / "gs_inner_mod.py").write_text("VALUE = 2\n")
    ran: list[tuple[str, ...]] = []
    with patching.Patches() as patches:
        patches.wait_for(("gs_outer_mod", "gs_inner_mod"),
                         lambda: ran.append(tuple(m for m in ("gs_outer_mod", "gs_inner_mod")
                                                  if m in sys.modules)))  # fmt: skip
        assert ran == []
        sys.path.insert(0, str(tmp_path))
        try:
            import gs_outer_mod  # noqa: F401
        finally:
            sys.path.remove(str(tmp_path))
            for name in ("gs_outer_mod", "gs_inner_mod"):
                sys.modules.pop(name, None)
    assert ran == [("gs_outer_mod", "gs_inner_mod")]
    assert patching._FINDER not in sys.meta_path


# -- TensorFlow's and Keras' attributes ------------------------------------------------------

#: Attributes patched for the rest of the process, on purpose: what the Keras Monitor reads as
#: models are built, before it exists (asked for by importing ``gradscope.keras.Monitor``).
LASTING = {("Operation", "symbolic_call"), ("Operation", "__call__"),
           ("TensorFlowTrainer", "_make_function")}  # fmt: skip


def _owners() -> dict[str, Any]:
    """Every class or module an attribute of ``ATTRIBUTES`` belongs to (instances aside)."""
    import numpy as np

    found = {a.owner: patching.owner_of(a) for a in patching.ATTRIBUTES.values()}
    found.update({"numpy": np, "os": __import__("os"), "sys": sys})
    return {k: v for k, v in found.items() if v is not None}


def _state() -> dict[str, Any]:
    """The process as gradscope may change it: every attribute of every patched owner (own
    ones, by identity), the tensor type's buffer slot, the import finders, this thread's op
    callbacks, and which threads are watched."""
    import ctypes

    import tensorflow as tf

    from gradscope._src import tfcompat
    from gradscope._src.frontends.program import process

    state: dict[str, Any] = {}
    for name, owner in _owners().items():
        for key, value in list(vars(owner).items()):
            # (Python makes a class's __annotations__ on first read; abc its caches)
            if key not in ("__dict__", "__weakref__", "__annotations__") and not key.startswith(
                "_abc_"
            ):
                state[f"{name}.{key}"] = id(value)
    cls = type(tf.constant(0.0))
    slot = ctypes.c_void_p.from_address(id(cls) + 20 * ctypes.sizeof(ctypes.c_void_p))
    state["EagerTensor.tp_as_buffer"] = slot.value
    state["sys.meta_path"] = [id(f) for f in sys.meta_path]
    state["op callbacks"] = [id(c) for c in tfcompat.get("context").context().op_callbacks]
    state["watched threads"] = dict(process._watched)
    return state


def _changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


PROGRAM = """\
import numpy as np
import tensorflow as tf
import keras

w = tf.Variable([1.0, 2.0], name="w")
with tf.GradientTape(persistent=True) as tape:
    y = w * 3.0
    loss = tf.reduce_sum(tf.constant(np.tanh(y)) + y)
tape.gradient(loss, w)
tape.jacobian(y, w)


@tf.function
def step():
    with tf.GradientTape() as t:
        z = tf.reduce_sum(w * w)
    return t.gradient(z, w)


step()
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="d")])
model.compile("sgd", "mse")
model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), epochs=1, verbose=0)
model.predict(np.ones((2, 2), np.float32), verbose=0)
"""


def _no_monitor_yet() -> None:
    """The process as before its first ``from gradscope.keras import Monitor`` (an earlier
    test's Monitor asked for the lasting patches): undone, and asked for again next time."""
    import gradscope.keras
    from gradscope._src.frontends.python import keras_ops
    from gradscope._src.timeline import traced

    traced.stop_observing()
    if keras_ops.for_good.cache_info().currsize:  # its one install(), undone once
        keras_ops.uninstall()
        keras_ops.for_good.cache_clear()
    vars(gradscope.keras).pop("Monitor", None)


def test_the_process_is_as_it_was_after_every_door(tmp_path: Path) -> None:
    """``watch()``, ``gradscope run`` and the Monitor, each with eager and traced calls, a
    Keras fit and numpy reads: afterwards every attribute of every owner the registry
    declares is the object it was, and so are the buffer slot, the import finders and the
    op callbacks; the Monitor's lasting patches are the only ones left, and undone too."""
    import keras
    import numpy as np

    import gradscope
    from gradscope._src.frontends.program.launch import Program
    from gradscope._src.watch.run import run

    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    declared = {(a.owner.rpartition(".")[2], a.name) for a in patching.ATTRIBUTES.values()}
    _no_monitor_yet()
    before = _state()
    with gradscope.watch():
        exec(compile(PROGRAM, str(tmp_path / "prog.py"), "exec"), {"__name__": "__main__"})
    assert _changed(before, _state()) == set()
    run(Program(str(tmp_path / "prog.py"), ()))
    assert _changed(before, _state()) == set()
    from gradscope.keras import Monitor

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="m")])
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), epochs=1, verbose=0,
              callbacks=[Monitor(every=1)])  # fmt: skip
    lasting = {tuple(k.split(".")[-2:]) for k in _changed(before, _state())}
    assert lasting == LASTING and lasting <= declared
    on_instances = {(a.owner, a.name) for a in patching.ATTRIBUTES.values()
                    if a.owner in ("<model>", "<optimizer>")}  # fmt: skip
    for owner, name in on_instances:  # the Monitor's wrappers: off the instances again
        instance = model if owner == "<model>" else model.optimizer
        assert name not in vars(instance), (owner, name)
    _no_monitor_yet()  # what Monitor's import asked for, once
    assert _changed(before, _state()) == set()


_LIBRARY = """\
import tensorflow as tf

calls = []


def use_once():
    '''A library that wraps tf.GradientTape.gradient on first use (a metrics hook).'''
    if getattr(tf.GradientTape.gradient, "counting", False):
        return
    inner = tf.GradientTape.gradient

    def gradient(self, target, sources, *args, **kwargs):
        calls.append(1)
        return inner(self, target, sources, *args, **kwargs)

    gradient.counting = True
    tf.GradientTape.gradient = gradient
"""

_USES = """\
import tensorflow as tf
import counting_lib

w = tf.Variable(2.0, name="w")
counting_lib.use_once()
tf.get_logger().setLevel("CRITICAL")  # the program's own logging, kept after it too
with tf.GradientTape() as tape:
    loss = w * w
print("grad", float(tape.gradient(loss, w)), "counted", len(counting_lib.calls))
"""


@pytest.mark.tf
def test_a_library_patch_made_while_watched_stays_after(tmp_path: Path) -> None:
    """Issue 42 point 3: a library patches ``tf.GradientTape.gradient`` on first use inside a
    ``watch()`` block (and under ``gradscope run``): the block's end keeps the library's
    patch, which goes on working (gradscope's wrapper inside it calls straight through); the
    level the program gave TensorFlow's logger stays after ``run`` too."""
    import tensorflow as tf

    import gradscope
    from gradscope._src.frontends.program.launch import Program
    from gradscope._src.watch.run import run

    original = vars(tf.GradientTape)["gradient"]
    level = tf.get_logger().level
    (tmp_path / "counting_lib.py").write_text(_LIBRARY, encoding="utf-8")
    (tmp_path / "uses.py").write_text(_USES, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        import counting_lib

        w = tf.Variable(3.0, name="w")
        with gradscope.watch() as block:
            counting_lib.use_once()
            with tf.GradientTape() as tape:
                loss = w * w
            assert float(tape.gradient(loss, w)) == 6.0
        assert getattr(vars(tf.GradientTape)["gradient"], "counting", False)  # theirs, kept
        with tf.GradientTape() as tape:
            loss = w * w
        assert float(tape.gradient(loss, w)) == 6.0 and len(counting_lib.calls) == 2
        assert [s.status for c in block.report.calls for s in c.sources] == ["ok"]
        tf.GradientTape.gradient = original  # as before the test
        sys.modules.pop("counting_lib")
        outcome = run(Program(str(tmp_path / "uses.py"), ()))
        assert outcome.error is None
        assert getattr(vars(tf.GradientTape)["gradient"], "counting", False)
        assert [s.status for c in outcome.report.calls for s in c.sources] == ["ok"]
        assert tf.get_logger().level == logging.CRITICAL
    finally:
        tf.GradientTape.gradient = original
        tf.get_logger().setLevel(level)
        sys.path.remove(str(tmp_path))
        sys.modules.pop("counting_lib", None)


def test_nothing_is_patched_at_import() -> None:
    """Importing gradscope's public modules patches nothing (a fresh interpreter: the point
    is what an import does)."""
    import subprocess

    code = (
        "import sys, numpy, os\n"
        "before = {n: dict(vars(m)) for n, m in (('os', os), ('sys', sys), ('numpy', numpy))}\n"
        "import gradscope, gradscope.keras, gradscope.testing\n"
        "from gradscope._src.frontends.program import hooks\n"
        "after = {n: dict(vars(m)) for n, m in (('os', os), ('sys', sys), ('numpy', numpy))}\n"
        "print(sorted(k for n in before for k in before[n] | after[n]\n"
        "      if before[n].get(k) is not after[n].get(k) and k != 'modules'))\n"
        "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[1])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]


def test_every_declared_attribute_is_found_here() -> None:
    """Each class or module attribute of the registry resolves on the installed TensorFlow,
    Keras and JAX (instance ones, ``<model>``..., are given at ``set``; PyTorch's, when it
    is installed: ``tests/frontends/test_backend.py`` has them on a module of its names)."""
    import importlib.util

    import jax  # noqa: F401
    import optax  # noqa: F401  (a dev extra, with jax)
    import tensorflow as tf  # noqa: F401

    from gradscope._src.frontends.program import numpy_calls

    torch = importlib.util.find_spec("torch") is not None
    if torch:
        import torch
    for key, attribute in patching.ATTRIBUTES.items():
        if attribute.owner.startswith("<") or (attribute.module == "torch" and not torch):
            continue
        owner = patching.owner_of(attribute)
        assert owner is not None, key
        if attribute.name == "tp_as_buffer":
            assert numpy_calls._layout(owner), key
        else:
            assert hasattr(owner, attribute.name), key
