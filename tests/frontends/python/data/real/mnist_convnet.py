"""keras-io examples/vision/mnist_convnet.py: the simple MNIST convnet, 8x8 inputs."""

import keras
import numpy as np
from keras import layers

SOURCE = "keras-team/keras-io examples/vision/mnist_convnet.py"


def build():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input(shape=(8, 8, 1)),
            layers.Conv2D(4, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(10, activation="softmax"),
        ]
    )
    x = np.random.default_rng(0).random((4, 8, 8, 1), dtype="float32")
    y = keras.utils.to_categorical([1, 3, 5, 7], 10)
    loss_fn = keras.losses.CategoricalCrossentropy()
    return {"losses": {"crossentropy": lambda: loss_fn(y, model(x))}, "model": model}
