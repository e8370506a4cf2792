"""closure hazard: a bwd rule closes over a tracer of a jit that sits inside grad ("No constant handler").

Source: jax-ml/jax#40111 https://github.com/jax-ml/jax/pull/40111 ("improve error when
custom_jvp/vjp rules close over tracers"; previously "No constant handler for DynamicJaxprTracer",
"confusing for me and extra confusing for users"), and jax-ml/jax#34216. The rule is traced lazily
after the jit trace ended, so even a non-differentiated closed-over value breaks `grad(jit(f))`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/pr40111_bwd_closes_jit_tracer", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#40111", "url": "https://github.com/jax-ml/jax/pull/40111",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.jit
def scaled_sin(x, t):
    @jax.custom_vjp
    def g(v):  # eval: span
        return jnp.sin(v)

    def g_fwd(v):
        return jnp.sin(v), v

    def g_bwd(v, ct):
        return (t * jnp.cos(v) * ct,)  # eval: span

    g.defvjp(g_fwd, g_bwd)
    return g(x)


def eval_fn(x, t):
    return scaled_sin(x, t)


def eval_inputs():
    return (np.array([0.3, 1.1], np.float32), np.float32(2.0))


def eval_reference(x, t):
    return np.sin(np.asarray(x, np.float64))


def eval_grad_reference(x, t):
    return (2.0 * np.cos(np.asarray(x, np.float64)),)
