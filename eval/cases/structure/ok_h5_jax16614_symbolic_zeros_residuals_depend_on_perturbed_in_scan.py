"""structure look-alike: a custom_vjp with symbolic_zeros whose fwd saves different residuals when an input is unperturbed, run in lax.scan.

Report: jax-ml/jax#16614 https://github.com/jax-ml/jax/issues/16614 (scan over a custom_vjp defined
with symbolic_zeros=True whose residual structure depended on y.perturbed raised StoreException:
scan's fixed point on which carries are perturbed traced fwd twice). Fixed since; on JAX 0.10.2
the gradient is right. Here a blend of a state with a drive signal skips saving the drive when it
is not differentiated.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h5_jax16614_symbolic_zeros_residuals_depend_on_perturbed_in_scan", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#16614", "url": "https://github.com/jax-ml/jax/issues/16614",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def blend(state, drive):
    return 0.5 * state + drive


def _blend_fwd(state, drive):
    res = None if drive.perturbed else ()  # eval: span
    return blend(state.value, drive.value), res


def _blend_bwd(res, g):
    return 0.5 * g, g


blend.defvjp(_blend_fwd, _blend_bwd, symbolic_zeros=True)  # eval: span


def eval_fn(x):
    def body(carry, _):
        s, d = carry
        return (blend(s, d), s), None

    (out, _), _ = jax.lax.scan(body, (x, jnp.ones_like(x)), xs=None, length=3)
    return out


def eval_inputs():
    return (np.array([1.0, -2.0], np.float32),)


def eval_reference(x):
    s, d = np.asarray(x, np.float64), np.ones(np.shape(x))
    for _ in range(3):
        s, d = 0.5 * s + d, s
    return s
