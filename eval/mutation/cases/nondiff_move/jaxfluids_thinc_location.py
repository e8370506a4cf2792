"""JAX-Fluids: THINC's interface location (Garrick et al., Eq. 40), a `@jax.custom_vjp` defined
inside the method `compute_interface_location(self, volume_fraction, sigma, beta_xi)` of the
reconstruction class; the primal and bwd close over `self` (its `eps_interface_location`), fwd
saves the three inputs, bwd returns three analytic partial derivatives (the library notes that
`x_tilde` troubles AD).

Adapted from tumaer/JAXFLUIDS:src/jaxfluids/diffuse_interface/diffuse_interface_thinc.py:98
(commit 70dbc0a): the method and its rules as the library spells them, in a small class that
keeps only the attribute they read, with one fix: the library's bwd returns the `beta_xi`
derivative (the one divided by `beta * beta`) second and the `sigma` derivative third, the
reverse of the primal's `(volume_fraction, sigma, beta_xi)` (harmless there: sigma is a sign and
beta a constant, neither differentiated); here they are in the primal's order, so that the
base is correct under `jax.grad` in all three arguments; the caller evaluates the reconstructed THINC face value
`0.5 (1 + tanh(beta (sigma / 2 - x_tilde)))` over a row of interface cells.
"""
import jax
import jax.numpy as jnp
import numpy as np
import functools
Array = jax.Array
EVAL = {'id': 'mutation/nondiff_move/jaxfluids_thinc_location', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-fluids', 'source': 'tumaer/JAXFLUIDS:src/jaxfluids/diffuse_interface/diffuse_interface_thinc.py:98', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'nondiff_move', 'base': 'jaxfluids_thinc_location'}

class THINCReconstruction:

    def __init__(self, interface_parameter: float=1.6):
        self.beta = interface_parameter
        self.eps_interface_location = 1e-20

    def compute_interface_location(self, volume_fraction: Array, sigma: Array, beta_xi: Array) -> Array:
        """Computes the interface location based on a tanh fit to the volume fraction field."""

        @functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
        def _compute_interface_location(volume_fraction: Array, sigma: Array, beta_xi: Array):
            factor = 2.0 * sigma * beta_xi
            A = jnp.exp(factor)
            B = jnp.exp(factor * volume_fraction)
            x_tilde = 0.5 / (beta_xi + self.eps_interface_location) * jnp.log((B - 1.0 + self.eps_interface_location) / (A - B + self.eps_interface_location))
            return x_tilde

        def f_fwd(volume_fraction, sigma, beta_xi):
            return (_compute_interface_location(volume_fraction, sigma, beta_xi), (volume_fraction, sigma, beta_xi))

        def f_bwd(beta_xi, res, g):
            volume_fraction, sigma, beta = res
            A = jnp.exp(2.0 * sigma * beta)
            B = jnp.exp(2.0 * sigma * beta * volume_fraction)
            return (sigma * (A - 1.0) * B / ((A - B) * (B - 1) + self.eps_interface_location) * g, (volume_fraction * B * (A - B) + (volume_fraction * B - A) * (B - 1.0)) / ((A - B) * (B - 1.0) + self.eps_interface_location) * g)
        _compute_interface_location.defvjp(f_fwd, f_bwd)
        return _compute_interface_location(volume_fraction, sigma, beta_xi)
_THINC = THINCReconstruction()

def eval_fn(volume_fraction, sigma, beta_xi):
    x_tilde = _THINC.compute_interface_location(volume_fraction, sigma, beta_xi)
    face = 0.5 * (1.0 + jnp.tanh(beta_xi * (0.5 * sigma - x_tilde)))
    return face * jnp.array([1.0, -0.5, 2.0], jnp.float32)

def eval_inputs():
    return (np.array([0.25, 0.5, 0.7], np.float32), np.array([1.0, 0.8, 1.2], np.float32), np.array([1.6, 1.3, 1.8], np.float32))

def eval_reference(volume_fraction, sigma, beta_xi):
    a, s, b = (np.asarray(v, np.float64) for v in (volume_fraction, sigma, beta_xi))
    A, B = (np.exp(2.0 * s * b), np.exp(2.0 * s * b * a))
    x = 0.5 / b * np.log((B - 1.0) / (A - B))
    return 0.5 * (1.0 + np.tanh(b * (0.5 * s - x))) * np.array([1.0, -0.5, 2.0])
