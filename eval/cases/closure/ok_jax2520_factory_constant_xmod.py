"""closure look-alike, caller in another module: the factory gets a Python constant.

Source: jax-ml/jax#2520 https://github.com/jax-ml/jax/issues/2520 (closing over values that are
not differentiated is fine since PR #4008). The factory `make_decay(rate)` is the same; the
caller (`_ok_jax2520_factory_constant_driver.py`) passes a module constant and differentiates
with respect to the input only.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_jax2520_factory_constant_xmod", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#2520", "url": "https://github.com/jax-ml/jax/issues/2520",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_ok_jax2520_factory_constant_driver.py",
}


def make_decay(rate):
    @jax.custom_vjp  # eval: span
    def decay(y):  # eval: span
        return jnp.exp(-rate * y)  # eval: span

    def decay_fwd(y):
        out = jnp.exp(-rate * y)  # eval: span
        return out, out

    def decay_bwd(out, g):
        return (-rate * out * g,)  # eval: span

    decay.defvjp(decay_fwd, decay_bwd)
    return decay
