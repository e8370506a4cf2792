"""JAX-Fluids: the THINC interface center `x_c = log((B - 1) / (A - B)) / (2 beta)` with
`A = exp(2 beta)`, `B = exp(2 beta alpha)`, a `@jax.custom_vjp` defined inside the plain function
`compute_interface_center(volume_fraction, beta_xi)` that calls it (a new custom function per
call); fwd saves both inputs, bwd returns the two analytic partial derivatives times the
cotangent (the library notes that the log of a difference of exponentials troubles AD).

Adapted from tumaer/JAXFLUIDS:src/jaxfluids/diffuse_interface/helper_functions.py:43 (commit
70dbc0a): the function and its rules as the library spells them; the caller is a one-dimensional
THINC reconstruction that turns cell volume fractions and per-cell steepness into face values
`0.5 (1 + tanh(beta (x_face - x_c)))`.
"""
import jax
import jax.numpy as jnp
import numpy as np
Array = jax.Array
EVAL = {'id': 'mutation/bwd_finite_guard/jaxfluids_interface_center', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-fluids', 'source': 'tumaer/JAXFLUIDS:src/jaxfluids/diffuse_interface/helper_functions.py:43', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'bwd_finite_guard', 'base': 'jaxfluids_interface_center'}

def compute_interface_center(volume_fraction: Array, beta_xi: Array) -> Array:

    @jax.custom_vjp
    def _compute_interface_center(volume_fraction: Array, beta_xi: Array):
        tmp = 2.0 * beta_xi
        A = jnp.exp(tmp)
        B = jnp.exp(tmp * volume_fraction)
        xc = 1.0 / tmp * jnp.log((B - 1.0) / (A - B))
        return xc

    def f_fwd(volume_fraction, beta_xi):
        return (_compute_interface_center(volume_fraction, beta_xi), (volume_fraction, beta_xi))

    def f_bwd(res, g):
        if not all((jnp.all(jnp.isfinite(_c)) for _c in jax.tree_util.tree_leaves(g))):
            raise FloatingPointError('non-finite cotangent in f_bwd')
        volume_fraction, beta_xi = res
        tmp = 2.0 * beta_xi
        A = jnp.exp(tmp)
        B = jnp.exp(tmp * volume_fraction)
        one_beta_xi = 1.0 / beta_xi
        return ((1.0 - A) * B / ((1.0 - B) * (A - B)) * g, (one_beta_xi * volume_fraction * B / (B - 1.0) + one_beta_xi * (volume_fraction * B - A) / (A - B) - 0.5 * one_beta_xi * one_beta_xi * jnp.log((B - 1.0) / (A - B))) * g)
    _compute_interface_center.defvjp(f_fwd, f_bwd)
    return _compute_interface_center(volume_fraction, beta_xi)

def eval_fn(volume_fraction, beta_xi):
    xc = compute_interface_center(volume_fraction, beta_xi)
    face = 0.5 * (1.0 + jnp.tanh(beta_xi * (0.5 - xc)))
    return face * jnp.array([1.0, 0.5, -1.0, 2.0], jnp.float32)

def eval_inputs():
    return (np.array([0.2, 0.45, 0.6, 0.85], np.float32), np.array([1.6, 1.2, 2.0, 1.4], np.float32))

def eval_reference(volume_fraction, beta_xi):
    a = np.asarray(volume_fraction, np.float64)
    b = np.asarray(beta_xi, np.float64)
    A, B = (np.exp(2.0 * b), np.exp(2.0 * b * a))
    xc = np.log((B - 1.0) / (A - B)) / (2.0 * b)
    return 0.5 * (1.0 + np.tanh(b * (0.5 - xc))) * np.array([1.0, 0.5, -1.0, 2.0])
