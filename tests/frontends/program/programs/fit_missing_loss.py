"""model.fit on a two-output model whose compile() gives output "b" no loss."""

import tensorflow as tf
from parts import two_heads

model, x, y = two_heads()
model.compile(optimizer="sgd", loss={"a": "mse"})
history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
print("loss", history.history["loss"][-1])


class WithSpare(tf.keras.Model):
    """A subclassed model with a layer its call() never uses."""

    def __init__(self):
        super().__init__()
        self.used = tf.keras.layers.Dense(1, name="used")
        self.spare = tf.keras.layers.Dense(1, name="spare")

    def call(self, inputs):
        return self.used(inputs)


spare_model = WithSpare()
spare_model.spare.build((None, 4))
spare_model.compile(optimizer="sgd", loss="mse")
spare_model.fit(x, y["a"], batch_size=8, epochs=1, verbose=0)
