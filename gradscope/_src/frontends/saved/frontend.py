"""A saved model as a front-end: checked, loaded, written as a Python target, traced as one.

Everything after loading is the Python front-end's (the trace, the eager pass a loss may need,
the notes on what Keras leaves untracked); what is added here is what only a loaded model has:
the file and its format, the data it ran on, which variables training reaches, and the
report's ``loaded`` facts.
"""

from __future__ import annotations

from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.frontends import keras_names
from gradscope._src.frontends.base import Trace
from gradscope._src.frontends.python import loaded
from gradscope._src.frontends.python.frontend import PythonFrontend
from gradscope._src.frontends.python.resolve import Resolved
from gradscope._src.frontends.python.variables import Registry
from gradscope._src.frontends.saved import SavedTarget, is_keras_model
from gradscope._src.frontends.saved.load import Signature, load, notes_of
from gradscope._src.frontends.saved.model import (
    TOTAL,
    Built,
    idle_batch_norms,
    keras_target,
    signature_target,
    tf_ref,
)
from gradscope._src.frontends.saved.sniff import Kind, Sniffed, sniff
from gradscope._src.progress import Progress
from gradscope._src.results.facts import RunFacts
from gradscope._src.results.loaded import Loaded


class SavedFrontend(PythonFrontend):
    """A ``.keras``/``.h5`` file, a SavedModel directory or a Keras model object, for the
    pipeline."""

    notes_eager_check = False

    def __init__(self, target: SavedTarget) -> None:
        super().__init__(target)
        self.saved = target
        self._built: Built | None = None
        self._kind = Kind.MODEL
        self._model_name: str | None = None
        self._signature: str | None = None
        self._loaded: Loaded | None = None

    @property
    def label(self) -> str:
        return self.saved.label

    @property
    def file(self) -> str:
        return self.saved.label

    @property
    def name(self) -> str | None:
        return self._model_name

    @property
    def loaded(self) -> Loaded | None:
        """What the report says of the loaded model (after ``trace``)."""
        return self._loaded

    def prepare(self, progress: Progress) -> None:
        """Check the file (no TensorFlow yet), load it safely, and write its losses."""
        source, options = self.saved.source, self.saved.options
        sniffed: Sniffed | None = None
        if not is_keras_model(source):
            sniffed = sniff(self.saved.label)
            self._kind = sniffed.kind
        progress("importing TensorFlow")
        self.tf = import_tensorflow()
        self._registry = Registry(self.tf)
        with keras_names.fresh(), self.registry.recording():
            if sniffed is not None:
                progress(f"loading {self.label}")
                source = load(sniffed, options)
                self.notes += notes_of(source)
            progress("preparing the data")
            if isinstance(source, Signature):
                self._signature = source.name
                built = signature_target(source, options, self.label)
            else:
                self._model_name = str(source.name)
                built = keras_target(source, options, self.label)
        self._built = built
        self.registry.frozen |= built.frozen
        self.notes += built.notes + built.changed
        self._resolved = Resolved(built.target, self.label, None)

    @property
    def partial(self) -> str:
        """Why never-trained variables are not reported when only some outputs have a loss
        (``--loss out_a=mse``: the other heads train from losses not computed here); never
        when fit's whole loss is computed (``--loss compiled`` of ``compile(loss=[mse, None])``
        leaves the second head untrained, the forgotten head the report must name)."""
        built = self._built
        if built is None or len(built.outputs) < 2 or TOTAL in built.losses:
            return ""  # what fit minimizes is computed: a head outside it is never trained
        missing = [o for o in built.outputs if o not in built.losses]
        if not missing:
            return ""
        return (
            f"only some outputs have a loss (not {', '.join(missing)}), so never-trained "
            "variables are not reported"
        )

    def one_loss_hint(self, names: list[str]) -> str:
        """How to make one loss of several (``graph`` draws one): one output's."""
        outputs = [n for n in names if n in (self._built.outputs if self._built else ())]
        given = [c for c in self.saved.options.losses if c.output is None]
        loss = given[0].name if given else "compiled"
        first = outputs[0] if outputs else names[0]
        return f"compute one output's loss: --loss {first}={loss} (outputs: {', '.join(outputs)})"

    def trace(self, request: Trace) -> RunFacts:
        facts = super().trace(request)
        self._loaded = self._facts()
        keras_model, traced = self.resolved.target.model, self.model
        if self.saved.options.training and keras_model is not None and traced is not None:
            idle = idle_batch_norms(keras_model, traced.graph)
            self.notes += [idle] if idle else []
        return facts

    def _facts(self) -> Loaded:
        built, model = self._built, self.model
        assert built is not None and model is not None
        trainable = [c.name for c in model.chosen if c.trainable]
        frozen = [c.name for c in model.chosen if not c.trainable]
        tracked = built.tracked
        untracked = (
            []
            if tracked is None
            else [c.name for c in model.chosen if c.variable.ref() not in tracked]
        )
        keras_model = built.target.model
        late = {tf_ref(v) for v in loaded.stale(keras_model)} if keras_model is not None else set()
        stale = [c.name for c in model.chosen if c.variable.ref() in late]
        options = self.saved.options
        return Loaded(
            path=self.label,
            format=self._kind.value,
            model=self._model_name,
            signature=self._signature,
            losses=tuple(built.losses.items()),
            inputs=built.inputs,
            labels=built.labels,
            training=options.training,
            safe_mode=options.safe_mode,
            trainable=tuple(n for n in trainable if n not in untracked and n not in stale),
            frozen=tuple(frozen),
            untracked=tuple(untracked),
            stale=tuple(stale),
            freeze=tuple(built.changed),
            options=tuple(built.options.items()),
        )
