"""The look-alikes of _rules.py, each keeping JAX's contract (tests/cli/test_crossmodule_rules.py)."""
import jax
import jax.numpy as jnp
import numpy as np


def softsign_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d = 1.0 + jnp.abs(x)
    return x / d, t / d**2


def smooth_abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.sqrt(x**2 + 1.0)
    if jnp.ndim(x) == 0:
        return y, x / y * t
    return y, x / y * t


def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.logaddexp(x, 0.0), jax.nn.sigmoid(x) * t


def host_exp_fwd(x):
    y = jax.pure_callback(np.exp, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")
    return y, y


def host_exp_bwd(y, g):
    return (y * g,)


def clip_fwd(x):
    return jnp.clip(x, 0.0, 1.0), x


def clip_bwd(x, g):
    return (jnp.where((x > 0.0) & (x < 1.0), g, 0.0),)


def shift_fwd(x, s):
    return x + s, None


def shift_bwd(res, g):
    return (g, g)


def _slope(x, bound):
    return jnp.where(jnp.abs(x) > bound, 0.0, 1.0 - jnp.tanh(x) ** 2)


def soft_clip_jvp(primals, tangents):
    (x,), (v,) = primals, tangents
    return jnp.tanh(x), _slope(x, 10.0) * v


def sigmoid_dx(g, ans, x):
    return g * ans * (1.0 - ans)
