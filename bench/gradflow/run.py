"""Run every tool on every program of the gradflow set and write the table.

    python bench/gradflow/run.py                 # everything (make gradflow)
    python bench/gradflow/run.py --only nan_     # the programs whose name holds nan_
    python bench/gradflow/run.py --rescore       # the table again from results.json

Each program (buggy and fixed) gets one plain run (``python PROGRAM`` with GRADFLOW_TRUTH set:
the truth, Keras' messages, the naive tool) and one run per tool that needs its own, at most
``--jobs`` processes at a time, each killed at ``--timeout`` seconds. Results go to
``results.json`` (every verdict) and ``RESULTS.md`` (the tables, with the machine and date).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.gradflow import cases as cases_  # noqa: E402
from bench.gradflow import score as score_  # noqa: E402
from bench.gradflow import tools as tools_  # noqa: E402

HERE = Path(__file__).resolve().parent
GIVES = {"gradscope": {"cause", "line", "fix"}, "check_numerics": {"cause", "line"},
         "Keras warning": {"line"}}  # fmt: skip


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.pop("GRADFLOW_TRUTH", None)
    return env


def execute(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float,
            output: Path | None = None, truth: Path | None = None,
            keep: Path | None = None) -> tools_.Finished:  # fmt: skip
    """Run one process in its own session; killed with its group at ``timeout`` seconds. Its
    CPU seconds (user + system, its children's included) come from ``os.wait4``."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=err, start_new_session=True)  # fmt: skip
        killed: list[bool] = []
        killer = threading.Timer(timeout, _kill, (process.pid, killed))
        killer.start()
        _, status, usage = os.wait4(process.pid, 0)
        killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        code = None if killed else process.returncode
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if keep is not None:  # what --rejudge reads again
        record = {"argv": list(argv), "code": code, "seconds": seconds,
                  "cpu_seconds": usage.ru_utime + usage.ru_stime, "stdout": stdout,
                  "stderr": stderr}  # fmt: skip
        keep.write_text(json.dumps(record) + "\n")
    records = []
    if truth is not None and truth.exists():
        records = [json.loads(line) for line in truth.read_text().splitlines() if line.strip()]
    text = output.read_text(errors="replace") if output is not None and output.exists() else ""
    return tools_.Finished(program=Path(argv[-1]), code=code, seconds=seconds,
                           cpu_seconds=usage.ru_utime + usage.ru_stime, stdout=stdout,
                           stderr=stderr, truth=records, output=text)  # fmt: skip


def _kill(pid: int, killed: list[bool]) -> None:
    killed.append(True)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def plain(program: Path, scratch: Path, timeout: float, stem: str = "") -> tools_.Finished:
    """``python PROGRAM`` with the truth hooks writing to a file of ``scratch``."""
    stem = stem or program.stem
    truth = scratch / f"{stem}.truth.jsonl"
    truth.unlink(missing_ok=True)
    env = {**_env(), "GRADFLOW_TRUTH": str(truth)}
    return execute([sys.executable, program.name], program.parent, env, timeout, truth=truth,
                   keep=scratch / f"{stem}.plain.run.json")  # fmt: skip


def apply_edits(program: Path, edits: Sequence[Mapping[str, Any]], scratch: Path) -> Path:
    """A copy of ``program`` (with the truth hooks beside it) with a fix's text edits made:
    each edit replaces ``old`` with ``new`` on ``line`` (1-based)."""
    folder = scratch / f"{program.stem}.edited"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(program.parent / "_truth.py", folder / "_truth.py")
    lines = program.read_text().splitlines(keepends=True)
    for edit in edits:
        index = int(edit["line"]) - 1
        if edit["old"] not in lines[index]:
            raise ValueError(f"{program.name}:{edit['line']}: {edit['old']!r} is not there")
        lines[index] = lines[index].replace(edit["old"], edit["new"], 1)
    copy = folder / program.name
    copy.write_text("".join(lines))
    return copy


def run_program(program: Path, tools: Sequence[tools_.Tool], scratch: Path, timeout: float,
                buggy: bool, backend: str = "tensorflow") -> dict[str, Any]:  # fmt: skip
    """Every run of one program: its truth and each tool's verdict and seconds."""
    base = dataclasses.replace(plain(program, scratch, timeout), backend=backend)
    verdicts: dict[str, Any] = {}
    for tool in tools:
        if tool.run == tools_.PLAIN:
            run = base
        else:
            output = scratch / f"{program.stem}.{tool.run}.out"
            output.unlink(missing_ok=True)
            argv = tool.argv(Path(program.name), output)
            run = execute(
                argv,
                program.parent,
                _env(),
                timeout,
                output=output,
                keep=scratch / f"{program.stem}.{tool.run}.run.json",
            )
            run = dataclasses.replace(run, backend=backend, alone=base.code)
        verdict = tool.judge(run)
        record = asdict(verdict)
        record["seconds"] = round(run.seconds, 2)
        record["cpu_seconds"] = round(run.cpu_seconds, 2)
        if buggy and verdict.fix is not None and verdict.fix.edits:
            try:
                copy = apply_edits(program, verdict.fix.edits, scratch)
                edited = plain(copy, scratch, timeout, f"{program.stem}.{tool.run}.fixed")
                clean = not tools_.truth_statuses(edited.truth) & set(score_.BROKEN)
                record["fix"]["applied"] = bool(edited.code == 0 and edited.truth and clean)
            except (ValueError, IndexError, KeyError):
                record["fix"]["applied"] = False
        verdicts[tool.name] = record
    return {
        "truth": sorted(tools_.truth_statuses(base.truth)),
        "plain": {
            "code": base.code,
            "seconds": round(base.seconds, 2),
            "cpu_seconds": round(base.cpu_seconds, 2),
        },
        "verdicts": verdicts,
    }


def _kept(keep: Path, row: Mapping[str, Any], run: str) -> tools_.Finished | None:
    """A tool's own run of one program as ``--keep`` left it (None when it is not there)."""
    stem = Path(row["file"]).stem
    try:
        done = json.loads((keep / f"{stem}.{run}.run.json").read_text())
    except (OSError, ValueError):
        return None
    output = keep / f"{stem}.{run}.out"
    return tools_.Finished(program=Path(row["file"]), code=done["code"],
                           seconds=done["seconds"], cpu_seconds=done["cpu_seconds"],
                           stdout=done["stdout"], stderr=done["stderr"], truth=[],
                           output=output.read_text(errors="replace") if output.exists() else "",
                           backend=row.get("backend", "tensorflow"),
                           alone=row["plain"]["code"])  # fmt: skip


def rejudge(rows: Sequence[dict[str, Any]], keep: Path, tools: Sequence[tools_.Tool]) -> int:
    """Each verdict of a tool with a run of its own judged again from what ``--keep`` kept
    (an adapter changed; nothing runs again). A fix's ``applied`` stays when its edits are
    the same. Returns how many verdicts were judged again."""
    count = 0
    for row in rows:
        for tool in tools:
            old = row["verdicts"].get(tool.name)
            run = None if old is None or tool.run == tools_.PLAIN else _kept(keep, row, tool.run)
            if run is None:
                continue
            new = json.loads(json.dumps(asdict(tool.judge(run))))
            new["seconds"], new["cpu_seconds"] = old["seconds"], old["cpu_seconds"]
            before = old.get("fix") or {}
            if new["fix"] and "applied" in before and before.get("edits") == new["fix"]["edits"]:
                new["fix"]["applied"] = before["applied"]
            row["verdicts"][tool.name] = new
            count += 1
    return count


def stopped_run(keep: Path, why: str, tools: Sequence[tools_.Tool]) -> dict[str, Any]:
    """The results of a run stopped early, from the rows its ``--keep`` folder holds: the
    pairs with both programs measured; the others listed as not measured, with ``why``."""
    rows = [json.loads(line) for line in (keep / "rows.jsonl").read_text().splitlines()]
    roles: dict[str, set[str]] = {}
    for row in rows:
        roles.setdefault(row["case"], set()).add(row["role"])
    whole = {case for case, seen in roles.items() if seen == {"buggy", "fixed"}}
    kept = sorted(keep.glob("*.run.json"), key=lambda path: path.stat().st_mtime)
    first, last = kept[0].stat(), kept[-1].stat()
    started = datetime.datetime.fromtimestamp(
        first.st_mtime - json.loads(kept[0].read_text())["seconds"], datetime.timezone.utc
    )
    return {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(started.isoformat()),
        "jobs": 2,
        "timeout": 300,
        "load": None,
        "minutes": (last.st_mtime - started.timestamp()) / 60,
        "tools": [{"name": t.name, "about": t.about} for t in tools],
        "skipped": [],
        "not_run": sorted(c.name for c in cases_.load() if c.name not in whole),
        "why_not_run": why,
        "programs": [row for row in rows if row["case"] in whole],
    }


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _commit(before: str = "") -> str:
    """The last commit that changed gradscope's own code (the benchmark's commits do not), in
    the branch as it was at ``before`` (an ISO date) when given."""
    git = ["git", "-C", str(ROOT), "log", "-1", "--format=%h"]
    try:
        head = "HEAD"
        if before:
            at = [*git, "--first-parent", f"--before={before}", "HEAD"]
            head = subprocess.run(at, capture_output=True, text=True, check=True).stdout.strip()
        command = [*git, head, "--", "gradscope"]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        return done.stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine(before: str = "") -> dict[str, Any]:
    return {
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "memory_gib": round(_memory_gib(), 1),
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow"),
        "keras": _version("keras"),
        "jax": _version("jax"),
        "gradscope": f"{_version('gradscope-tf')} ({_commit(before)})",
    }


def skip_reason(case: cases_.Case) -> str:
    if case.backend == "jax" and importlib.util.find_spec("jax") is None:
        return "jax is not installed (pip install '.[jax]' to score Keras on JAX)"
    return ""


def row_of(case: cases_.Case, role: str, ran: Mapping[str, Any]) -> dict[str, Any]:
    path = case.buggy if role == "buggy" else case.fixed
    return {
        "file": path.name,
        "case": case.name,
        "role": role,
        "kind": case.kind,
        "backend": case.backend,
        "effect": case.effect,
        "cause": case.cause,
        "lines": list(case.lines),
        "fixes": list(case.fixes),
        "sources": list(case.sources),
        **ran,
    }


def measure(selected: Sequence[cases_.Case], tools: Sequence[tools_.Tool], jobs: int,
            timeout: float, keep: Path | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every program of ``selected`` through every tool, ``jobs`` programs at a time; the
    tools' outputs and the truth files stay in ``keep`` when given."""
    # Round-robin over the kinds, so that a run stopped early has some of each.
    by_kind = [[c for c in selected if c.kind == kind] for kind in cases_.KINDS]
    order = [c for group in itertools.zip_longest(*by_kind) for c in group if c is not None]
    work = [(case, role) for case in order for role in ("buggy", "fixed")]
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if keep is None:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gradflow-")))
        else:
            scratch = keep

        def one(item: tuple[cases_.Case, str]) -> dict[str, Any]:
            case, role = item
            path = case.buggy if role == "buggy" else case.fixed
            ran = run_program(path, tools, scratch, timeout, role == "buggy", case.backend)
            row = row_of(case, role, ran)
            marks = ", ".join(f"{t}: {score_._mark(row, v)}" for t, v in ran["verdicts"].items())
            with open(scratch / "rows.jsonl", "a") as rows:
                rows.write(json.dumps(row) + "\n")
            print(f"{path.name:44} truth {','.join(ran['truth']) or '-':16} {marks}", flush=True)
            return row

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, work))


def markdown(results: Mapping[str, Any]) -> str:
    """RESULTS.md: the tables, how they were counted, the machine and date."""
    rows = results["programs"]
    tools = [t["name"] for t in results["tools"]]
    scores = [score_.score(rows, tool) for tool in tools]
    m = results["machine"]
    kinds = [k for k in cases_.KINDS if any(r["kind"] == k for r in rows)]
    counts = ", ".join(f"{sum(r['kind'] == k and r['role'] == 'buggy' for r in rows)} {k}"
                       for k in kinds)  # fmt: skip
    pairs = sum(r["role"] == "buggy" for r in rows)
    jax = sum(r["role"] == "buggy" and r["backend"] == "jax" for r in rows)
    wrong = [r for r in rows if not score_.truth_agrees(r)]
    load = (f"load average {results['load'][0]:.1f} at the start and "
            f"{results['load'][1]:.1f} at the end" if results.get("load")
            else "load average not recorded")  # fmt: skip
    applied = ", ".join(
        f"{s.tool} {s.fixes_applied} applied as edits and checked by running them, the rest "
        "judged by the labelled fix kinds"
        for s in scores
        if "fix" in GIVES.get(s.tool, set())
    )
    fixes_said = (
        f"Fix right: {applied}. CPU seconds: the median per program of the tool's own run (user "
        "and system, the process and its children), and the median ratio to the plain run "
        "(`python PROGRAM` with the truth hooks); Keras warning and print None read the plain "
        "run itself. An error is a run the tool could not judge (it refused, timed out or "
        "broke the program); it counts as not flagged."
    )
    lines = [
        "<!-- Written by bench/gradflow/run.py (make gradflow); do not edit by hand. -->",
        f"Measured on {results['date']} on a {m['cores']}-core {m['cpu']} with "
        f"{m['memory_gib']} GiB, Python {m['python']}, TensorFlow {m['tensorflow']}, "
        f"Keras {m['keras']}, gradscope {m['gradscope']}; {results['jobs']} programs at a "
        f"time, each run killed after {results['timeout']:.0f} s; {load} (the machine is "
        f"shared: wall seconds are under that load, CPU seconds are the programs' own). The "
        f"whole run took {results['minutes']:.0f} minutes.",
        "",
        f"{pairs} buggy programs and their fixed twins ({counts}; {jax} of them on Keras' JAX "
        "backend).",
    ]
    for rerun in results.get("reruns", []):
        lines += ["", f"Measured again on {rerun['date']} (gradscope {rerun['gradscope']}, after "
                  "changes to gradscope or to the programs): "
                  + ", ".join(f"`{name}`" for name in rerun["files"]) + "."]  # fmt: skip
    if results.get("not_run"):
        lines += ["", f"Not measured ({len(results['not_run'])} pairs: {results['why_not_run']}): "
                  + ", ".join(f"`{name}`" for name in results["not_run"]) + "."]  # fmt: skip
    if results.get("skipped"):
        lines += ["", "Not run: " + "; ".join(f"`{s['file']}` ({s['reason']})"
                                              for s in results["skipped"]) + "."]  # fmt: skip
    lines += [
        "",
        "The truth (what bare TensorFlow returned at each program's own gradient calls) agrees "
        f"with the labels on {len(rows) - len(wrong)} of {len(rows)} programs"
        + (
            ": "
            + ", ".join(f"`{r['file']}`" for r in wrong)
            + (" disagree." if len(wrong) > 1 else " disagrees.")
            if wrong
            else "."
        ),
        "",
        score_.table(scores, GIVES),
        "",
        fixes_said,
        "",
        "Recall by kind of program:",
        "",
        score_.by_kind(rows, tools, kinds),
        "",
        *shortfalls(rows, "gradscope"),
        "Every program (found: the tool flagged it; cause, line, fix: it also named the "
        "labelled cause, line, fix):",
        "",
        score_.per_program(rows, tools),
        "",
    ]
    return "\n".join(lines)


def _fine(row: Mapping[str, Any], verdict: Mapping[str, Any]) -> bool:
    if row["role"] == "fixed":
        return not verdict["flagged"]
    return score_.cause_right(row, verdict) and score_.line_right(row, verdict)


def _said(verdict: Mapping[str, Any]) -> str:
    if verdict.get("error"):
        return f"an error: {verdict['error']}"
    if not verdict["flagged"]:
        return "nothing"
    causes = verdict["causes"] or ["(none)"]
    lines = verdict["lines"] or ["(none)"]
    return f"cause {causes[0]}, line {lines[0]}"


def shortfalls(rows: Sequence[Mapping[str, Any]], tool: str) -> list[str]:
    """Where ``tool`` missed a bug, named another cause or line, or flagged a fixed twin."""
    out = []
    for row in rows:
        verdict = row["verdicts"].get(tool)
        if verdict is None or _fine(row, verdict):
            continue
        if row["role"] == "fixed":
            out.append(f"- `{row['file']}` (a fixed twin): flagged, {_said(verdict)}")
            continue
        wanted = ", ".join(str(line) for line in row["lines"])
        out.append(f"- `{row['file']}` ({row['kind']}; {row['effect']}, cause {row['cause']}, "
                   f"line {wanted}): {tool} said {_said(verdict)}")  # fmt: skip
    if not out:
        return []
    return [f"Where {tool} falls short (each a program to fix it on):", "", *out, ""]


def merged(results: dict[str, Any], again: Mapping[str, Any]) -> dict[str, Any]:
    """``results`` with the programs ``again`` measured (a later run of some of them, after
    a change) in place of its own, each in its place; the later run is listed in
    ``reruns`` (its date, gradscope's commit, its files), which RESULTS.md names."""
    newer = {row["file"]: row for row in again["programs"]}
    results["programs"] = [newer.pop(row["file"], row) for row in results["programs"]]
    results["programs"] += list(newer.values())
    results.setdefault("reruns", []).append({
        "date": again["date"], "gradscope": again["machine"]["gradscope"],
        "files": [row["file"] for row in again["programs"]],
    })  # fmt: skip
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="programs at a time (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    parser.add_argument("--only", action="append", default=[], help="name substring")
    parser.add_argument("--tools", default="", help="comma-separated tool names (default all)")
    parser.add_argument("--results", type=Path, default=HERE / "results.json")
    parser.add_argument("--markdown", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--rescore", action="store_true", help="only rewrite the Markdown")
    parser.add_argument("--keep", type=Path, help="keep every run's outputs in this folder")
    parser.add_argument("--stopped", type=Path, metavar="KEPT",
                        help="results.json from the rows a stopped run left in its --keep "
                        "folder (with --rejudge KEPT: judged again)")  # fmt: skip
    parser.add_argument(
        "--stopped-note",
        default="the run was stopped before them",
        help="why the pairs left were not measured (said in RESULTS.md)",
    )
    parser.add_argument("--rejudge", type=Path, metavar="KEPT",
                        help="judge results.json's runs again from a --keep folder")  # fmt: skip
    parser.add_argument("--merge", type=Path, metavar="RESULTS",
                        help="put the programs of another run's results.json (some programs "
                        "measured again) in place of results.json's (said in RESULTS.md)"
                        )  # fmt: skip
    args = parser.parse_args(argv)
    chosen = [t for t in tools_.TOOLS if not args.tools or t.name in args.tools.split(",")]
    if args.stopped:
        results = stopped_run(args.stopped, args.stopped_note, chosen)
        args.results.write_text(json.dumps(results, indent=1) + "\n")
    if args.merge:
        results = merged(json.loads(args.results.read_text()), json.loads(args.merge.read_text()))
        args.results.write_text(json.dumps(results, indent=1) + "\n")
        args.markdown.write_text(markdown(results))
        print(f"merged {args.merge} into {args.results} and {args.markdown}")
        return 0
    if args.rescore or args.rejudge:
        results = json.loads(args.results.read_text())
        if args.rejudge:
            count = rejudge(results["programs"], args.rejudge, chosen)
            args.results.write_text(json.dumps(results, indent=1) + "\n")
            print(f"judged {count} verdicts again from {args.rejudge}")
        args.markdown.write_text(markdown(results))
        return 0
    everything = cases_.load()
    selected = [c for c in everything if not args.only or any(o in c.name for o in args.only)]
    skipped = [c for c in selected if skip_reason(c)]
    todo = [c for c in selected if not skip_reason(c)]
    load_start = os.getloadavg()[0]
    start = time.monotonic()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    before = machine()  # gradscope's commit as the run starts
    rows = measure(todo, chosen, args.jobs, args.timeout, args.keep)
    results = {
        "date": date,
        "machine": before,
        "jobs": args.jobs,
        "timeout": args.timeout,
        "load": [load_start, os.getloadavg()[0]],
        "minutes": (time.monotonic() - start) / 60,
        "tools": [{"name": t.name, "about": t.about} for t in chosen],
        "skipped": [{"file": c.buggy.name, "reason": skip_reason(c)} for c in skipped],
        "programs": rows,
    }
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    args.markdown.write_text(markdown(results))
    print(f"wrote {args.results} and {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
