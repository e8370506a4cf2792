"""neuralgcm (Google's hybrid ML / physics atmospheric model): `safe_sqrt(x)`, a bare module-level
`@jax.custom_jvp` whose primal is `jnp.sqrt(x)`, with the rule registered by the decorator
`@safe_sqrt.defjvp`: it unpacks `(x,) = primals` and `(x_dot,) = tangents`, calls the custom
function for the primal, and returns the tangent `x_dot / (2 * safe_sqrt(safe_x))` where
`x > eps` (the dtype's machine epsilon, `jnp.finfo(x.dtype).eps`) and 0 elsewhere, the argument
first replaced by 1 below eps (the double `where` that keeps the unused branch finite), so the
gradient of a norm is 0 rather than inf or NaN at a zero vector. The caller is NeuralGCM's
energy-score loss of a two-member ensemble, E||X - Y||^beta - w E||X - X'||^beta, over a pytree
(a dict) of fields: the squared errors are averaged over the components and the levels' grid
points, `safe_sqrt(...) ** beta` is applied per level, and skill and spread are combined.

Adapted from neuralgcm/neuralgcm:neuralgcm/legacy/model_utils.py:510 (commit 8408354) and the
caller `EnergyScoreLoss._spread_skill_and_loss` of
neuralgcm/reference_code/stochastic_losses.py:371 (`sqrt_beta`, `square`, the skill / spread
lines and `a_minus_cb`). Changed: the loss's `ensemble_mean` (an all-reduce over the ensemble
devices) is a mean over a leading ensemble axis of two members, and each device's X - X' is
formed from that axis; `component_mean` averages the dict's leaves over their grid axis; the
target is a module constant; beta = 1 and the ensemble term's weight 1/2 are the loss's
defaults. The caller differentiates the ensemble's two fields.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/registration_table_loop/neuralgcm_safe_sqrt', 'family': 'mutation', 'expect': 'unknown', 'library': 'neuralgcm', 'source': 'neuralgcm/neuralgcm:neuralgcm/legacy/model_utils.py:510', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'registration_table_loop', 'base': 'neuralgcm_safe_sqrt'}
tree_map = jax.tree_util.tree_map
tree_leaves = jax.tree_util.tree_leaves
BETA = 1.0
ENSEMBLE_TERM_WEIGHT = 0.5
TARGET = {'u': np.array([[0.2, -0.4, 0.9, 0.1], [1.0, 0.3, -0.2, 0.5], [-0.7, 0.6, 0.0, 0.8]], np.float32), 'v': np.array([[0.5, 0.1, -0.3, 0.6], [-0.2, 0.8, 0.4, -0.1], [0.3, -0.5, 0.7, 0.2]], np.float32)}

@jax.custom_jvp
def safe_sqrt(x):
    """Sqrt(x) with gradient = 0 for x near 0."""
    return jnp.sqrt(x)

def safe_sqrt_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    primal_out = safe_sqrt(x)
    eps = jnp.finfo(x.dtype).eps
    safe_x = jnp.where(x > eps, x, 1.0)
    tangent_out = jnp.where(x > eps, x_dot / (2 * safe_sqrt(safe_x)), 0)
    return (primal_out, tangent_out)
_RULES = {safe_sqrt: (safe_sqrt_jvp,)}
for _fn, _rules in _RULES.items():
    _fn.defjvp(*_rules)

def component_mean(tree):
    """Mean over the grid axis of every field, then over the fields."""
    leaves = [jnp.mean(leaf, axis=-1) for leaf in tree_leaves(tree)]
    return sum(leaves) / len(leaves)

def ensemble_mean(x):
    return jnp.mean(x, axis=0)

def a_minus_cb(a, c, b):
    return a - c * b

def energy_score(predictions):
    """Per-level energy score of a two-member ensemble (leading axis) against TARGET."""

    def sqrt_beta(x):
        return safe_sqrt(x) ** BETA

    def square(tree):
        return tree_map(jnp.square, tree)
    x_minus_y = tree_map(lambda x, y: x - y, predictions, TARGET)
    x_minus_xprime = tree_map(lambda x: x - x[::-1], predictions)
    skill = ensemble_mean(sqrt_beta(component_mean(square(x_minus_y))))
    spread = ensemble_mean(sqrt_beta(component_mean(square(x_minus_xprime))))
    return a_minus_cb(skill, ENSEMBLE_TERM_WEIGHT, spread)

def eval_fn(u, v):
    return energy_score({'u': u, 'v': v})

def eval_inputs():
    u = np.array([[[0.5, -0.1, 0.6, 0.3], [0.7, 0.0, 0.1, 0.9], [-0.3, 0.2, 0.4, 0.6]], [[0.0, -0.6, 1.2, -0.2], [1.3, 0.5, -0.6, 0.2], [-0.9, 0.9, -0.3, 1.1]]], np.float32)
    v = np.array([[[0.8, 0.4, -0.1, 0.2], [-0.5, 1.0, 0.2, 0.3], [0.6, -0.2, 0.9, -0.1]], [[0.1, -0.3, -0.6, 0.9], [0.2, 0.4, 0.7, -0.4], [0.0, -0.8, 0.3, 0.5]]], np.float32)
    return (u, v)

def eval_reference(u, v):
    u, v = (np.asarray(u, np.float64), np.asarray(v, np.float64))
    tu, tv = (TARGET['u'].astype(np.float64), TARGET['v'].astype(np.float64))

    def cmean(a, b):
        return 0.5 * (np.mean(a ** 2, axis=-1) + np.mean(b ** 2, axis=-1))
    skill = np.mean(np.sqrt(cmean(u - tu, v - tv)) ** BETA, axis=0)
    spread = np.mean(np.sqrt(cmean(u - u[::-1], v - v[::-1])) ** BETA, axis=0)
    return skill - ENSEMBLE_TERM_WEIGHT * spread
