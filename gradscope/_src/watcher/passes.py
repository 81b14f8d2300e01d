"""The passes that explain a watched gradient call's sources, whichever door captured it.

``gradscope run``'s watcher (a ``tape.gradient`` it ran, eager or traced: ``calls.py``) and
the Keras ``Monitor`` (the ``tape.gradient`` of the train step it traced:
``graph_calls.tape_causes``) capture a call the same way (:class:`Capture`: its graph or tape
record, sources, targets, what TensorFlow returned, what the tape watched and read) and ask
:func:`sources` the same questions in the same order, so both say the same status, cause,
cut points and lines of each source: names and dtypes (``names.statics``: a variable that
is not floating-point), the cut analysis (``analyse.analyse``), the ``tf.cond`` every path
crosses, variables the tape never watched, paths the tape never recorded, the Keras causes
(an output no loss reads), where the last path ends, and a loss made from a
``tf.numpy_function``'s output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.frontends.python import frames
from gradscope._src.watcher import analyse, names, sites
from gradscope._src.watcher.analyse import SourceStatic


@dataclass
class Capture:
    """One gradient call as a door saw it, before any pass.

    Attributes:
        call: its ``graphs.GraphCall`` or ``eager.EagerCall`` (the ops the tape recorded).
        sources: the sources asked, flattened.
        targets: the targets, flattened.
        grads: per source, the gradient TensorFlow returned (None: none).
        eager: whether the call ran eagerly.
        created: eager handle (or constant) id -> the user's line that made it.
        held: id of a tensor source -> the name the user's code holds it under.
        watching: per source, whether the tape watched it (``names.watching``; None: not
            known, the pass is skipped).
        trainable: per source, its ``trainable`` flag.
        accessed: whether the tape watched the trainable variables it saw read.
        tensors: per tensor source, whether a tape watched it (``names.tensors_watched``).
        read: the variables the tape watched (``names.read_variables``).
    """

    call: Any
    sources: list[Any]
    targets: list[Any]
    grads: list[Any]
    eager: bool = False
    created: dict[int, frames.Site | None] = field(default_factory=dict)
    held: dict[int, str] | None = None
    watching: list[bool | None] | None = None
    trainable: list[bool] = field(default_factory=list)
    accessed: bool = True
    tensors: list[bool | None] | None = None
    read: Sequence[Any] = ()


@dataclass
class Explained:
    """What :func:`sources` found: each source analysed, the user's line that made the
    target, and the untracked variables the tape read that no source is (``names.unasked``)."""

    statics: list[SourceStatic]
    target_source: str
    unasked: tuple[tuple[str, str], ...] = ()


#: ``(statics) -> dead ends``: notes for the paths the tape never recorded; returns what
#: names where the remaining paths end, run once the other causes had their say.
Outside = Callable[[list[SourceStatic]], Callable[[], None]]
#: ``(statics, target_source)``: the Keras causes (an output no loss reads), set in place.
KerasCauses = Callable[[list[SourceStatic], str], None]


def sources(capture: Capture, outside: Outside, keras: KerasCauses) -> Explained:
    """Each source of ``capture`` named, analysed and explained, as every door does it.

    Args:
        capture: the call.
        outside: the door's view of the paths its tape never recorded (eager: the ops
            recorded around the tape; traced: the function's graph).
        keras: the door's Keras causes (``fit.notes`` from the model calls the watcher saw,
            ``fit.explain`` from the model and predictions the Monitor holds).
    """
    call = capture.call
    statics = names.statics(capture.sources, capture.grads, call, capture.created, capture.held)
    analyse.analyse(call.problem, statics, call.locate, call.visible, call.inside)
    analyse.through_branches(call.problem, statics, lambda k: call.locate(k, "").source)
    analyse.through_zero_derivative(call.problem, statics, lambda k: call.locate(k, "").source)
    if capture.watching is not None:
        analyse.unwatched(statics, capture.watching, capture.trainable, capture.accessed,
                          capture.tensors)  # fmt: skip
    dead_ends = outside(statics)
    target_source = names.target_source(call, capture.targets, capture.eager, capture.created)
    keras(statics, target_source)
    dead_ends()  # the last, most general cause: a model output no loss reads is more
    if not capture.eager:  # a loss made from a tf.numpy_function's output
        analyse.through_numpy_function(statics, capture.targets,
                                       lambda op: sites.text(frames.of_op(op)))  # fmt: skip
    unasked = names.unasked(capture.read, capture.sources, call, capture.created)
    return Explained(statics, target_source, unasked)
