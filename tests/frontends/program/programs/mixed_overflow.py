"""Mixed precision with Keras' dynamic loss scale: the first steps' float16 gradients overflow
at the initial scale, and the LossScaleOptimizer skips them (the weights do not move) and halves
its scale; training then goes on, finite. Prints, per step, whether the step was skipped."""

import keras
import numpy as np

keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(0)
rng = np.random.default_rng(3)
x = rng.normal(size=(36, 6)).astype("float32")
y = (x @ rng.normal(size=(6, 2))).astype("float32") * 30.0
inputs = keras.Input((6,))
hidden = keras.layers.Dense(8, activation="relu", name="base")(inputs)
model = keras.Model(inputs, keras.layers.Dense(2, name="head", dtype="float32")(hidden))
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
skipped = []
for i in range(6):
    before = model.get_layer("base").kernel.numpy().copy()
    model.train_on_batch(x[i * 6 : i * 6 + 6], y[i * 6 : i * 6 + 6])
    skipped.append(bool((model.get_layer("base").kernel.numpy() == before).all()))
print("skipped", skipped)
print("finite", all(np.isfinite(w).all() for w in model.get_weights()))
keras.mixed_precision.set_global_policy("float32")  # tests run this program in their process
