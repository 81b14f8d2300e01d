"""keras.applications models built with ``weights=None`` (no download), as Python targets: the
big models the table's grouping and the pictures' pruning are for."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

import gradscope

IMAGES = np.random.default_rng(3).normal(size=(2, 32, 32, 3)).astype("float32")


def mobilenet() -> gradscope.Target:
    """MobileNet with a head whose logits pass through a stop_gradient (a frozen-copy bug):
    the main loss trains only the head; an auxiliary loss on the features trains the body."""
    base = keras.applications.MobileNet(
        input_shape=(32, 32, 3), weights=None, include_top=False, alpha=0.25
    )
    head = keras.layers.Dense(4, name="head")
    head.build((None, base.output_shape[-1]))
    # training=True: batch statistics keep the activations of an untrained network in range
    features = lambda: tf.reduce_mean(base(IMAGES, training=True), axis=[1, 2])  # noqa: E731
    return gradscope.Target(
        losses={
            "main": lambda: tf.reduce_mean(head(tf.stop_gradient(features())) ** 2),
            "aux": lambda: tf.reduce_mean(features() ** 2),
        },
        variables=[*base.trainable_variables, *head.trainable_variables],
        expect={"main": {"connected": ["*"]}},
    )


def resnet50() -> gradscope.Target:
    """ResNet50 with one loss on its features: 214 rows, every one ok."""
    base = keras.applications.ResNet50(input_shape=(32, 32, 3), weights=None, include_top=False)
    return gradscope.Target(
        losses={"features": lambda: tf.reduce_mean(base(IMAGES, training=True) ** 2)},
        variables=base.trainable_variables,
    )
