# gradflow: buggy
# title: a projection head computes its last layers but call() returns an earlier tensor
# source: https://github.com/google-research/simclr/issues/105
# shrunk: SimCLR's projection head whose last batch-norm layers got no gradients to a subclassed
#   model with a two-layer head, 32 samples, one epoch
# kind: fit
# effect: none
# cause: unused
# line: 32
# fix: off-path-layer, unread-variable
# twin: fit_head_returns_hidden_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Encoder(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.backbone = tf.keras.layers.Dense(16, activation="relu")
        self.proj_0 = tf.keras.layers.Dense(8, activation="relu")
        self.proj_1 = tf.keras.layers.Dense(8)
        self.bn_1 = tf.keras.layers.BatchNormalization()

    def call(self, x, training=False):
        h = self.backbone(x)
        hiddens = [self.proj_0(h)]
        hiddens.append(self.bn_1(self.proj_1(hiddens[-1]), training=training))
        return hiddens[0]


model = Encoder()
model.compile(optimizer="adam", loss="mse")
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 8)).astype("float32")
model(x)
_truth.keras_fit(model)
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
