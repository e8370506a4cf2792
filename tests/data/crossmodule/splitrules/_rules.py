"""Rules for splitrules/ops.py, defined apart from the functions they are registered on: each one
breaks JAX's contract in its body (tests/cli/test_crossmodule_rules.py runs them on JAX)."""
import jax
import jax.numpy as jnp
import numpy as np


def softsign_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d = 1.0 + jnp.abs(x)
    return (x / d,), (t / d**2,)


def smooth_abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.sqrt(x**2 + 1.0)
    if t == 0:
        return y, t
    return y, x / y * t


def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.logaddexp(x, 0.0).astype(jnp.bfloat16), jax.nn.sigmoid(x) * t


def host_exp_fwd(x):
    y = jax.pure_callback(np.exp, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y, y


def host_exp_bwd(y, g):
    return (y * g,)


def clip_fwd(x):
    return jnp.clip(x, 0.0, 1.0)


def clip_bwd(res, g):
    return (g,)


def shift_fwd(x, s):
    return x + s, None


def shift_bwd(res, g):
    return (g,)


def _limit(v, bound):
    if jnp.linalg.norm(v) > bound:
        return v * bound / jnp.linalg.norm(v)
    return v


def soft_clip_jvp(primals, tangents):
    (x,), (v,) = primals, tangents
    return jnp.tanh(x), _limit((1.0 - jnp.tanh(x) ** 2) * v, 10.0)


def sigmoid_dx(g, ans, x):
    return (g * ans * (1.0 - ans),)
