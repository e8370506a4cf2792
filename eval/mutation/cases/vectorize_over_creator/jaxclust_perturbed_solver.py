"""jaxclust (differentiable clustering through perturbed maximum-weight forests, L. Stewart): the
factory `make_pert_solver(solver, num_samples, sigma, noise)` builds, inside its body, a
`@jax.custom_jvp` function `forward_pert(S, ncc, rng)` that draws `num_samples` Gaussian
perturbations of the similarity matrix `S` from the key `rng`, runs the combinatorial solver on
each (`jax.vmap(solver, in_axes=(0, None))`) and returns the triple `(Akeps, Fkeps, Mkeps)`:
the perturbed argmax, the perturbed max and the perturbed connectivity matrix. Its derivative
is registered with `forward_pert.defjvps(pert_jvp, None, None)`: one rule
`pert_jvp(tangent, _, S, ncc, rng)` for `S` (the primal output ignored as `_`) returning a
tangent triple -- the score-function estimate of the argmax's derivative, the exact derivative
`sum(mean(A) * tangent)` of the perturbed max and a dummy `jnp.zeros_like(tangent)` for the
connectivity -- and `None` (no derivative) for the number of components and the key. The rules
close over the factory's configuration (the noise object, `sigma`, `num_samples`).

Adapted from LawrenceMMStewart/jaxclust:jaxclust/_src/perturbations.py:32 (the factory at line
18, commit 16f2a2b). Changed: the maximum-weight-forest solver (Kruskal, `jaxclust/_src/
solvers.py`) is replaced by a per-row top-`ncc` selection with its connectivity `clip(A + A^T)`
(a combinatorial solver with the same signature, `(A, M) = solver(S, ncc)`); 64 samples instead
of 1000. The caller (a clustering loss) differentiates the perturbed max with respect to the
similarities; the key is a module constant. The float64 reference draws the same perturbations
from the key (the draws are data) and averages the sums of the perturbed rows' top entries.
"""
from typing import Tuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/vectorize_over_creator/jaxclust_perturbed_solver', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxclust', 'source': 'LawrenceMMStewart/jaxclust:jaxclust/_src/perturbations.py:32', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'vectorize_over_creator', 'base': 'jaxclust_perturbed_solver'}

class Normal:
    """Normal distribution."""

    def sample(self, seed, sample_shape: Tuple[int]):
        return jax.random.normal(seed, sample_shape)

    def log_prob(self, inputs):
        return -0.5 * inputs ** 2

def make_pert_solver(solver, num_samples=1000, sigma=0.1, noise=Normal()):
    """A perturbed version of `solver` with a Monte Carlo custom JVP."""

    @jnp.vectorize
    @jax.custom_jvp
    def forward_pert(S, ncc, rng):
        samples = noise.sample(seed=rng, sample_shape=(num_samples,) + S.shape)
        Ak_z, Mk_z = jax.vmap(solver, in_axes=(0, None))(S + sigma * samples, ncc)
        Akeps = jnp.mean(Ak_z, axis=0)
        Mkeps = jnp.mean(Mk_z, axis=0)
        max_values = jnp.einsum('nd,nd->n', jnp.reshape(S + sigma * samples, (num_samples, -1)), jnp.reshape(Ak_z, (num_samples, -1)))
        Fkeps = jnp.mean(max_values)
        return (Akeps, Fkeps, Mkeps)

    def pert_jvp(tangent, _, S, ncc, rng):
        samples = noise.sample(seed=rng, sample_shape=(num_samples,) + S.shape)
        Ak_z, Mk_z = jax.vmap(solver, in_axes=(0, None))(S + sigma * samples, ncc)
        nabla_z_flat = -jax.vmap(jax.grad(noise.log_prob))(samples.reshape([-1]))
        tangent_flat = 1.0 / (num_samples * sigma) * jnp.einsum('nd,ne,e->d', jnp.reshape(Ak_z, (num_samples, -1)), jnp.reshape(nabla_z_flat, (num_samples, -1)), jnp.reshape(tangent, (-1,)))
        jvp_argmax = jnp.reshape(tangent_flat, S.shape)
        pert_argmax = jnp.mean(Ak_z, axis=0)
        jvp_max = jnp.sum(pert_argmax * tangent)
        return (jvp_argmax, jvp_max, jnp.zeros_like(tangent))
    forward_pert.defjvps(pert_jvp, None, None)
    return forward_pert

def topk_solver(S, ncc):
    """Keeps the `ncc` largest similarities of each row; the connectivity of the kept edges."""
    kth = jnp.take(jnp.sort(S, axis=-1), S.shape[-1] - ncc, axis=-1)
    A = (S >= kth[..., None]).astype(S.dtype)
    M = jnp.clip(A + A.T, 0.0, 1.0)
    return (A, M)
NUM_SAMPLES, SIGMA, NCC = (64, 0.1, 2)
KEY = jax.random.PRNGKey(7)
perturbed_solver = make_pert_solver(topk_solver, num_samples=NUM_SAMPLES, sigma=SIGMA)

def eval_fn(similarities):
    _, f_max, _ = perturbed_solver(similarities, NCC, KEY)
    return f_max

def eval_inputs():
    rng = np.random.default_rng(12)
    return (rng.normal(size=(4, 4)).astype(np.float32),)

def eval_reference(similarities):
    s = np.asarray(similarities, np.float64)
    z = np.asarray(jax.random.normal(KEY, (NUM_SAMPLES,) + s.shape), np.float64)
    pert = s[None] + SIGMA * z
    top = np.sort(pert, axis=-1)[..., -NCC:]
    return top.sum(axis=(-1, -2)).mean()
