"""The Keras ``Monitor`` on Keras' JAX backend: ``gradscope run``'s watcher, recording.

On JAX, Keras' train step calls ``jax.value_and_grad`` inside ``jax.jit``; the Monitor
watches that call as ``gradscope run --every K --timeline`` does (``watcher``'s
JAX hooks, for the length of the ``fit``): the statuses and causes come from the jaxpr of the
differentiated loss, the numbers leave the compiled step through ``jax.debug.callback`` on
the steps due (step 1 and every K-th), each gradient and weight reduced there to a few
numbers. Keras' own train function is put back at the end of the fit, so a later ``fit``
without the Monitor runs as it would have.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from gradscope._src.errors import AlreadyWatching
from gradscope._src.location import Location
from gradscope._src.watcher import jax_hooks
from gradscope._src.watcher.watch import Watcher

#: Executions counted per site: the Monitor records for the whole fit.
_FOREVER = 1 << 62


class JaxRecording:
    """One Monitor's recording on JAX, over every ``fit`` it is passed to."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self.watcher = Watcher(_FOREVER, timeline=recorder)  # steps count on across fits
        self._hooks: Any = None
        self._saved: Any = None

    def begin(self, model: Any, site: str) -> None:
        """Before the fit's first step: watch its train step (traced afresh, with the hooks)."""
        from gradscope._src.watcher.hooks import watching

        hooks = jax_hooks.installed(self.watcher)
        try:
            if watching():  # gradscope run or watch() watches this fit: they report it
                raise AlreadyWatching("watched")
            hooks.__enter__()
        except AlreadyWatching:  # gradscope run or watch() holds the hooks: they report it
            at = Location.parse(site) or Location(site)
            warnings.warn_explicit(_WATCHED, UserWarning, at.file, at.line)
            return
        self._hooks = hooks
        self._saved = model.train_function
        model.make_train_function(force=True)  # traced at its first call, watched

    def end(self, model: Any) -> None:
        """After the fit: the hooks off, Keras' own train function back."""
        if self._hooks is None:
            return
        hooks, self._hooks = self._hooks, None
        with contextlib.suppress(Exception):
            hooks.__exit__(None, None, None)
        model.train_function = self._saved
        self._saved = None


_WATCHED = (
    "gradscope.keras.Monitor records nothing in this fit: gradscope run (or a "
    "gradscope.watch() block) already watches this process's JAX gradient calls, and reports "
    "them; use gradscope run --every K --timeline FILE for a timeline"
)
