"""forward-mode hazard, caller in another module: the linear function from `jax.linearize` is applied.

Report: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (a reviewer's example: `jax.jvp`
of a custom_vjp function fails while vjp and grad work). `jax.linearize` computes the primal, but
calling its linear function is forward mode and raises "can't apply forward-mode autodiff (jvp) to
a custom_vjp function". The library module defines the custom_vjp; the user's script
(`_pr2026_linearize_driver.py`) imports it by name and linearizes it.
"""
import jax
import jax.numpy as jnp

EVAL = {
    "id": "forward-mode/pr2026_linearize_apply_xmod", "family": "forward-mode", "expect": "hazard",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "driver": "_pr2026_linearize_driver.py",
}


@jax.custom_vjp  # eval: span
def external_cos(x):
    return jnp.cos(x)


def external_cos_fwd(x):
    return jnp.cos(x), jnp.sin(x)


def external_cos_bwd(s, g):
    return (-s * g,)


external_cos.defvjp(external_cos_fwd, external_cos_bwd)
