"""``gradscope.watch()``: watch the gradient calls of a block of code, in this process.

``gradscope run`` watches a whole program; ``watch()`` watches what runs inside a ``with``
block (a notebook cell, a test, a few lines of a script) with the same hooks and the same
``Watcher``, and gives the same ``RunReport``. Unlike ``run`` it never stops the code it
watches: after ``steps`` executions a call site runs on unwatched.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from gradscope._src.errors import UsageError
from gradscope._src.results import run as rr


def watch(steps: int = 1, allow_none: Sequence[str] = ()) -> Watch:
    """Watch every gradient call made inside a ``with`` block.

    Example:
        >>> with gradscope.watch(steps=1, allow_none=["generator/*"]) as w:  # doctest: +SKIP
        ...     model.fit(x, y, epochs=1)
        >>> w.report.problems  # doctest: +SKIP

    Watched, as ``gradscope run`` watches them: ``GradientTape.gradient`` (eager and inside
    ``tf.function``, so ``fit`` and custom ``train_step``s), ``tf.gradients``,
    ``compute_gradients``/``minimize`` of ``tf.compat.v1`` optimizers in graph mode, Keras'
    ``apply_gradients``. TensorFlow is restored exactly when the block ends, also when it
    raises; the block's own exception passes through unchanged (``w.report`` then has outcome
    ``raised``). Watching changes no random draw, loss or update, nor what numpy computes.

    A block inside another watch (an outer ``watch()``, ``gradscope run``, ``pytest
    --gradscope``, another thread's block) joins it: its report holds the calls of its own
    block (its thread's), counted as the outer watch counts them (its ``steps``), and the
    code runs as it would without the outer one. TensorFlow and Keras are not imported by
    ``watch()``: they are watched from the moment the code imports them.

    A Keras model trained before the block (an earlier ``fit`` in a notebook) has its train
    step traced again in the block, so that it is seen, and its own back after. A
    ``tf.function`` of your own traced before the block is not (tracing it again would
    restart its random ops' sequences): its calls in the block are not seen; define it, or
    call it first, inside the block.

    Args:
        steps: executions watched per call site (at least 1); later ones run unwatched.
        allow_none: globs of sources (variable or tensor names) whose None gradient is
            expected, not a problem.

    Returns:
        The context manager; its ``report`` is set when the block ends.

    Raises:
        UsageError: ``steps`` is not a whole number of at least 1, or ``allow_none`` is not
            a list of strings.
    """
    return watching(steps, allow_none, _caller(sys._getframe(1)))


def watching(steps: object, allow_none: object, where: str) -> Watch:
    """``watch()`` for another door (a test, a notebook cell): ``where`` names what the report
    is of, where ``watch()`` names its caller's line.

    Raises:
        UsageError: as ``watch()``.
    """
    return Watch(_steps(steps), _globs(allow_none), where)


class Watch:
    """A ``with`` block's watcher: ``report`` is its ``RunReport`` once the block has ended."""

    def __init__(self, steps: int, allow_none: tuple[str, ...], where: str) -> None:
        self.steps = steps
        self.allow_none = allow_none
        self.where = where  # FILE:LINE of the watch() call
        self._report: rr.RunReport | None = None
        self._open: Any = None  # (watcher, hooks' context manager, Calls) while inside
        self._lock = threading.Lock()

    @property
    def report(self) -> rr.RunReport:
        """The block's report.

        Raises:
            UsageError: the block has not ended yet.
        """
        if self._report is None:
            raise UsageError(f"gradscope.watch() at {self.where}: the report is made when the "
                             "with block ends; read it after the block")  # fmt: skip
        return self._report

    @property
    def ended(self) -> bool:
        """Whether the block has ended (``report`` can be read)."""
        return self._report is not None

    def __enter__(self) -> Watch:
        with self._lock:
            if self._open is not None or self._report is not None:
                raise UsageError(f"gradscope.watch() at {self.where}: this watch() was "
                                 "entered already; make a new one for each block")  # fmt: skip
            from gradscope._src.frontends import backend
            from gradscope._src.watcher import hooks
            from gradscope._src.watcher.watch import Watcher

            # PyTorch's gradients: refused at once (NotTensorFlow), never a green report
            refusing = backend.refusing("the code in the block", f"gradscope.watch() at "
                                        f"{self.where}")  # fmt: skip
            refusing.__enter__()
            # TensorFlow (or JAX) is not imported here: the hooks are set once the program has
            # (Keras reads KERAS_BACKEND at its import). Inside another watch, this joins it.
            try:
                member = hooks.enter(lambda: Watcher(self.steps))  # never stops the code
                retraced = _Retraced(member) if member.first else None
            except BaseException:
                refusing.__exit__(None, None, None)
                raise
            self._open = (member, retraced, refusing)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        from gradscope._src.frontends.backend import Refused
        from gradscope._src.watcher import hooks

        member, retraced, refusing = self._open
        notes = len(member.session.watcher.notes) if not member.first else 0
        try:
            if retraced is not None:
                retraced.undo()
        finally:
            try:
                found = self._calls(member)
            finally:
                try:
                    hooks.leave(member)  # TensorFlow as it was, whatever happens next
                finally:
                    self._open = None
                    refusing.__exit__(None, None, None)
            try:
                self._report = self._made(member, found, notes, _outcome(kind))
            except Exception as exc:  # gradscope's failure never stops the code it watched
                self._report = self._failed(exc, _outcome(kind))
        if isinstance(error, Refused):  # JAX or PyTorch gradients: the block is refused
            raise error.error from None
        return None  # the block's exception, if any, passes unchanged

    def _failed(self, exc: Exception, outcome: str) -> rr.RunReport:
        from gradscope._src.engine.messages import one_line

        said = one_line(f"{type(exc).__name__}: {exc}", 200)
        return rr.RunReport(self.where, (), "", "", (), (), outcome=outcome, steps=self.steps,
                            notes=(f"gradscope could not make this report ({said}); please "
                                   "report it",), entry=rr.WATCH)  # fmt: skip

    def _calls(self, member: Any) -> list[rr.CallResult] | Exception:
        """The calls made in this block: those of its thread's watch (and of the replica
        threads working for it) since it began; a block that joined another's watch shares
        its sites, and reports its own calls."""
        try:
            from gradscope._src.watcher import trainable

            watcher = member.session.watcher
            made = watcher.finish(member.thread, member.start, member.sites)
            return list(trainable.merged(made, member.calls.traces))
        except Exception as exc:  # said in the report (_made)
            return exc

    def _made(self, member: Any, found: list[rr.CallResult] | Exception, notes: int,
              outcome: str) -> rr.RunReport:  # fmt: skip
        import sys

        from gradscope._src.watch.run import reported

        if isinstance(found, Exception):
            raise found
        watcher = member.session.watcher
        shown = _Notes(watcher.notes[notes:])
        return reported(sys.modules.get("tensorflow"), shown, found, self.allow_none, outcome,
                        watcher.steps, program=self.where, entry=rr.WATCH)  # fmt: skip


class _Notes:
    """What ``reported`` reads of a watcher: the notes a block's report carries."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes


class _Retraced:
    """A Keras model whose train step was traced before the block (an earlier ``fit`` in the
    notebook) has it traced again when the block first trains it, so that its gradient calls
    are seen; the earlier one is the model's again after the block. (A ``tf.function`` of
    the user's traced before the block is not retraced: it would restart the sequences of
    its stateful random ops; define or first call it inside the block.)"""

    def __init__(self, member: Any) -> None:
        from gradscope._src import patching

        self.models: dict[int, tuple[Any, Any]] = {}  # id -> (model, its train function)
        self.patches = patching.Patches()
        session = member.session

        def install() -> None:
            # the hooks' own fit and train_on_batch (Keras on TensorFlow or on JAX)
            if "keras" in session.installed or "keras-jax" in session.installed:
                for name in ("fit", "train_on_batch"):
                    self.patches.set(f"keras.Model.{name}", self._fresh, everywhere=True)

        self.patches.wait_for(("tensorflow", "keras"), install)

    def _fresh(self, watched: Any) -> Any:
        def train(model: Any, *args: Any, **kwargs: Any) -> Any:
            if id(model) not in self.models:
                self.models[id(model)] = (model, getattr(model, "train_function", None))
                model.train_function = None  # Keras traces it again, watched
            return watched(model, *args, **kwargs)

        return train

    def undo(self) -> None:
        self.patches.undo()
        for model, before in self.models.values():
            model.train_function = before


def _outcome(kind: type[BaseException] | None) -> str:
    if kind is None:
        return rr.FINISHED
    if issubclass(kind, KeyboardInterrupt):
        return rr.INTERRUPTED
    return rr.RAISED


def _steps(steps: object) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise UsageError(f"gradscope.watch: steps must be a whole number of at least 1, "
                         f"saw {steps!r}")  # fmt: skip
    return steps


def _globs(allow_none: Any) -> tuple[str, ...]:
    if isinstance(allow_none, str):
        raise UsageError(f"gradscope.watch: allow_none must be a list of globs, saw the string "
                         f"{allow_none!r} (write [{allow_none!r}])")  # fmt: skip
    try:
        globs = tuple(allow_none)
    except TypeError:
        raise UsageError(f"gradscope.watch: allow_none must be a list of globs, saw "
                         f"{allow_none!r}") from None  # fmt: skip
    wrong = [g for g in globs if not isinstance(g, str)]
    if wrong:
        raise UsageError(f"gradscope.watch: allow_none must hold strings (globs of variable "
                         f"names), saw {wrong[0]!r}")  # fmt: skip
    return globs


def _caller(frame: Any) -> str:
    """``FILE:LINE`` of the code that called ``watch()`` (a notebook cell's ``In[N]:LINE``)."""
    from gradscope._src.frontends.python.frames import Site

    return str(Site(frame.f_code.co_filename, frame.f_lineno))
