"""The one place a fix is decided: what to change at the user's own line so a gradient flows.

A fix is a pure function of plain data: the pair's :class:`Context` (status, cut points,
names, where else the variable gets a gradient) and its cause, a class of the registry
(``results/causes.py``) that builds its fix from its facts. :func:`explain` picks the cause
(``decide.py``); every output asks :func:`fix_for` (pairs, sources, problems, through
``attach.py``) or :func:`finding_fix` (timeline findings); none words a fix of its own.

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
from gradscope._src.analysis.fixes.decide import explain as explain
from gradscope._src.analysis.fixes.decide import finding_fix as finding_fix
from gradscope._src.analysis.fixes.decide import fix_for as fix_for
from gradscope._src.results.causes import Context as Context
