"""keras-io examples/vision/knowledge_distillation.py: a frozen teacher, the student's
distillation and student losses."""

import keras
import numpy as np
from keras import layers, ops

SOURCE = "keras-team/keras-io examples/vision/knowledge_distillation.py"


def build():
    keras.utils.set_random_seed(12)
    teacher = keras.Sequential(
        [
            keras.Input(shape=(6, 6, 1)),
            layers.Conv2D(4, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name="teacher",
    )
    student = keras.Sequential(
        [
            keras.Input(shape=(6, 6, 1)),
            layers.Conv2D(2, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name="student",
    )
    teacher.trainable = False
    x = np.random.default_rng(12).random((3, 6, 6, 1), dtype="float32")
    y = np.array([1, 2, 3])
    student_loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    distillation_loss_fn = keras.losses.KLDivergence()
    alpha, temperature = 0.1, 3

    def loss():
        teacher_pred = teacher(x, training=False)
        student_pred = student(x, training=True)
        student_loss = student_loss_fn(y, student_pred)
        distillation_loss = distillation_loss_fn(
            ops.softmax(teacher_pred / temperature, axis=1),
            ops.softmax(student_pred / temperature, axis=1),
        ) * (temperature**2)
        return alpha * student_loss + (1 - alpha) * distillation_loss

    return {"losses": {"distill": loss}, "variables": student.weights + teacher.weights}
