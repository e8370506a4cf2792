"""nonlinear-jvp look-alike: the same |x| rule with a tangent linear in d (sign(x) * d).

Report: jax-ml/jax#12158 https://github.com/jax-ml/jax/issues/12158 (the variants the reporter
found to work use a linear function of the tangent).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_jax12158_linear_tangent", "family": "nonlinear-jvp", "expect": "ok",
    "source": "jax-ml/jax#12158", "url": "https://github.com/jax-ml/jax/issues/12158",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def my_abs(x):
    return jnp.abs(x)


@my_abs.defjvp
def my_abs_jvp(primals, tangents):
    (x,), (d,) = primals, tangents
    return jnp.abs(x), jnp.sign(x) * d  # eval: span


def eval_fn(x):
    return my_abs(x)


def eval_inputs():
    return (np.array([-1.0, 2.0], np.float32),)


def eval_reference(x):
    return np.abs(np.asarray(x, np.float64))
