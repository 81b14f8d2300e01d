import keras
import numpy as np
import tensorflow as tf

inputs = keras.Input((4,))
h = keras.layers.Dense(8, name="body")(inputs)
a = keras.layers.Dense(1, name="a")(h)
b = keras.layers.Dense(1, name="b")(h)
model = keras.Model(inputs, [a, b])
model.compile(optimizer="sgd", loss=["mse", None])  # <- fix
x, y = np.ones((8, 4), "float32"), np.ones((8, 1), "float32")
outputs = [o.numpy() for o in model(x)]
model.fit(x, [y, y], epochs=1, verbose=0)
with tf.GradientTape() as tape:
    loss = model.compute_loss(x=x, y=[y, y], y_pred=model(x))
grads = tape.gradient(loss, model.trainable_variables)
