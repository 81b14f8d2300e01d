"""Graph optimizations for a function that runs once: only those that pay back their cost."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Grappler passes turned off while the engine's function is first run (instantiating it is
#: when TensorFlow optimizes it). Each walks the whole graph (forward pass, one backward pass
#: per loss, the norms) to save time on later runs, and there are none: on the 100-layer MLP
#: they took half the time of the first run. ``remapping`` stays on: it fuses a convolution
#: or matmul with its bias and activation, which pays within one run of a convolutional
#: network (ResNet50). Pruning what no output needs happens when the function is
#: instantiated, not in these passes.
OFF = (
    "constant_folding",
    "shape_optimization",
    "arithmetic_optimization",
    "dependency_optimization",
    "loop_optimization",
    "layout_optimizer",
    "debug_stripper",
    "scoped_allocator_optimization",
    "pin_to_host_optimization",
    "implementation_selector",
)


@contextmanager
def optimized_for_one_run(tf: Any) -> Iterator[None]:
    """Within the block, functions instantiated are optimized for a single run."""
    from tensorflow.python.eager import context

    ctx = context.context()
    # NOTE: the public getter reports an option left at its default as absent, and setting
    # it back would not restore "default"; the context's own dict of what was set does.
    before = dict(ctx._optimizer_experimental_options)
    tf.config.optimizer.set_experimental_options({name: False for name in OFF})
    try:
        yield
    finally:
        ctx._optimizer_experimental_options = before
        tf.config.optimizer.set_experimental_options({})  # drops the cached call options
