"""The JAX side of ``tests/frontends/program/test_jax_flax.py``: one process (JAX, Flax and
optax; no TensorFlow) runs each Flax program plain, then under ``gradscope run``, and prints
one JSON object: per program, the report, the trained parameters' bytes of both runs, and
bare JAX's truth per parameter (named by Flax's own paths): whether JAX's forward-mode AD
gives the loss a symbolically zero tangent from it (its JVP's jaxpr, pruned by JAX's own
dead code elimination, reads no tangent of it), and whether ``jax.grad`` gives it exactly
zero. Run by the test as ``python flax_side.py OUT_DIR``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _plain(name: str, out: Path) -> dict[str, Any]:
    """The program run as ``python`` runs it (unwatched): its namespace."""
    saved = sys.argv
    sys.argv = [str(HERE / f"{name}.py"), str(out / f"{name}-plain.npy")]
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            code = compile((HERE / f"{name}.py").read_text(), str(HERE / f"{name}.py"), "exec")
            exec(code, namespace)
    finally:
        sys.argv = saved
    return namespace


def _watched(name: str, out: Path) -> dict[str, Any]:
    from gradscope._src.frontends.program.launch import Program
    from gradscope._src.watch.run import run

    program = Program(str(HERE / f"{name}.py"), (str(out / f"{name}-watched.npy"),))
    with contextlib.redirect_stdout(io.StringIO()):
        outcome = run(program)
    assert outcome.error is None, outcome.error
    return outcome.report.to_dict()


def _truth(loss: Callable[[Any], Any], params: dict[str, Any]) -> dict[str, dict[str, bool]]:
    """Per parameter (a flat dict of name -> array): JAX's own symbolic zero, and whether
    ``jax.grad``'s value is exactly zero."""
    import jax
    import numpy as np
    from jax._src.interpreters import partial_eval as pe

    names = list(params)

    def of(values: list[Any]) -> Any:
        return loss(dict(zip(names, values, strict=True)))

    primals = [params[n] for n in names]

    def tangent_out(*tangents: Any) -> Any:
        return jax.jvp(lambda *p: of(list(p)), tuple(primals), tuple(tangents))[1]

    closed = jax.make_jaxpr(tangent_out)(*primals)
    _, used = pe.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    grads = jax.grad(of)(primals)
    return {n: {"none": not u, "zero": not np.asarray(g).any()}
            for n, u, g in zip(names, used, grads, strict=True)}  # fmt: skip


def _nnx(out: Path) -> dict[str, Any]:
    from flax import nnx

    ns = _plain("flax_nnx", out)
    graphdef, state, rest = nnx.split(ns["model"], nnx.Param, ...)
    flat = {"/".join(map(str, path)): v.get_value() for path, v in state.flat_state()}
    paths = {"/".join(map(str, path)): path for path, _ in state.flat_state()}

    def loss(p: dict[str, Any]) -> Any:
        s = nnx.State.from_flat_path({paths[n]: nnx.Param(v) for n, v in p.items()})
        return ns["loss_fn"](nnx.merge(graphdef, s, rest), ns["x"], ns["y"])

    _, first = nnx.split(ns["Net"](nnx.Rngs(0)), nnx.Param, ...)[:2]  # as the program made it
    initial = {"/".join(map(str, path)): v.get_value() for path, v in first.flat_state()}
    return {"truth": _truth(loss, flat), "report": _watched("flax_nnx", out),
            "moved": _moved(initial, flat)}  # fmt: skip


def _linen(out: Path) -> dict[str, Any]:
    import jax
    from flax import traverse_util

    ns = _plain("flax_linen", out)
    flat = traverse_util.flatten_dict(ns["params"], sep="/")

    def loss(p: dict[str, Any]) -> Any:
        return ns["loss_fn"](traverse_util.unflatten_dict(p, sep="/"), ns["x"], ns["y"])

    initial = traverse_util.flatten_dict(ns["model"].init(jax.random.PRNGKey(0), ns["x"]),
                                         sep="/")  # fmt: skip
    return {"truth": _truth(loss, flat), "report": _watched("flax_linen", out),
            "moved": _moved(initial, flat)}  # fmt: skip


def _moved(initial: dict[str, Any], trained: dict[str, Any]) -> dict[str, bool]:
    """Per parameter: whether the plain run's training changed it."""
    import numpy as np

    return {n: bool(np.any(np.asarray(initial[n]) != np.asarray(trained[n]))) for n in trained}


def main() -> None:
    import numpy as np

    out = Path(sys.argv[1])
    found = {"nnx": _nnx(out), "linen": _linen(out)}
    for api, name in (("nnx", "flax_nnx"), ("linen", "flax_linen")):
        found[api]["weights"] = [np.load(out / f"{name}-{k}.npy").tobytes().hex()
                                 for k in ("plain", "watched")]  # fmt: skip
    found["tensorflow_imported"] = "tensorflow" in sys.modules
    print(json.dumps(found))


if __name__ == "__main__":
    main()
