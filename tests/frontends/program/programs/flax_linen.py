"""A Flax Linen model trained with model.apply, jax.value_and_grad and optax.adamw: its
``cut`` layer reaches the loss only through ``jax.lax.stop_gradient``, ``unused`` not at
all, ``head`` healthy. Writes the trained parameters' bytes to ``sys.argv[1]`` (if given)."""

import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax


class Net(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = jax.lax.stop_gradient(jnp.tanh(nn.Dense(4, name="cut")(x)))
        nn.Dense(2, name="unused")(x)  # made, its output dropped
        return nn.Dense(1, name="head")(h)


model = Net()
x = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3)
y = jnp.ones((8, 1))
params = model.init(jax.random.PRNGKey(0), x)
tx = optax.adamw(1e-2, weight_decay=0.1)
opt_state = tx.init(params)


def loss_fn(params: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((model.apply(params, x) - y) ** 2)


@jax.jit
def step(params: dict, opt_state: optax.OptState, x: jax.Array, y: jax.Array) -> tuple:
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


for _ in range(3):
    params, opt_state, loss = step(params, opt_state, x, y)
grads = jax.grad(loss_fn)(params, x, y)  # once more, eagerly
if len(sys.argv) > 1:
    leaves = jax.tree_util.tree_leaves(params)
    np.save(sys.argv[1], np.concatenate([np.asarray(v).ravel() for v in leaves]))
print(f"loss {float(loss):.4f}")
