"""One worker of ``--strategy multiworker``: ``python -m gradscope._src.distribute.worker
REQUEST.json``, started by ``cluster.main`` with ``TF_CONFIG`` set; the chief writes the result.

A request holds one or more jobs (``{"spec", "max_elements", "losses"}``, or a Python target's
``{"target", "names", "values", "losses"}``), run in order under one
``MultiWorkerMirroredStrategy``, so several specs pay for one start of the cluster.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gradscope._src.errors import GradscopeError, UsageError


def main(path: str) -> int:
    """Run every job of the request; the chief (worker 0) writes each job's measurement, or
    the error every worker met, to the request's ``result`` as ``{"answers": [...]}``.

    ``TF_CONFIG`` (set by ``cluster.main``) names this worker and its loopback cluster.
    """
    from gradscope._src.engine.tf_import import own_process

    own_process()
    with open(path, encoding="utf-8") as handle:
        request: dict[str, Any] = json.load(handle)
    config = json.loads(os.environ["TF_CONFIG"])
    index, cluster = int(config["task"]["index"]), config["cluster"]["worker"]
    devices = [f"/job:worker/task:{i}/device:CPU:0" for i in range(len(cluster))]
    strategy: list[Any] = []  # made once, on the first job that gets as far
    answers = []
    for job in request["jobs"]:
        try:
            answer = {**_measure(job, strategy, len(cluster)), "devices": devices}
        except GradscopeError as exc:
            kind = "UsageError" if isinstance(exc, UsageError) else type(exc).__name__
            answer = {"error": {"type": kind, "message": str(exc)}}
        answers.append(answer)
    if index == 0:
        with open(request["result"] + ".tmp", "w", encoding="utf-8") as handle:
            json.dump({"answers": answers}, handle)
        os.replace(request["result"] + ".tmp", request["result"])
    return 0


def _measure(job: dict[str, Any], made: list[Any], workers: int) -> dict[str, Any]:
    from gradscope._src.engine.tf_import import import_tensorflow

    tf = import_tensorflow()
    if not made:
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING
        )
        made.append(tf.distribute.MultiWorkerMirroredStrategy(communication_options=options))
    strategy = made[0]
    if strategy.num_replicas_in_sync != workers:
        raise UsageError(f"expected {workers} replicas, TensorFlow made "
                         f"{strategy.num_replicas_in_sync}")  # fmt: skip
    if "target" in job:
        return _target(job, strategy)
    from gradscope._src.distribute.replica import measure
    from gradscope._src.frontends import load

    return measure(load(job["spec"], max_elements=job["max_elements"]), strategy, job["losses"])


def _target(job: dict[str, Any], strategy: Any) -> dict[str, Any]:
    """A Python target's job (``workers.run_target``): its measurement and notes."""
    import numpy as np

    from gradscope._src.distribute.target import measure

    with np.load(job["values"]) as values:
        before = [(name, values[f"arr_{i}"]) for i, name in enumerate(job["names"])]
    measured, notes = measure(job["target"], before, strategy, job["losses"])
    return {**measured, "notes": notes}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
