"""closure hazard, caller in another module: a factory's custom_vjp closes over the factory's parameter.

Report: jax-ml/jax#2520 https://github.com/jax-ml/jax/issues/2520 (odeint-style dynamics whose
custom_vjp closed over the parameters being differentiated). Here the library module has a factory
`make_decay(rate)` that builds the custom_vjp around `rate`; the training script
(`_jax2520_factory_driver.py`) imports it and differentiates its loss with respect to `rate`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jax2520_factory_param_xmod", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#2520", "url": "https://github.com/jax-ml/jax/issues/2520",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_jax2520_factory_driver.py",
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
