"""registration hazard, caller in another module: fwd and bwd written beside the primal, never registered.

Source: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (the custom_vjp introduction's
example of wrapping an external function: a decorated primal, its fwd and rev rules, then one
`defvjp` line per function). Here the `defvjp` line is missing; the library module never calls
the function itself, and the user's script (`_pr2026_no_defvjp_driver.py`) imports and calls it.
Calling a custom_vjp without rules raises AttributeError ("No VJP defined ... using defvjp").
"""
import jax
import jax.numpy as jnp

EVAL = {
    "id": "registration/pr2026_rules_beside_no_defvjp_xmod", "family": "registration", "expect": "hazard",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "driver": "_pr2026_no_defvjp_driver.py",
}


@jax.custom_vjp  # eval: span
def external_cos(x):  # eval: span
    return jnp.cos(x)


def external_cos_fwd(x):
    return jnp.cos(x), jnp.sin(x)


def external_cos_bwd(sin_x, g):
    return (-sin_x * g,)
