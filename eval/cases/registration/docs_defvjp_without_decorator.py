"""registration hazard: fwd/bwd registered with `defvjp` on a function that was never made a custom_vjp.

Source: the `jax.custom_vjp` API page of the JAX docs, whose example at one point showed
`def f(x, y)` without the `@jax.custom_vjp` line and then `f.defvjp(f_fwd, f_bwd)`
(https://jax.readthedocs.io/en/latest/_autosummary/jax.custom_vjp.html; later versions of the same
page have the decorator). A plain function has no `defvjp`: the module fails at import.
"""
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/docs_defvjp_without_decorator", "family": "registration", "expect": "hazard",
    "source": "jax docs: jax.custom_vjp API page",
    "url": "https://jax.readthedocs.io/en/latest/_autosummary/jax.custom_vjp.html",
    "written_at": "2026-12-01", "written_at_commit": "3a32060410af927ec9a792df959a3558c6e4408f",
    "argnums": (0,),
}


def f(x, y):  # eval: span
    return jnp.exp(-x) * y


def f_fwd(x, y):
    e = jnp.exp(-x)
    return e * y, (e, y)


def f_bwd(res, g):
    e, y = res
    return (-e * y * g, e * g)


f.defvjp(f_fwd, f_bwd)  # eval: span


def eval_fn(x, y):
    return f(x, y)


def eval_inputs():
    return (np.float32(2.0), np.float32(3.0))


def eval_reference(x, y):
    return np.exp(-np.float64(x)) * np.float64(y)
