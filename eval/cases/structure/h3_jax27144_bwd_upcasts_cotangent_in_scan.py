"""structure hazard: a custom_vjp bwd returns a float32 cotangent for a float16 primal, inside a scan.

Report: jax-ml/jax#27144 https://github.com/jax-ml/jax/issues/27144 (an identity-like custom_vjp
whose bwd casts the cotangent to float32 so the backward pass runs in higher precision; called
in a lax.scan over a low-precision carry, grad failed because the scan's carry changed dtype;
the reporter only got it to run by adding extra identity calls around the scan). Here a
half-precision carry goes through such a precision-guard in every scan step.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h3_jax27144_bwd_upcasts_cotangent_in_scan", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#27144", "url": "https://github.com/jax-ml/jax/issues/27144",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def precise_grad(x):
    return x


def _precise_grad_fwd(x):
    return x, None


def _precise_grad_bwd(_, g):
    return (g.astype(jnp.float32),)  # eval: span


precise_grad.defvjp(_precise_grad_fwd, _precise_grad_bwd)


def eval_fn(x):
    def step(carry, _):
        return precise_grad(carry) * 0.5, None  # eval: span

    out, _ = jax.lax.scan(step, x, None, length=3)
    return out.sum()


def eval_inputs():
    return (np.array([1.0, -2.0, 4.0], np.float16),)


def eval_reference(x):
    return np.asarray(np.sum(np.asarray(x, np.float64) * 0.125))
