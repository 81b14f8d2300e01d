"""Watching changes nothing numpy computes (issue 42 point 2), and numpy's reads of a tensor
are still seen where the program made them (``numpy_calls.py``: the buffer slot)."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
import threading
from typing import Any

import numpy as np
import pytest

import gradscope
from gradscope._src.watcher import numpy_calls
from tests.frontends.program.test_run import PROGRAMS, site, unwatched, watched

pytestmark = pytest.mark.tf

PROGRAM = "numpy_dispatch.py"


def _in_watch() -> tuple[str, Any]:
    """The program's lines, run inside ``gradscope.watch()``; and the block's report."""
    out = io.StringIO()
    sys.path.insert(0, str(PROGRAMS))
    try:
        with contextlib.redirect_stdout(out), gradscope.watch() as block:
            runpy.run_path(str(PROGRAMS / PROGRAM), run_name="__main__")
    finally:
        sys.path.remove(str(PROGRAMS))
    return out.getvalue(), block.report


def test_numpy_computes_the_same_watched_as_unwatched() -> None:
    """Value, type, dtype and exception of each expression (operators, dunders, builtins,
    ``operator``/``functools``, masked arrays, ndarray subclasses, a duck array, pandas, a
    thread), by plain Python, inside ``watch()`` and under ``gradscope run``."""
    plain = unwatched(PROGRAM)
    lines = dict(line.split(": ", 1) for line in plain.splitlines())
    # what plain Python gives, which the numpy overrides of before changed (so the test
    # means something): TensorFlow computes an operator numpy defers, NotImplemented stays
    tensor = "tensorflow.python.framework.ops.EagerTensor"
    for name in ("operator.add(a, t)", "sum([a, t])", "pow(a, t)", "masked + t", "own + t",
                 "functools.reduce(operator.add, [a, t])", "x = s; x += t"):  # fmt: skip
        assert lines[name].startswith(tensor), (name, lines[name])
    assert lines["a.__add__(t)"] == "NotImplemented"
    assert lines["divmod(a, t)"].startswith("raised builtins.TypeError")
    assert lines["np.concatenate([Duck(), t])"].endswith("[builtins.str 'Duck']]")
    assert lines["prio + t"].startswith("__main__.Priority")
    in_block, report = _in_watch()
    assert in_block == plain
    assert report.outcome == "finished" and report.calls == ()
    outcome, printed = watched(PROGRAM)
    assert printed == plain
    assert outcome.error is None and outcome.report.outcome == "finished"


def test_a_loss_summed_with_a_numpy_array_gets_its_gradient_watched() -> None:
    """``sum([a, w * 3.0, w * 3.0])``: ``0 + a`` is numpy's, then numpy defers ``+ tensor``
    to TensorFlow, which records it: the gradient bare TensorFlow gives, no problem."""
    import tensorflow as tf

    a = np.array([1.0, 2.0], np.float32)
    w = tf.Variable([1.0, 1.0], name="w")

    def gradient() -> Any:
        with tf.GradientTape() as tape:
            loss = sum([a, w * 3.0, w * 3.0])
        return tape.gradient(loss, w)

    bare = gradient()
    assert bare.numpy().tolist() == [6.0, 6.0]
    with gradscope.watch() as block:
        seen = gradient()
    assert seen.numpy().tolist() == bare.numpy().tolist()
    (call,) = block.report.calls
    assert [(s.name, s.status) for s in call.sources] == [("w", "ok")]
    assert call.sources[0].norm == pytest.approx(float(np.linalg.norm(bare.numpy())))
    assert block.report.problems == ()


def test_a_value_taken_out_by_numpy_is_named_at_the_program_line() -> None:
    """``np.tanh(model(x))`` re-entering as a constant: the cut is where numpy read the
    tensor, named after the function the line called (issue 42.2's own case, run as
    ``gradscope run`` runs it: ``causes_exits.py``, test_run_causes)."""
    outcome, _ = watched("causes_exits.py")
    named = {(c.node, c.source) for call in outcome.report.calls
             for s in call.sources for c in s.cut_points}  # fmt: skip
    exits = [("np.tanh()", "t = np.tanh(model(x))"), ("np.asarray()", "arr = np.asarray("),
             ("np.mean()", "t = np.mean(w * 2.0)"), ("np.array()", "m = np.array(")]  # fmt: skip
    for how, text in exits:
        assert (how, site("causes_exits.py", text)) in named


def test_the_call_a_line_makes_names_the_read() -> None:
    """What ``called`` reads from the program's frame: the call its instruction runs, or
    ``numpy`` for none (an assignment); TensorFlow's own conversion reads no buffer."""
    import tensorflow as tf

    seen: list[str | None] = []

    def note(tensor: Any, frame: Any) -> None:
        seen.append(numpy_calls.called(frame))

    t = tf.constant([1.0, 2.0])
    put_back = numpy_calls.install(type(t), note)
    assert put_back is not None  # CPython here: the slot is patched
    try:
        np.tanh(t)
        np.mean(t)
        b = np.zeros(2, np.float32)
        b[:] = t  # no call on the line: numpy's read, named "numpy"
        t.numpy()  # TensorFlow's own conversion: no buffer read
    finally:
        put_back()
    assert seen == ["np.tanh()", "np.mean()", "numpy"]
    np.tanh(t)  # put back: nothing noted
    assert len(seen) == 3


def test_the_buffer_slot_is_put_back_exactly_and_only_when_still_ours() -> None:
    import ctypes

    import tensorflow as tf

    cls = type(tf.constant(1.0))
    slot = ctypes.c_void_p.from_address(id(cls) + 20 * ctypes.sizeof(ctypes.c_void_p))
    theirs = slot.value
    put_back = numpy_calls.install(cls, lambda tensor, frame: None)
    assert put_back is not None and slot.value != theirs
    put_back()
    assert slot.value == theirs
    assert numpy_calls.install(int, lambda tensor, frame: None) is None  # not TensorFlow's


def test_reads_in_an_unwatched_thread_are_not_noted() -> None:
    import tensorflow as tf

    from gradscope._src.watcher import hooks

    t = tf.constant([0.5, 1.5])
    with gradscope.watch():
        recorder = hooks._session[0].calls.recorder
        other = threading.Thread(target=lambda: np.tanh(t))
        other.start()
        other.join()
        assert t._id not in recorder.left
        np.tanh(t)
        assert recorder.left[t._id][2] == "np.tanh()"
