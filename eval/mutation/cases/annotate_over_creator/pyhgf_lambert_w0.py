"""pyhgf (hierarchical Gaussian filters, ComputationalPsychiatry): the principal branch of the
Lambert W function, `lambert_w0(z)`, a bare module-level `@custom_jvp` (imported as `from jax
import custom_jvp`) computed by six Halley iterations unrolled by a Python `for` loop from
`log(z + 1)`; the rule `@lambert_w0.defjvp def _lambert_w0_jvp(primals, tangents)` unpacks
`(z,) = primals` and `(z_dot,) = tangents`, calls the custom function for the primal and returns
the closed-form tangent `z_dot / (exp(w) * (1 + w))` of the implicit relation `w * exp(w) = z`,
so that reverse mode does not go through the iterations. The caller is the unbounded volatility
update of a volatile node, `volatile_node_posterior_update_unbounded(attributes, node_idx)`,
jitted with static `node_idx`, reading and writing a dict of per-node dicts (`attributes[node_idx]
["tonic_volatility"]`, `attributes[-1]["time_step"]`, ...): two quadratic expansions of the
volatility level, the second centred at the approximate posterior mode given by `lambert_w0`,
blended by their variational energies.

Adapted from ComputationalPsychiatry/pyhgf:pyhgf/math.py:450 (commit 19f3b00) and the caller
pyhgf/updates/posterior/volatile/volatile_node_posterior_update_unbounded.py:13 (commit
293204a). Changed: the caller's non-finite fallback of the second expansion (a double `where`)
and the cap of the Lambert argument at the largest float are dropped (the inputs keep every
quantity finite); `max_posterior_precision` is a module constant; the node attributes hold
vectors of three nodes at once (every operation is elementwise). The caller differentiates the
nodes' tonic volatilities and their posterior means.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_jvp, jit
from jax.nn import sigmoid
from scipy.special import expit, lambertw
import jax.profiler
EVAL = {'id': 'mutation/annotate_over_creator/pyhgf_lambert_w0', 'family': 'mutation', 'expect': 'unknown', 'library': 'pyhgf', 'source': 'ComputationalPsychiatry/pyhgf:pyhgf/math.py:450', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'annotate_over_creator', 'base': 'pyhgf_lambert_w0'}
MAX_POSTERIOR_PRECISION = 10000000000.0

@jax.profiler.annotate_function
@custom_jvp
def lambert_w0(z):
    """Principal branch of the Lambert W function for z >= 0 (six Halley iterations)."""
    w = jnp.log(z + 1.0)
    for _ in range(6):
        ew = jnp.exp(w)
        f = w * ew - z
        f1 = (w + 1.0) * ew
        f2 = (w + 2.0) * ew
        w = w - 2.0 * f * f1 / (2.0 * f1 ** 2 - f * f2)
    return w

@lambert_w0.defjvp
def _lambert_w0_jvp(primals, tangents):
    z, = primals
    z_dot, = tangents
    w = lambert_w0(z)
    tangent_out = z_dot / (jnp.exp(w) * (1.0 + w))
    return (w, tangent_out)

@partial(jit, static_argnames=('node_idx',))
def volatile_node_posterior_update_unbounded(attributes: dict, node_idx: int) -> dict:
    """Update the volatility level of a volatile node (unbounded quadratic approximation)."""
    node = attributes[node_idx]
    ka = node['volatility_coupling_internal']
    t_k = attributes[-1]['time_step']
    al_aux = jnp.maximum(node['temp']['current_variance'], 1e-128)
    be_aux = 1.0 / node['precision'] + (node['mean'] - node['expected_mean']) ** 2
    muhat_j = node['expected_mean_vol']
    pihat_j = node['expected_precision_vol']
    om = node['tonic_volatility']
    log_t_k = jnp.log(t_k)
    log_al_aux = jnp.log(al_aux)
    gamma_c = log_t_k + ka * muhat_j + om
    w_jm1 = sigmoid(gamma_c - log_al_aux)
    da_jm1 = node['expected_precision'] * be_aux - 1.0
    pi1 = pihat_j + 0.5 * ka ** 2 * w_jm1 * (1.0 - w_jm1)
    mu1 = muhat_j + ka * w_jm1 / (2.0 * pi1) * da_jm1
    pihat_y = pihat_j / ka ** 2
    log_W_arg = jnp.log(be_aux) - jnp.log(2.0 * pihat_y) + 0.5 / pihat_y - gamma_c
    v_W = lambert_w0(jnp.exp(log_W_arg))
    y_star = gamma_c + v_W - 0.5 / pihat_y
    x_star = (y_star - log_t_k - om) / ka
    log_s2 = log_t_k + ka * x_star + om
    log_denom_s = jnp.logaddexp(log_al_aux, log_s2)
    w2 = sigmoid(log_s2 - log_al_aux)
    da2 = be_aux * jnp.exp(-log_denom_s) - 1.0
    pi2_full = pihat_j + 0.5 * ka ** 2 * w2 * (w2 + (2.0 * w2 - 1.0) * da2)
    pi2 = jnp.where(pi2_full <= 0.0, pihat_j + 0.5 * ka ** 2 * w2 * (1.0 - w2), pi2_full)
    mu2 = x_star + (0.5 * ka * w2 * da2 - pihat_j * (x_star - muhat_j)) / pi2
    log_denom_1 = jnp.logaddexp(log_al_aux, log_t_k + ka * mu1 + om)
    I1 = -0.5 * log_denom_1 - 0.5 * be_aux * jnp.exp(-log_denom_1) - 0.5 * pihat_j * (mu1 - muhat_j) ** 2
    log_denom_2 = jnp.logaddexp(log_al_aux, log_t_k + ka * mu2 + om)
    I2 = -0.5 * log_denom_2 - 0.5 * be_aux * jnp.exp(-log_denom_2) - 0.5 * pihat_j * (mu2 - muhat_j) ** 2
    b = sigmoid(I2 - I1)
    posterior_mean = (1.0 - b) * mu1 + b * mu2
    sig2 = (1.0 - b) / pi1 + b / pi2 + b * (1.0 - b) * (mu1 - mu2) ** 2
    attributes[node_idx]['precision_vol'] = jnp.minimum(1.0 / sig2, MAX_POSTERIOR_PRECISION)
    attributes[node_idx]['mean_vol'] = posterior_mean
    return attributes
NODES = {'volatility_coupling_internal': np.float32(1.0), 'precision': np.array([2.0, 1.5, 3.0], np.float32), 'expected_mean': np.array([0.1, 0.0, 0.5], np.float32), 'expected_mean_vol': np.array([0.0, -0.5, 0.3], np.float32), 'expected_precision_vol': np.array([1.0, 2.0, 0.8], np.float32), 'expected_precision': np.array([1.8, 1.2, 2.5], np.float32), 'current_variance': np.array([0.5, 0.8, 0.3], np.float32)}

def eval_fn(tonic_volatility, mean):
    node = {k: v for k, v in NODES.items() if k != 'current_variance'}
    node.update(tonic_volatility=tonic_volatility, mean=mean, temp={'current_variance': NODES['current_variance']})
    attributes = {0: node, -1: {'time_step': np.float32(1.0)}}
    attributes = volatile_node_posterior_update_unbounded(attributes, node_idx=0)
    return jnp.stack([attributes[0]['mean_vol'], attributes[0]['precision_vol']])

def eval_inputs():
    return (np.array([-1.0, -2.0, -0.5], np.float32), np.array([0.4, -0.2, 1.1], np.float32))

def eval_reference(tonic_volatility, mean):
    n = {k: np.asarray(v, np.float64) for k, v in NODES.items()}
    om, mean = (np.asarray(tonic_volatility, np.float64), np.asarray(mean, np.float64))
    ka, al = (n['volatility_coupling_internal'], n['current_variance'])
    be = 1.0 / n['precision'] + (mean - n['expected_mean']) ** 2
    muhat, pihat = (n['expected_mean_vol'], n['expected_precision_vol'])
    gamma = ka * muhat + om
    w1 = expit(gamma - np.log(al))
    pi1 = pihat + 0.5 * ka ** 2 * w1 * (1 - w1)
    mu1 = muhat + ka * w1 / (2 * pi1) * (n['expected_precision'] * be - 1)
    pihat_y = pihat / ka ** 2
    v = lambertw(be / (2 * pihat_y) * np.exp(0.5 / pihat_y - gamma)).real
    x_star = (gamma + v - 0.5 / pihat_y - om) / ka
    s2 = np.exp(ka * x_star + om)
    w2 = s2 / (al + s2)
    da2 = be / (al + s2) - 1
    pi2 = pihat + 0.5 * ka ** 2 * w2 * (w2 + (2 * w2 - 1) * da2)
    pi2 = np.where(pi2 <= 0, pihat + 0.5 * ka ** 2 * w2 * (1 - w2), pi2)
    mu2 = x_star + (0.5 * ka * w2 * da2 - pihat * (x_star - muhat)) / pi2

    def energy(mu):
        ey = np.exp(ka * mu + om)
        return -0.5 * np.log(al + ey) - 0.5 * be / (al + ey) - 0.5 * pihat * (mu - muhat) ** 2
    b = expit(energy(mu2) - energy(mu1))
    sig2 = (1 - b) / pi1 + b / pi2 + b * (1 - b) * (mu1 - mu2) ** 2
    return np.stack([(1 - b) * mu1 + b * mu2, np.minimum(1 / sig2, MAX_POSTERIOR_PRECISION)])
