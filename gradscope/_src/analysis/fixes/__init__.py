"""The one place a fix is decided: what to change at the user's own line so a gradient flows.

A fix is a pure function of plain data, :class:`Evidence`: the status, the cut points (op
type, kind, ``FILE:LINE``), the cause a front-end wrote in words (a source's note), the names
involved, and where else the variable does get a gradient. Every output asks
:func:`fix_for` (pairs, sources, problems) or :func:`finding_fix` (timeline findings); none
words a fix of its own.

The cases, in the order they are tried (each told apart from its neighbours by its evidence):

- a cut point: ``argmax`` (``soft-argmax``), ``round``/``floor``/a cast to an integer
  (``straight-through``), a comparison (``soft-comparison``), a batch norm's ``mean`` or a
  ``tf.pad`` constant, inputs their op's gradient skips (``differentiable-op``), another op
  with no gradient (``no-gradient-op``), ``tf.stop_gradient`` (``remove-stop-gradient``, or
  ``intended`` for a target network or a straight-through estimator whose gradient still
  flows), a loss's own ``stop_gradients`` (``stop-gradients-argument``), ``assign``
  (``assign-as-tensor``), a ``tf.custom_gradient`` whose ``grad_fn`` returns None
  (``custom-gradient``);
- a cause in words (``CAUSES``: a pattern over the note, then the fix it calls for): the
  forward pass outside the tape (``move-into-tape``), a ``.numpy()`` round trip
  (``keep-tensorflow-ops``), an unwatched variable (``watch``), an output no loss reads
  (``unread-output``), a layer off the model's path (``off-path-layer``), a ``trainable``
  flag changed after ``compile()`` (``compile-again``);
- no path and no cause: a watched tensor no op used (``watch``), a variable another loss or
  call reaches (``var-list``), one no loss reads (``unread-variable``);
- ``nan`` with the op where it first appeared: ``log`` (``safe-log``), ``sqrt``/``pow``
  (``double-where``), a division (``divide-no-nan``); without one, the candidates;
- ``zero``, ``none:unexplained``: candidates only (the evidence singles out no fix);
- a timeline's ``dead``, ``vanishing``, ``exploding`` and ``nan`` findings: candidates, with
  the layer; a distributed run's per-replica mean loss (``compute-average-loss``).

Where the evidence does not single out one fix, the text says so and ``candidates`` lists
them; a fix is never invented.
"""

from __future__ import annotations

from gradscope._src.analysis.fixes.attach import (
    fixed_calls as fixed_calls,
)
from gradscope._src.analysis.fixes.attach import (
    fixed_losses as fixed_losses,
)
from gradscope._src.analysis.fixes.attach import (
    fixed_problems as fixed_problems,
)
from gradscope._src.analysis.fixes.attach import (
    fixed_run_problems as fixed_run_problems,
)
from gradscope._src.analysis.fixes.decide import finding_fix as finding_fix
from gradscope._src.analysis.fixes.decide import fix_for as fix_for
from gradscope._src.analysis.fixes.evidence import Evidence as Evidence
from gradscope._src.analysis.fixes.values import multiplier as multiplier
from gradscope._src.analysis.fixes.values import per_replica_mean as per_replica_mean
