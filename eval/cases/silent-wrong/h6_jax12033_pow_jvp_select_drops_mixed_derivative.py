"""silent-wrong hazard: a custom_jvp for x ** y selects a constant 0 for the x-tangent when y == 0, losing the mixed second derivative.

Report: jax-ml/jax#12033 https://github.com/jax-ml/jax/issues/12033 (the second-order gradient of
lax.pow was wrong at y = 0: d2/dxdy gave 23.0 one way and 1/x the other, because pow's JVP chose
a zero through a select when y == 0; first derivatives were right). Here a user-written power with
the same guarded rule; the mixed second derivative at y = 0 is 1/x, the rule gives 0.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h6_jax12033_pow_jvp_select_drops_mixed_derivative", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#12033", "url": "https://github.com/jax-ml/jax/issues/12033",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0, 1), "heldout": True,
}


@jax.custom_jvp
def power(x, y):
    return jnp.exp(y * jnp.log(x))


@power.defjvp
def _power_jvp(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    out = power(x, y)
    dfdx = jnp.where(y == 0, 0.0, y * jnp.exp((y - 1.0) * jnp.log(x)))  # eval: span
    return out, dfdx * dx + jnp.log(x) * out * dy


def eval_fn(x, y):
    return jnp.sum(power(x, y))


def eval_inputs():
    return (np.array([2.0, 0.5, 3.0], np.float32), np.array([0.0, 1.5, 2.0], np.float32))


def eval_reference(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return np.asarray(np.sum(x ** y))


def eval_custom():
    def mixed_second_derivative():
        x, y = (jnp.asarray(a) for a in eval_inputs())
        d_dx = jax.grad(eval_fn, argnums=0)
        got = jax.grad(lambda yy: jnp.sum(d_dx(x, yy)))(y)  # d/dy of (df/dx) = x**(y-1) * (1 + y log x)
        xn, yn = np.asarray(x, np.float64), np.asarray(y, np.float64)
        return got, xn ** (yn - 1.0) * (1.0 + yn * np.log(xn))
    return {"mixed_second_derivative": mixed_second_derivative}
