"""registration look-alike: the rules are registered by another module of the project.

Source: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (the example wraps an external
function and registers fwd/rev with `defvjp`). Here the library defines the primal, its rules and
a helper that calls it; the module that sets the library up (`_ok_pr2026_register_driver.py`)
imports it and calls `defvjp`, as code bases that keep registrations in one place do.
"""
import jax
import jax.numpy as jnp

EVAL = {
    "id": "registration/ok_pr2026_defvjp_in_other_module_xmod", "family": "registration", "expect": "ok",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "driver": "_ok_pr2026_register_driver.py",
}


@jax.custom_vjp  # eval: span
def external_sin(x):  # eval: span
    return jnp.sin(x)


def external_sin_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def external_sin_bwd(cos_x, g):
    return (cos_x * g,)


def doubled_sin(x):
    return 2.0 * external_sin(x)
