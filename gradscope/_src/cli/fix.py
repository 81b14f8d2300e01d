"""``gradscope fix``: prove a program's edit fixes in a scratch copy; ``--apply`` writes them."""

from __future__ import annotations

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.common import format_option
from gradscope._src.cli.output import emit
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode


@click.command(
    short_help=summary("fix"),
    context_settings={"allow_interspersed_args": False},
    epilog=exit_codes(
        (ExitCode.OK, "the proof passed (--apply: and the edits were written)"),
        (ExitCode.PROBLEMS, "the proof failed, or no fix is a text edit: nothing written"),
        (ExitCode.USAGE, "bad usage, a program that cannot be run, a file changed since"),
        ExitCode.INTERNAL,
        ExitCode.INTERRUPTED,
    ),
)
@click.option("--check", "check_only", is_flag=True,
              help="Prove only (the default): never write the user's files.")  # fmt: skip
@click.option("--apply", "apply_edits", is_flag=True,
              help="After a passed proof, write the edits into the program's files.")  # fmt: skip
@click.option("--steps", type=click.IntRange(min=1), default=1, show_default=True,
              help="As gradscope run --steps, for both runs.")  # fmt: skip
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=900.0,
    show_default=True,
    metavar="SECONDS",
    help="Each run of the program is stopped after this long.",
)
@format_option(["table", "json"])
@click.option("--output", "-o", metavar="FILE", default=None,
              help="Write the report to FILE instead of standard output.")  # fmt: skip
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED,
                metavar="SCRIPT [ARGS]...")  # fmt: skip
@click.pass_context
def fix(ctx: click.Context, check_only: bool, apply_edits: bool, steps: int, timeout: float,
        fmt: str, output: str | None, program: tuple[str, ...]) -> None:  # fmt: skip
    """Prove the fixes gradscope run gives a program, then apply them if asked.

    Every fix that is a text edit (removing a stop_gradient, a straight-through rounding or
    cast, trainable=False, a TensorFlow op for a NumPy one, a var_list, a NaN guard,
    tape.watch) is made in a scratch copy of the working folder (a hidden folder inside it,
    removed on every way out), and the program runs there again as gradscope run runs it.
    Per call site and variable: the status before and after; per call: whether the loss
    value (the forward pass) stayed the same. The proof passes when a variable gains a
    gradient (or is no longer asked for one it cannot have), none loses one, no problem is
    new, and every value stays. The program's files are written only with --apply, and only
    after the proof passed.
    """
    from gradscope._src import prove
    from gradscope._src.errors import UsageError

    if check_only and apply_edits:
        raise UsageError("gradscope fix: --check proves only and --apply writes: give one")
    proof = prove.check(program[0], program[1:], steps=steps, seconds=timeout)
    if apply_edits and proof.passed:
        proof = prove.apply(proof)
    emit(_render(proof, fmt), output)
    ctx.exit(int(ExitCode.OK if proof.passed else ExitCode.PROBLEMS))


def _render(proof: object, fmt: str) -> str:
    from gradscope._src import prove
    from gradscope._src.report.json import dumps

    assert isinstance(proof, prove.Proof)
    if fmt == "json":
        return dumps(proof.to_dict())
    lines = [f"gradscope fix: {proof.program}: {len(proof.edits)} edit(s)"]
    for kind, edit in proof.edits:
        lines.append(f"  {edit.file}:{edit.start_line}  {kind}")
        lines += [f"    - {line}" for line in edit.old.split("\n")]
        lines += [f"    + {line}" for line in edit.new.split("\n")]
    lines += [f"  skipped: {why}" for why in proof.skipped]
    for c in proof.changes:
        mark = ("fixed" if c.better else "resolved: not asked for" if c.resolved
                else "WORSE" if c.worse else "same")  # fmt: skip
        lines.append(f"  {c.site}  {c.variable}: {c.before} -> {c.after}  ({mark})")
    differ = [f for f in proof.forward if not f.same]
    lines.append("  forward values: the same" if not differ else
                 "  forward values differ at " + ", ".join(f.site for f in differ))  # fmt: skip
    verdict = "passed" if proof.passed else "failed"
    if not proof.edits:
        verdict = "nothing to prove: no fix is a text edit"
    applied = " (applied)" if proof.applied else (" (nothing written)" if proof.edits else "")
    lines.append(f"proof {verdict}{applied}")
    return "\n".join(lines) + "\n"
