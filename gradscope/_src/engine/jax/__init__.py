"""JAX: None-ness and cut points from the jaxpr of the function a program differentiates.

JAX never returns None: ``jax.grad`` hands back zeros for a parameter no loss reaches. What
TensorFlow would answer (no gradient, and why) is read off ``jax.make_jaxpr`` of the same
function instead: ``jaxpr.py`` flattens it into the data-flow graph the cut analysis reads
(``engine/cuts.py``, shared with TensorFlow), ``primitives.py`` says how each primitive
passes a gradient, ``analysis.py`` decides reachability, None-ness and the cuts per leaf, and
``numbers.py`` measures the real gradients (``ok``, ``zero``, ``nan``). JAX is imported only
by a program (or a target) that uses it; nothing here imports it at module level.
"""
