"""Gradients across replicas with TensorFlow's own ``tf.distribute`` (``--strategy``).

Beside the pipeline, not inside the engine: it builds a spec per replica (the YAML front-end)
and runs it through the engine under a strategy, in this process or in loopback workers.
"""
