"""The CI policy: which pairs are problems (nan, contradicted ``expect``, never trained).

The rules, per (loss, variable) pair and per variable:

- ``nan``: the gradient has a NaN or an infinity. Always a problem, whatever ``expect`` says.
- ``unexpected-none``: ``expect.<loss>.connected`` matches the variable but it gets no
  *usable* gradient from the loss: ``none:*``, ``zero`` (an all-zero gradient trains nothing),
  ``excluded`` (outside the loss's ``vars``) and ``frozen`` (not trainable) all contradict
  ``connected``, which means "must get a usable gradient".
- ``unexpected-connected``: ``expect.<loss>.none`` matches the variable but a gradient exists
  (``ok`` or ``zero``: a zero gradient still means a differentiable path exists).
  ``excluded`` and ``frozen`` pairs get no gradient, so they satisfy ``none``.
- When both lists of a loss match a variable, ``none`` wins: ``connected: ["*"]`` with
  ``none: ["task2/*"]`` reads "everything except task2".
- ``never-trained``: a trainable variable that no loss gives a gradient (``ok``, ``zero`` or
  ``nan``), unless an ``expect.<loss>.none`` pattern of any loss names it: the author
  declared it unused (contract section 4). One variable is one problem: a variable already
  reported ``unexpected-none`` (its loss was expected to train it) is not reported again as
  never trained.
- ``numeric-differs`` (only with ``--numeric``): an ``ok`` gradient that disagrees with
  finite differences with nothing to explain it, or with a deliberate cause (a
  straight-through estimator, ``tf.custom_gradient``) when ``expect.<loss>.numeric`` names
  the variable (``analysis/numeric.py``).
- ``replica-mismatch``, ``replica-loss-scale``, ``replica-gradient-differs``,
  ``replica-variables-differ`` (only with ``--strategy``): what only a distributed run can get
  wrong, decided in ``analysis/replicas.py`` and added by the pipeline beside these.

Each problem carries the spec line a reviewer should look at: the pattern's line for a
contradicted ``expect``, the line that created the variable (its spec line, or the Python
line of a target) for ``nan``, ``never-trained`` and an unasked ``numeric-differs``.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradscope._src.analysis.numeric import describe
from gradscope._src.location import Location
from gradscope._src.results import report as m
from gradscope._src.results import words
from gradscope._src.results.causes import NotFloating
from gradscope._src.results.expect import Expectation, Pattern, PatternUse, glob_matches
from gradscope._src.results.facts import VariableFacts


def _norm(value: float | None) -> str:
    return "nan" if value is None else f"{value:.3g}"


def located_at(variable: VariableFacts, spec: str) -> tuple[str, int]:
    """Where a problem about a variable itself points: the file and line that created it
    (its spec line, or the Python line of a target), else line 1 of ``spec``."""
    found = Location.at(variable.source, spec)
    return found.file, found.line


def _first(patterns: Sequence[Pattern], name: str) -> Pattern | None:
    return next((p for p in patterns if p.matches(name)), None)


def find_problems(
    spec: str,
    losses: Sequence[m.LossResult],
    variables: Sequence[VariableFacts],
    expect: Sequence[Expectation],
) -> list[m.Problem]:
    """Every problem ``check`` fails on: per loss, per variable, then the never-trained.

    Args:
        spec: the spec path (or target) the problems are located in.
        losses: the classified losses of one run.
        variables: every variable of the run.
        expect: the spec's ``expect`` block.

    Returns:
        The problems; the module docstring has the rules.
    """
    by_name = {v.name: v for v in variables}
    expectations = {e.loss: e for e in expect}
    problems: list[m.Problem] = []
    for loss in losses:
        e = expectations.get(loss.name)
        for pair in loss.pairs:
            variable = by_name[pair.variable]
            for problem in (
                _pair_problem(spec, loss, pair, variable, e),
                _numeric_problem(spec, loss, pair, variable),
            ):
                if problem is not None:
                    problems.append(problem)
    said = {p.variable for p in problems if p.kind == m.UNEXPECTED_NONE}
    untrained = _never_trained(spec, losses, variables, expect)
    problems.extend(p for p in untrained if p.variable not in said)
    return problems


def _pair_problem(
    spec: str,
    loss: m.LossResult,
    pair: m.PairResult,
    variable: VariableFacts,
    e: Expectation | None,
) -> m.Problem | None:
    name = pair.variable
    if pair.status == m.NAN:
        origin = f": {words.origin_text(pair.nan_origin, quoted=True)}" if pair.nan_origin else ""
        return m.Problem.problem(loss.name, name, m.NAN_PROBLEM,
                         f"`{name}` gets a gradient with NaN or Inf from `{loss.name}`{origin}",
                         pair.cut_points, *located_at(variable, spec))  # fmt: skip
    if e is None:
        return None
    none = _first(e.none, name)
    if none is not None:
        if not m.has_gradient(pair.status):
            return None
        what = (
            f"an all-zero gradient from `{loss.name}` (a differentiable path exists)"
            if pair.status == m.ZERO
            else f"a gradient from `{loss.name}` (norm {_norm(pair.norm)})"
        )
        return m.Problem.problem(loss.name, name, m.UNEXPECTED_CONNECTED,
                         f"`{name}` gets {what}, "
                         f"but expect.{loss.name}.none lists `{none.glob}`",
                         pair.cut_points, spec, none.pos.line)  # fmt: skip
    connected = _first(e.connected, name)
    if connected is None or pair.status == m.OK:
        return None
    why = words.why_none(pair.status, pair.cut_points, pair.note)
    what = (
        f"an all-zero gradient from `{loss.name}`, which trains nothing"
        if pair.status == m.ZERO
        else f"no gradient from `{loss.name}`: {why}"
    )
    return m.Problem.problem(loss.name, name, m.UNEXPECTED_NONE,
                     f"`{name}` gets {what}, but expect.{loss.name}.connected lists "
                     f"`{connected.glob}`",
                     pair.cut_points, spec, connected.pos.line, cause=pair.cause)  # fmt: skip


def _numeric_problem(
    spec: str, loss: m.LossResult, pair: m.PairResult, variable: VariableFacts
) -> m.Problem | None:
    """``numeric-differs``: a ``--numeric`` check found the gradient wrong (module docstring)."""
    result = pair.numeric
    if result is None or result.verdict != m.DIFFERS:
        return None
    name = pair.variable
    message = (
        f"the gradient of `{name}` from `{loss.name}` differs from finite differences: "
        f"{describe(result)}"
    )
    if result.pattern is not None:
        message += f"; expect.{loss.name}.numeric lists `{result.pattern.glob}`"
        message += f", and {result.reason}" if result.reason else ""
    where = (spec, result.pattern.pos.line) if result.pattern else located_at(variable, spec)
    return m.Problem.problem(loss.name, name, m.NUMERIC_DIFFERS, message, pair.cut_points, *where)


def _never_trained(
    spec: str,
    losses: Sequence[m.LossResult],
    variables: Sequence[VariableFacts],
    expect: Sequence[Expectation],
) -> list[m.Problem]:
    declared = [p for e in expect for p in e.none]
    out = []
    for v in variables:
        if not v.trainable or _first(declared, v.name) is not None:
            continue
        pairs = [loss.pair(v.name) for loss in losses]
        if any(m.has_gradient(p.status) for p in pairs):
            continue
        cuts = tuple(dict.fromkeys(c for p in pairs for c in p.cut_points))
        message = f"`{v.name}` is trainable but no loss gives it a gradient"
        floating = v.dtype.startswith(("float", "bfloat", "complex"))  # TensorFlow dtype names
        if not floating:
            message += (
                f": it holds {v.dtype} values, and TensorFlow gives no gradient to a variable "
                "that is not floating-point (declare it `trainable: false`)"
            )
        else:
            cause = next((p.note for p in pairs if p.cause), "")
            if cuts:
                message += f"; its paths are cut at {words.cuts_quoted(cuts)}"
            elif cause:
                message += f": it {cause}"
            elif pairs and all(p.status == m.EXCLUDED for p in pairs):
                message += "; it is outside every loss's `vars`"
            message += " (list it under expect.<loss>.none if it is meant to be unused)"
        said = next((p.cause for p in pairs if p.cause), None) if floating else NotFloating()
        problem = m.Problem.problem(None, v.name, m.NEVER_TRAINED, message, cuts,
                                    *located_at(v, spec), cause=said)  # fmt: skip
        out.append(problem)
    return out


def unmatched_patterns(uses: Sequence[PatternUse], variables: Sequence[VariableFacts]) -> list[str]:
    """A note for each glob of a front-end's own fields (a spec loss's ``vars``) that names no
    variable of the model: such a ``vars`` of only typos excludes every variable, which is
    almost always a typo or a renamed variable. (An ``expect`` pattern that names nothing is
    an error instead: ``frontends/yaml/patterns.py``.)
    """
    names = [v.name for v in variables]
    notes = []
    for use in uses:
        if any(glob_matches(name, use.glob) for name in names):
            continue
        hint = (
            " (in a glob, [ ] enclose a set of characters; [[] is a literal [)"
            if "[" in use.glob
            else ""
        )
        at = f" at {use.where}" if use.where else ""
        notes.append(f"{use.field}: '{use.glob}'{at} matches no variable{hint}")
    return notes
