import keras
import tensorflow as tf

generator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name="g")])
discriminator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="d")])
z = tf.random.normal([8, 3], seed=1)
with tf.GradientTape() as tape:
    fake = generator(z)
    g_loss = -tf.reduce_mean(discriminator(fake))
grads = tape.gradient(g_loss, generator.trainable_variables)
