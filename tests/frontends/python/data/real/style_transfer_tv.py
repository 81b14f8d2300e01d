"""tensorflow/docs tutorials/generative/style_transfer.ipynb: the image is the variable; style
and content losses on a small feature extractor, plus total variation."""

import numpy as np
import tensorflow as tf

SOURCE = "tensorflow/docs tutorials/generative/style_transfer.ipynb"


def gram_matrix(input_tensor):
    result = tf.linalg.einsum("bijc,bijd->bcd", input_tensor, input_tensor)
    input_shape = tf.shape(input_tensor)
    num_locations = tf.cast(input_shape[1] * input_shape[2], tf.float32)
    return result / (num_locations)


def clip_0_1(image):
    return tf.clip_by_value(image, clip_value_min=0.0, clip_value_max=1.0)


def build():
    tf.keras.utils.set_random_seed(18)
    extractor = tf.keras.Sequential(
        [
            tf.keras.Input((8, 8, 3)),
            tf.keras.layers.Conv2D(4, 3, activation="relu", name="block1_conv1"),
        ]
    )
    extractor.trainable = False
    content_image = np.random.default_rng(18).random((1, 8, 8, 3), dtype="float32")
    style_image = np.random.default_rng(19).random((1, 8, 8, 3), dtype="float32")
    image = tf.Variable(content_image, name="image")
    style_targets = gram_matrix(extractor(style_image))
    content_targets = extractor(content_image)

    def style_content_loss():
        outputs = extractor(clip_0_1(image))
        style_loss = tf.reduce_mean((gram_matrix(outputs) - style_targets) ** 2)
        content_loss = tf.reduce_mean((outputs - content_targets) ** 2)
        return 1e-2 * style_loss + 1e4 * content_loss

    def total():
        return style_content_loss() + 30 * tf.image.total_variation(image)

    return {"losses": {"style_content": style_content_loss, "total": total}, "variables": [image]}
