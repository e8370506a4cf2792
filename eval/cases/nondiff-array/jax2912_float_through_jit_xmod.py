"""nondiff-array hazard, caller in another module: the jax-ml/jax#2912 definition alone.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912. Same construct as
`jax2912_float_through_jit`, but, as in most code bases, the jitted caller that turns the float
into a tracer is elsewhere (`_jax2912_driver.py`): a rule that needs the caller in this file cannot
see it.
"""
from functools import partial

import jax

EVAL = {
    "id": "nondiff-array/jax2912_float_through_jit_xmod", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-01", "written_at_commit": "2a335300906e04db671c27a56be74cfb4c8ccebc",
    "argnums": (1,), "vmap_in_axes": (None, 0), "driver": "_jax2912_driver.py",
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def scaled(s, p):  # eval: span
    return s * p


def scaled_fwd(s, p):
    return s * p, None


def scaled_bwd(s, _, g):
    return (s * g,)


scaled.defvjp(scaled_fwd, scaled_bwd)
