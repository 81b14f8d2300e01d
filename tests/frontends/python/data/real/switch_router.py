"""keras-io examples/nlp/text_classification_with_switch_transformer.py: the Router's top-1
dispatch (argmax -> one_hot) and the load-balancing auxiliary loss."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

SOURCE = "keras-team/keras-io examples/nlp/text_classification_with_switch_transformer.py"


def build():
    keras.utils.set_random_seed(23)
    num_experts = 3
    route = keras.layers.Dense(units=num_experts, name="route")
    expert = keras.layers.Dense(4, name="expert")
    inputs = np.random.default_rng(23).normal(size=(6, 4)).astype("float32")

    def dispatch():
        router_logits = route(inputs)
        router_probs = keras.activations.softmax(router_logits, axis=-1)
        expert_gate, expert_index = ops.top_k(router_probs, k=1)
        expert_mask = ops.one_hot(expert_index, num_experts)
        density = ops.mean(expert_mask, axis=0)
        density_proxy = ops.mean(router_probs, axis=0)
        aux = ops.mean(density_proxy * density) * ops.cast((num_experts**2), "float32")
        combined = expert(inputs) * expert_gate
        return tf.reduce_sum(combined**2) + aux

    def aux_only():
        router_probs = keras.activations.softmax(route(inputs), axis=-1)
        _, expert_index = ops.top_k(router_probs, k=1)
        density = ops.mean(ops.one_hot(expert_index, num_experts), axis=0)
        return ops.mean(density) * 1.0 + 0.0 * ops.sum(expert(inputs))

    route(inputs)
    expert(inputs)
    return {
        "losses": {"dispatch": dispatch, "density": aux_only},
        "variables": route.weights + expert.weights,
    }
