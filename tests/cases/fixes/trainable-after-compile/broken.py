import keras
import numpy as np

inputs = keras.Input((4,))
base = keras.layers.Dense(8, activation="relu", name="base")
head = keras.layers.Dense(1, name="head")
model = keras.Model(inputs, head(base(inputs)))
rng = np.random.default_rng(12)
x = rng.normal(size=(16, 4)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")

base.trainable = False
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
base.trainable = True  # fine-tune the base, the head kept as it is
head.trainable = False
before = [w.copy() for w in model.get_weights()]
outputs = model(x).numpy()
model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # <- fix
changed = [bool(np.any(a != b)) for a, b in zip(before, model.get_weights(), strict=True)]
