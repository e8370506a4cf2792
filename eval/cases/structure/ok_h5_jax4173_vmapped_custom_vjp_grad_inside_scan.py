"""structure look-alike: grad of a vmapped custom_vjp reduction, computed inside a lax.scan body.

Report: jax-ml/jax#4173 https://github.com/jax-ml/jax/issues/4173 (scan + grad + vmap + custom_vjp
failed only in that combination: a custom_vjp sum whose bwd broadcast the cotangent against a
saved ones_like residual, vmapped and differentiated in a scan body). Fixed since; on JAX 0.10.2 it
runs. Here a per-row softplus total is differentiated at each scan step.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h5_jax4173_vmapped_custom_vjp_grad_inside_scan", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#4173", "url": "https://github.com/jax-ml/jax/issues/4173",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def row_softplus_sum(r):
    return jnp.sum(jnp.logaddexp(r, 0.0))


def _rss_fwd(r):
    return row_softplus_sum(r), (jax.nn.sigmoid(r),)


def _rss_bwd(res, g):
    (sig,) = res
    return (g * sig,)  # eval: span


row_softplus_sum.defvjp(_rss_fwd, _rss_bwd)


def eval_fn(x):
    def loss(m):
        return jnp.sum(jax.vmap(row_softplus_sum)(m))

    def body(m, _):
        return m, jax.grad(loss)(m)

    _, gs = jax.lax.scan(body, x, jnp.arange(2))
    return jnp.sum(gs[-1] * x)


def eval_inputs():
    return (np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.sum(x / (1.0 + np.exp(-x))))
