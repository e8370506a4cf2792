"""structure look-alike: a custom_jvp that also returns a boolean convergence flag gives it a float0 tangent.

Report: machine-discovery/deer#43 https://github.com/machine-discovery/deer/pull/43 (the fix for the
JAX 0.4.34 break: a custom_jvp rule with a bool output now returns a float0 zeros tangent for it
instead of a bool one). Here a fixed-iteration Newton square root also says whether it converged.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h5_deer43_custom_jvp_float0_tangent_for_bool_flag", "family": "structure",
    "expect": "ok", "source": "machine-discovery/deer#43", "url": "https://github.com/machine-discovery/deer/pull/43",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}

STEPS = 8


@jax.custom_jvp
def newton_sqrt(a):
    x = a
    for _ in range(STEPS):
        x = 0.5 * (x + a / x)
    return x, jnp.abs(x * x - a) < 1e-3


@newton_sqrt.defjvp
def _newton_sqrt_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    root, converged = newton_sqrt(a)
    flag_dot = np.zeros(converged.shape, dtype=jax.dtypes.float0)  # eval: span
    return (root, converged), (a_dot / (2.0 * root), flag_dot)  # eval: span


def eval_fn(a):
    root, _ = newton_sqrt(a)
    return root


def eval_inputs():
    return (np.array([2.0, 9.0, 0.5], np.float32),)


def eval_reference(a):
    return np.sqrt(np.asarray(a, np.float64))
