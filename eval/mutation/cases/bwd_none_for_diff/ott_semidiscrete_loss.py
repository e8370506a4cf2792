"""ott-jax: the semidiscrete dual loss of a potential g; bwd returns the gradient for g and None
for the problem (a pytree whose cotangent the solver never needs).

Adapted from ott-jax/ott:src/ott/solvers/linear/semidiscrete.py:487 (the problem is a NamedTuple
of a cost matrix, target weights and epsilon; only the soft c-transform is kept).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from typing import NamedTuple
EVAL = {'id': 'mutation/bwd_none_for_diff/ott_semidiscrete_loss', 'family': 'mutation', 'expect': 'unknown', 'library': 'ott-jax', 'source': 'ott-jax/ott:src/ott/solvers/linear/semidiscrete.py:487', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_none_for_diff', 'base': 'ott_semidiscrete_loss'}

class Problem(NamedTuple):
    cost: jax.Array
    b: jax.Array
    epsilon: float

    def c_transform(self, g):
        z = (g[None, :] - self.cost) / self.epsilon
        return (self.epsilon * jax.scipy.special.logsumexp(z, axis=1), z)

@jax.custom_vjp
def _semidiscrete_loss(g, prob):
    f, _ = prob.c_transform(g)
    return -(jnp.mean(-f) + jnp.dot(g, prob.b))

def _semidiscrete_loss_fwd(g, prob):
    f, z = prob.c_transform(g)
    return (-(jnp.mean(-f) + jnp.dot(g, prob.b)), (z, prob))

def _semidiscrete_loss_bwd(res, g):
    z, prob = res
    n, m = prob.cost.shape
    grad = jax.scipy.special.softmax(z, axis=-1).sum(0)
    assert grad.shape == (m,), (grad.shape, (m,))
    grad = grad * (1.0 / n) - prob.b
    return (None, None)
_semidiscrete_loss.defvjp(_semidiscrete_loss_fwd, _semidiscrete_loss_bwd)
_COST = np.array([[0.1, 0.9, 0.4], [0.7, 0.2, 0.5]], np.float32)
_B = np.array([0.2, 0.3, 0.5], np.float32)

def eval_fn(g):
    return _semidiscrete_loss(g, Problem(jnp.asarray(_COST), jnp.asarray(_B), 0.5))

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(g):
    g = np.asarray(g, np.float64)
    z = (g[None, :] - _COST.astype(np.float64)) / 0.5
    mx = z.max(axis=1, keepdims=True)
    f = 0.5 * (mx[:, 0] + np.log(np.exp(z - mx).sum(axis=1)))
    return -(np.mean(-f) + g @ _B.astype(np.float64))
