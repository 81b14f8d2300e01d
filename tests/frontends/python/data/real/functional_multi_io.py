"""keras-io guides/functional_api.py: the ticket model with three inputs and two outputs."""

import keras
import numpy as np
from keras import layers

SOURCE = "keras-team/keras-io guides/functional_api.py (models with multiple inputs and outputs)"


def build():
    keras.utils.set_random_seed(17)
    num_tags, num_words, num_departments = 4, 30, 3
    title_input = keras.Input(shape=(None,), name="title")
    body_input = keras.Input(shape=(None,), name="body")
    tags_input = keras.Input(shape=(num_tags,), name="tags")
    title_features = layers.Embedding(num_words, 4)(title_input)
    body_features = layers.Embedding(num_words, 4)(body_input)
    title_features = layers.LSTM(4)(title_features)
    body_features = layers.LSTM(2)(body_features)
    x = layers.concatenate([title_features, body_features, tags_input])
    priority_pred = layers.Dense(1, name="priority")(x)
    department_pred = layers.Dense(num_departments, name="department")(x)
    model = keras.Model(
        inputs=[title_input, body_input, tags_input],
        outputs={"priority": priority_pred, "department": department_pred},
    )
    rng = np.random.default_rng(17)
    title_data = rng.integers(num_words, size=(3, 5))
    body_data = rng.integers(num_words, size=(3, 7))
    tags_data = rng.integers(2, size=(3, num_tags)).astype("float32")
    priority_targets = rng.random(size=(3, 1)).astype("float32")
    dept_targets = rng.integers(2, size=(3, num_departments)).astype("float32")
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    cce = keras.losses.CategoricalCrossentropy(from_logits=True)

    def outputs():
        return model({"title": title_data, "body": body_data, "tags": tags_data})

    return {
        "losses": {
            "priority": lambda: bce(priority_targets, outputs()["priority"]),
            "department": lambda: 0.2 * cce(dept_targets, outputs()["department"]),
        },
        "model": model,
    }
