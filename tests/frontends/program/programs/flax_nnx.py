"""A Flax NNX model trained with nnx.value_and_grad and an nnx.Optimizer (optax.adamw): its
``cut`` layer reaches the loss only through ``jax.lax.stop_gradient``, ``unused`` not at
all, ``head`` healthy. Writes the trained parameters' bytes to ``sys.argv[1]`` (if given)."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.cut = nnx.Linear(3, 4, rngs=rngs)
        self.head = nnx.Linear(4, 1, rngs=rngs)
        self.unused = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        h = jax.lax.stop_gradient(jnp.tanh(self.cut(x)))
        return self.head(h)


def loss_fn(model: Net, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((model(x) - y) ** 2)


model = Net(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-2, weight_decay=0.1), wrt=nnx.Param)
x = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3)
y = jnp.ones((8, 1))


@nnx.jit
def step(model: Net, optimizer: nnx.Optimizer, x: jax.Array, y: jax.Array) -> jax.Array:
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


for _ in range(3):
    loss = step(model, optimizer, x, y)
grads = nnx.grad(loss_fn)(model, x, y)  # once more, eagerly
if len(sys.argv) > 1:
    leaves = jax.tree_util.tree_leaves(nnx.state(model, nnx.Param))
    np.save(sys.argv[1], np.concatenate([np.asarray(v).ravel() for v in leaves]))
print(f"loss {float(loss):.4f}")
