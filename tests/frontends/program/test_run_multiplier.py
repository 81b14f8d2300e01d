"""``gradscope run`` records the ``output_gradients`` a call gives (seed 002's GAN ``-1``): a
zero multiplier is why every gradient is zero, a negative one is said in the row, and the fix
says what the multiplier does; compared with the same program run bare."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

from tests.frontends.program.test_run import PROGRAMS, site, watched

pytestmark = pytest.mark.tf

SCHEMA = Path(__file__).resolve().parents[3] / "schema" / "run-v1.json"
PROGRAM = "multiplier.py"


def test_run_records_and_explains_output_gradients() -> None:
    import jsonschema

    bare = runpy.run_path(str(PROGRAMS / PROGRAM), run_name="__main__")
    plain = [np.asarray(g) for g in bare["plain"]]
    # bare TensorFlow: -1 flips every gradient, 0 zeroes it (not None), in a function too
    assert all(np.array_equal(f, -p) for f, p in zip(bare["flipped"], plain, strict=True))
    assert all(
        np.array_equal(z, np.zeros_like(p)) for z, p in zip(bare["zeroed"], plain, strict=True)
    )
    assert all(np.array_equal(t, -p) for t, p in zip(bare["traced"], plain, strict=True))
    outcome, _ = watched(PROGRAM)
    calls = {c.site: c for c in outcome.report.calls}
    flipped, zeroed = calls[site(PROGRAM, "# flipped")], calls[site(PROGRAM, "# zeroed")]
    untouched, traced = calls[site(PROGRAM, "# plain")], calls[site(PROGRAM, "# in a function")]
    assert (flipped.multiplier, zeroed.multiplier, untouched.multiplier) == ((-1.0,), (0.0,), ())
    assert traced.multiplier == (-1.0,) and traced.mode == "function"
    for call in (flipped, traced):
        assert {s.status for s in call.sources} == {"ok"}
        assert all(s.note.startswith("flipped by output_gradients=-1 at ") for s in call.sources)
        assert {(s.fix.kind, s.fix.where) for s in call.sources if s.fix} == {
            ("gradient-multiplier", call.site)
        }
        assert "flips every gradient" in call.sources[0].fix.text  # type: ignore[union-attr]
    assert {s.status for s in zeroed.sources} == {"zero"}  # bare TF's zeros, not None
    assert all("zeroed by output_gradients=0" in s.note for s in zeroed.sources)
    assert all(s.fix is not None and s.fix.kind == "gradient-multiplier" for s in zeroed.sources)
    assert all(not s.note and s.fix is None for s in untouched.sources)
    data = outcome.report.to_dict()
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    targets = {c["site"]: c["target"] for c in data["calls"]}
    assert targets[flipped.site]["multiplier"] == [-1.0]
    assert "multiplier" not in targets[untouched.site]
    assert outcome.report.exit_code == 0  # a multiplier is the program's choice, not a problem


def test_multiplier_values_are_read_when_known() -> None:
    import tensorflow as tf

    from gradscope._src.watcher import values

    assert values.multiplier(None) == ()
    assert values.multiplier([tf.constant([[2.0, -1.0, 2.0]])]) == (-1.0, 2.0)
    assert values.multiplier(np.arange(20.0)) == (0.0, 1.0, 2.0, 3.0, 16.0, 17.0, 18.0, 19.0)
