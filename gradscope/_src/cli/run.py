"""``gradscope run``: the user's own training program, run unchanged while its gradients are
watched (contract section 6)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from gradscope._src.cli.commands import summary
from gradscope._src.cli.common import format_option, table_options, table_render_options
from gradscope._src.cli.output import OutputPath, OutputsFirst, write_atomic
from gradscope._src.cli.wording import exit_codes
from gradscope._src.errors import ExitCode, UsageError
from gradscope._src.report import RUN_FORMATS

if TYPE_CHECKING:
    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import Outcome
    from gradscope._src.watch.streams import Held

EPILOG = (
    """\b
Where the report goes:
  --output FILE   written to FILE (atomically); --output - writes it to standard output
  otherwise       standard error, never standard output: that is the program's own
  --timeline FILE the timeline, written however the program ends (stopped, raised,
                  sys.exit, os._exit, exec, Ctrl-C, SIGTERM, SIGHUP)
  The report and the timeline are written before the process ends, however it ends;
  a program's forked children and its threads are not watched and report nothing.

"""
    + exit_codes(
        (
            ExitCode.OK,
            "no problems: every source the program asked about got a finite gradient\n"
            "(with --stop, in the part that ran: the report says where it was stopped)",
        ),
        (
            ExitCode.PROBLEMS,
            "problems: a None gradient (not named by --allow-none), a NaN/Inf "
            "one, or\nreplicas that disagree (replica-mismatch)",
        ),
        (
            ExitCode.USAGE,
            "bad usage, or a program that cannot start (no such file, a syntax "
            "error, no module);\nor an output that could not be written (a full disk): said after "
            "the report;\nor a program that computes its gradients with PyTorch (Keras 3 on "
            "its torch backend,\nloss.backward()): stopped there, one line, no report "
            "(gradscope watches\nTensorFlow and JAX only)",
        ),
        ExitCode.INTERNAL,
        (
            ExitCode.PROGRAM_RAISED,
            "the program raised: its traceback as Python prints it, then "
            "the report so far;\nor it ended itself with a nonzero status N (sys.exit(N), "
            'sys.exit("message"),\nos._exit(N): the report written first): outcome "exited", '
            "exit_status N",
        ),
        (ExitCode.INTERRUPTED, "interrupted (Ctrl-C): the report so far, written to --output too"),
        (143, "ended by SIGTERM (129: SIGHUP; 128 + N for signal N): the report so far"),
    )
    + """

\b
Examples:
  gradscope run train.py --epochs 1
  gradscope run --steps 3 train.py   (each call site's first 3 executions watched)
  gradscope run --stop train.py      (a quick look: stopped at a site's 2nd execution)
  gradscope run --allow-none 'generator/*' -m mypkg.train --config small.yaml
  gradscope run --format junit --output gradscope.xml train.py
  gradscope run --steps 1000 --every 10 --timeline grads.json train.py
  gradscope run --replicas 2 train.py   (its MirroredStrategy() on 2 CPU devices)
  gradscope plot grads.json -o norms.png   (the norms over the steps)
  gradscope check --timeline grads.json    (exit 1 on its findings)"""
)


class _RunCommand(OutputsFirst):
    """``gradscope run [OPTIONS] SCRIPT [ARGS]...``: every option-like word before SCRIPT is
    gradscope's (an unknown one is click's "No such option", exit 2); every word from SCRIPT
    on, or after ``-m MODULE``, is the program's, as ``python`` reads its command line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _programs_words_marked(self, ctx, args))


def _programs_words_marked(command: click.Command, ctx: click.Context,
                           args: list[str]) -> list[str]:  # fmt: skip
    """``args`` with ``--`` put after ``-m MODULE``, so that the words after it are the
    program's even when they look like options (``-m pkg.train --config x.yaml``); SCRIPT
    needs no mark (the first word that is no option ends gradscope's options)."""
    takes_value = {name for p in command.get_params(ctx) if isinstance(p, click.Option)
                   and not p.is_flag and p.nargs > 0 for name in p.opts}  # fmt: skip
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--" or not word.startswith("-") or word == "-":
            break  # the program's command line begins here
        if word == "-m":  # with no MODULE after it, click says "requires an argument"
            return [*args[: i + 2], "--", *args[i + 2 :]] if i + 1 < len(args) else args
        if word.startswith("-m") and not word.startswith("--"):  # -mMODULE, as python takes it
            return [*args[: i + 1], "--", *args[i + 1 :]]
        i += 2 if word in takes_value else 1  # --opt=value and -oVALUE hold their value
    return args


@click.command(
    cls=_RunCommand,
    short_help=summary("run"),
    epilog=EPILOG,
    context_settings={"allow_interspersed_args": False},
)
@click.option("--steps", type=click.IntRange(min=1), default=1, show_default=True,
              help="Watch the first N executions of each gradient call site; the later ones "
                   "run unwatched, at the program's own speed, to the program's end.")  # fmt: skip
@click.option("--stop", is_flag=True,
              help="Stop the program at the first execution of a call site past --steps: a "
                   "quick look; the rest of the program does not run, and the report says "
                   "so.")  # fmt: skip
@click.option("--continue", "keep_going", is_flag=True,
              help="Accepted for older scripts and CI, and does nothing: running the program "
                   "to its end is the default now (--stop stops it early).")  # fmt: skip
@click.option("--every", type=click.IntRange(min=1, max=2**63 - 1), default=None, metavar="K",
              help="With --timeline/--tensorboard: measure the first and every K-th "
                   "execution of each call site (up to --steps); the others run unwatched. "
                   "Default 1.")  # fmt: skip
@click.option("--timeline", metavar="FILE", default=None, type=OutputPath(parents=True),
              help="Record per site and variable norm, status, zero fraction and weight norm "
                   "over the run, and write the timeline JSON with its findings to FILE "
                   "(for gradscope plot and check --timeline).")  # fmt: skip
@click.option("--tensorboard", metavar="DIR", default=None,
              type=OutputPath(directory=True, parents=True),
              help="Write the same records as TensorBoard scalars and histograms into "
                   "DIR.")  # fmt: skip
@click.option("--allow-none", "allow_none", multiple=True, metavar="GLOB",
              help="A source (variable or tensor name) whose None gradient is expected; "
                   "repeatable.")  # fmt: skip
@click.option("--replicas", type=click.IntRange(min=1), default=None, metavar="N",
              help="Give the program's own tf.distribute strategy N devices: the CPU split "
                   "into N logical devices (or N GPUs), made before the program starts, so "
                   "its MirroredStrategy() has N replicas. Calls inside strategy.run are "
                   "reported per replica.")  # fmt: skip
@click.option("--strategy", type=click.Choice(["default", "mirrored", "multiworker"]),
              default=None,
              help="mirrored: as --replicas (2 unless told); the program picks its own "
                   "strategy. multiworker is refused: start each worker under gradscope run "
                   "(its launcher sets TF_CONFIG).")  # fmt: skip
@format_option([f.value for f in RUN_FORMATS])
@click.option("--output", "-o", metavar="FILE", default=None, type=OutputPath(dash=True),
              help="Write the report to FILE ('-': standard output) instead of standard "
                   "error.")  # fmt: skip
@table_options
@click.option("-m", "module", metavar="MODULE", default=None,
              help="Run a module, as python -m MODULE does.")  # fmt: skip
@click.argument("program", nargs=-1, type=click.UNPROCESSED, metavar="SCRIPT [ARGS]...")
@click.pass_context
def run(ctx: click.Context, steps: int, stop: bool, keep_going: bool, every: int | None,
        timeline: str | None, tensorboard: str | None, allow_none: tuple[str, ...],
        replicas: int | None, strategy: str | None, fmt: str, output: str | None,
        module: str | None, program: tuple[str, ...], group: str = "auto",
        problems_only: bool = False) -> None:  # fmt: skip
    """Run a Python program as `python SCRIPT ARGS` would, and report every gradient it takes.

    Watched: GradientTape.gradient (eager and inside tf.function, so model.fit and custom
    train steps), tf.gradients, compute_gradients/minimize of tf.compat.v1 optimizers in
    graph mode, model.fit, and Keras' apply_gradients (a None the program passed); on JAX,
    jax.grad, value_and_grad and vjp (so Keras 3's fit with KERAS_BACKEND=jax). For each
    call, every source (variable, watched tensor or pytree leaf) gets a status, a norm and,
    when no gradient flows, the line where the path was cut.

    gradscope's options go before SCRIPT (or -m MODULE); every word after it is the
    program's own (gradscope run train.py --steps 5 passes --steps 5 to train.py).
    """
    from gradscope._src.distribute.run import for_program
    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import exit_code
    from gradscope._src.watch.run import run as run_program
    from gradscope._src.watch.streams import Held

    if module is None and not program:
        raise UsageError("gradscope run: give a SCRIPT to run, or -m MODULE")
    if module is not None and not module.strip():
        raise UsageError(f"gradscope run: -m {module!r}: give a module name (as python -m takes)")
    _check_outputs(every, timeline, tensorboard)
    distribution = for_program(strategy, replicas)
    target = (Program(module, program, True) if module is not None
              else Program(program[0], program[1:]))  # fmt: skip
    # the program may chdir, close or replace its streams: gradscope's are kept from now
    output, timeline, tensorboard = (_absolute(p) for p in (output, timeline, tensorboard))
    held = Held(keep_descriptors=True)  # fd 1 and 2 as they are now, whatever the program does

    options = table_render_options(fmt, group, problems_only)

    def deliver(outcome: Outcome) -> None:
        _deliver(outcome, target, fmt, output, held, options)

    if stop and keep_going:  # --continue: the default now, accepted for older command lines
        raise UsageError("gradscope run: --stop and --continue contradict each other: give one")
    outcome = run_program(target, steps=steps, stop=stop, allow_none=allow_none,
                          every=every or 1, timeline=timeline, tensorboard=tensorboard,
                          distribution=distribution, on_end=deliver)  # fmt: skip
    deliver(outcome)
    ctx.exit(exit_code(outcome))


def _deliver(outcome: Outcome, target: Program, fmt: str, output: str | None,
             held: Held, options: dict[str, Any]) -> None:  # fmt: skip
    """The program's failure as Python prints it, then the report where it was asked for:
    on the standard streams gradscope started with (their descriptors duplicated at start,
    so a program pointing fd 2 at /dev/null does not take the report with it), whatever the
    program did to its own; then, on standard error, each output that could not be
    written. The report is written after a Ctrl-C too: it is the report so far."""
    from gradscope._src.cli.output import forget_interrupt
    from gradscope._src.report import render
    from gradscope._src.watch.launch import print_failure

    out, err = held.stream("stdout"), held.stream("stderr")
    for stream in (sys.stdout, sys.stderr, out):
        with contextlib.suppress(OSError, ValueError):  # closed by the program
            stream.flush()
    if outcome.error is not None:
        print_failure(outcome.error, target, err)
    color = fmt == "table" and output is None and _tty(err)
    text = render(outcome.report, fmt, color=color, width=_width(err), **options)
    forget_interrupt()  # the program's Ctrl-C is its outcome, not a reason to drop its report
    try:
        if output and output != "-":
            write_atomic(output, text)
        else:
            click.echo(text, nl=not text.endswith("\n"), file=err if output != "-" else out)
            (err if output != "-" else out).flush()
    finally:
        for line in outcome.unwritten:
            click.echo(f"gradscope run: {line}", file=err)
        err.flush()


def _absolute(path: str | None) -> str | None:
    """A path given on the command line, against gradscope's working directory now."""
    return path if path in (None, "-") else os.path.abspath(path)


def _check_outputs(every: int | None, timeline: str | None, tensorboard: str | None) -> None:
    """What the outputs need of each other (each path was checked before the command began:
    ``OutputsFirst``): ``gradscope run: OPTION ...: why``, exit code 2."""
    if every is not None and timeline is None and tensorboard is None:
        raise UsageError("gradscope run: --every needs --timeline FILE or --tensorboard DIR")


def _tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ


def _width(stream: object) -> int:
    if _tty(stream):
        import shutil

        return shutil.get_terminal_size((120, 24)).columns
    return int(os.environ.get("COLUMNS", "120"))
