"""Graph optimizations for a function that runs once: only those that pay back their cost."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gradscope._src import tfcompat

#: Grappler passes turned off while the engine's function is first run (instantiating it is
#: when TensorFlow optimizes it) on a graph with convolutions. Each walks the whole graph
#: (forward pass, one backward pass per loss, the norms) to save time on later runs, and
#: there are none. ``remapping`` stays on there: it fuses a convolution with its bias, batch
#: normalization and activation, which pays within one run (ResNet50: 13 s of CPU for the
#: first run with it, 19 s with every pass on; bench/RESULTS.md). Without convolutions the
#: whole optimizer is off (the 100-layer MLP's first run: half the time; a 2,000-op chain
#: with 50 losses: 3.2 s of CPU instead of 5.7 s). Pruning what no output needs happens when
#: the function is instantiated, not in grappler.
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


def _pays(op_types: set[str]) -> bool:
    """Whether remapping pays within one run: the graph has convolutions to fuse."""
    return any(kind.startswith(("Conv", "DepthwiseConv")) for kind in op_types)


@contextmanager
def optimized_for_one_run(tf: Any, op_types: set[str]) -> Iterator[None]:
    """Within the block, functions instantiated are optimized for a single run.

    Args:
        tf: the TensorFlow module.
        op_types: the op types of the graph about to run.
    """
    context = tfcompat.get("context")

    ctx = context.context()
    # NOTE: the public getter reports an option left at its default as absent, and setting
    # it back would not restore "default"; the context's own dict of what was set does.
    before = dict(ctx._optimizer_experimental_options)
    if _pays(op_types):
        tf.config.optimizer.set_experimental_options({name: False for name in OFF})
    else:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        yield
    finally:
        ctx._optimizer_experimental_options = before
        tf.config.optimizer.set_experimental_options({})  # drops the cached call options
