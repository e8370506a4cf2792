"""FermiNet: the variational Monte Carlo energy with an unbiased gradient estimator, a
`@jax.custom_jvp` made inside a factory (`make_loss`) and closing over the batched network, the
batched local energy and the clipping options; its arguments are the parameters, a PRNG key
(whose tangent is float0) and a NamedTuple of walker data, and its output is the pair
`(loss, aux_data)`. The rule, registered with `@total_energy.defjvp`, recomputes the primal,
clips the local energies around their mean, re-packs primals and tangents into the network's
calling convention `(params, positions, spins, atoms, charges)` for `jax.jvp`, and returns
`(loss, aux_data), (dot(psi_tangent, diff) / batch, aux_data)`: the tangent of the mean energy
is the score-function estimator mean((E_L - E) d log|psi|), not the derivative of the batch mean
(the rule is deliberately not the primal's derivative; `eval_grad_reference` gives the
estimator), and the auxiliary output's tangent is the auxiliary data itself.

Adapted from google-deepmind/ferminet:ferminet/loss.py:200 (`make_loss`, `total_energy`,
`total_energy_jvp`; the network is a one-dimensional anharmonic trial wavefunction
log|psi| = -a x^2 - b x^4 in a harmonic well, its local energy taken with `jax.grad`, the pmean
over devices is the plain mean, chex's dataclass is a NamedTuple, the clipping is the mean-centred
branch of `clip_local_values`, and kfac_jax's predictive-distribution registration is dropped).
"""
import functools
from functools import partial
from typing import NamedTuple, Optional, Tuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvp_params_swapped/ferminet_total_energy', 'family': 'mutation', 'expect': 'unknown', 'library': 'ferminet', 'source': 'google-deepmind/ferminet:ferminet/loss.py:200', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_params_swapped', 'base': 'ferminet_total_energy'}

class FermiNetData(NamedTuple):
    positions: jnp.ndarray
    spins: jnp.ndarray
    atoms: jnp.ndarray
    charges: jnp.ndarray

class AuxiliaryLossData(NamedTuple):
    energy: jnp.ndarray
    variance: jnp.ndarray
    local_energy: jnp.ndarray
    clipped_energy: jnp.ndarray
    local_energy_mat: Optional[jnp.ndarray] = None

def log_network(params, positions, spins, atoms, charges):
    """log|psi| of one walker: -a x^2 - b x^4 (spins, atoms and charges unused in one dimension)."""
    x = positions[0]
    return -params[0] * x ** 2 - params[1] * x ** 4

def local_energy(params, key, data):
    """E_L = -(f'' + f'^2) / 2 + x^2 / 2 for f = log|psi| (H = -d^2/dx^2 / 2 + x^2 / 2)."""
    del key
    f = lambda x: log_network(params, jnp.stack([x]), data.spins, data.atoms, data.charges)
    x = data.positions[0]
    df = jax.grad(f)(x)
    d2f = jax.grad(jax.grad(f))(x)
    return (-0.5 * (d2f + df ** 2) + 0.5 * x ** 2, None)

def clip_local_values(local_values, mean_local_values, clip_scale, center_at_clipped_value):
    tv = jnp.mean(jnp.abs(local_values - mean_local_values))
    clipped = jnp.clip(local_values, mean_local_values - clip_scale * tv, mean_local_values + clip_scale * tv)
    diff_center = jnp.mean(clipped) if center_at_clipped_value else mean_local_values
    return (clipped, clipped - diff_center)

def make_loss(network, local_energy, clip_local_energy: float=0.0, center_at_clipped_energy: bool=True):
    """The loss `(params, key, data) -> (mean energy, aux)` with the VMC gradient as its tangent."""
    data_axes = FermiNetData(positions=0, spins=0, atoms=0, charges=0)
    batch_local_energy = jax.vmap(local_energy, in_axes=(None, 0, data_axes), out_axes=(0, 0))
    batch_network = jax.vmap(network, in_axes=(None, 0, 0, 0, 0), out_axes=0)

    @jax.custom_jvp
    def total_energy(params, key, data) -> Tuple[jnp.ndarray, AuxiliaryLossData]:
        keys = jax.random.split(key, num=data.positions.shape[0])
        e_l, e_l_mat = batch_local_energy(params, keys, data)
        loss = jnp.mean(e_l)
        loss_diff = e_l - loss
        variance = jnp.mean(loss_diff * jnp.conj(loss_diff))
        return (loss, AuxiliaryLossData(energy=loss, variance=variance.real, local_energy=e_l, clipped_energy=e_l, local_energy_mat=e_l_mat))

    @total_energy.defjvp
    def total_energy_jvp(tangents, primals):
        """Unbiased local-energy gradients."""
        params, key, data = primals
        loss, aux_data = total_energy(params, key, data)
        if clip_local_energy > 0.0:
            clipped, diff = clip_local_values(aux_data.local_energy, loss, clip_local_energy, center_at_clipped_energy)
            aux_data = aux_data._replace(clipped_energy=clipped)
        else:
            diff = aux_data.local_energy - loss
        data = primals[2]
        data_tangents = tangents[2]
        primals = (primals[0], data.positions, data.spins, data.atoms, data.charges)
        tangents = (tangents[0], data_tangents.positions, data_tangents.spins, data_tangents.atoms, data_tangents.charges)
        psi_primal, psi_tangent = jax.jvp(batch_network, primals, tangents)
        primals_out = (loss, aux_data)
        device_batch_size = jnp.shape(aux_data.local_energy)[0]
        tangents_out = (jnp.dot(psi_tangent, diff) / device_batch_size, aux_data)
        return (primals_out, tangents_out)
    return total_energy
total_energy = make_loss(log_network, local_energy, clip_local_energy=5.0)
WALKERS = np.array([[-1.3], [-0.6], [-0.15], [0.2], [0.55], [0.9], [1.4], [2.1]], np.float32)

def _data(walkers):
    n = walkers.shape[0]
    return FermiNetData(positions=jnp.asarray(walkers), spins=jnp.ones((n, 1), jnp.float32), atoms=jnp.zeros((n, 1, 1), jnp.float32), charges=jnp.ones((n, 1), jnp.float32))

def eval_fn(params, walkers):
    loss, aux = total_energy(params, jax.random.PRNGKey(0), _data(walkers))
    return loss

def eval_inputs():
    return (np.array([0.45, 0.03], np.float32), WALKERS)

def _local_energies(params, walkers):
    a, b = np.asarray(params, np.float64)
    x = np.asarray(walkers, np.float64)[:, 0]
    df = -2 * a * x - 4 * b * x ** 3
    d2f = -2 * a - 12 * b * x ** 2
    return (-0.5 * (d2f + df ** 2) + 0.5 * x ** 2, x)

def eval_reference(params, walkers):
    e_l, _ = _local_energies(params, walkers)
    return np.mean(e_l)

def eval_grad_reference(params, walkers):
    e_l, x = _local_energies(params, walkers)
    mean = np.mean(e_l)
    tv = np.mean(np.abs(e_l - mean))
    clipped = np.clip(e_l, mean - 5.0 * tv, mean + 5.0 * tv)
    diff = clipped - np.mean(clipped)
    dlogpsi = np.stack([-x ** 2, -x ** 4], axis=-1)
    return (dlogpsi.T @ diff / len(x),)
