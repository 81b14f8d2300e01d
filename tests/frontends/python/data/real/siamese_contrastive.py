"""keras-io examples/vision/siamese_contrastive.py: a shared tower, euclidean distance,
BatchNormalization and the contrastive loss (training mode, as fit runs it)."""

import keras
import numpy as np
from keras import ops

SOURCE = "keras-team/keras-io examples/vision/siamese_contrastive.py"


def euclidean_distance(vects):
    x, y = vects
    sum_square = ops.sum(ops.square(x - y), axis=1, keepdims=True)
    return ops.sqrt(ops.maximum(sum_square, keras.backend.epsilon()))


def loss(margin=1):
    def contrastive_loss(y_true, y_pred):
        square_pred = ops.square(y_pred)
        margin_square = ops.square(ops.maximum(margin - (y_pred), 0))
        return ops.mean((1 - y_true) * square_pred + (y_true) * margin_square)

    return contrastive_loss


def build():
    keras.utils.set_random_seed(10)
    input = keras.layers.Input((6, 6, 1))
    x = keras.layers.BatchNormalization()(input)
    x = keras.layers.Conv2D(2, (3, 3), activation="tanh")(x)
    x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dense(4, activation="tanh")(x)
    embedding_network = keras.Model(input, x, name="tower")
    input_1 = keras.layers.Input((6, 6, 1))
    input_2 = keras.layers.Input((6, 6, 1))
    tower_1 = embedding_network(input_1)
    tower_2 = embedding_network(input_2)
    merge_layer = keras.layers.Lambda(euclidean_distance, output_shape=(1,))([tower_1, tower_2])
    normal_layer = keras.layers.BatchNormalization()(merge_layer)
    output_layer = keras.layers.Dense(1, activation="sigmoid")(normal_layer)
    siamese = keras.Model(inputs=[input_1, input_2], outputs=output_layer)
    rng = np.random.default_rng(10)
    a, b = rng.random((4, 6, 6, 1), dtype="float32"), rng.random((4, 6, 6, 1), dtype="float32")
    y = np.array([[0.0], [1.0], [0.0], [1.0]], dtype="float32")
    fn = loss(margin=1)
    return {
        "losses": {"contrastive": lambda: fn(y, siamese([a, b], training=True))},
        "model": siamese,
    }
