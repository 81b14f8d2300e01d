"""Which replica a watched call of a program's own strategy runs for."""

from __future__ import annotations

import pytest

from gradscope._src.watcher.replicas import replica_of

pytestmark = [pytest.mark.tf, pytest.mark.replicas]


def test_replica_of_names_each_replica_inside_strategy_run() -> None:
    from gradscope._src.engine.tf_import import import_tensorflow

    tf = import_tensorflow()
    seen: list[tuple[int, int] | None] = []
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        w = tf.Variable(2.0)

    def step() -> object:
        seen.append(replica_of(tf))
        with tf.GradientTape() as tape:
            loss = w * 3.0
        return tape.gradient(loss, w)

    tf.function(lambda: strategy.run(step))()
    assert sorted(seen) == [(0, 2), (1, 2)]  # type: ignore[type-var]
    assert replica_of(tf) is None  # outside strategy.run
