"""One worker of ``--strategy multiworker``: ``python -m gradscope.engine.distribute.worker
REQUEST.json``, started by ``workers.run`` with ``TF_CONFIG`` set; the chief writes the result."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gradscope.errors import GradscopeError, UsageError


def main(path: str) -> int:
    """Load the spec, run it under ``MultiWorkerMirroredStrategy``; the chief (worker 0)
    writes the measurement, or the error every worker met, to the request's ``result``.

    ``TF_CONFIG`` (set by ``cluster.main``) names this worker and its loopback cluster."""
    with open(path, encoding="utf-8") as handle:
        request: dict[str, Any] = json.load(handle)
    config = json.loads(os.environ["TF_CONFIG"])
    index, cluster = int(config["task"]["index"]), config["cluster"]["worker"]
    try:
        answer = _measure(request, len(cluster))
    except GradscopeError as exc:
        kind = "UsageError" if isinstance(exc, UsageError) else type(exc).__name__
        answer = {"error": {"type": kind, "message": str(exc)}}
    if index == 0:
        answer["devices"] = [f"/job:worker/task:{i}/device:CPU:0" for i in range(len(cluster))]
        with open(request["result"] + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(answer, handle)
        os.replace(request["result"] + ".tmp", request["result"])
    return 0


def _measure(request: dict[str, Any], workers: int) -> dict[str, Any]:
    from gradscope.engine.distribute.replica import measure
    from gradscope.engine.tf_import import import_tensorflow
    from gradscope.frontends import load

    spec = load(request["spec"], max_elements=request["max_elements"])
    tf = import_tensorflow()
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    if strategy.num_replicas_in_sync != workers:
        raise UsageError(f"expected {workers} replicas, TensorFlow made "
                         f"{strategy.num_replicas_in_sync}")  # fmt: skip
    return measure(spec, strategy, request["losses"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
