"""registration look-alike: the `jax.custom_vjp` API page example with its decorator.

Source: https://jax.readthedocs.io/en/latest/_autosummary/jax.custom_vjp.html (current version):
`@jax.custom_vjp` on `f`, then `f.defvjp(f_fwd, f_bwd)`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/ok_docs_custom_vjp_decorated", "family": "registration", "expect": "ok",
    "source": "jax docs: jax.custom_vjp API page",
    "url": "https://jax.readthedocs.io/en/latest/_autosummary/jax.custom_vjp.html",
    "written_at": "2026-12-01", "written_at_commit": "3a32060410af927ec9a792df959a3558c6e4408f",
    "argnums": (0,),
}


@jax.custom_vjp
def f(x, y):  # eval: span
    return jnp.exp(-x) * y


def f_fwd(x, y):
    e = jnp.exp(-x)
    return e * y, (e, y)


def f_bwd(res, g):
    e, y = res
    return (-e * y * g, e * g)


f.defvjp(f_fwd, f_bwd)


def eval_fn(x, y):
    return f(x, y)


def eval_inputs():
    return (np.float32(2.0), np.float32(3.0))


def eval_reference(x, y):
    return np.exp(-np.float64(x)) * np.float64(y)
