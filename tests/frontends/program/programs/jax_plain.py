"""A plain JAX program (no Keras): a pytree of parameters trained with jax.value_and_grad
inside jax.jit, then asked once more with jax.grad eagerly and with jax.vjp."""

import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(0)
params = {
    "body": {"w": jax.random.normal(key, (4, 8)), "b": jnp.zeros(8)},
    "head": {"w": jax.random.normal(jax.random.PRNGKey(1), (8, 1))},
    "aux": {"w": jax.random.normal(jax.random.PRNGKey(2), (8, 3))},
    "scale": jnp.ones(()),
}
x = jax.random.normal(jax.random.PRNGKey(3), (16, 4))
y = jnp.ones((16, 1))


def loss_fn(p, x, y):
    h = jnp.tanh(x @ p["body"]["w"] + p["body"]["b"])
    pred = jax.lax.stop_gradient(h) @ p["head"]["w"]
    k = jnp.round(p["scale"])
    return jnp.mean((pred * k - y) ** 2)


@jax.jit
def step(p, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, grads), loss


for _ in range(3):
    params, loss = step(params, x, y)
grads = jax.grad(loss_fn)(params, x, y)
out, pullback = jax.vjp(lambda w: jnp.sum(jnp.floor(x @ w)), params["body"]["w"])
(cotangent,) = pullback(jnp.ones(()))
print(f"loss {float(loss):.4f}")
