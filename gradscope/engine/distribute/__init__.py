"""Gradients across replicas with TensorFlow's own ``tf.distribute`` (``--strategy``)."""
