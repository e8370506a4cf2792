"""closure hazard: a custom_vjp defined inside the loss closes over the parameter that grad differentiates.

Report: jax-ml/jax#2520 https://github.com/jax-ml/jax/issues/2520 ("better error when
differentiating wrt closed-over values in custom_vjp", from odeint dynamics closing over
parameters). PR #4008 made closures over tracers legal *unless* the closed-over value is
differentiated; that case still fails in JAX 0.10.2.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jax2520_inner_closure_grad", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#2520", "url": "https://github.com/jax-ml/jax/issues/2520",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}


def eval_fn(k, x):
    @jax.custom_vjp
    def decay(y):  # eval: span
        return jnp.exp(-k * y)  # eval: span

    def decay_fwd(y):
        out = jnp.exp(-k * y)
        return out, out

    def decay_bwd(out, g):
        return (-k * out * g,)

    decay.defvjp(decay_fwd, decay_bwd)
    return decay(x)


def eval_inputs():
    return (np.float32(0.8), np.array([0.5, 1.0], np.float32))


def eval_reference(k, x):
    return np.exp(-np.float64(k) * np.asarray(x, np.float64))
