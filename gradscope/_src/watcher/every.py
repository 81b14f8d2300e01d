"""``--every K``: every execution of a site counts, the due ones are measured, the rest run fast.

With a timeline the watcher counts each site's executions (``SiteState.executions``) and
measures the first and every K-th (``Watcher.due``). Inside ``tf.function`` the measuring
ops sit behind the site's flags, switched on before a due call and off after it; eager ops
are recorded (for cut points) only while some eager site's next execution is due.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gradscope._src.results.run import EAGER as EAGER_MODE
from gradscope._src.watcher.eager import Recorder
from gradscope._src.watcher.watch import SiteState, Watcher


def before_function(watcher: Watcher, keys: Iterable[tuple[str, str, int]],
                    running: Callable[[SiteState], SiteState] = lambda s: s) -> None:  # fmt: skip
    """Before a ``tf.function`` runs: set the flags of each of its sites to whether this
    execution is watched (with a timeline: counted, and due), stopping the program after
    ``--steps``; ``running`` gives the site an execution counts at (Keras' step: the
    ``fit()`` line running it, which may not be the one that traced it)."""
    import tensorflow as tf

    if not tf.executing_eagerly():
        return  # called while an enclosing function traces: that call was counted
    for key in keys:
        state = watcher.sites[key]
        switch(state, watcher.before_execution(running(state)))


def switch(state: SiteState, measure: bool) -> None:
    """Set the flags of a traced site to ``measure`` (when they do not say so already)."""
    if measure != state.measuring:
        for flag in state.flags:
            flag.assign(measure)
        state.measuring = measure


def first_trace(state: SiteState, known: list[set[tuple[str, str, int]]]) -> None:
    """Count the call that traces a site first: no ``before_function`` knew of it."""
    if known and all(state.key not in k for k in known):
        state.executions += 1


def next_eager(watcher: Watcher, recorder: Recorder, open_tape: bool = False) -> None:
    """Record eager ops only while some eager site's next execution is due (its cut points
    are analysed from them) or a tape is open (``open_tape``: it may be asked at a site not
    seen yet); in between the program runs at its own speed."""
    eager = [s for s in watcher.sites.values() if s.mode == EAGER_MODE]
    want = any(not watcher.done(s) and watcher.due(s, ahead=1) for s in eager)
    if want and not recorder.installed:
        recorder.install()
    elif not want and not open_tape and recorder.installed:
        recorder.uninstall()
