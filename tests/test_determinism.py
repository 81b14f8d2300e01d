"""The same spec twice gives byte-identical JSON on the same machine.

Two separate processes (a CI job re-run) and two runs in one process (a notebook, with
another spec in between) must agree byte for byte, for ``inspect``, ``diff`` and ``check``.
The spec below draws every kind of random number a spec can (an unseeded ``random.normal``
node, Keras initializers, a Dropout layer in training mode) and has reductions large enough
for TensorFlow to split them over threads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradscope._src import api
from tests.conftest import CONFIGS, RunCli

pytestmark = pytest.mark.tf

RANDOM_AND_LARGE = """\
gradscope: 1
inputs:
  x: {shape: [256, 1024]}
  img: {shape: [4, 16, 16, 3]}
variables:
  w: {shape: [1024, 512]}
nodes:
  - {name: noise, op: random.normal, attrs: {shape: [256, 512]}}
  - {name: h, op: matmul, inputs: [x, w]}
  - {name: hn, op: add, inputs: [h, noise]}
  - {name: d, op: layer, inputs: [hn], attrs: {class: Dropout, config: {rate: 0.5}, call: {training: true}}}
  - {name: loss1, op: reduce_mean, inputs: [d]}
  - {name: c, op: layer, inputs: [img], attrs: {class: Conv2D, config: {filters: 8, kernel_size: 3}}}
  - {name: bn, op: layer, inputs: [c], attrs: {class: BatchNormalization, call: {training: true}}}
  - {name: loss2, op: reduce_sum, inputs: [bn]}
  - {name: loss3, op: reduce_sum, inputs: [h]}
losses:
  a: loss1
  b: loss2
  c: loss3
"""  # noqa: E501


@pytest.fixture
def spec(tmp_path: Path) -> str:
    path = tmp_path / "random-and-large.yaml"
    path.write_text(RANDOM_AND_LARGE, encoding="utf-8")
    return str(path)


def _twice(run_cli: RunCli, *args: str) -> tuple[str, str]:
    first, second = run_cli(*args), run_cli(*args)
    assert first.returncode in (0, 1), first.stderr
    assert second.returncode == first.returncode
    json.loads(first.stdout)
    return first.stdout, second.stdout


def test_inspect_json_is_byte_identical_across_processes(run_cli: RunCli, spec: str) -> None:
    first, second = _twice(run_cli, "inspect", spec, "--format", "json")
    assert first == second


def test_diff_json_is_byte_identical_across_processes(run_cli: RunCli, spec: str) -> None:
    first, second = _twice(run_cli, "diff", spec, "--format", "json")
    assert first == second
    assert '"cosine"' in first


def test_check_json_is_byte_identical_across_processes(run_cli: RunCli) -> None:
    specs = [str(p) for p in CONFIGS]
    first, second = _twice(run_cli, "check", *specs, "--format", "json")
    assert first == second


def test_reports_are_identical_within_one_process(spec: str) -> None:
    before = json.dumps(api.inspect(spec).to_dict())
    api.inspect(str(CONFIGS[0]))  # another spec in between changes no random state
    after = json.dumps(api.inspect(spec).to_dict())
    assert before == after
    assert api.diff(spec).to_dict() == api.diff(spec).to_dict()
